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
now() { "${IK_INTEROP[@]}" now; }
# A holder prints its grant's state changes on $T/NAME.states ("STATE NS ...", see
# tests/interop): a session that expires on a starved machine is LOST there, which is
# not a double grant. A grant that overlaps a holder is a double grant unless the
# holder had given its grant up (C: LOST; Curator: SUSPENDED or LOST, its own rule)
# before the try returned; such a step proved nothing and is run again with a new
# holder (up to 3 times), so the check still fails on any real double grant.
hold() { # c|j read|write NAME: holds in the background until $T/NAME.stop
  rm -f "$T/$3.ready" "$T/$3.stop"
  : >"$T/$3.states"
  if [ "$1" = c ]; then
    "${IK_INTEROP[@]}" rw-hold "$URI" $P "$2" "$T/$3.ready" "$T/$3.stop" >"$T/$3.states" &
  else
    "${CURATOR[@]}" rw-hold "$ZK_CONNECT" /t$P "$2" "$T/$3.ready" "$T/$3.stop" >"$T/$3.states" 2>/dev/null &
  fi
  HOLD_PID[$3]=$!
  HOLD_WHAT[$3]="$1 $2"
  IK_PIDS+=($!)
}
wait_ready() { for ((i = 0; i < 600; i++)); do [ -e "$T/$1.ready" ] && return 0; sleep 0.05; done; fail "$1 never held"; }
unhold() { touch "$T/$1.stop"; wait "${HOLD_PID[$1]}"; }
declare -A HOLD_PID=() HOLD_WHAT=()
# gone_by NAME NS: holder NAME had given its grant up at or before NS
gone_by() {
  awk -v t="$2" '($1 == "LOST" || $1 == "SUSPENDED") && $2 <= t { f = 1 } END { exit !f }' "$T/$1.states"
}
# expect WHAT GOT WANT
expect() { [ "$2" = "$3" ] || fail "$1: $2, want $3"; }
# against NAME WHAT c|j read|write WANT: the other side's try, with holder NAME
# held, answers WANT; a "got" where busy is wanted counts only if NAME still held
against() {
  local name=$1 what=$2 try=$3_try kind=$4 want=$5 got t1 _
  for _ in 1 2 3; do
    got=$($try "$kind")
    t1=$(now)
    [ "$got" = "$want" ] && return 0
    if [ "$want" = busy ] && [ "$got" = got ] && gone_by "$name" "$t1"; then
      log "$what: got, but $name had given up its grant: $(tr '\n' ' ' <"$T/$name.states"); again"
      LOSSES=$((LOSSES + 1))
      unhold "$name"
      # shellcheck disable=SC2086
      hold ${HOLD_WHAT[$name]} "$name" && wait_ready "$name"
      continue
    fi
    # a double grant; a holder that was not run for a while (STALL) may tell it late
    wait_until 3 grepq -E '^(LOST|STALL) ' "$T/$name.states" || true
    fail "$what: $got, want $want (double grant: $name held; its states: $(tr '\n' ' ' <"$T/$name.states"))"
  done
  fail "$what: $name lost its session 3 times: the step proved nothing"
}
LOSSES=0

hold j write jw && wait_ready jw
against jw "C read while Curator writes" c read busy
against jw "C write while Curator writes" c write busy
unhold jw
hold j read jr && wait_ready jr
against jr "C read while Curator reads" c read got
against jr "C write while Curator reads" c write busy
unhold jr
hold c write cw && wait_ready cw
against cw "Curator read while C writes" j read busy
against cw "Curator write while C writes" j write busy
unhold cw
hold c read cr && wait_ready cr
against cr "Curator read while C reads" j read got
against cr "Curator write while C reads" j write busy
# a Curator writer queues behind the C reader: a later C reader must wait for it
hold j write jw2
writer_queued() { zk_tool ls /t$P | grepq __WRIT__; } # kazoo: about 100 ms a call
wait_until 30 writer_queued || fail "the Curator writer did not queue"
got=$(c_try read)
if [ "$got" != busy ]; then
  # the reader ahead of it may have given up (then jw2 holds, and a reader is busy
  # all the same): a got here is a double grant or an overtaking, whatever happened
  fail "C read behind a queued Curator writer: $got, want busy (states: cr $(tr '\n' ' ' <"$T/cr.states"), jw2 $(tr '\n' ' ' <"$T/jw2.states"))"
fi
unhold cr
wait_ready jw2
unhold jw2
expect "C write when all are gone" "$(c_try write)" got
[ -z "$(zk_tool ls /t$P)" ] || fail "nodes left: $(zk_tool ls /t$P)"
pass "ik_rwlock and InterProcessReadWriteLock exclude and share as one lock ($LOSSES steps run again after a holder lost its session)"
