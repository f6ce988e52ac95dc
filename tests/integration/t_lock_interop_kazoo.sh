#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# C holders (libidkeeper, two processes) and kazoo's Lock (python3-kazoo, with
# extra_lock_patterns=["-lock-"]) contend for one lock path: 300 rounds each side,
# every holder records its enter and exit on CLOCK_MONOTONIC, and no two intervals
# overlap. (Curator and kazoo are never mixed on one path: they do not exclude each
# other, see docs/recipes.md.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$IK_SRC/tests/interop/build.sh"

zk_start_standalone
interop_build_c
URI=$(zk_uri t)
ROUNDS=${ROUNDS:-300}
HOLD_US=200

"${IK_INTEROP[@]}" lock "$URI" /interop/kazoo $((ROUNDS / 2)) "$T/c1.iv" $HOLD_US "$T/go" 2>"$T/c1.log" &
c1=$!
"${IK_INTEROP[@]}" lock "$URI" /interop/kazoo $((ROUNDS - ROUNDS / 2)) "$T/c2.iv" $HOLD_US "$T/go" 2>"$T/c2.log" &
c2=$!
"${KAZOO[@]}" lock "$ZK_CONNECT" /t/interop/kazoo $ROUNDS "$T/p.iv" $HOLD_US "$T/go" 2>"$T/p.log" &
p=$!
IK_PIDS+=($c1 $c2 $p)
for ((i = 0; i < 600; i++)); do
  [ -e "$T/c1.iv" ] && [ -e "$T/c2.iv" ] && [ -e "$T/p.iv" ] && break
  sleep 0.05
done
[ -e "$T/p.iv" ] || fail "the kazoo helper did not connect (see $T/p.log)"
t0=$SECONDS
touch "$T/go"
wait $c1 || fail "C holder 1 failed (see $T/c1.log)"
wait $c2 || fail "C holder 2 failed (see $T/c2.log)"
wait $p || fail "the kazoo holder failed (see $T/p.log)"
[ "$(cat "$T/c1.iv" "$T/c2.iv" | wc -l)" = $ROUNDS ] || fail "C rounds missing"
[ "$(wc -l <"$T/p.iv")" = $ROUNDS ] || fail "kazoo rounds missing"
res=$(interop_check_intervals "$T/c1.iv" "$T/c2.iv" "$T/p.iv") || fail "C and kazoo holders overlap: $res"
log "$res"
sw=$(echo "$res" | sed -n 's/.* \([0-9]*\) switches.*/\1/p')
((sw >= 50)) || fail "C and kazoo hardly contended ($sw switches): the test proves nothing"
[ -z "$(zk_tool ls /t/interop/kazoo)" ] || fail "nodes left: $(zk_tool ls /t/interop/kazoo)"
pass "C and kazoo on one path: $res, in $((SECONDS - t0)) s"
