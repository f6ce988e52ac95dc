#!/usr/bin/env bash
# labels: zk counters
# timeout: 240
# SIGTERM with ZooKeeper frozen (docs/guarantees.md promise 13; docs/http.md,
# "Shutdown"): a patient server (a 48 s session) has handed out sequence IDs 1-6;
# its ZooKeeper is stopped with SIGSTOP; then a GET /v1/workers, a GET /v1/status
# and a sequence request for 3 IDs are in flight, and SIGTERM comes. The server
# exits 0 within --shutdown-timeout + 1 s, and once ZooKeeper resumes, every ID up
# to the store's max_id was answered or lies in a logged gap. Then SIGTERM during
# the start of a second server on the frozen ZooKeeper ends that start at once.
# Before the fix: still running 30 s after SIGTERM (the supervisor's SIGKILL would
# land first), its main thread joining a loop that waited for /v1/workers' listing
# in the thread pool, a synchronous ZooKeeper call with no deadline; and IDs 7-9,
# recorded once ZooKeeper resumed, were handed to nobody and named by no line.
source "$(dirname "$0")/lib.sh"
IK_STORE=zk
ZK_SESSION_MS=48000
source "$IK_SRC/tests/tools/counters.sh"

STOP_MS=5000
BOUND_MS=$((STOP_MS + 1000))
zk_thaw() { [ -n "${ZK_PID[1]:-}" ] && kill -CONT "${ZK_PID[1]}" 2>/dev/null; return 0; }
IK_CLEANUPS+=(zk_thaw)

fleet 1 --shutdown-timeout $STOP_MS
add_tag s1 orders sequence ',"start":1'
: >"$T/ids"
for i in 1 2; do
  curl -fsS "$(url s1)/v1/sequence/orders?count=3&format=text" | sed '/^$/d' >>"$T/ids" ||
    fail "request $i failed before any fault"
done

kill -STOP "${ZK_PID[1]}"
log "ZooKeeper stopped (SIGSTOP)"
# pending: the server's gauge of requests waiting for the store
pending_at_least() {
  local n
  n=$(curl -fsS -m 2 "$(url s1)/metrics" | awk '/^ik_pending_requests /{ print $2 }') || return 1
  ((${n:-0} >= $1))
}
curl -sS -m 60 -o /dev/null "$(url s1)/v1/workers" 2>/dev/null &
curl -sS -m 60 -o /dev/null "$(url s1)/v1/status" 2>/dev/null &
curl -sS -m 60 "$(url s1)/v1/sequence/orders?count=3&format=text" >"$T/late" 2>/dev/null &
late=$!
wait_until 10 pending_at_least 2 || fail "the requests never reached the store: $(curl -sS "$(url s1)/metrics" | grep pending)"

rc=0
mono_ms t0
kill -TERM "${SERVER_PID[s1]}"
wait_until 40 not alive "${SERVER_PID[s1]}" || true
took=$(($(mono_ms) - t0))
alive "${SERVER_PID[s1]}" && { kill -KILL "${SERVER_PID[s1]}"; log "s1 still ran $took ms after SIGTERM: SIGKILL, as a supervisor would"; }
wait "${SERVER_PID[s1]}" || rc=$?
wait "$late" || true
sed '/^$/d' "$T/late" | grep -E '^[0-9]+$' >>"$T/ids" || true
log "s1 exited $rc, $took ms after SIGTERM"

# SIGTERM during a start whose store is frozen: the open waits on ZooKeeper (its
# connection wait, 8 s here); the signal ends the start at once, named in the log.
# Before the fix: exit 1 "cannot reach ZooKeeper" once the open gave up, no word of
# the signal.
zk_connected() { [ -n "$(ss -Htn state established "( dport = :$(zk_port 1) )")" ]; }
PORT[s2]=$(free_port)
start_server s2 "${PORT[s2]}" --coord "$DATA" --threads 1 "${SERVE_ARGS[@]}" --shutdown-timeout $STOP_MS
wait_until 20 zk_connected || fail "s2 never connected to ZooKeeper: $(tail -n 3 "$T/s2.log")"
rc2=0
mono_ms t0
kill -TERM "${SERVER_PID[s2]}"
wait "${SERVER_PID[s2]}" || rc2=$?
took2=$(($(mono_ms) - t0))
log "s2 exited $rc2, $took2 ms after SIGTERM during its start: $(tail -n 1 "$T/s2.log")"
grep -q 'SIGTERM during start-up' "$T/s2.log" || fail "s2: the signal is not named: $(tail -n 3 "$T/s2.log")"
((rc2 == 0 && took2 <= 2000)) || fail "s2 exited $rc2, $took2 ms after SIGTERM during its start"
pass "SIGTERM during a start on a frozen ZooKeeper: exit 0 in $took2 ms, the signal named"

kill -CONT "${ZK_PID[1]}"
log "ZooKeeper resumed"

end=$(counter_raw orders | cut -d' ' -f1)
grep -ho 'tag gap tag=orders first=[0-9?]* count=[0-9]*' "$T/s1.log" >"$T/gaps" || true
log "store max_id $end; answered $(wc -l <"$T/ids"); gaps: $(tr '\n' ' ' <"$T/gaps")"
((took <= BOUND_MS)) ||
  fail "s1 exited $took ms after SIGTERM, past --shutdown-timeout $STOP_MS + 1 s: $(grep -E 'SIGTERM|stop|gap|worker|bye' "$T/s1.log" | tail -n 8)"
((rc == 0)) || fail "s1 exited $rc after SIGTERM: $(tail -n 8 "$T/s1.log")"
# every recorded ID answered or in a logged gap: first=? counts its IDs wherever they lie
unknown=$(sed -n 's/.*first=? count=\([0-9]*\)/\1/p' "$T/gaps" | awk '{ s += $1 } END { print s + 0 }')
sed -n 's/.*first=\([0-9][0-9]*\) count=\([0-9]*\)/\1 \2/p' "$T/gaps" |
  while read -r f n; do seq "$f" $((f + n - 1)); done >"$T/gap.ids"
missing=$(comm -13 <(sort -u "$T/ids" "$T/gap.ids") <(seq 1 $((end - 1)) | sort -u) | wc -l)
((missing <= unknown)) ||
  fail "IDs 1..$((end - 1)) recorded: $missing of them neither answered nor logged (first=? gaps cover $unknown): $(grep -E 'SIGTERM|gap|doubt|bye' "$T/s1.log")"
pass "exit 0 in $took ms with ZooKeeper frozen; 1..$((end - 1)) answered or logged ($(tr '\n' ' ' <"$T/gaps"))"
