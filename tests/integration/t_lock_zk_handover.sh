#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 300
# The contended hand-over on ZooKeeper: a waiter watches only its predecessor
# (and, when nothing else is ahead of it, its own node), lists again when the
# predecessor goes unless that was the only contender ahead, and holds on the proof
# of its recent create (docs/recipes.md, "Cost"). What would break if that were
# wrong, on a real ZooKeeper:
#  A. a contender ahead leaves without having held (it gives up waiting): the
#     waiter behind it, which watched only it, must list again and not hold while
#     the holder still does
#  B. 4 contenders waiting forever and 2 that give up after 2 ms, 300 us holds, for
#     8 s: no two holders at once, fences strictly increasing from one holder to the
#     next (across processes), the quitters' nodes leaving mid-queue all along
#  C. the same while ZooKeeper is killed -9 and restarted on its data, then frozen
#     (SIGSTOP) for 1.5 s: still no two holders at once, fences still increasing
#  D. a waiter's own node deleted by hand while it waits right behind the holder
#     (the case where it holds without listing again): it queues again at once (it
#     watches its own node then), and when the holder goes, the waiter and a
#     contender that queued meanwhile never hold at once. Before, the waiter
#     noticed nothing and, the holder gone, held without a node, beside the
#     newcomer, until its first probe.
# Each case fails on a broken waiter (checked 2026-11-27 on the predecessor-only
# code): holding on any predecessor's deletion, as if it had been the only one
# ahead, A failed ('started 613 ms before the holder ended'), B ('816 overlaps,
# closest hand-over -2.871 ms'), C ('1854 overlaps'); without the own-node watch,
# D failed ('the waiter held [0, 1513], the newcomer [-1, 1516]'), as on 5ac3d03
# ('[0, 1507]', '[-1, 1506]').
# A holder frozen past its session is conformance/locks_stopped.zk's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$IK_SRC/tests/interop/build.sh"

zk_start_standalone
interop_build_c
URI=$(zk_uri t)
I=${IK_INTEROP[0]}
nkids() { zk_tool ls "/t$1" 2>/dev/null | grep -c -- '-lock-' || true; }
# kids PATH OP N: a condition on nkids PATH, asked again at each try of wait_until
# (`wait_until 30 test "$(nkids /a)" = 2` asked it once, before the first try)
kids() { test "$(nkids "$1")" "$2" "$3"; }

# holder PATH NAME CASE: a holder of PATH whose CMD writes its start time to
# NAME.start, holds until NAME.release exists, then writes NAME.end; HPID is its pid
holder() {
  "$IK_BIN" lock --coord "$URI" "$1" -- sh -c "'$I' now >'$T/$2.start'; while [ ! -e '$T/$2.release' ]; do sleep 0.02; done; '$I' now >'$T/$2.end'" \
    >"$T/$2.log" 2>&1 &
  HPID=$!
  IK_PIDS+=("$HPID")
  wait_until 60 test -s "$T/$2.start" || fail "$3: the holder did not start its command (see $T/$2.log)"
}

# --- A: a contender ahead gives up; the one behind it must wait for the holder
# (each holder's CMD holds until its release file exists: no step races a sleep)
holder /a h A
h=$HPID
"$IK_BIN" lock --coord "$URI" /a -- sh -c "'$I' now >'$T/w1.ran'" >"$T/w1.log" 2>&1 &
w1=$!
IK_PIDS+=("$w1")
wait_until 30 kids /a = 2 || fail "A: the first waiter did not queue ($(nkids /a) contenders)"
"$IK_BIN" lock --coord "$URI" /a -- sh -c "'$I' now >'$T/w2.start'" >"$T/w2.log" 2>&1 &
w2=$!
IK_PIDS+=("$w2")
wait_until 30 kids /a = 3 || fail "A: the second waiter did not queue ($(nkids /a) contenders)"
kill -TERM "$w1" # gives up waiting: its node goes, the holder's stays
rc=0
wait "$w1" || rc=$?
[ "$rc" = 143 ] || fail "A: the first waiter exited $rc, not 143 (gave up on SIGTERM) (see $T/w1.log)"
[ ! -e "$T/w1.ran" ] || fail "A: the waiter that gave up ran its command"
wait_until 30 kids /a -le 2 || fail "A: the first waiter's node stayed ($(nkids /a) contenders)"
sleep 0.5 # let time pass: a waiter that took that deletion for the holder's would hold now
touch "$T/h.release"
wait "$h" || fail "A: the holder failed (see $T/h.log)"
wait "$w2" || fail "A: the second waiter failed (see $T/w2.log)"
if ! [ -s "$T/h.end" ] || ! [ -s "$T/w2.start" ]; then fail "A: a command did not record its times"; fi
h_end=$(cat "$T/h.end")
w2_start=$(cat "$T/w2.start")
((w2_start > h_end)) ||
  fail "A: the second waiter held while the holder did: it started $(((h_end - w2_start) / 1000000)) ms before the holder ended"
