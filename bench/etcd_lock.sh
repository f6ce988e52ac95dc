#!/usr/bin/env bash
# etcd_lock.sh [BUILD_DIR]: lock acquire + release on etcd:// next to its peers on
# the same etcd in the same run, and next to zk:// (Debian's etcd 3.4, one member of
# its own on loopback, its WAL fsynced on every write; ZooKeeper 3.8 standalone,
# forceSync=yes):
#   - in one process, one client, as fast as it goes for SECS s (the median of RUNS
#     runs, alternating): idkeeper's lock through libidkeeper
#     (tests/interop/ik_interop.c bench-lock: etcd's concurrency recipe, a lease of
#     the lock's own, the key NAME/LEASEHEX, docs/etcd.md) against Debian's
#     python3-etcd3 client's Lock (a key /locks/NAME put if absent on a lease, over
#     gRPC: not etcd's concurrency recipe, so it does not exclude etcdctl) and
#     against idkeeper's lock on zk://;
#   - a process per grant, K grants in a row: `idkeeper lock NAME -- true` against
#     `etcdctl lock NAME true` (etcd-client, the Go client's concurrency.Mutex) on
#     the same name, and `idkeeper lock` on zk://.
# Prints each figure next to its peers' and the ratios. Settings: SECS (3), RUNS (3),
# K (50).
set -euo pipefail
source "$(dirname "$0")/test_libs.sh" # here, build, IK_BIN; the tests' lib.sh and etcd.sh
export ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
source "$here/../tests/interop/build.sh"
SECS=${SECS:-3}
RUNS=${RUNS:-3}
K=${K:-50}

etcd_own one
ETCD_PORT=${ETCD_PORT_OF[one]}
zk_start_standalone
interop_build_c
E="etcd://127.0.0.1:$ETCD_PORT"
Z=$(zk_uri bench)

# the python3-etcd3 peer: "cycles_per_s N"
cat >"$T/py_lock.py" <<'PY'
import sys, time
import etcd3
port, name, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
c = etcd3.client(host="127.0.0.1", port=port)
lock = c.lock(name, ttl=10)
for _ in range(20):  # the channel, warm
    lock.acquire(); lock.release()
n, t0 = 0, time.monotonic()
while time.monotonic() - t0 < secs:
    lock.acquire()
    lock.release()
    n += 1
print("cycles_per_s %.0f" % (n / (time.monotonic() - t0)))
PY
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
ik_rate() { "${IK_INTEROP[@]}" bench-lock "$1" "$2" 1 "$SECS" | awk '{ print $2 }'; }
py_rate() { /usr/bin/python3 "$T/py_lock.py" "$ETCD_PORT" "$1" "$SECS" | awk '{ print $2 }'; }

ik_rate "$E" /warm >/dev/null
ik_rate "$Z" /warm >/dev/null
echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p') one member and ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone (forceSync=yes) on loopback, data on $(df -P "$T" | awk 'NR == 2 {print $1}'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$T/ie"
: >"$T/py"
: >"$T/iz"
for ((r = 0; r < RUNS; r++)); do
  ik_rate "$E" "/b$r" >>"$T/ie"
  py_rate "b$r" >>"$T/py"
  ik_rate "$Z" "/b$r" >>"$T/iz"
done
ie=$(median <"$T/ie") py=$(median <"$T/py") iz=$(median <"$T/iz")
printf 'lock acquire+release in one process, 1 client (median of %d runs of %s s): idkeeper etcd:// %s/s  python3-etcd3 Lock %s/s  idkeeper zk:// %s/s  ratio idkeeper etcd / python3-etcd3 %s, etcd / zk %s  (runs: %s| %s| %s)\n' \
  "$RUNS" "$SECS" "$ie" "$py" "$iz" "$(ratio "$ie" "$py")" "$(ratio "$ie" "$iz")" \
  "$(tr '\n' ' ' <"$T/ie")" "$(tr '\n' ' ' <"$T/py")" "$(tr '\n' ' ' <"$T/iz")"

# a process per grant: K grants in a row, ms per grant (start, take, run, release, exit)
per_grant() { # CMD...: ms per grant of K runs of CMD
  local t0 t1 i
  t0=$(mono_ms)
  for ((i = 0; i < K; i++)); do "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }; done
  t1=$(mono_ms)
  awk -v d=$((t1 - t0)) -v k="$K" 'BEGIN { printf "%.1f", d / k }'
}
pe=$(per_grant "$IK_BIN" lock --coord "$E" pg -- true)
pc=$(per_grant env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$ETCD_PORT" lock pg true)
pz=$(per_grant "$IK_BIN" lock --coord "$Z" /pg -- true)
printf 'lock, a process per grant (%d in a row, start to exit): idkeeper lock etcd:// %s ms  etcdctl lock %s ms  idkeeper lock zk:// %s ms  ratio idkeeper etcd / etcdctl %s, etcd / zk %s\n' \
  "$K" "$pe" "$pc" "$pz" "$(ratio "$pe" "$pc")" "$(ratio "$pe" "$pz")"
