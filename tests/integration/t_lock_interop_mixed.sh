#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 180
# fixtures: zk
# The warning of docs/recipes.md, measured: Apache Curator's InterProcessMutex and
# kazoo's Lock (even with extra_lock_patterns=["-lock-"]) on one path do NOT exclude
# each other (Curator sorts kazoo's __lock__ names whole, after its own, and takes
# the lock while kazoo holds it). This test expects overlaps: it also shows that
# the interval check of the interop tests catches them.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_interop_start java
ROUNDS=100
"${CURATOR[@]}" mutex "$ZK_CONNECT" /t/interop/mixed $ROUNDS "$T/j.iv" 2000 "$T/go" 2>"$T/j.log" &
j=$!
"${KAZOO[@]}" lock "$ZK_CONNECT" /t/interop/mixed $ROUNDS "$T/p.iv" 2000 "$T/go" 2>"$T/p.log" &
p=$!
IK_PIDS+=($j $p)
wait_until 30 test -e "$T/j.iv" -a -e "$T/p.iv" || true
touch "$T/go"
wait $j || fail "the Curator holder failed (see $T/j.log)"
wait $p || fail "the kazoo holder failed (see $T/p.log)"
if res=$(interop_check_intervals "$T/j.iv" "$T/p.iv"); then
  fail "Curator and kazoo never overlapped in $ROUNDS rounds each: $res (docs/recipes.md says they do)"
fi
log "$res"
pass "Curator and kazoo on one path overlap, as documented: $(echo "$res" | head -n 1)"