pass "A: the waiter behind one that gave up held only after the holder ended ($(((w2_start - h_end) / 1000000)) ms later)"

# contest PATH SECS: 4 contenders waiting forever (C1-C4) and 2 quitters (Q1, Q2,
# 2 ms timeouts) for SECS from $T/go.PATH, or until contest_end PATH removes it;
# their intervals in $T/PATH.*.iv. grants PATH: how many so far; granted PATH N: N
# at least (a condition); contest_end PATH N: once N grants were made, or the time
# is up (a loaded machine grants fewer a second), the contenders stop
grants() { cat "$T/$1".*.iv 2>/dev/null | wc -l; }
granted() { (($(grants "$1") >= $2)); }
contest_end() {
  wait_until 90 granted "$1" "$2" || log "$1: only $(grants "$1") grants"
  rm -f "$T/go.$1"
}
contest() {
  local p=$1 secs=$2 i
  CONTEST_PIDS=()
  for i in 1 2 3 4; do
    IK_INTEROP_TAG=C$i "$I" contend "$URI" "/$p" "$secs" "$T/$p.c$i.iv" 300 -1 "$T/go.$p" \
      >"$T/$p.c$i.out" 2>"$T/$p.c$i.log" &
    CONTEST_PIDS+=($!)
  done
  for i in 1 2; do
    IK_INTEROP_TAG=Q$i "$I" contend "$URI" "/$p" "$secs" "$T/$p.q$i.iv" 300 2 "$T/go.$p" \
      >"$T/$p.q$i.out" 2>"$T/$p.q$i.log" &
    CONTEST_PIDS+=($!)
  done
  IK_PIDS+=("${CONTEST_PIDS[@]}")
  wait_until 60 eval "[ \$(ls '$T/$p'.*.iv 2>/dev/null | wc -l) = 6 ]" ||
    fail "$p: the contenders did not connect (see $T/$p.*.log)"
  touch "$T/go.$p"
}
# check PATH: no overlap, fences increasing from holder to holder, the quitters gave
# up, nothing left behind; sets RES
check() {
  local p=$1 pid gave held
  for pid in "${CONTEST_PIDS[@]}"; do
    wait "$pid" || fail "$p: a contender failed (see $T/$p.*.log)"
  done
  RES=$(interop_check_intervals "$T/$p".*.iv) || fail "$p: two holders at once: $RES"
  sort -n -k2,2 "$T/$p".*.iv | awk '{ if (NR > 1 && $4 <= prev) { print "fence " $4 " of " $1 " after " prev " of " who; exit 1 } prev = $4; who = $1 }' \
    >"$T/$p.fences" || fail "$p: fences do not increase from one holder to the next: $(cat "$T/$p.fences")"
  gave=$(cat "$T/$p".q*.out | awk '{ s += $4 } END { print s + 0 }')
  held=$(cat "$T/$p".c*.out | awk '{ s += $2 } END { print s + 0 }')
  ((gave >= 20)) || fail "$p: the quitters gave up only $gave times: nothing left the queue mid-way"
  ((held >= 200)) || fail "$p: only $held grants to the patient contenders: no contention to speak of"
  wait_until 30 kids "/$p" = 0 || fail "$p: nodes left: $(zk_tool ls "/t/$p")"
  RES="$RES; quitters gave up $gave times"
}

# --- B: contention with contenders leaving mid-queue
contest b 90
contest_end b 700
check b
pass "B: $RES"

