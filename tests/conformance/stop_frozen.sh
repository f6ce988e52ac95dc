#!/usr/bin/env bash
# labels: counters
# timeout: 240
# SIGTERM with the store frozen and a request in flight on every route that waits on
# it (docs/guarantees.md promise 13; docs/http.md, "Shutdown"): the process exits 0
# within --shutdown-timeout + 1 s whatever the store does, and every range the store
# recorded was answered or logged.
#
#   1. a patient server (a lease TTL or session of 48 s, conf_slow_args: the
#      store's own clients give a connection up only after 2/3 of it, past the
#      stop's bound) through the fault proxy, --shutdown-timeout 5 s, the range's use listed at every
#      sampler tick (IDKEEPER_TEST_RANGE_LIST_MS, docs/testing.md); sequence IDs 1-6
#      handed out, a segment tag made;
#   2. a request for 3 sequence IDs: its write lands, and the store freezes for the
#      server right after it (conf_fault_freeze_after_write: the fault proxy passes
#      every request on and nothing back, on old and new connections, as a store
#      stopped by SIGSTOP right after the write; t_zk_stop_frozen freezes a
#      ZooKeeper of its own with SIGSTOP);
#   3. in flight besides: a segment block's load, GET /v1/workers, GET
#      /v1/tags/orders, GET /v1/tags, the status page, GET /v1/status (answered from
#      memory), and the history's listing of the range (thread pool);
#   4. SIGTERM: exit 0 within 6 s; every request answered or its connection closed;
#      the log says one thing of the slot (released, in doubt, not sent, or lost:
#      never "released" and then something else); once the store answers again, IDs
#      1 to its max_id are each answered or in a logged gap (a gap of unknown place,
#      first=?, covers its count).
# Before the fix, on zk:// the stop waited for the listings' synchronous ZooKeeper
# calls, which no cut reaches, until the client gave the connection up (2/3 of the
# session: 30 s); on every backend the log said "lease released: worker N:
# released", then "release of worker N not sent" (or "in doubt").
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
source "$(dirname "$0")/doubt_cases.sh"
doubt_setup
STOP_MS=5000
BOUND_MS=$((STOP_MS + 1000))

PORT[s1]=$(free_port)
# shellcheck disable=SC2046 # the options' words
IDKEEPER_TEST_RANGE_LIST_MS=1 start_server s1 "${PORT[s1]}" --coord "$VIA" --threads 1 \
  "${SERVE_ARGS[@]}" $(conf_slow_args 12000) --shutdown-timeout $STOP_MS
wait_ready "${PORT[s1]}" 60 || fail "s1 not ready: $(tail -n 5 "$T/s1.log")"
for i in 1 2; do doubt_get s1 3 || fail "s1: request $i failed before any fault"; done
add_tag s1 seg segment
U=$(url s1)

# listed_within MS, listed_before MS: the history's last listing of the range ended
# at most, more than MS ago (it lists at every tick, once a second, unless a listing
# is under way)
listed_age() {
  local at now
  at=$(status_of "${PORT[s1]}" .worker_range.listed_ms)
  now_ms now
  [ -n "$at" ] && ((at > 0)) && echo $((now - at))
}
listed_within() { local a; a=$(listed_age) && ((a <= $1)); }
listed_before() { local a; a=$(listed_age) && ((a > $1)); }
pending_at_least() {
  local n
  n=$(curl -fsS -m 2 "$U/metrics" | awk '/^ik_pending_requests /{ print $2 }') || return 1
  ((${n:-0} >= $1))
}
wait_until 20 listed_within 1500 || fail "s1's history does not list the range: $(status_of "${PORT[s1]}" .worker_range)"

