#!/usr/bin/env bash
# labels: postgresql sql counters slots release
# timeout: 300
# processors: 2
# kill -9 of PostgreSQL, and a restart, while clients draw segment and sequence IDs
# from two servers that hold worker slots (docs/sql.md, "Failure model"), on a server of this
# test's own:
#   - no duplicate segment ID, no duplicate snowflake ID (both servers, both sides of
#     the outage), each server's snowflake IDs increasing;
#   - sequence IDs: the IDs answered plus the gaps the servers logged ("tag gap
#     tag=T first=A count=K") are exactly one run START..max_id-1: no unlogged gap,
#     no duplicate (a COMMIT whose answer the kill took is settled by its mark in
#     idk_commit_mark: handed out if it applied, a logged gap if it is settled later);
#   - both servers serve sequence IDs again within 10 s of the database's return,
#     without a restart of their own, on the worker slots they held.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
IK_STORE=local # counters.sh's helpers; the store is set here
CONF_COUNTERS=1
source "$IK_SRC/tests/tools/counters.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD

own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_start "$T/pg" || fail "PostgreSQL did not start"
DATA=$(pg_new_db "$PG_PORT" d)
SERVE_ARGS=()

fleet 2
add_tag s1 seg segment ',"step":2000'
add_tag s1 seq sequence ',"start":1'
w1=$(status_of "${PORT[s1]}" .worker)
w2=$(status_of "${PORT[s2]}" .worker)

# a request every 50 ms until $T/stop (lib.sh's probe)
probes=()
for s in s1 s2; do
  probe "seq.$s" "$(url "$s")/v1/sequence/seq?count=3&format=text" "$T/stop" 0.05 &
  probes+=($!)
  probe "snow.$s" "$(url "$s")/v1/snowflake?count=20&format=text" "$T/stop" 0.05 &
  probes+=($!)
  hammer "seg.$s" "$(url "$s")/api/segment/get/seg" 2 25 --reconnect
done
IK_PIDS+=("${probes[@]}")

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
pg_own_kill "$T/pg"
mono_ms down
log "PostgreSQL killed -9"
wait_until 60 outage_seen || fail "the servers never saw the database down"
pg_own_up "$T/pg" "$PG_PORT" || fail "PostgreSQL did not come back"
mono_ms up
log "PostgreSQL back after $((up - down)) ms"

# both serve sequence IDs again within 10 s of the return
back() { # back NAME: mono ms of the first 200 sent after $up, or empty
  awk -v up="$up" '$1 >= up && $2 == 200 { print $1; exit }' "$T/$1.st"
}
both_back() { [ -n "$(back seq.s1)" ] && [ -n "$(back seq.s2)" ]; }
wait_until 15 both_back || true
for s in s1 s2; do
  b=$(back "seq.$s")
  [ -n "$b" ] || fail "$s serves no sequence ID 12 s after the database's return: $(tail -n 5 "$T/$s.log")"
  (( b - up <= 10000 )) || fail "$s served again only $((b - up)) ms after the database's return"
  log "$s: sequence IDs again $((b - up)) ms after the database's return"
done
wait_until 60 serving_all "$up" || fail "the traffic does not flow again: $(tail -n 2 "$T"/seq.s*.st)"
touch "$T/stop"
for p in "${probes[@]}"; do wait "$p" || true; done
hammer_wait seg.s1
hammer_wait seg.s2

[ "$(status_of "${PORT[s1]}" .worker)" = "$w1" ] || fail "s1 changed worker"
[ "$(status_of "${PORT[s2]}" .worker)" = "$w2" ] || fail "s2 changed worker"
for s in s1 s2; do
  [ "$(status_of "${PORT[$s]}" .lease.state)" = held ] || fail "$s lease not held: $(status_of "${PORT[$s]}" .lease)"
  alive "${SERVER_PID[$s]}" || fail "$s died"
done
"${IDCHECK[@]}" unique "$T/seg.s1.ids" "$T/seg.s2.ids" >&2 || fail "duplicate segment IDs"
"${IDCHECK[@]}" unique "$T/snow.s1.ids" "$T/snow.s2.ids" >&2 || fail "duplicate snowflake IDs"
"${IDCHECK[@]}" increasing "$T/snow.s1.ids" >&2 || fail "s1's snowflake IDs do not increase"
"${IDCHECK[@]}" increasing "$T/snow.s2.ids" >&2 || fail "s2's snowflake IDs do not increase"
pass "segment: $(cat "$T"/seg.s*.ids | wc -l) IDs, snowflake: $(cat "$T"/snow.s*.ids | wc -l) IDs, no duplicate; slots kept ($w1, $w2)"

end=$(tag_field s1 seq max_id)
{ grep -ho 'tag gap tag=seq first=[0-9]* count=[0-9]*' "$T/s1.log" "$T/s2.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
"${IDCHECK[@]}" contiguous 1 "$end" "$T/seq.s1.ids" "$T/seq.s2.ids" "$T/gap.ids" >&2 ||
  fail "sequence IDs and logged gaps are not one run 1..$((end - 1))"
pass "sequence: $(cat "$T"/seq.s*.ids | wc -l) IDs answered, $(wc -l <"$T/gap.ids") in logged gaps: exactly 1..$((end - 1)); settled doubts: $(cat "$T/s1.log" "$T/s2.log" | grep -c 'doubt settled' || true)"

stop_clean s1
stop_clean s2
pass "clean exits"
