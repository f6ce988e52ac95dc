#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 420
# Lock nodes at the end of ZooKeeper's 32-bit sequence, and a waiter whose node is
# deleted, on a real ZooKeeper. ZooKeeper names a SEQUENTIAL child with Java's
# "%010d" of the parent's child counter (cversion); tests/interop/ZkSetCversion.java
# sets that counter in a stopped server's data, so that no test has to create 2^31
# nodes to get there.
#  A. past a wrap (the counter at -1000000: names "-001000000", a minus and 9 digits):
#     a lock is taken and handed over in order, --timeout holds, and nothing of ours
#     is left behind
#  B. the counter's end (2147483647): the holder's node is 2147483647; ZooKeeper
#     names every later node 2147483647 too (or -2147483648 when creates are
#     pipelined); 12 tries with --timeout 0 while it holds all give up (124), and a
#     waiter queued behind it holds only after it
#  C. our node deleted while we wait: the waiter makes a new node, still gives up at
#     its --timeout (124), and leaves no node behind
#  D. an election at the counter's end: 4 candidates (elect --once) that campaign
#     while a fifth leads all lead after it, one at a time
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
COORD=$(zk_uri t)
IK_LOCK=("$IK_BIN" lock --coord "$COORD" --zk-session-timeout 4000)

source "$IK_SRC/tests/interop/build.sh"
ZK_JARS=/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/slf4j-api.jar
interop_javac ZkSetCversion "$ZK_JARS"

# zk_py CMD ARGS: a kazoo client on ZK_CONNECT.
#   mkdir PATH          a persistent PATH (and its parents)
#   nodes PATH          "name czxid data" of each child of PATH, oldest first
#   delete-data PATH D  deletes the children of PATH whose data starts with D (ours
#                       are "pid=PID host=HOST"); prints how many
#   requeue PATH W B    deletes W's node, then B's (W's predecessor), then waits up
#                       to 30 s for a new node of W's: prints "deleted N M", then
#                       "requeued" or "not requeued" (W, B: data prefixes)
zk_py() {
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 - "$@" <<'PY'
import logging, os, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
zk = KazooClient(hosts=os.environ["ZK_CONNECT"], timeout=10)
zk.start(timeout=30)
cmd, path = sys.argv[1], sys.argv[2]
try:
    if cmd == "mkdir":
        zk.ensure_path(path)
    elif cmd == "nodes":
        out = []
        for c in zk.get_children(path):
            try:
                d, st = zk.get(path + "/" + c)
                out.append((st.czxid, c, d.decode()))
            except NoNodeError:
                pass
        for z, c, d in sorted(out):
            print(c, z, d)
    elif cmd == "delete-data":
        n = 0
        for c in zk.get_children(path):
            try:
                d, _ = zk.get(path + "/" + c)
                if d.decode().startswith(sys.argv[3]):
                    zk.delete(path + "/" + c)
                    n += 1
            except NoNodeError:
                pass
        print(n)
    elif cmd == "requeue":
        import time
        def mine(prefix):
            out = []
            for c in zk.get_children(path):
                try:
                    d, _ = zk.get(path + "/" + c)
                    if d.decode().startswith(prefix):
                        out.append(c)
                except NoNodeError:
                    pass
            return out
        w, b = mine(sys.argv[3]), mine(sys.argv[4])
        for c in w + b:
            zk.delete(path + "/" + c)
        print("deleted", len(w), len(b))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30:
            if [c for c in mine(sys.argv[3]) if c not in w]:
                print("requeued")
                break
            time.sleep(0.02)
        else:
            print("not requeued")
finally:
    zk.stop()
PY
}

# set_counter PATH N: the child counter of PATH is N (the server restarts).
set_counter() {
  zk_stop 1 TERM
  java -cp "$INTEROP_OUT/classes:$ZK_JARS:/usr/share/java/slf4j-nop.jar" ZkSetCversion "$T/zk1/data" "$1" "$2" \
    >>"$T/cversion.log" 2>&1 || fail "ZkSetCversion failed: $(cat "$T/cversion.log")"
  zk_start 1
  zk_wait_serving 1
  log "counter of $1 set to $2"
}

# wait_nodes PATH N [FILE]: until PATH has at least N children (20 s at most), or
# FILE exists (then returns 1).
wait_nodes() {
  local t0=$SECONDS
  while ((SECONDS - t0 < 20)); do
    [ -n "${3:-}" ] && [ -e "$3" ] && return 1
    [ "$(zk_py nodes "$1" | wc -l)" -ge "$2" ] && return 0
    sleep 0.05
  done
  fail "$1 never had $2 children: $(zk_py nodes "$1")"
}

