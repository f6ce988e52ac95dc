#!/usr/bin/env bash
# lock_zk.sh [BUILD_DIR]: locks and elections on ZooKeeper next to Apache Curator, on
# the same standalone ZooKeeper in the same run (Debian's zookeeper 3.8 and Curator
# 5.4 jars, the test harness's server: loopback, tickTime 500 ms, forceSync=no):
#   - acquire + release cycles per second of an InterProcessMutex-style lock: one
#     client alone, and 4 clients (4 sessions) contending for one path; the C side
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
SECS=${SECS:-5}

zk_start_standalone
interop_build_c
interop_build_java
uri=$(zk_uri bench)
c_bench() { "${IK_INTEROP[@]}" bench-lock "$uri" "$1" "$2" "$3" | awk '{print $2}'; }
j_bench() { "${CURATOR[@]}" bench-mutex "$ZK_CONNECT" "/bench/j$1" "$2" "$3" 2>/dev/null | awk '{print $2}'; }
ratio() { echo "scale=2; $1 / $2" | bc; }

c_bench /warm 2 2 >/dev/null
j_bench /warm 2 2 >/dev/null
echo "ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone on loopback; $(nproc) cores; each figure over $SECS s"
for n in 1 4; do
  c=$(c_bench /m$n $n "$SECS")
  j=$(j_bench /m$n $n "$SECS")
  printf 'lock acquire+release, %d client(s): idkeeper %6s/s  Curator InterProcessMutex %6s/s  ratio %s\n' \
    "$n" "$c" "$j" "$(ratio "$c" "$j")"
done
read -r _ cm cp <<<"$("${IK_INTEROP[@]}" bench-handover "$uri" /h 50)"
read -r _ jm jp <<<"$("${CURATOR[@]}" bench-handover "$ZK_CONNECT" /bench/hj 50 2>/dev/null)"
printf 'leader hand-over after resign (median, p90): idkeeper %s ms, %s ms  Curator LeaderLatch %s ms, %s ms  ratio %s\n' \
  "$cm" "$cp" "$jm" "$jp" "$(ratio "$jm" "$cm")"
