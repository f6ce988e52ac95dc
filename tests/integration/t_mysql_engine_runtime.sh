#!/usr/bin/env bash
# labels: mysql counters
# timeout: 180
# fixtures: mariadb
# A table's engine changed under running servers (docs/hazards.md, "MySQL and
# MariaDB"): ALTER TABLE leaf_alloc ENGINE = MyISAM while servers A and B serve a
# sequence and a segment tag, with --lease-ttl 30000 (a 10 s hazard interval). A table
# without transactions locks nothing under SELECT ... FOR UPDATE and keeps nothing a
# crash takes from its cache, so it is refused; the engines of idkeeper's tables ride
# with every write's evidence, read after its COMMIT, since an ALTER lands whenever it
# lands. Before, only the interval's check read them: A and B both answered the same
# segment IDs in the 1.5 s after the change, and the refusal came about 11 s later.
# Now:
#   - the first sequence request to each server after the ALTER is answered 503 naming
#     "table engines", and each logs the refusal within 5 s (half the interval);
#   - no segment ID is answered twice, by A and B together, while they are drawn as
#     fast as they come;
#   - once the table is InnoDB again both serve again, still no ID twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
URI=$(my_uri engine)
DB=${URI##*/}
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
"$IK_BIN" tags add s --kind segment --step 10 --coord "$URI" >/dev/null || fail "tags add s"
declare -A P
for n in a b; do
  serve_on "$n" --coord "$URI" --lease-ttl 30000 || fail "$n did not start: $(tail -n 5 "$T/$n.log")"
  P[$n]=$PORT
  [ "$(ik_http "http://127.0.0.1:$PORT/v1/sequence/q?format=text" "$T/$n.seq")" = 200 ] || fail "$n: no sequence ID"
  [ "$(ik_http "http://127.0.0.1:$PORT/v1/segment/s?count=5&format=text" "+$T/seg.ids")" = 200 ] || fail "$n: no segment IDs"
done

my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = MyISAM" || fail "ALTER TABLE failed"
mono_ms t0
log "leaf_alloc is MyISAM"
hammers=()
for n in a b; do # each draws segment IDs as fast as they come until $T/stop
  (
    while [ ! -e "$T/stop" ]; do
      _ik_http "http://127.0.0.1:${P[$n]}/v1/segment/s?count=5&format=text" "+$T/seg.$n" 10
      echo "$IK_HTTP_CODE" >>"$T/seg.$n.codes"
    done
  ) &
  hammers+=($!)
  IK_PIDS+=($!)
done
for n in a b; do
  code=$(ik_http "http://127.0.0.1:${P[$n]}/v1/sequence/q?format=text" "$T/$n.after")
  [ "$code" = 503 ] || fail "$n answered the first sequence request after the ALTER $code: $(cat "$T/$n.after")"
  grep -q 'table engines' "$T/$n.after" || fail "$n's 503 does not name the table engines: $(cat "$T/$n.after")"
  wait_grep 'store hazard: .*table engines' "$T/$n.log" 5 || fail "$n did not log the refusal within 5 s (the interval is 10 s): $(grep -i hazard "$T/$n.log" | tail -n 3)"
done
refused_ms=$(($(mono_ms) - t0))
both_refused() { grep -qv 200 "$T/seg.a.codes" 2>/dev/null && grep -qv 200 "$T/seg.b.codes" 2>/dev/null; }
wait_until 20 both_refused || log "a segment stream was never refused (its blocks lasted): $(sort "$T/seg.a.codes" | uniq -c | tr '\n' ' ') / $(sort "$T/seg.b.codes" | uniq -c | tr '\n' ' ')"
touch "$T/stop"
wait "${hammers[@]}" || true
cat "$T/seg.a" "$T/seg.b" >>"$T/seg.ids" 2>/dev/null || true
assert_unique "$T/seg.ids"
pass "MyISAM at run time: both servers refused sequence advances at once, naming it, and logged it within $refused_ms ms; $(wc -l <"$T/seg.ids") segment IDs from both, none twice"

my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = InnoDB" || fail "ALTER TABLE back failed"
for n in a b; do
  again() { [ "$(ik_http "http://127.0.0.1:${P[$1]}/v1/segment/s?count=5&format=text" "+$T/seg.ids")" = 200 ]; }
  wait_until 20 again "$n" || fail "$n does not serve segment IDs again on InnoDB: $(tail -n 3 "$T/$n.log")"
done
assert_unique "$T/seg.ids"
pass "InnoDB again: both serve; $(wc -l <"$T/seg.ids") segment IDs in all, none twice"
