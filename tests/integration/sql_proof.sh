# shellcheck shell=bash
# sql_proof.sh: a durability setting turned unsafe between two writes of a running
# server, on an SQL store (bash, sourced by t_mysql_proof.sh and t_pg_proof.sh after
# lib.sh; docs/hazards.md, "Proof with every write"). The caller sets
#   URI           a fresh database of a server of its own
#   unsafe_set    a function that makes a durability setting unsafe, returning once
#                 the server applies it
#   unsafe_unset  one that puts it back
#   UNSAFE_NAME   the setting as the hazard row names it ("synchronous_commit is off")
# With a long hazard interval (--lease-ttl 30000: 10 s), the sequence request sent
# right after unsafe_set returned is answered 503 naming it (the setting rides in
# the advance's own round trip), /readyz fails within 2 s (the renewal's round trip
# carries it too), not after the 10 s interval, and a log line names it; once put
# back, the server serves again, and the sequence IDs answered form one run from 1.
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
serve_on b --coord "$URI" --lease-ttl 30000 || fail "server b did not start: $(tail -n 5 "$T/b.log")"
PB=$PORT
base=http://127.0.0.1:$PB
: >"$T/seq.ids"
seq_get() {
  local code
  code=$(ik_http "$base/v1/sequence/q?count=5&format=text" "$T/seq.body")
  [ "$code" != 200 ] || cat "$T/seq.body" >>"$T/seq.ids"
  echo "$code"
}
for i in 1 2 3; do [ "$(seq_get)" = 200 ] || fail "no sequence IDs before the setting: $(cat "$T/seq.body")"; done
sleep 1 # let time pass: the pooled connection's last check is fresh: the interval (10 s) is far off
unsafe_set
mono_ms t0
code=$(seq_get)
[ "$code" = 503 ] || fail "the sequence request sent after $UNSAFE_NAME was answered $code: $(cat "$T/seq.body")"
grep -q "$UNSAFE_NAME" "$T/seq.body" || fail "the 503 does not name the setting: $(cat "$T/seq.body")"
rz() { [ "$(ik_http "$base/readyz" "$T/readyz.body")" = 503 ]; }
wait_until 2 rz || fail "/readyz still 200 2 s after the setting (the interval is 10 s): $(cat "$T/readyz.body")"
rzms=$(($(mono_ms) - t0))
grep -q "$UNSAFE_NAME" "$T/readyz.body" || fail "/readyz does not name the setting: $(cat "$T/readyz.body")"
wait_grep "store hazard: .*$UNSAFE_NAME" "$T/b.log" 2 || fail "no log line names the setting: $(tail -n 5 "$T/b.log")"
for i in 1 2 3; do [ "$(seq_get)" = 503 ] || fail "a sequence request answered while $UNSAFE_NAME"; done
unsafe_unset
serving() { [ "$(seq_get)" = 200 ] && ready_probe "$PB"; }
wait_until 3 serving || fail "not serving 3 s after the setting was put back: $(tail -n 5 "$T/b.log")"
assert_unique "$T/seq.ids"
assert_increasing "$T/seq.ids"
[ "$(tail -n 1 "$T/seq.ids")" = "$(wc -l <"$T/seq.ids")" ] || fail "the sequence IDs answered are not one run from 1: $(tr '\n' ' ' <"$T/seq.ids")"
pass "$UNSAFE_NAME under a server with a 10 s interval: the next sequence request 503 naming it, /readyz failing after $rzms ms; put back: serving, $(wc -l <"$T/seq.ids") sequence IDs in one run"
