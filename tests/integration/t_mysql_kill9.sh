#!/usr/bin/env bash
# labels: mysql counters release
# timeout: 240
# kill -9 of mariadbd and its restart (docs/sql.md, "Failures") while clients draw
# segment, sequence and snowflake IDs from two servers that hold slots:
#   - no duplicate, of any kind;
#   - sequence: the IDs answered plus the gaps the servers logged ("tag gap ...")
#     are exactly one run from the start to max_id (no gap that was not logged);
#   - both servers serve sequence IDs and are ready (/readyz) again within 10 s of
#     the database's return, without a restart of their own.
# A server of its own (it is killed).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
DATA=$(my_uri k9)
SERVE_ARGS=(--lease-ttl 10000)
CONF_COUNTERS=1
source "$IK_SRC/tests/tools/counters.sh"

fleet 2
add_tag s1 seg segment ',"step":100000'
add_tag s1 seq sequence ',"start":1'
for s in s1 s2; do
  "$IK_BIN" next --server "$(url $s)" --count 2000 --batch 1000 segment seg >>"$T/warm.ids"
done

# a request every 100 ms until $T/probe.stop (lib.sh's probe)
probes=()
for s in s1 s2; do
  probe "seq.$s" "$(url $s)/v1/sequence/seq?count=3&format=text" "$T/probe.stop" 0.1 &
  probes+=($!)
  IK_PIDS+=($!)
  probe "snow.$s" "$(url $s)/v1/snowflake?count=5&format=text" "$T/probe.stop" 0.1 &
  probes+=($!)
  IK_PIDS+=($!)
  hammer "seg.$s" "$(url $s)/api/segment/get/seg" 1 30
done

# serving_all [SINCE]: every probe has 5 answers (sent since SINCE), the hammers IDs
serving_all() {
  local s
  for s in s1 s2; do
    probe_answered "seq.$s" 5 "${1:-0}" && probe_answered "snow.$s" 5 "${1:-0}" && [ -s "$T/seg.$s.ids" ] || return 1
  done
}
# outage_seen: both servers' sequence requests fail since the kill
outage_seen() { probe_refused seq.s1 "$down" && probe_refused seq.s2 "$down"; }
wait_until 60 serving_all || fail "the traffic does not flow: $(tail -n 2 "$T"/seq.s*.st)"
my_kill KILL
mono_ms down
wait_until 60 outage_seen || fail "the servers never saw the database down"
my_restart
mono_ms up
log "mariadb down for $((up - down)) ms"

# back: each server answers a sequence request and /readyz within 10 s
for s in s1 s2; do
  ok=0
  while (($(mono_ms) - up < 10000)); do
    if [ "$(http_status "$(url $s)/readyz")" = 200 ] &&
      [ "$(ik_http "$(url $s)/v1/sequence/seq?count=1&format=text" "$T/back.$s")" = 200 ]; then
      ok=1
      cat "$T/back.$s" >>"$T/seq.$s.ids"
      break
    fi
    sleep 0.1
  done
  ((ok)) || fail "$s does not serve 10 s after the database came back: $(tail -n 5 "$T/$s.log")"
  log "$s serves again $(($(mono_ms) - up)) ms after the database came back"
done
pass "both servers serve again within 10 s of the database's return"

wait_until 60 serving_all "$up" || fail "the traffic does not flow again: $(tail -n 2 "$T"/seq.s*.st)"
touch "$T/probe.stop"
wait "${probes[@]}"
hammer_wait seg.s1
hammer_wait seg.s2

"${IDCHECK[@]}" unique "$T/warm.ids" "$T/seg.s1.ids" "$T/seg.s2.ids" >&2 || fail "duplicate segment IDs"
pass "segment: $(($(hammer_field seg.s1 ok) + $(hammer_field seg.s2 ok))) answers, no duplicate"
cat "$T"/snow.s*.ids >"$T/snow.all"
"${IDCHECK[@]}" unique "$T/snow.all" >&2 || fail "duplicate snowflake IDs"
pass "snowflake: $(wc -l <"$T/snow.all") IDs, no duplicate"

end=$(my_sql -D "${DATA##*/}" -e "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'seq'")
{ grep -ho 'tag gap tag=seq first=[0-9]* count=[0-9]*' "$T/s1.log" "$T/s2.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
"${IDCHECK[@]}" contiguous 1 "$end" "$T/seq.s1.ids" "$T/seq.s2.ids" "$T/gap.ids" >&2 ||
  fail "sequence IDs and logged gaps are not one run"
pass "sequence: $(cat "$T"/seq.s*.ids | wc -l) answered and $(wc -l <"$T/gap.ids") in logged gaps are exactly 1..$((end - 1))"

stop_clean s1
stop_clean s2
pass "clean exits"
