#!/usr/bin/env bash
# etcd_acquire.sh [BUILD_DIR]: worker-slot acquire, renewal and release latency
# (median, p99) on etcd next to zk:// in the same run, through each backend's own
# slot_acquire, slot_persist and slot_release (bench/slot_latency.c): a small app,
# range 0-31 with 16 slots held by another coord, the same identity throughout and a
# new one each time. etcd: a one-member cluster and a 3-member one on loopback
# (Debian's etcd 3.4, fsync on every write); ZooKeeper: a standalone server with
# forceSync=yes. An etcd acquire is one read txn (slots and records) and one write
# txn; a renewal a write txn (and a keepalive every third of the TTL); a release a
# write txn and, at close, the lease's revoke.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
source "$here/../tests/integration/etcd.sh"
N=${N:-500}
lat=$build/bench/slot_latency
[ -x "$lat" ] || { echo "build $lat first (make build)" >&2; exit 1; }
zk_start_standalone
etcd_own one
etcd_cluster3 three
zuri=$(zk_uri bench)
e1=etcd://127.0.0.1:${ETCD_PORT_OF[one]}/bench
e3=etcd://127.0.0.1:${ETCD_PORT_OF[three0]},127.0.0.1:${ETCD_PORT_OF[three1]},127.0.0.1:${ETCD_PORT_OF[three2]}/bench
"$lat" "$zuri" warm 0 31 300 random 0 >/dev/null # JIT warm-up
"$lat" "$e1" warm 0 31 50 random 0 >/dev/null
echo "etcd $(etcd --version | sed -n 's/etcd Version: //p') and ZooKeeper standalone (forceSync=yes) on loopback, data on $(df -P "$T" | awk 'NR == 2 {print $1}'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for mode in sticky fresh; do
  echo "== $mode identity"
  echo "-- zk://"
  "$lat" "$zuri" small 0 31 "$N" random 16 "$mode"
  echo "-- etcd://, 1 member"
  "$lat" "$e1" small 0 31 "$N" random 16 "$mode"
  echo "-- etcd://, 3 members"
  "$lat" "$e3" small 0 31 "$N" random 16 "$mode"
done
