#!/usr/bin/env bash
# lock_zk.sh [BUILD_DIR]: locks and elections on ZooKeeper next to Apache Curator, on
# the same standalone ZooKeeper in the same run (Debian's zookeeper 3.8 and Curator
# 5.4 jars, the test harness's server: loopback, tickTime 500 ms, forceSync=yes, so
# that each batch of writes costs an fsync; bench/lock_zk_ops.sh counts the
# requests a cycle makes):
#   - acquire + release cycles per second of an InterProcessMutex-style lock: one
#     client alone, and 4 clients (4 sessions) contending for one path, with the
#     client CPU a cycle and the median hand-over (from the end of one hold, whose
#     release follows, to the start of the next, whoever's); the C side
#     is libidkeeper (tests/interop/ik_interop.c bench-lock), the peer Curator's
#     InterProcessMutex (tests/interop/CuratorHelper.java bench-mutex)
#   - leadership hand-over after a resign, two candidates: from the leader's resign
#     call to the other's "you lead" callback (median and p90 of 50); the peer is
#     Curator's LeaderLatch (close() to isLeader())
# Prints each figure next to Curator's and the ratio. Both sides warm up first (the
# JIT of ZooKeeper and of Curator).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/zk.sh"
source "$here/../tests/interop/build.sh"
SECS=${SECS:-3}
RUNS=${RUNS:-5}

zk_start_standalone
interop_build_c
interop_build_java
uri=$(zk_uri bench)
# one run: "cycles_per_s cpu_us_per_cycle handover_us" (client process CPU, user +
# sys; the median hand-over: from a hold's end, its release next, to the next hold)
c_bench() {
  /usr/bin/time -f "%U %S" -o "$T/time" "${IK_INTEROP[@]}" bench-lock "$uri" "$1" "$2" "$3" >"$T/out"
  cpu_per_cycle "$(awk '{print $2}' "$T/out")" "$3" "$(awk '{print $6}' "$T/out")"
}
j_bench() {
  /usr/bin/time -f "%U %S" -o "$T/time" "${CURATOR[@]}" bench-mutex "$ZK_CONNECT" "/bench/j$1" "$2" "$3" \
    >"$T/out" 2>/dev/null
  cpu_per_cycle "$(awk '{print $2}' "$T/out")" "$3" "$(awk '{print $6}' "$T/out")"
}
cpu_per_cycle() { # RATE SECS HANDOVER: prints RATE, the CPU µs per cycle (start-up included), HANDOVER
  awk -v r="$1" -v s="$2" -v h="$3" '{ printf "%d %d %d\n", r, ($1 + $2) * 1e6 / (r * (s + 1)), h }' "$T/time"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { echo "scale=2; $1 / $2" | bc; }

c_bench /warm 2 2 >/dev/null
j_bench /warm 2 2 >/dev/null
echo "ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone on loopback; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each figure: the median of $RUNS runs of $SECS s, idkeeper and Curator alternating"
for n in 1 4; do
  : >"$T/c.$n"
  : >"$T/j.$n"
  for ((r = 0; r < RUNS; r++)); do
    c_bench "/m$n.$r" $n "$SECS" >>"$T/c.$n"
    j_bench "/m$n.$r" $n "$SECS" >>"$T/j.$n"
  done
  c=$(cut -d' ' -f1 "$T/c.$n" | median)
  j=$(cut -d' ' -f1 "$T/j.$n" | median)
  cc=$(cut -d' ' -f2 "$T/c.$n" | median)
  jc=$(cut -d' ' -f2 "$T/j.$n" | median)
  ch=$(cut -d' ' -f3 "$T/c.$n" | median)
  jh=$(cut -d' ' -f3 "$T/j.$n" | median)
  printf 'lock acquire+release, %d client(s): idkeeper %5s/s  Curator InterProcessMutex %5s/s  ratio %s  (client CPU per cycle: %s us vs %s us; hand-over, hold to next hold: %s us vs %s us; all runs: %s | %s)\n' \
    "$n" "$c" "$j" "$(ratio "$c" "$j")" "$cc" "$jc" "$ch" "$jh" "$(cut -d' ' -f1 "$T/c.$n" | tr '\n' ' ')" \
    "$(cut -d' ' -f1 "$T/j.$n" | tr '\n' ' ')"
done
read -r _ cm cp <<<"$("${IK_INTEROP[@]}" bench-handover "$uri" /h 50)"
read -r _ jm jp <<<"$("${CURATOR[@]}" bench-handover "$ZK_CONNECT" /bench/hj 50 2>/dev/null)"
printf 'leader hand-over after resign (median, p90 of 50): idkeeper %s ms, %s ms  Curator LeaderLatch %s ms, %s ms  ratio %s\n' \
  "$cm" "$cp" "$jm" "$jp" "$(ratio "$jm" "$cm")"