zk_py mkdir /t/neg
zk_py mkdir /t/end
zk_py mkdir /t/elect
set_counter /t/neg -1000000
set_counter /t/end 2147483647
set_counter /t/elect 2147483647

# ---- A: past a wrap ------------------------------------------------------------
# On the unfixed parser our own node was invisible: a create loop that ignored
# --timeout and left a node behind at every turn.
mono_ms t0
"${IK_LOCK[@]}" --timeout 5000 /neg -- sh -c 'echo "$IDKEEPER_LOCK_NODE"' >"$T/a1.out" 2>"$T/a1.err" &
p=$!
IK_PIDS+=($p)
if ! wait_until 15 not kill -0 $p 2>/dev/null; then
  mine=$(zk_py nodes /t/neg | grep -c " pid=$p " || true)
  fail "A: still waiting 15 s after it began (--timeout 5000), with $mine nodes of its own under /t/neg"
fi
rc=0
wait $p || rc=$?
took=$(($(mono_ms) - t0))
left=$(zk_py nodes /t/neg | wc -l)
[ $rc = 0 ] || fail "A: lock past the wrap exited $rc after $took ms, $left nodes left: $(head -c 300 "$T/a1.err")"
grep -qE -- '-lock--00[0-9]{7}$' "$T/a1.out" || fail "A: held $(cat "$T/a1.out"), not a node past the wrap"
[ "$left" = 0 ] || fail "A: $left nodes left: $(zk_py nodes /t/neg)"
# hand-over in order among negative sequences: B waits for A, C (with --timeout) too
"${IK_LOCK[@]}" /neg -- sh -c 'touch "$0.a"; sleep 3; mono() { awk "{ printf \"%d\n\", \$1 * 1000 }" /proc/uptime; }; mono >"$0.a.end"' \
  "$T/neg" 2>"$T/a2.err" &
pa=$!
IK_PIDS+=($pa)
wait_until 10 test -e "$T/neg.a" || fail "A: the first holder never held: $(cat "$T/a2.err")"
rc=0
"${IK_LOCK[@]}" --timeout 0 /neg -- true 2>"$T/a3.err" || rc=$?
[ $rc = 124 ] || fail "A: --timeout 0 while held exited $rc: $(cat "$T/a3.err")"
rc=0
"${IK_LOCK[@]}" --timeout 30000 /neg -- sh -c 'awk "{ printf \"%d\n\", \$1 * 1000 }" /proc/uptime >"$0.b"' \
  "$T/neg" 2>"$T/a4.err" || rc=$?
[ $rc = 0 ] || fail "A: the waiter exited $rc: $(cat "$T/a4.err")"
wait $pa || fail "A: the first holder failed: $(cat "$T/a2.err")"
(($(cat "$T/neg.b") >= $(cat "$T/neg.a.end"))) || fail "A: the waiter held before the holder ended"
left=$(zk_py nodes /t/neg | wc -l)
[ "$left" = 0 ] || fail "A: $left nodes left: $(zk_py nodes /t/neg)"
pass "A: past the wrap, a lock is taken, handed over in order, and nothing is left"

# ---- B: the counter's end ---------------------------------------------------------
"${IK_LOCK[@]}" /end -- sh -c 'echo "$IDKEEPER_LOCK_NODE" >"$0.node"; touch "$0.held"; sleep 20; touch "$0.done"' \
  "$T/end" 2>"$T/b1.err" &
pa=$!
IK_PIDS+=($pa)
wait_until 20 test -e "$T/end.held" || fail "B: the holder never held: $(cat "$T/b1.err")"
grep -q -- '-lock-2147483647$' "$T/end.node" || fail "B: the holder's node is $(cat "$T/end.node")"
# a waiter queued behind the holder (with a name of 2147483647 as well)
"${IK_LOCK[@]}" --timeout 60000 /end -- sh -c '[ -e "$0.done" ] && touch "$0.w.after" || touch "$0.w.early"' \
  "$T/end" 2>"$T/b2.err" &
pw=$!
IK_PIDS+=($pw)
wait_nodes /t/end 2 "$T/end.w.early" || fail "B: the waiter held while the holder held"
early=0
for ((k = 0; k < 12; k++)); do
  rc=0
  "${IK_LOCK[@]}" --timeout 0 /end -- touch "$T/end.try$k" 2>"$T/b3.$k.err" || rc=$?
  if [ $rc != 124 ]; then
    early=$((early + 1))
    log "B: try $k exited $rc while the lock was held: $(head -c 200 "$T/b3.$k.err")"
  fi
