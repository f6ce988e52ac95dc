#!/usr/bin/env bash
# labels: zk hazards
# timeout: 420
# processors: 2
# Store hazards that depend on which member answers (docs/hazards.md, "ZooKeeper"),
# on an ensemble of the test's own: 3 voters (member 3 with forceSync=no) and an
# observer (member 4).
# 1. A session on the observer: forceSync is a risk that names the voters, never ok
#    on the observer's own fsync (the voters log and commit our writes); check
#    exits 5.
# 2. Behind a TCP load balancer (balancer.py: the session's connection to one member,
#    every later connection round robin over others), the four-letter words reach
#    another member than the session's: the rows they judge read "?" (risks), never
#    ok or refused on that member's word. a: the session on member 3 (forceSync=no),
#    the words on 1 and 2 (forceSync=yes): not ok. b: the session on member 1, the
#    words on member 3: not refused.
# 3. A server whose reconnect's check got no answer to mntr (a raw fault proxy in
#    front of member 1 loses that answer) shows forceSync "?", and is checked in full
#    again at a later hazard interval until every word answered: its /v1/status
#    then reads forceSync yes within the interval + slack.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

CHECK_SLACK=${CHECK_SLACK:-30} # the interval (1.3 s here) + 2 s, a loaded machine

check_rc() { # check_rc OUT ARGS...: runs check, prints its exit status
  local out=$1 rc=0
  shift
  "$IK_BIN" check "$@" >"$out" 2>"$out.err" || rc=$?
  echo "$rc"
}

# balancer_start FIRST REST...: a balancer.py of its own; sets LB (its port)
balancer_start() {
  local i
  LB=$(zk_free_port)
  : >"$T/lb.$LB.log"
  /usr/bin/python3 "$IK_SRC/tests/integration/balancer.py" "$LB" "$@" >>"$T/lb.$LB.log" 2>&1 &
  IK_PIDS+=($!)
  for ((i = 0; i < 100; i++)); do
    grep -q ready "$T/lb.$LB.log" && return 0
    sleep 0.05
  done
  fail "the balancer did not start: $(cat "$T/lb.$LB.log")"
}

zk_start_ensemble 4 1
P1=$(zk_port 1) P2=$(zk_port 2) P3=$(zk_port 3) P4=$(zk_port 4)
zk_stop 3
ZK_FORCE_SYNC=no zk_start 3
zk_wait_quorum
zk_4lw 4 srvr | grepq '^Mode: observer' || fail "member 4 is not an observer: $(zk_4lw 4 srvr)"
rc=$(check_rc "$T/m3.out" --coord "zk://127.0.0.1:$P3/hz")
grepq -E "^forceSync +no \\(127\\.0\\.0\\.1:$P3: .* refused" "$T/m3.out" || fail "member 3 (forceSync=no) not refused (exit $rc): $(cat "$T/m3.out" "$T/m3.out.err")"

# 1. an observer
rc=$(check_rc "$T/obs.out" --coord "zk://127.0.0.1:$P4/hz")
grepq -E "^forceSync +\\? \\(127\\.0\\.0\\.1:$P4 is an observer.* risk .*voter" "$T/obs.out" ||
  fail "check through the observer (exit $rc): forceSync is not a risk naming the voters: $(cat "$T/obs.out" "$T/obs.out.err")"
[ "$rc" = 5 ] || fail "check through the observer exited $rc: $(cat "$T/obs.out")"
pass "a session on an observer: forceSync a risk that tells to check the voters, check exits 5"

# 2. a load balancer
balancer_start "$P3" "$P1" "$P2"
rc=$(check_rc "$T/lb_a.out" --coord "zk://127.0.0.1:$LB/hz")
grepq -E "^forceSync +\\? .* risk " "$T/lb_a.out" ||
  fail "session on member 3 (forceSync=no), words on 1 and 2: forceSync judged on another member's word (exit $rc): $(cat "$T/lb_a.out" "$T/lb_a.out.err" "$T/lb.$LB.log")"
grepq -E "^read-only +\\? .* risk " "$T/lb_a.out" || fail "read-only judged on another member's word: $(cat "$T/lb_a.out")"
[ "$rc" = 5 ] || fail "check behind the balancer exited $rc: $(cat "$T/lb_a.out")"
balancer_start "$P1" "$P3"
rc=$(check_rc "$T/lb_b.out" --coord "zk://127.0.0.1:$LB/hz")
grepq -E "^forceSync +\\? .* risk " "$T/lb_b.out" ||
  fail "session on member 1, words on member 3 (forceSync=no): forceSync judged on another member's word (exit $rc): $(cat "$T/lb_b.out" "$T/lb_b.out.err" "$T/lb.$LB.log")"
! grepq ' refused ' "$T/lb_b.out" || fail "a row refused on another member's word: $(cat "$T/lb_b.out")"
[ "$rc" = 5 ] || fail "check behind the balancer exited $rc: $(cat "$T/lb_b.out")"
pass "behind a load balancer: the words' rows are risks (\"?\"), never ok or refused on another member's word"

# ... and a member with hundreds of connections, whose cons answer is read in pieces:
# our session is found in it wherever it falls
/usr/bin/python3 -c '
import socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(400)]
print("held", flush=True)
time.sleep(120)' "$P1" >"$T/idle.log" 2>&1 &
IK_PIDS+=($!)
wait_grep held "$T/idle.log" 30 || fail "400 idle connections: $(cat "$T/idle.log")"
size=$(zk_4lw 1 cons | wc -c)
((size > 16384)) || fail "member 1's cons answer is only $size bytes with 400 idle connections"
rc=$(check_rc "$T/busy.out" --coord "zk://127.0.0.1:$P1/hz")
grepq -E "^forceSync +yes \\(127\\.0\\.0\\.1:$P1: .* ok " "$T/busy.out" && grepq -E "^read-only +rw .* ok " "$T/busy.out" ||
  fail "member 1 with a $size-byte cons answer: not judged on its own word (exit $rc): $(cat "$T/busy.out" "$T/busy.out.err")"
pass "a member whose cons answer is $size bytes: the session found in it, forceSync and read-only judged"

# 3. one mntr unanswered, at the full check of a reconnect
PP=$(zk_free_port)
fault_proxy_start "$PP" "$P1" raw || fail "the fault proxy did not start: $(cat "$T/proxy.log")"
serve_on s --coord "zk://127.0.0.1:$PP/hz" --zk-session-timeout 4000 || fail "server: $(tail -n 5 "$T/s.log")"
forcesync() { status_of "$PORT" '.store.hazards[] | select(.check == "forceSync") | .value'; }
synced() { forcesync | grepq '^yes '; }
wait_until "$CHECK_SLACK" synced || fail "forceSync not yes at start: '$(forcesync)'"
proxy answer-lost 1 mntr
proxy down # the session connects again: a new connection, checked in full (the
proxy up   # proxy closed every connection: whatever connects next is new)
wait_grep 'forceSync is ? (no answer to mntr from' "$T/s.log" "$CHECK_SLACK" ||
  fail "the reconnect's check saw its mntr answered: $(tail -n 5 "$T/s.log"; cat "$T/proxy.log")"
wait_until "$CHECK_SLACK" synced ||
  fail "forceSync still '$(forcesync)' ${CHECK_SLACK} s after its mntr went unanswered: $(tail -n 5 "$T/s.log")"
kill -TERM "${SERVER_PID[s]}"
wait "${SERVER_PID[s]}" || fail "server did not exit 0"
pass "one unanswered mntr: checked in full again, forceSync reads yes"
