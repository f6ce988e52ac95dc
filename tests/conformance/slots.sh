#!/usr/bin/env bash
# labels: slots release
# timeout: 300
# timeout.zk: 360
# Worker slots on the backend (docs/guarantees.md promises 6-9):
#   distinct   8 servers with --worker-range 0-7 (random slot choice) hold 8 distinct
#              slots of the range;
#   refusal    a 9th waits the backend's default --slot-wait (local: 0, zk://: the
#              session timeout + 2 s), then exits non-zero naming the range and the
#              holders;
#   kill -9    while all 8 serve IDs, one is killed -9: a server started at once in
#              the full range takes its slot within its default --slot-wait (the
#              backend's free time + 2 s); the dead one issued nothing above
#              the slot's time record (read without idkeeper), the new holder issues
#              only above it, under the same worker number;
#   sticky     all stop (SIGTERM), then all but one start again at once, in the
#              reverse order: each gets its old slot back; then a newcomer gets the
#              one left free;
#   IDs        every ID of every server in both lives: each server's increasing, no
#              duplicate anywhere (1,149,000+ on the plain build, label release;
#              299,000+ under a sanitizer, whose run is for the memory checks of these
#              paths: the volume's cost there is the test's own, a fetch and a sort,
#              the same on both builds).
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start

C=$(conf_coord slots)
# ROUNDS of 12,500 IDs from each of 7 servers while s3 dies, VOLUME IDs from its heir
if [ -n "${IK_SANITIZE:-}" ]; then ROUNDS=2 VOLUME=50000; else ROUNDS=10 VOLUME=200000; fi
# and s3's 50,000 before, 3,000 from each of the 8 after the restart: at least
MIN_IDS=$((7 * ROUNDS * 12500 + 50000 + VOLUME + 8 * 3000))
S=(--coord "$C" --worker-range 0-7 --slot-choice random --quiet "${CONF_SERVE_ARGS[@]}")
declare -A PORT WORKER
worker_of() { status_of "$1" .worker; }
# fetch_patient PORT N OUT: fetch_ids, tried again (up to 50 times) when the server
# refuses for a moment: a lease thread starved by a loaded machine (ASan, 2 cores
# shared) may let the lease's proof run out, and the server then rightly answers 503
# until it renews. Every ID received, a failed try's included, is kept in OUT.
fetch_patient() {
  local try
  for ((try = 0; try < 50; try++)); do
    fetch_ids "$1" "$2" "$3" 2>>"$T/fetch.err" && return 0
    sleep 0.2
  done
  return 1
}

# ---- distinct ----------------------------------------------------------------------
for i in 0 1 2 3 4 5 6 7; do
  PORT[s$i]=$(free_port)
  start_server s$i "${PORT[s$i]}" "${S[@]}"
done
for i in 0 1 2 3 4 5 6 7; do wait_ready "${PORT[s$i]}" 60 || fail "server s$i not ready: $(tail -n 3 "$T/s$i.log")"; done
for i in 0 1 2 3 4 5 6 7; do WORKER[s$i]=$(worker_of "${PORT[s$i]}"); done
distinct=$(printf '%s\n' "${WORKER[@]}" | sort -u | wc -l)
[ "$distinct" -eq 8 ] || fail "8 servers hold $distinct distinct slots: ${WORKER[*]}"
for w in "${WORKER[@]}"; do [ "$w" -ge 0 ] && [ "$w" -le 7 ] || fail "worker $w outside 0-7"; done
pass "8 servers hold 8 distinct slots: ${WORKER[*]}"

# ---- refusal -----------------------------------------------------------------------
wait_ms=$(conf_slot_wait_ms)
p9=$(free_port)
mono_ms t0
rc=0
timeout $((wait_ms / 1000 + 30)) "$IK_BIN" serve "${S[@]}" --http 127.0.0.1:"$p9" --identity ninth \
  >"$T/ninth.log" 2>&1 || rc=$?
took=$(($(mono_ms) - t0))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "9th server: exit code $rc (want non-zero, not a timeout)"
((took >= wait_ms)) || fail "9th server gave up after $took ms, before the default --slot-wait $wait_ms"
((took < wait_ms + 15000)) || fail "9th server took $took ms to give up (--slot-wait $wait_ms)"
# (local: "all 8 slots 0-7 of app default in local:DIR are held: ...", zk://: "all
# 8 slots of app default in 0-7 are held: ...": the range and each holder, worded
# by the backend)
grep 'cannot take a worker slot' "$T/ninth.log" | grepq '0-7.* are held: ' ||
  fail "refusal does not name the range: $(cat "$T/ninth.log")"
