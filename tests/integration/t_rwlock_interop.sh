#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 180
# fixtures: zk
# ik_rwlock and Curator's InterProcessReadWriteLock (__READ__ / __WRIT__ nodes) on
# one path: a writer of either kind excludes readers and writers of both; readers
# of both kinds share; a reader does not overtake a writer that queued before it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_interop_start c java
P=/interop/rw
c_try() { "${IK_INTEROP[@]}" rw-try "$URI" $P "$1"; }
j_try() { "${CURATOR[@]}" rw-try "$ZK_CONNECT" /t$P "$1" 2>/dev/null; }
expect() { # WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: $2, want $3"
}
hold() { # c|j read|write NAME: holds in the background until $T/NAME.stop
  rm -f "$T/$3.ready" "$T/$3.stop"
  if [ "$1" = c ]; then
    "${IK_INTEROP[@]}" rw-hold "$URI" $P "$2" "$T/$3.ready" "$T/$3.stop" &
  else
    "${CURATOR[@]}" rw-hold "$ZK_CONNECT" /t$P "$2" "$T/$3.ready" "$T/$3.stop" 2>/dev/null &
  fi
  HOLD_PID[$3]=$!
  IK_PIDS+=($!)
}
wait_ready() { for ((i = 0; i < 600; i++)); do [ -e "$T/$1.ready" ] && return 0; sleep 0.05; done; fail "$1 never held"; }
unhold() { touch "$T/$1.stop"; wait "${HOLD_PID[$1]}"; }
declare -A HOLD_PID=()

hold j write jw && wait_ready jw
expect "C read while Curator writes" "$(c_try read)" busy
expect "C write while Curator writes" "$(c_try write)" busy
unhold jw
hold j read jr && wait_ready jr
expect "C read while Curator reads" "$(c_try read)" got
expect "C write while Curator reads" "$(c_try write)" busy
unhold jr
hold c write cw && wait_ready cw
expect "Curator read while C writes" "$(j_try read)" busy
expect "Curator write while C writes" "$(j_try write)" busy
unhold cw
hold c read cr && wait_ready cr
expect "Curator read while C reads" "$(j_try read)" got
expect "Curator write while C reads" "$(j_try write)" busy
# a Curator writer queues behind the C reader: a later C reader must wait for it
hold j write jw2
writer_queued() { zk_tool ls /t$P | grepq __WRIT__; } # kazoo: about 100 ms a call
wait_until 30 writer_queued || fail "the Curator writer did not queue"
expect "C read behind a queued Curator writer" "$(c_try read)" busy
unhold cr
wait_ready jw2
unhold jw2
expect "C write when all are gone" "$(c_try write)" got
[ -z "$(zk_tool ls /t$P)" ] || fail "nodes left: $(zk_tool ls /t$P)"
pass "ik_rwlock and InterProcessReadWriteLock exclude and share as one lock"