done
zk_py nodes /t/end >"$T/end.nodes"
[ -e "$T/end.done" ] && fail "B: the holder ended before the tries did (the machine is too slow for this test)"
[ "$early" = 0 ] || fail "B: $early of 12 tries held the lock while it was held (nodes: $(tr '\n' ' ' <"$T/end.nodes"))"
wait $pa || fail "B: the holder failed: $(cat "$T/b1.err")"
wait $pw || fail "B: the waiter failed: $(cat "$T/b2.err")"
[ -e "$T/end.w.after" ] || fail "B: the waiter held before the holder ended"
left=$(zk_py nodes /t/end | wc -l)
[ "$left" = 0 ] || fail "B: $left nodes left: $(zk_py nodes /t/end)"
pass "B: at the counter's end (nodes $(awk '{ sub(/.*-lock-/, "", $1); print $1 }' "$T/end.nodes" | sort | uniq -c | tr -s ' \n' ' ')), no try held while the lock was held"

# ---- C: our node deleted while we wait -------------------------------------------
zk_py mkdir /t/gone
"${IK_LOCK[@]}" /gone -- sh -c 'touch "$0.held"; sleep 60' "$T/gone" 2>"$T/c1.err" &
pa=$!
IK_PIDS+=($pa)
wait_until 20 test -e "$T/gone.held" || fail "C: the holder never held"
# B queues behind A, W behind B: when B's node goes, W lists again
"${IK_LOCK[@]}" /gone -- true 2>"$T/c2.err" &
pb=$!
IK_PIDS+=($pb)
wait_nodes /t/gone 2
mono_ms t0
rc=0
"${IK_LOCK[@]}" --timeout 20000 /gone -- touch "$T/gone.ran" 2>"$T/c3.err" &
pw=$!
IK_PIDS+=($pw)
wait_nodes /t/gone 3
# the waiter wakes when B's node goes, finds its own gone and queues again
zk_py requeue /t/gone "pid=$pw " "pid=$pb " >"$T/requeue.out"
grep -q '^deleted 1 1$' "$T/requeue.out" || fail "C: the nodes to delete were not there: $(cat "$T/requeue.out")"
grep -q '^requeued$' "$T/requeue.out" || fail "C: the waiter did not queue again: $(zk_py nodes /t/gone)"
kill -0 $pw 2>/dev/null || fail "C: the waiter ended before its timeout: $(cat "$T/c3.err")"
wait $pw || rc=$?
took=$(($(mono_ms) - t0))
[ $rc = 124 ] || fail "C: the waiter exited $rc, not 124: $(cat "$T/c3.err")"
[ ! -e "$T/gone.ran" ] || fail "C: the waiter ran CMD while the lock was held"
((took >= 19900 && took < 20000 + 15000)) || fail "C: --timeout 20000 took $took ms"
zk_py nodes /t/gone | grepq " pid=$pw " && fail "C: the waiter left a node: $(zk_py nodes /t/gone)"
pass "C: a waiter whose node was deleted queued again, gave up after $took ms (--timeout 20000) and left nothing"
kill "$pa" "$pb" 2>/dev/null || true

# ---- D: an election at the counter's end ------------------------------------------
# each leader's CMD holds a directory while it leads: a second leader cannot make it.
# c0 leads first, for 5 s; c1..c4 campaign while it leads.
pids=()
for ((k = 0; k < 5; k++)); do
  "$IK_BIN" elect --coord "$COORD" --zk-session-timeout 4000 --once --id "c$k" /elect -- \
    sh -c 'mkdir "$0.lead" 2>/dev/null || { touch "$0.both"; exit 0; }; sleep "$1"; rmdir "$0.lead"; echo "$IDKEEPER_ELECT_ID" >>"$0.led"' \
    "$T/elect" "$( ((k == 0)) && echo 5 || echo 0.5)" 2>"$T/d.$k.err" &
  pids+=($!)
  IK_PIDS+=($!)
  if ((k == 0)); then
    wait_until 20 test -e "$T/elect.lead" || fail "D: the first candidate never led: $(cat "$T/d.0.err")"
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail "D: a candidate failed: $(cat "$T"/d.*.err)"; done
[ ! -e "$T/elect.both" ] && [ ! -e "$T/elect.lead" ] || fail "D: two candidates led at once"
[ "$(wc -l <"$T/elect.led")" = 5 ] || fail "D: $(wc -l <"$T/elect.led") of 5 candidates led"
left=$(zk_py nodes /t/elect | wc -l)
[ "$left" = 0 ] || fail "D: $left nodes left: $(zk_py nodes /t/elect)"
pass "D: at the counter's end, 5 candidates led one at a time"
