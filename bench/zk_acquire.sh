#!/usr/bin/env bash
# zk_acquire.sh [BUILD_DIR]: slot acquire latency (median, p99) on a running
# standalone ZooKeeper (Debian's package, full JIT, fsync on every write as in
# production), through the backend's own slot_acquire, slot_persist and slot_release
# (bench/slot_latency.c):
#   - a small app: range 0-31, 16 slots held by another session
#   - a large one: range 0-1023 with all 1024 slot nodes in place, 512 of them held
#     by another session
# each with the same identity throughout (a restart: it takes back its own slot)
# and with a new identity each time (a new server: random choice). An acquire is
# 3 reads (owners listing, identity node, slot node) and one zoo_multi write (one
# fsync); release is one multi. Release is the peer figure: a bare ZooKeeper write.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"

lat=$build/bench/slot_latency
[ -x "$lat" ] || { echo "build $lat first (make build)" >&2; exit 1; }
zk_start_standalone
uri=$(zk_uri bench)
"$lat" "$uri" warm 0 31 300 random 0 >/dev/null # JIT warm-up
echo "ZooKeeper 3.8.0 standalone on loopback, forceSync=yes, data dir on $(df -P "$T" | awk 'NR == 2 {print $1}')"
"$lat" "$uri" small 0 31 2000 random 16 sticky
"$lat" "$uri" small 0 31 2000 random 16 fresh
# Create all 1024 slot nodes first (lowest choice walks them), then measure.
"$lat" "$uri" large 0 1023 1024 lowest 1023 fresh >/dev/null
"$lat" "$uri" large 0 1023 1000 random 512 sticky
"$lat" "$uri" large 0 1023 1000 random 512 fresh
