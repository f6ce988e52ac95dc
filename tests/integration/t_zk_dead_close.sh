#!/usr/bin/env bash
# labels: zk nosan
# timeout: 120
# fixtures: zk
# zk_session.c's invariant ZS5, in a real server: a handle whose session expired is
# closed on its own completion thread, never from another one. libzookeeper_mt 3.8's
# zookeeper_close sets close_requested before it counts its own reference, so a
# completion thread that finishes in between frees the handle under a closer on
# another thread. tests/tools/zk_close_check (LD_PRELOAD) logs every close of a
# dead handle and the thread it came from. The server is frozen past its session
# (SIGSTOP), woken, and must take a slot again on a new session, alive; then it
# exits 0 on SIGTERM. Plain build only: an ASan binary wants its runtime first in
# the preload list.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

shim=$IK_BUILD/tests/tools/libzk_close_check.so
[ -f "$shim" ] || shim=$IK_BUILD/tests/tools/zk_close_check.so
[ -f "$shim" ] || fail "no zk_close_check shim in $IK_BUILD/tests/tools (build first)"
ZK_SESSION_MS=2000
zk_start_standalone
export ZK_CLOSE_CHECK_LOG=$T/closes.log
: >"$ZK_CLOSE_CHECK_LOG"
pa=$(zk_free_port)
LD_PRELOAD=$shim zk_serve a "$pa" --worker-range 4-4 --quiet
wait_ready "$pa" 60 || fail "a not ready"
s1=$(status_of "$pa" .lease.session)

for round in 1 2; do
  kill -STOP "${SERVER_PID[a]}"
  sleep 5 # let time pass: past the 2 s session: ZooKeeper expires it and frees slot 4
  kill -CONT "${SERVER_PID[a]}"
  mono_ms t0
  while :; do
    alive "${SERVER_PID[a]}" || fail "a died after waking (round $round): $(tail -n 5 "$T/a.log")"
    s2=$(status_of "$pa" .lease.session 2>/dev/null || true)
    state=$(status_of "$pa" .lease.state 2>/dev/null || true)
    # held on a new session, and issuing (/readyz): the lease says held before the
    # generator has its grant or has passed the slot's time record (ready.c), and
    # make test-under-load once fetched in between and was refused
    [ "$state" = held ] && [ -n "$s2" ] && [ "$s2" != "$s1" ] && ready_probe "$pa" && break
    (($(mono_ms) - t0 < 30000)) || fail "a holds no lease on a new session, or issues nothing, 30 s after waking (round $round): $state $s2"
    sleep 0.1
  done
  log "round $round: session $s1 expired, a holds slot 4 again on $s2"
  s1=$s2
done
fetch_ids "$pa" 100 "$T/ids" || fail "a, ready, refused IDs (HTTP $IK_HTTP_CODE): $(tail -n 5 "$T/a.log")"
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not exit 0 on SIGTERM"

cat "$ZK_CLOSE_CHECK_LOG"
! grep -q OTHER-THREAD "$ZK_CLOSE_CHECK_LOG" || fail "a dead handle was closed from another thread than its own completion thread"
n=$(grep -c 'dead-close own-thread' "$ZK_CLOSE_CHECK_LOG" || true)
((n >= 2)) || fail "saw $n closes of a dead handle, want one per expired session (2)"
pass "$n expired handles, each closed on its own completion thread; the server served again each time"