# route NAME PATH: one request in the background, its status code into $T/NAME.code
route() {
  (curl -sS -m 60 -o "$T/$1.body" -w '%{http_code}' "$U$2" >"$T/$1.code" 2>/dev/null || true) &
  ROUTES+=($!)
}
ROUTES=()
conf_fault_freeze_after_write
route seq '/v1/sequence/orders?count=3&format=text'
wait_until 60 doubt_stored 10 || fail "the write of IDs 7-9 never reached the store: max_id $(conf_counter_raw "$DATA" orders)"
log "the store applied the write of IDs 7-9, and answers nothing any more"
route segment '/v1/segment/seg?count=1&format=text'
route workers /v1/workers
route tag /v1/tags/orders
route tags /v1/tags
route page /
route status /v1/status
# five of them wait on the store (the pending-requests gauge), and the history's
# listing began after the freeze: the last one ended over 2.5 s ago, and one starts
# at each tick while none is under way
wait_until 30 pending_at_least 6 || fail "the requests never reached the store: $(curl -sS "$U/metrics" | grep pending)"
wait_until 30 listed_before 2500 || fail "the history listing did not wait on the frozen store: $(status_of "${PORT[s1]}" .worker_range) now $(now_ms)"

rc=0
mono_ms t0
kill -TERM "${SERVER_PID[s1]}"
wait_until 40 not alive "${SERVER_PID[s1]}" || true
took=$(($(mono_ms) - t0))
if alive "${SERVER_PID[s1]}"; then
  kill -KILL "${SERVER_PID[s1]}"
  log "s1 still ran $took ms after SIGTERM: SIGKILL, as a supervisor would"
fi
wait "${SERVER_PID[s1]}" || rc=$?
for p in "${ROUTES[@]}"; do wait "$p" || true; done
proxy unmute
log "s1 exited $rc, $took ms after SIGTERM; answers: $(for r in seq segment workers tag tags page status; do printf '%s=%s ' $r "$(cat "$T/$r.code")"; done)"

((took <= BOUND_MS)) ||
  fail "s1 exited $took ms after SIGTERM, past --shutdown-timeout $STOP_MS + 1 s: $(grep -E 'SIGTERM|cut|gap|worker|bye' "$T/s1.log" | tail -n 8)"
((rc == 0)) || fail "s1 exited $rc after SIGTERM: $(tail -n 8 "$T/s1.log")"
grep -qE 'runtime error|Sanitizer' "$T/s1.log" && fail "sanitizer report: $(cat "$T/s1.log")"
[ "$(cat "$T/status.code")" = 200 ] || fail "GET /v1/status, answered from memory, got $(cat "$T/status.code")"

# one word of the slot's fate
fate=$(grep -cE 'released worker [0-9]+; bye|release of worker [0-9]+ (in doubt|not sent)|was lost before its release|held no worker slot' "$T/s1.log" || true)
((fate == 1)) || fail "the log says $fate things of the slot's release: $(grep -E 'releas|lost' "$T/s1.log")"
if grep -qE 'release of worker [0-9]+ (in doubt|not sent)|was lost before its release' "$T/s1.log"; then
  grep -E 'lease released: worker [0-9]+: released$' "$T/s1.log" &&
    fail "the log says the slot was released, then that it was not: $(grep -E 'releas' "$T/s1.log")"
fi

# every recorded ID answered or logged: the sequence's answered IDs are $T/ids
[ "$(cat "$T/seq.code")" = 200 ] && sed '/^$/d' "$T/seq.body" >>"$T/ids"
end=$(conf_counter_raw "$DATA" orders)
grep -ho 'tag gap tag=orders first=[0-9?]* count=[0-9]*' "$T/s1.log" >"$T/gaps" || true
unknown=$(sed -n 's/.*first=? count=\([0-9]*\)/\1/p' "$T/gaps" | awk '{ s += $1 } END { print s + 0 }')
sed -n 's/.*first=\([0-9][0-9]*\) count=\([0-9]*\)/\1 \2/p' "$T/gaps" |
  while read -r f n; do seq "$f" $((f + n - 1)); done >"$T/gap.ids"
missing=$(comm -13 <(sort -u "$T/ids" "$T/gap.ids") <(seq 1 $((end - 1)) | sort -u) | wc -l)
((missing <= unknown)) ||
  fail "IDs 1..$((end - 1)) recorded: $missing of them neither answered nor logged (first=? gaps cover $unknown): $(grep -E 'SIGTERM|gap|doubt|bye' "$T/s1.log")"
pass "exit 0 in $took ms with the store frozen and 7 requests in flight; 1..$((end - 1)) answered or logged ($(tr '\n' ' ' <"$T/gaps"))"
