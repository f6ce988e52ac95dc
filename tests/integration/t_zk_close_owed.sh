#!/usr/bin/env bash
# labels: zk
# timeout: 180
# A zk:// coord closed while its ZooKeeper handle owes answers (docs/zookeeper.md,
# "Known limits"; zk_session.c invariant ZS6). tests/tools/zk_close_owed opens a
# coord through the fault proxy, which is then muted (requests pass, nothing comes
# back), sends 64 reads on the backend's session and gives each up at once, as a
# call whose deadline passed does, then closes the coord. libzookeeper_mt 3.8, closed
# from another thread than its completion thread, fakes the 64 answers onto a
# queue that thread may already have stopped reading: those are never completed and
# never freed, and LeakSanitizer fails the exit (each request's ik__zk_wait and the
# client's completion entries; a server's stop with a sequence write in flight,
# conformance/tags_doubt_term.zk, met it about one run in two). Five rounds: each
# process exits 0 with no sanitizer report, and within the close's bound. A sixth
# lives on 9 s after the close, past the client's receive timeout (2/3 of 10 s):
# the answers are paid then (ZCONNECTIONLOSS) and the last one closes the handle on
# its own completion thread, which must leave nothing behind either.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

TOOL=$IK_BUILD/tests/tools/zk_close_owed
[ -x "$TOOL" ] || fail "no $TOOL (built by tests/tools)"
zk_start_standalone
zk_proxy_start
VIA=zk://127.0.0.1:$PP/owed

for round in 1 2 3 4 5 6; do
  linger=0
  ((round < 6)) || linger=9000
  proxy unmute
  rm -f "$T/go"
  "$TOOL" "$VIA" "$T/go" 64 "$linger" >"$T/tool$round.out" 2>"$T/tool$round.err" &
  pid=$!
  IK_PIDS+=($pid)
  wait_grep '^connected' "$T/tool$round.out" 30 ||
    fail "round $round: the tool did not connect: $(cat "$T/tool$round.err")"
  proxy mute
  mono_ms t0
  touch "$T/go"
  rc=0
  wait "$pid" || rc=$?
  took=$(($(mono_ms) - t0 - linger))
  grep -qE 'Sanitizer|runtime error' "$T/tool$round.err" &&
    fail "round $round: sanitizer report at the close: $(grep -m 1 -A 14 -E 'Sanitizer|runtime error' "$T/tool$round.err")"
  ((rc == 0)) || fail "round $round: the tool exited $rc: $(tail -n 8 "$T/tool$round.err")"
  grep -q '^closed 64$' "$T/tool$round.out" || fail "round $round: not 64 reads sent: $(cat "$T/tool$round.out")"
  # after the linger the client's threads have ended: the handle was closed
  ((linger == 0)) || grep -q '^threads 1$' "$T/tool$round.out" ||
    fail "round $round: the handle left to its completion thread was never closed: $(cat "$T/tool$round.out")"
  # the close's own bound: zookeeper_close waits up to 1.5 s for the server (backend.h)
  ((took < 3000)) || fail "round $round: the close took $took ms"
  pass "round $round: closed with 64 answers owed in $took ms, exit 0, no sanitizer report"
done
