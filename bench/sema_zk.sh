#!/usr/bin/env bash
# sema_zk.sh [BUILD_DIR]: a semaphore's acquire + release on ZooKeeper next to Apache
# Curator's InterProcessSemaphoreV2, on the same standalone ZooKeeper in the same run
# (Debian's zookeeper 3.8 and Curator 5.4 jars, the test harness's server: loopback,
# tickTime 500 ms, forceSync=yes):
#   - one client alone on a semaphore of max 3: the latency of one cycle (an
#     acquire and its release), median and p90, and cycles per second
#   - 4 clients (4 sessions) on a semaphore of max 2: the same, waits included
# The C side is libidkeeper's ik_semaphore (tests/interop/ik_interop.c bench-sema),
# Curator's the InterProcessSemaphoreV2 with acquire() and returnLease()
# (tests/interop/CuratorHelper.java bench-sema), each after a second of warm-up.
# Prints each figure next to Curator's and the ratio.
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
# one run: "cycles_per_s median_us p90_us"
c_bench() { "${IK_INTEROP[@]}" bench-sema "$uri" "$1" "$2" "$3" "$SECS" | awk '{ print $2, $6, $7 }'; }
j_bench() {
  "${CURATOR[@]}" bench-sema "$ZK_CONNECT" "/bench$1" "$2" "$3" "$SECS" 2>/dev/null | awk '{ print $2, $6, $7 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { echo "scale=2; $1 / $2" | bc; }

c_bench /warm 3 1 >/dev/null
j_bench /warm 3 1 >/dev/null
echo "ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone on loopback; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "each figure: the median of $RUNS runs of $SECS s, idkeeper and Curator alternating"
for shape in "1 3" "4 2"; do
  read -r n max <<<"$shape"
  : >"$T/c.$n"
  : >"$T/j.$n"
  for ((r = 0; r < RUNS; r++)); do
    c_bench "/s$n.$r" "$max" "$n" >>"$T/c.$n"
    j_bench "/s$n.$r" "$max" "$n" >>"$T/j.$n"
  done
  cr=$(cut -d' ' -f1 "$T/c.$n" | median) jr=$(cut -d' ' -f1 "$T/j.$n" | median)
  cm=$(cut -d' ' -f2 "$T/c.$n" | median) jm=$(cut -d' ' -f2 "$T/j.$n" | median)
  cp=$(cut -d' ' -f3 "$T/c.$n" | median) jp=$(cut -d' ' -f3 "$T/j.$n" | median)
  printf 'semaphore acquire+release, %d client(s), max %d: idkeeper %s us (p90 %s us, %s/s)  Curator InterProcessSemaphoreV2 %s us (p90 %s us, %s/s)  latency ratio %s  (all runs, us: %s | %s)\n' \
    "$n" "$max" "$cm" "$cp" "$cr" "$jm" "$jp" "$jr" "$(ratio "$jm" "$cm")" \
    "$(cut -d' ' -f2 "$T/c.$n" | tr '\n' ' ')" "$(cut -d' ' -f2 "$T/j.$n" | tr '\n' ' ')"
done
