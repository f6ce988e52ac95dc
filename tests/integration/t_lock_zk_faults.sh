#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 240
# The hard cases of the ZooKeeper lock, with faults injected by a TCP proxy between
# the holder and ZooKeeper (tests/interop/fault_proxy.py):
#  A. the answer to our create is lost (the server made the node): after the
#     reconnect the holder finds its node by its _c_<uuid>- prefix and takes the
#     lock with it; never a second node of ours, the fence is that node's czxid
#  B. the connection drops and comes back on the same session: the holder is told
#     "in doubt" at once, then "held again"; CMD keeps running
#  C. the connection drops for good: "in doubt" at once, then "lost" before the
#     server can expire the session; CMD is stopped before the next holder (on a
#     direct connection) starts its own; exit 125; fences increase
#  D. --timeout expires while the waiter's connection is dead: it waits for the
#     reconnect to delete its node, exits 124, and no node of its is left
#  E. someone deletes the holder's node by hand: the holder is told lost, CMD is
#     stopped, exit 125
#  F. --timeout 0 on a held lock through a ZooKeeper whose every answer comes
#     1.5 s late: exit 124 after the open (bounded by the session timeout T to
#     connect and max(T/3, 2 s) for the store checks, docs/cli.md "lock and elect")
#     and one try, not after 0 ms; the message says that --timeout counts from the
#     open and how long the open took. Before, "timed out after 0 ms" came 8 s
#     after the start, with nothing saying where the time went.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$IK_SRC/tests/interop/build.sh"

zk_start_standalone
interop_build_c
zk_proxy_start
VIA=zk://127.0.0.1:$PP/t # through the proxy
DIRECT=$(zk_uri t)
# children PATH: "name czxid ephemeralOwner" of each child
children() {
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 - "$1" <<'PY'
import logging, os, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"]); zk.start(timeout=20)
try:
    for c in sorted(zk.get_children(sys.argv[1])):
        st = zk.exists(sys.argv[1] + "/" + c)
        if st:
            print(c, st.czxid, hex(st.ephemeralOwner))
except Exception:
    pass
zk.stop()
PY
}
# nchildren PATH N: PATH has N children (kazoo: about 100 ms a call)
nchildren() { [ "$(children "$1" | wc -l)" = "$2" ]; }

# ---- A: the create's answer is lost ------------------------------------------
export IK_INTEROP_SESSION_MS=3000
"${IK_INTEROP[@]}" lock "$VIA" /faults/create 1 "$T/a.iv" 4000000 "$T/go" 2>"$T/a.log" &
a=$!
IK_PIDS+=($a)
# its five warm-up rounds done (the file exists) before the answers stop: a slow start
# must not blackhole the warm-up instead of the recorded create
wait_until 60 test -e "$T/a.iv" || fail "A: the holder never got ready (see $T/a.log)"
proxy blackhole # requests still reach ZooKeeper; no answer comes back
touch "$T/go"
t0=$SECONDS
max=0
: >"$T/a.nodes"
while [ ! -s "$T/a.iv" ] && ((SECONDS - t0 < 30)); do
  children /t/faults/create >"$T/a.now"
  n=$(wc -l <"$T/a.now")
  ((n > max)) && max=$n
  cat "$T/a.now" >>"$T/a.nodes"
  sleep 0.1
done
wait $a || fail "A: the holder failed (see $T/a.log)"
((max == 1)) || fail "A: $max nodes of ours at once: $(sort -u "$T/a.nodes" | tr '\n' ' ')"
fence=$(cut -d' ' -f4 "$T/a.iv")
[ "$(sort -u "$T/a.nodes" | wc -l)" = 1 ] || fail "A: more than one node over time: $(sort -u "$T/a.nodes")"
czxid=$(sort -u "$T/a.nodes" | cut -d' ' -f2)
[ "$fence" = "$czxid" ] || fail "A: fence $fence is not the node's czxid $czxid"
pass "A: create answer lost: our one node $(sort -u "$T/a.nodes" | cut -d' ' -f1) found again and held, fence = its czxid $czxid"
proxy up