# --- C: the same through a ZooKeeper killed -9 and restarted, then frozen
contest c 30
wait_until 30 granted c 250 || fail "C: no contention on /c ($(grants c) grants)" # check: 200 at least
zk_stop 1 KILL
log "C: ZooKeeper killed"
sleep 1 # let time pass: the outage's length
zk_start 1
zk_wait_serving 1 60
log "C: ZooKeeper serves again"
# contention again before the freeze, unless the contest (30 s) is over (on a starved
# machine the contenders may not be back in time: said, not failed)
contest_over() { local p; for p in "${CONTEST_PIDS[@]}"; do ! alive "$p" || return 1; done; }
again() { granted c "$1" || contest_over; }
wait_until 40 again $(($(grants c) + 60)) || log "C: few grants since ZooKeeper came back ($(grants c) in all)"
kill -STOP "${ZK_PID[1]}"
sleep 1.5 # let time pass: the freeze's length
kill -CONT "${ZK_PID[1]}"
log "C: ZooKeeper frozen for 1.5 s"
check c
fails=$(cat "$T"/c.*.out | awk '{ s += $6 } END { print s + 0 }')
pass "C: through a ZooKeeper restart and freeze: $RES, $fails acquires failed"

# --- D: our node deleted while we wait behind the holder
# run NAME: a CMD that records its start and end around a 1.5 s hold
run_cmd() { echo "'$I' now >'$T/$1.start'; sleep 1.5; '$I' now >'$T/$1.end'"; }
holder /d dh D
dh=$HPID
"$IK_BIN" lock --coord "$URI" /d -- sh -c "$(run_cmd dw)" >"$T/dw.log" 2>&1 &
dw=$!
IK_PIDS+=("$dw")
wait_until 30 kids /d = 2 || fail "D: the waiter did not queue ($(nkids /d) contenders)"
wnode=$(zk_tool ls /t/d | awk '{ s = $0; sub(/.*-lock-/, "", s); print s, $0 }' | sort -n | tail -1 | cut -d' ' -f2)
[ "$(zk_tool delete "/t/d/$wnode")" = deleted ] || fail "D: could not delete the waiter's node $wnode"
"$IK_BIN" lock --coord "$URI" /d -- sh -c "$(run_cmd dn)" >"$T/dn.log" 2>&1 &
dn=$!
IK_PIDS+=("$dn")
# the newcomer's node: one with a sequence above the deleted one's
wseq=$((10#${wnode##*-lock-}))
newer() { zk_tool ls /t/d | awk -v w="$wseq" '{ s = $0; sub(/.*-lock-/, "", s); if (s + 0 > w) n++ } END { exit !n }'; }
wait_until 30 newer || fail "D: the newcomer did not queue: $(zk_tool ls /t/d)"
touch "$T/dh.release"
wait "$dh" || fail "D: the holder failed (see $T/dh.log)"
rc=0
wait "$dw" || rc=$?
wait "$dn" || fail "D: the newcomer failed (see $T/dn.log)"
[ "$rc" = 0 ] || fail "D: the waiter whose node was deleted exited $rc (see $T/dw.log)"
for f in dw.start dw.end dn.start dn.end; do
  [ -s "$T/$f" ] || fail "D: $f missing (see $T/dw.log, $T/dn.log)"
done
res=$(/usr/bin/python3 - "$T" <<'PY'
import sys
t = sys.argv[1]
v = {k: int(open("%s/%s" % (t, k)).read()) for k in ("dw.start", "dw.end", "dn.start", "dn.end")}
if v["dw.start"] < v["dn.end"] and v["dn.start"] < v["dw.end"]:
    print("overlap: the waiter held [%d, %d], the newcomer [%d, %d] (ms from the waiter's start)" % (
        0, (v["dw.end"] - v["dw.start"]) // 10**6, (v["dn.start"] - v["dw.start"]) // 10**6,
        (v["dn.end"] - v["dw.start"]) // 10**6))
    sys.exit(1)
print("the %s held first" % ("newcomer" if v["dn.start"] < v["dw.start"] else "waiter"))
PY
) || fail "D: two holders at once: $res"
pass "D: a waiter whose node was deleted queued again; $res, never both at once"
