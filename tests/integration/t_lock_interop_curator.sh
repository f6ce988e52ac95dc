#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# C holders (libidkeeper, two processes) and Apache Curator's InterProcessMutex (a
# JVM compiled here against Debian's jars) contend for one lock path: 300 rounds
# each side, every holder records its enter and exit on CLOCK_MONOTONIC, and no two
# intervals overlap.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$IK_SRC/tests/interop/build.sh"

zk_start_standalone
interop_build_c
interop_build_java
URI=$(zk_uri t)
ROUNDS=${ROUNDS:-300}
HOLD_US=200

"${IK_INTEROP[@]}" lock "$URI" /interop/curator $((ROUNDS / 2)) "$T/c1.iv" $HOLD_US "$T/go" 2>"$T/c1.log" &
c1=$!
"${IK_INTEROP[@]}" lock "$URI" /interop/curator $((ROUNDS - ROUNDS / 2)) "$T/c2.iv" $HOLD_US "$T/go" 2>"$T/c2.log" &
c2=$!
"${CURATOR[@]}" mutex "$ZK_CONNECT" /t/interop/curator $ROUNDS "$T/j.iv" $HOLD_US "$T/go" 2>"$T/j.log" &
j=$!
IK_PIDS+=($c1 $c2 $j)
for ((i = 0; i < 600; i++)); do
  [ -e "$T/c1.iv" ] && [ -e "$T/c2.iv" ] && [ -e "$T/j.iv" ] && break
  sleep 0.05
done
[ -e "$T/j.iv" ] || fail "the Curator helper did not connect (see $T/j.log)"
t0=$SECONDS
touch "$T/go"
wait $c1 || fail "C holder 1 failed (see $T/c1.log)"
wait $c2 || fail "C holder 2 failed (see $T/c2.log)"
wait $j || fail "the Curator holder failed (see $T/j.log)"
[ "$(cat "$T/c1.iv" "$T/c2.iv" | wc -l)" = $ROUNDS ] || fail "C rounds missing"
[ "$(wc -l <"$T/j.iv")" = $ROUNDS ] || fail "Curator rounds missing"
res=$(interop_check_intervals "$T/c1.iv" "$T/c2.iv" "$T/j.iv") || fail "C and Curator holders overlap: $res"
log "$res"
sw=$(echo "$res" | sed -n 's/.* \([0-9]*\) switches.*/\1/p')
((sw >= 50)) || fail "C and Curator hardly contended ($sw switches): the test proves nothing"
awk '{ if (NR > 1 && $4 <= prev) { print "fence " $4 " after " prev; exit 1 } prev = $4 }' "$T/c1.iv" ||
  fail "a C holder's fences do not increase"
[ -z "$(zk_tool ls /t/interop/curator)" ] || fail "nodes left: $(zk_tool ls /t/interop/curator)"
pass "C and Curator on one path: $res, in $((SECONDS - t0)) s"