# ---- B: in doubt, then held again on the same session ------------------------
LOCKV=("$IK_BIN" lock --coord "$VIA" --zk-session-timeout 6000)
"${LOCKV[@]}" /faults/doubt -- sh -c 'echo $$ >"$0/b.pid"; exec sleep 60' "$T" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
wait_until 60 test -s "$T/b.pid" || fail "B: CMD never started: $(cat "$T/b.err")"
# CMD's pid out here (it may run in a PID namespace of its own: docs/recipes.md)
bcmd=$(host_pid $b "$(cat "$T/b.pid")") || fail "B: CMD not found below idkeeper"
sleep 5 # let time pass: longer than 2/3 of the session timeout: the holder's probes keep it proven
proxy down
t0=$(date +%s%3N)
wait_grep "in doubt" "$T/b.err" 5 || fail "B: not told in doubt: $(cat "$T/b.err")"
log "B: in doubt after $(($(date +%s%3N) - t0)) ms"
sleep 0.3 # let time pass: the blip's length
proxy up
wait_grep "held again" "$T/b.err" 10 || fail "B: not told held again: $(cat "$T/b.err")"
log "B: held again after $(($(date +%s%3N) - t0)) ms"
alive "$bcmd" || fail "B: CMD was stopped"
! grep -q "lost the lock" "$T/b.err" || fail "B: told lost: $(cat "$T/b.err")"
kill -TERM $b
rc=0
wait $b || rc=$?
[ $rc = 143 ] || fail "B: exit $rc after TERM"
pass "B: connection dropped and back: in doubt at once, held again, CMD kept running"

# ---- B2: the same on a lock's second grant (its monitor carries over) ------------
# Rounds of 12 s. The blip comes 5 s (more than 2/3 of the session) into round 2, as
# seen by the new node of round 2 (so at least 5 s in, whatever the machine's speed),
# and leaves about 7 s for the reconnect before the helper checks it still holds.
IK_INTEROP_SESSION_MS=6000 "${IK_INTEROP[@]}" lock "$VIA" /faults/again 2 "$T/b2.iv" 12000000 "$T/go2" \
  2>"$T/b2.log" &
b2=$!
IK_PIDS+=($b2)
wait_until 60 test -e "$T/b2.iv" || fail "B2: the holder never got ready (see $T/b2.log)"
touch "$T/go2"
b2_node() { children /t/faults/again | cut -d' ' -f1; }
b2_round() { n=$(b2_node) && [ -n "$n" ] && [ "$n" != "$1" ]; }
wait_until 60 b2_round "" || fail "B2: round 1's node never showed"
first=$n # round 1's node, as b2_round saw it
wait_until 60 b2_round "$first" || fail "B2: round 2's node never showed (round 1's: $first; see $T/b2.log)"
sleep 5 # let time pass: 5 s into round 2: past 2/3 of the session, so only the probes prove it now
proxy down
sleep 0.3 # let time pass: the blip's length
proxy up
wait $b2 || fail "B2: the second grant did not survive a blip: $(cat "$T/b2.log")"
pass "B2: a blip 5 s into a lock's second grant: held again (probes prove the session)"

# ---- C: the connection drops for good ------------------------------------------
S=3000
"$IK_BIN" lock --coord "$VIA" --zk-session-timeout $S --grace 500 /faults/lost -- \
  sh -c 'trap "date +%s%N >$0/c.end; exit 0" TERM; echo "$IDKEEPER_FENCE" >$0/c.fence; while :; do sleep 0.05; done' "$T" \
  2>"$T/c.err" &
c=$!
IK_PIDS+=($c)
wait_until 60 test -s "$T/c.fence" || fail "C: CMD never started: $(cat "$T/c.err")"
"$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout $S /faults/lost -- \
  sh -c 'date +%s%N >$0/d.start; echo "$IDKEEPER_FENCE" >$0/d.fence' "$T" 2>"$T/d.err" &
d=$!
IK_PIDS+=($d)
wait_until 60 nchildren /t/faults/lost 2 || fail "C: the next holder never queued: $(cat "$T/d.err")"
proxy down
t0=$(date +%s%3N)
wait_grep "in doubt" "$T/c.err" 5 || fail "C: not told in doubt: $(cat "$T/c.err")"
rc=0
wait $c || rc=$?
[ $rc = 125 ] || fail "C: exit $rc, not 125: $(cat "$T/c.err")"
log "C: lost after $(($(date +%s%3N) - t0)) ms: $(grep "lost the lock" "$T/c.err")"
wait $d || fail "D's holder failed: $(cat "$T/d.err")"
[ -s "$T/c.end" ] || fail "C: CMD did not get SIGTERM"
gap=$((($(cat "$T/d.start") - $(cat "$T/c.end")) / 1000000))
((gap > 0)) || fail "C: the next holder started $((-gap)) ms before the cut-off holder's CMD stopped"
(($(cat "$T/d.fence") > $(cat "$T/c.fence"))) || fail "C: fences do not increase"
pass "C: cut off: in doubt at once, lost, CMD stopped $gap ms before the next holder's started; fences $(cat "$T/c.fence") < $(cat "$T/d.fence")"
proxy up

