#!/usr/bin/env bash
# labels: recipes zk
# timeout: 180
# A semaphore on ZooKeeper is herd-free and fair (docs/recipes.md, "Semaphores"):
# with its one lease held, four waiters queue; ZooKeeper's own count of watches
# shows one child watch in the whole server (mntr's zk_watch_count, data and child
# watches, less the data watches that wchp lists): the queue's holder's, on the
# leases' directory; and wchp shows each node of the queue watched by at most one
# session besides its owner's own (the contender behind it). A lease given back wakes one waiter. Then the
# leases go to the waiters in the order they queued. (A server of the test's own:
# the counts are the server's.) (Curator's InterProcessSemaphoreV2 watches
# the leases from the queue's holder too, but wakes every thread of that JVM that
# waits on the semaphore object: InterProcessSemaphoreV2.java:87-92 (Curator 5.4.0)
# posts CuratorFramework.java:346-350's notifyAll.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
URI=$(zk_uri t)
root=
[[ $ZK_CONNECT == */* ]] && root=/${ZK_CONNECT#*/}
dir=$root/t/herd

"$IK_BIN" semaphore --coord "$URI" --max 1 /herd -- \
  bash -c 'touch "$0.held"; while [ ! -e "$0.stop" ]; do sleep 0.02; done' "$T/h" 2>"$T/h.err" &
h=$!
IK_PIDS+=($h)
wait_until 60 test -e "$T/h.held" || fail "the holder never held: $(cat "$T/h.err")"
w=()
queued() { (($(zk_tool ls "/t/herd/locks" | grep -c -- '-lock-') >= $1)); }
for i in 1 2 3 4; do
  "$IK_BIN" semaphore --coord "$URI" --max 1 /herd -- bash -c 'echo "$1" >>"$0"; sleep 0.2' "$T/order" "W$i" \
    2>"$T/w$i.err" &
  w+=($!)
  IK_PIDS+=($!)
  wait_until 60 queued "$i" || fail "W$i did not queue: $(cat "$T/w$i.err")"
done

# child_watches: the server's watches (mntr) less its data watches (wchp's pairs of a
# path and a session)
child_watches() {
  local all data
  all=$(zk_4lw 1 mntr | awk '$1 == "zk_watch_count" { print $2 }')
  data=$(zk_4lw 1 wchp | awk '/^\// { next } NF { n++ } END { print n + 0 }')
  echo $((all - data))
}
one_child_watch() { [ "$(child_watches)" = 1 ]; }
wait_until 30 one_child_watch || fail "$(child_watches) child watches, not 1 (the queue's holder's, on the leases): $(zk_4lw 1 wchp)"
zk_4lw 1 wchp >"$T/wchp"
# each queue node: the sessions watching it, its owner's own watch left out
most=0
queue_watched=0
while read -r node; do
  owner=$(zk_tool owner "/t/herd/locks/$node")
  n=$(awk -v p="$dir/locks/$node" -v o="$owner" '/^\// { cur = $0; next } cur == p && NF && $1 != o { n++ } END { print n + 0 }' "$T/wchp")
  queue_watched=$((queue_watched + n))
  ((n <= most)) || most=$n
done < <(zk_tool ls /t/herd/locks)
((most <= 1)) || fail "a node of the queue is watched by $most sessions besides its owner: $(cat "$T/wchp")"

touch "$T/h.stop"
for i in 0 1 2 3; do wait "${w[$i]}" || fail "W$((i + 1)) failed: $(cat "$T/w$((i + 1)).err")"; done
wait $h || fail "the holder failed: $(cat "$T/h.err")"
[ "$(tr '\n' ' ' <"$T/order")" = "W1 W2 W3 W4 " ] || fail "the leases did not go in the order of arrival: $(tr '\n' ' ' <"$T/order")"
pass "one lease held, 4 waiters: 1 child watch in the server (the leases'), each queue node by at most 1 session besides its owner ($queue_watched such watches on the queue of 4); the waiters held in the order they queued"
