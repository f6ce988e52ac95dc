#!/usr/bin/env bash
# etcd_acquire.sh [BUILD_DIR]: worker-slot acquire and renewal latency (median, p99)
# on etcd:// next to zk:// in the same run, through each backend's own calls
# (bench/slot_latency.c: slot_acquire, slot_persist, slot_release):
#   - etcd: Debian's etcd 3.4 as one member of its own on loopback (its WAL fsynced
#     on every write, etcd's default), and as a 3-member cluster on loopback (every
#     write on two members' disks before its answer: the shape docs/hazards.md asks
#     for)
#   - ZooKeeper: Debian's 3.8 standalone on loopback, forceSync=yes (one fsync per
#     write), as bench/zk_acquire.sh runs it
# Cases: a small app (range 0-31, 16 slots held by another coord) with the same
# identity throughout (a restart: it takes back its own slot) and a new identity
# each time (a new server); a large one (range 0-1023, 512 held), new identities.
# An etcd acquire is a range txn (slots and records), the take txn (compares the
# slot key's create_revision with 0 and the record's mod_revision) and, when the
# lease's proof is older than a third of its TTL, a keepalive; a renewal is one txn
# (the record, compared with our slot key's create_revision) after a keepalive if
# one is due. Each line: etcd's median next to ZooKeeper's, and the ratio (etcd /
# zk: below 1, etcd is faster). Settings: N (acquires per case, default 1000).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/etcd.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
N=${N:-1000}

lat=$build/bench/slot_latency
[ -x "$lat" ] || { echo "build $lat first (make build)" >&2; exit 1; }
etcd_own one
etcd_cluster3 c
zk_start_standalone
e1="etcd://127.0.0.1:${ETCD_PORT_OF[one]}/bench"
e3="etcd://$ETCD_ENDPOINTS/bench"
zk=$(zk_uri bench)
"$lat" "$zk" warm 0 31 300 random 0 >/dev/null # ZooKeeper's JIT
"$lat" "$e1" warm 0 31 100 random 0 >/dev/null
"$lat" "$e3" warm 0 31 100 random 0 >/dev/null
# Create all 1024 slot nodes first on ZooKeeper (lowest choice walks them), as
# zk_acquire.sh does; etcd keeps no node for a free slot
"$lat" "$zk" large 0 1023 1024 lowest 1023 fresh >/dev/null

echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p') (one member; and 3 members) and ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone (forceSync=yes) on loopback, data on $(df -P "$T" | awk 'NR == 2 {print $1}'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# field NAME OUT: "median p99" of the line NAME of slot_latency's output OUT
field() { awk -v k="$1" '$1 == k { print $4, $7 }' "$2"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
run() { # NAME MIN MAX N HELD IDENTITY
  local name=$1
  shift
  "$lat" "$e1" "$name" "$1" "$2" "$3" random "$4" "$5" >"$T/e1.out"
  "$lat" "$e3" "$name" "$1" "$2" "$3" random "$4" "$5" >"$T/e3.out"
  "$lat" "$zk" "$name" "$1" "$2" "$3" random "$4" "$5" >"$T/zk.out"
  echo "$(head -n 1 "$T/e1.out"), n=$3:"
  local op a b c
  for op in acquire renew release; do
    read -r a ap <<<"$(field "$op" "$T/e1.out")"
    read -r b bp <<<"$(field "$op" "$T/e3.out")"
    read -r c cp <<<"$(field "$op" "$T/zk.out")"
    printf '  %-8s etcd 1 member %7.3f ms (p99 %7.3f)  etcd 3 members %7.3f ms (p99 %7.3f)  zk:// %7.3f ms (p99 %7.3f)  ratio etcd/zk %s, %s\n' \
      "$op" "$a" "$ap" "$b" "$bp" "$c" "$cp" "$(ratio "$a" "$c")" "$(ratio "$b" "$c")"
  done
}
run small 0 31 "$N" 16 sticky
run small 0 31 "$N" 16 fresh
run large 0 1023 "$((N / 2))" 512 fresh