# ---- D: the timeout expires while the waiter's connection is dead --------------
"$IK_BIN" lock --coord "$DIRECT" /faults/timeout -- sleep 60 2>/dev/null &
h=$!
IK_PIDS+=($h)
wait_until 60 nchildren /t/faults/timeout 1 || fail "D: the holder's node never showed"
# The waiter's timeout (5 s, half its session) must still be running when the
# connection goes dark: on a loaded machine its node can take seconds to show, so
# the cut comes as soon as the node is seen, and a waiter that timed out before
# that is reported as such rather than as a missing node.
"$IK_BIN" lock --coord "$VIA" --zk-session-timeout 10000 --timeout 5000 /faults/timeout -- true 2>"$T/w.err" &
w=$!
IK_PIDS+=($w)
t_w=$SECONDS
while ((SECONDS - t_w < 30)); do
  [ "$(children /t/faults/timeout | wc -l)" = 2 ] && break
  alive $w || fail "D: the waiter exited before its node was seen: $(cat "$T/w.err")"
  sleep 0.05
done
[ "$(children /t/faults/timeout | wc -l)" = 2 ] || fail "D: the waiter's node is not there"
proxy blackhole
t0=$SECONDS
rc=0
wait $w || rc=$?
[ $rc = 124 ] || fail "D: exit $rc, not 124: $(cat "$T/w.err")"
left=$(children /t/faults/timeout | wc -l)
[ "$left" = 1 ] || fail "D: $left nodes left (only the holder's should be): $(children /t/faults/timeout)"
kill -TERM $h
wait $h 2>/dev/null || true
pass "D: timeout on a dead connection: exit 124 after the reconnect ($((SECONDS - t0)) s), our node deleted"

# ---- E: the holder's node deleted by hand ---------------------------------------
"$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout 3000 /faults/deleted -- sleep 60 2>"$T/e.err" &
e=$!
IK_PIDS+=($e)
wait_until 60 nchildren /t/faults/deleted 1 || fail "E: the holder's node never showed: $(cat "$T/e.err")"
sleep 1.5 # let time pass: the holder's first probe (a quarter of the session timeout, 750 ms) sets the watch on its node
victim=$(children /t/faults/deleted | cut -d' ' -f1)
t0=$(date +%s%3N)
ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 -c '
import logging, os, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"]); zk.start(timeout=20); zk.delete(sys.argv[1]); zk.stop()' \
  "/t/faults/deleted/$victim"
rc=0
wait $e || rc=$?
[ $rc = 125 ] || fail "E: exit $rc after its node was deleted, not 125: $(cat "$T/e.err")"
grep -q "deleted\|gone" "$T/e.err" || fail "E: no reason: $(cat "$T/e.err")"
pass "E: node deleted by hand: lost after $(($(date +%s%3N) - t0)) ms, CMD stopped, exit 125"

# ---- F: --timeout 0 through a store that answers late -----------------------------
"$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout 10000 /faults/late -- sleep 120 2>"$T/f.err" &
f=$!
IK_PIDS+=($f)
wait_until 60 nchildren /t/faults/late 1 || fail "F: the holder's node never showed: $(cat "$T/f.err")"
proxy delay 1500
mono_ms t0
rc=0
"$IK_BIN" lock --coord "$VIA" --zk-session-timeout 3000 --timeout 0 /faults/late -- true 2>"$T/f2.err" || rc=$?
took=$(($(mono_ms) - t0))
proxy delay 0
[ $rc = 124 ] || fail "F: exit $rc, not 124: $(cat "$T/f2.err")"
# the documented bound of the open: T (3 s) to connect, max(T/3, 2 s) to check; then
# one try: a few requests of 1.5 s each (create, list, delete); 10 s of slack for a
# loaded machine
((took < 3000 + 2000 + 4 * 1500 + 10000)) || fail "F: --timeout 0 took $took ms"
grep -q "counts from the moment the store was open" "$T/f2.err" ||
  fail "F: after $took ms, the message does not say what --timeout counts: $(cat "$T/f2.err")"
kill -TERM $f
wait $f || true
pass "F: --timeout 0 through a store 1.5 s late: exit 124 after $took ms, the message says why: $(grep "timed out" "$T/f2.err")"
