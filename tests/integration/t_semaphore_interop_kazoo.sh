#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# fixtures: zk
# idkeeper's semaphore with --semaphore-layout kazoo and kazoo's Semaphore share one
# semaphore of max 3 for 60 s: three `idkeeper semaphore` loops and two kazoo
# clients, never more than 3 holding at once, counted from each holder's heartbeats
# (sema_interop.sh). Then each refuses the other's max: kazoo's Semaphore with
# max_leases=4 raises its ValueError on the 3 stored, and `idkeeper semaphore --max
# 4` exits 2 naming 3 and 4.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_interop_start
source "$(dirname "$0")/sema_interop.sh"
sema_interop_contend kazoo
[ "$(zk_tool get /t/interop/sema-kazoo)" = 3 ] ||
  fail "the semaphore's data is not the max 3: $(zk_tool get /t/interop/sema-kazoo)"
res=$("${KAZOO[@]}" sema-try "$ZK_CONNECT" /t/interop/sema-kazoo 4)
[[ $res == "refused: Inconsistent max leases: 3, expected: 4" ]] || fail "kazoo with max 4: $res"
rc=0
"$IK_BIN" semaphore --coord "$URI" --semaphore-layout kazoo --max 4 /interop/sema-kazoo -- true 2>"$T/max4.err" || rc=$?
[ $rc = 2 ] && grepq 'at most 3' "$T/max4.err" && grepq 'not 4' "$T/max4.err" ||
  fail "idkeeper --max 4 on kazoo's max 3: exit $rc: $(cat "$T/max4.err")"
pass "idkeeper and kazoo's Semaphore on one semaphore: $SEMA_RESULT; each refuses a max of 4 on the 3 stored ($res; $(cat "$T/max4.err"))"
