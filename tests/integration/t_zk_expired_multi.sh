#!/usr/bin/env bash
# labels: zk
# timeout: 120
# fixtures: zk
# zk_session.c's invariant ZS4, on the shared ZooKeeper: a multi (the slot's time
# record write, [check owner, set slot]) on a handle whose session the client knows
# expired is refused with ZINVALIDSTATE and never reaches libzookeeper_mt 3.8's
# zoo_amulti, which aborts on one ("free(): invalid pointer": the CI failure of
# conformance/slots_stopped.zk, a server woken from SIGSTOP past its session while
# its completion thread had not yet told it so). tests/tools/zk_expire kills the
# session as Curator's KillSession does and sends the multi through ik__zk_amulti
# and ik__zk_multi, and one to a handle still connecting (ZCONNECTIONLOSS, nothing
# sent). The structure test checks that every multi of src/ goes through them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
chroot=${ZK_CONNECT#*/}
rc=0
"$IK_BUILD/tests/tools/zk_expire" "127.0.0.1:${ZK_CPORT[1]}" "/$chroot/multi" >"$T/expire.out" 2>&1 || rc=$?
cat "$T/expire.out"
((rc == 0)) || fail "zk_expire exited $rc"
grep -q 'ik__zk_amulti on the expired handle: invalid zhandle state' "$T/expire.out" ||
  fail "no refusal of the multi on the expired handle"
pass "a multi on an expired handle is refused (ZINVALIDSTATE), one on a connecting handle is not sent (ZCONNECTIONLOSS)"