for i in 0 1 2 3 4 5 6 7; do
  grep -q "${WORKER[s$i]} by s$i" "$T/ninth.log" || fail "refusal does not name holder s$i: $(cat "$T/ninth.log")"
done
pass "9th server refused after $took ms (--slot-wait $wait_ms): $(grep -m1 -o 'cannot take.*' "$T/ninth.log" | head -c 300)"

# ---- kill -9 while all serve ---------------------------------------------------------
fetchers=()
for i in 0 1 2 4 5 6 7; do
  (for ((r = 0; r < ROUNDS; r++)); do fetch_patient "${PORT[s$i]}" 12500 "$T/ids.1.s$i"; done) &
  fetchers+=($!)
done
fetch_patient "${PORT[s3]}" 50000 "$T/ids.1.s3"
victim=${WORKER[s3]}
kill -KILL "${SERVER_PID[s3]}"
wait "${SERVER_PID[s3]}" 2>/dev/null || true
mono_ms t_kill
# s3 is dead: the slot's record stays as s3 left it until the next holder writes
rec=$(conf_slot_record "$C" default "$victim")
PORT[s8]=$(free_port)
start_server s8 "${PORT[s8]}" "${S[@]}"
# s8's default --slot-wait (the free time + 2 s, docs/guarantees.md promise 9) is the bound: had the
# slot not freed within it, s8 would have exited. The test's own clock only logs the
# time (a loaded machine must not fail it).
wait_ready "${PORT[s8]}" $(($(conf_slot_wait_ms) / 1000 + 30)) || fail "replacement server not ready: $(tail -n 3 "$T/s8.log")"
took=$(($(mono_ms) - t_kill))
alive "${SERVER_PID[s8]}" || fail "s8 exited"
w8=$(worker_of "${PORT[s8]}")
[ "$w8" = "$victim" ] || fail "replacement took slot $w8, not the freed $victim"
[ -n "$rec" ] && [ "$rec" -gt 0 ] || fail "no time record for slot $victim: '$rec'"
amax=$(ids_time_max "$T/ids.1.s3")
((amax <= rec)) || fail "s3 issued an ID at $amax, above its slot's record $rec"
fetch_patient "${PORT[s8]}" "$VOLUME" "$T/ids.1.s8"
ids_time_check "$T/ids.1.s8" "$rec"
[ "$(ids_workers "$T/ids.1.s8")" = "$victim" ] || fail "s8 issued under workers $(ids_workers "$T/ids.1.s8")"
for p in "${fetchers[@]}"; do wait "$p" || fail "a fetcher failed"; done
pass "s3 killed -9: s8 took slot $victim after $took ms; s3's IDs at or below the record $rec, s8's above"

# ---- sticky --------------------------------------------------------------------------
# All stop; all but s7 start again, in the reverse order, and a newcomer with them:
# each gets its old slot back, the newcomer the one left free (s7's).
WORKER[s8]=$w8
for i in 0 1 2 4 5 6 7 8; do
  kill -TERM "${SERVER_PID[s$i]}"
  wait "${SERVER_PID[s$i]}" || fail "s$i did not exit 0 on SIGTERM"
done
for i in 8 6 5 4 2 1 0; do start_server s$i "${PORT[s$i]}" "${S[@]}"; done
for i in 0 1 2 4 5 6 8; do
  wait_ready "${PORT[s$i]}" 60 || fail "s$i not ready again: $(tail -n 3 "$T/s$i.log")"
  w=$(worker_of "${PORT[s$i]}")
  [ "$w" = "${WORKER[s$i]}" ] || fail "s$i got slot $w, not its old ${WORKER[s$i]}"
  fetch_patient "${PORT[s$i]}" 3000 "$T/ids.2.s$i"
done
# (the newcomer only now: a random choice may take any free slot, also one whose
# last holder is still on its way back; docs/guarantees.md promise 8 gives it back only if free)
pe=$(free_port)
start_server e "$pe" "${S[@]}"
wait_ready "$pe" 60 || fail "newcomer not ready: $(tail -n 3 "$T/e.log")"
we=$(worker_of "$pe")
[ "$we" = "${WORKER[s7]}" ] || fail "the newcomer took $we, not the one free slot ${WORKER[s7]}"
fetch_patient "$pe" 3000 "$T/ids.2.e"
pass "after SIGTERM and a restart in the reverse order each server got its slot back; the newcomer took the free $we"

# ---- IDs -------------------------------------------------------------------------------
for f in "$T"/ids.*; do assert_increasing "$f"; done
cat "$T"/ids.* >"$T/all"
total=$(wc -l <"$T/all")
((total >= MIN_IDS)) || fail "only $total IDs fetched (want $MIN_IDS)"
assert_unique "$T/all"
pass "$total IDs from 10 servers in two lives: each server's increasing, no duplicate"
