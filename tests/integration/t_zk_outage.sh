#!/usr/bin/env bash
# labels: zk release
# timeout: 150
# ZooKeeper stopped for less than the session timeout and started again: servers keep
# serving within the safe window (2/3 of the session timeout from the last answer)
# and carry on with the same session. Stopped for longer: servers stop issuing
# within the safe window, and when ZooKeeper is back they hold slots and serve again,
# without a restart. No duplicate in all of it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
# s1, s2: 8 s sessions (safe window 5333 ms), so a restart of the JVM fits in it;
# l1, l2: 3 s sessions (safe window 2000 ms).
declare -A P WIN
for n in s1 s2 l1 l2; do P[$n]=$(zk_free_port); done
for n in s1 s2; do ZK_SESSION_MS=8000 zk_serve "$n" "${P[$n]}" --worker-range 0-3; WIN[$n]=5333; done
for n in l1 l2; do ZK_SESSION_MS=3000 zk_serve "$n" "${P[$n]}" --worker-range 0-3; WIN[$n]=2000; done
declare -A SESSION
for n in s1 s2 l1 l2; do
  wait_ready "${P[$n]}" || fail "$n not ready"
  SESSION[$n]=$(status_of "${P[$n]}" .lease.session)
done
for n in s1 s2 l1 l2; do fetch_loop "${P[$n]}" "$T/ids.$n"; done
wait_until 30 fetched_all 10 || fail "the fetch loops get no IDs"

# Windows are counted from the last write each server sent before ZooKeeper died:
# at most half the persist interval (500 ms), plus scheduling delays, before the
# kill. So "still served" is checked up to t_kill + window - 1000 ms (t_kill read
# before the kill), and "no longer served" from t_stop + window (t_stop read once
# the JVM is gone).

# 1. A short outage: kill -9, start again at once.
now_ms t_kill
zk_stop 1
now_ms t_stop
zk_start 1
zk_wait_serving 1
now_ms t_up
log "ZooKeeper down for $((t_up - t_stop)) ms"
for n in s1 s2; do
  # Every request up to the end of the safe window (or ZooKeeper's return plus 1 s,
  # whichever is first) was served.
  end=$(( t_up + 1000 < t_kill + WIN[$n] - 1000 ? t_up + 1000 : t_kill + WIN[$n] - 1000 ))
  st_check "$T/ids.$n.st" "$t_kill" "$end" ok
done
for n in s1 s2; do
  # and they carry on, on the same session. (The C client reconnects at once, but a
  # JVM that accepted its connection while still loading may leave the handshake
  # unanswered: the client then retries after 2/3 of the session timeout.)
  wait_held "${P[$n]}" 12 || fail "$n does not hold its lease again after the short outage"
  now_ms t_ok
  s=$(status_of "${P[$n]}" .lease.session)
  [ "$s" = "${SESSION[$n]}" ] || fail "$n changed session over a short outage: ${SESSION[$n]} -> $s"
done
for n in s1 s2; do wait_until 30 fetched "$T/ids.$n" 10 "$t_ok" || fail "$n serves no IDs after the short outage"; done
for n in s1 s2; do st_check "$T/ids.$n.st" "$t_ok" "$(now_ms)" ok; done
for n in l1 l2; do
  wait_held "${P[$n]}" 15 || fail "$n does not serve after the short outage"
done
pass "short outage ($((t_up - t_stop)) ms): s1, s2 served throughout on their sessions"

# 2. A long outage: 7 s, more than l1/l2's 3 s session timeout and than s1/s2's
#    safe window.
now_ms t_kill
zk_stop 1
now_ms t_stop
sleep 7 # let time pass: the outage outlasts l1/l2's 3 s sessions and every safe window
for n in s1 s2 l1 l2; do
  # Requests sent after the safe window (counted from before the stop) get no ID.
  st_check "$T/ids.$n.st" "$((t_stop + WIN[$n]))" "$(now_ms)" down
  st_check "$T/ids.$n.st" "$t_kill" "$((t_kill + WIN[$n] - 1000))" ok
  [ "$(http_status "http://127.0.0.1:${P[$n]}/readyz")" = 503 ] || fail "$n ready while ZooKeeper is down"
done
pass "long outage: every server stopped issuing within its safe window"
zk_start 1
zk_wait_serving 1
now_ms t_up
for n in s1 s2 l1 l2; do
  wait_held "${P[$n]}" 20 || fail "$n does not serve again after ZooKeeper came back"
  kill -0 "${SERVER_PID[$n]}" || fail "$n died"
done
log "all serve again $(( $(now_ms) - t_up )) ms after ZooKeeper is back"

# 3. ZooKeeper frozen (SIGSTOP) for 7 s: when it wakes, its session tracker finds the
#    3 s sessions overdue and expires them, so l1/l2 must take slots again on new
#    sessions (the restart above restored every session from the snapshot instead).
kill -STOP "${ZK_PID[1]}"
t_stop=$(now_ms) # the JVM is frozen by now: no answer after this
sleep 7 # let time pass: the freeze outlasts l1/l2's 3 s sessions and every safe window
for n in s1 s2 l1 l2; do
  st_check "$T/ids.$n.st" "$((t_stop + WIN[$n]))" "$(now_ms)" down
done
kill -CONT "${ZK_PID[1]}"
now_ms t_up
for n in s1 s2 l1 l2; do
  wait_held "${P[$n]}" 20 || fail "$n does not serve again after ZooKeeper woke"
done
log "all serve again $(( $(now_ms) - t_up )) ms after ZooKeeper woke"
pass "frozen ZooKeeper: every server stopped within its safe window and serves again"
now_ms t_ok
wait_until 30 fetched_all 10 "$t_ok" || fail "the fetch loops get no IDs after ZooKeeper woke"
fetch_stop
declare -A W=()
for n in s1 s2 l1 l2; do
  w=$(status_of "${P[$n]}" .worker)
  [ -z "${W[$w]:-}" ] || fail "worker $w held by ${W[$w]} and $n"
  W[$w]=$n
  log "$n: worker $w, session ${SESSION[$n]} -> $(status_of "${P[$n]}" .lease.session), acquisitions $(status_of "${P[$n]}" .lease.acquisitions)"
  assert_increasing "$T/ids.$n"
done
cat "$T"/ids.s1 "$T"/ids.s2 "$T"/ids.l1 "$T"/ids.l2 >"$T/all"
assert_unique "$T/all"
pass "long outage: all serve again without a restart; $(wc -l <"$T/all") IDs, no duplicate"
