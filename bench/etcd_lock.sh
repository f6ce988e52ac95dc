#!/usr/bin/env bash
# etcd_lock.sh [BUILD_DIR]: lock acquire + release cycles per second on one etcd
# (a one-member cluster on loopback, Debian's etcd 3.4), one client alone and 4
# contending for one name, next to in the same run:
#   - python3-etcd3's Lock (Debian's client: acquire, release in a loop, one
#     client per process),
#   - `etcdctl lock NAME -- true` (a process per grant, as a shell script takes it),
#   - zk:// (a standalone ZooKeeper, forceSync=yes), through the same libidkeeper
#     loop (tests/interop/ik_interop.c bench-lock).
# idkeeper's cycle on etcd: a lease grant, a txn (our key), a read of the older
# contenders, a read of our key, and the revoke (which deletes it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
source "$here/../tests/integration/etcd.sh"
source "$here/../tests/interop/build.sh"
SECS=${SECS:-5}
zk_start_standalone
etcd_own one
interop_build_c
euri=etcd://127.0.0.1:${ETCD_PORT_OF[one]}
zuri=$(zk_uri bench)
cat >"$T/py_lock.py" <<'PY'
import sys, time, etcd3
port, name, secs = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
c = etcd3.client(host="127.0.0.1", port=port)
n, bad, end = 0, 0, time.monotonic() + secs
while time.monotonic() < end:
    lk = c.lock(name, ttl=10)
    try:
        # Debian's python3-etcd3 0.12 and its tenacity disagree on the retry's wait
        # (TypeError) when the lock is taken: such an acquire counts as failed
        if lk.acquire(timeout=10):
            lk.release()
            n += 1
        else:
            bad += 1
    except TypeError:
        bad += 1
print(n, bad)
PY
py() { # py CLIENTS: cycles a second, CLIENTS processes on one name
  local i
  for ((i = 0; i < $1; i++)); do python3 "$T/py_lock.py" "${ETCD_PORT_OF[one]}" "py$1" "$SECS" >"$T/py$i" & done
  wait
  echo "$(cut -d' ' -f1 "$T"/py? | paste -sd+ | bc) / $SECS" | bc -l | xargs printf '%.0f'
  printf ' (%s failed)' "$(cut -d' ' -f2 "$T"/py? | paste -sd+ | bc)"
}
ctl() { # ctl CLIENTS: etcdctl lock -- true, a process per grant
  local i
  for ((i = 0; i < $1; i++)); do
    (n=0; end=$((SECONDS + SECS)); while ((SECONDS < end)); do
      ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:${ETCD_PORT_OF[one]}" lock "ctl$1" -- true >/dev/null && n=$((n + 1))
    done; echo $n >"$T/ctl$i") &
  done
  wait
  echo "$(cat "$T"/ctl? | paste -sd+ | bc) / $SECS" | bc -l | xargs printf '%.0f'
}
ik() { "${IK_INTEROP[@]}" bench-lock "$1" "/ik$2" "$2" "$SECS" | awk '{printf "%.0f", $2}'; }
echo "etcd $(etcd --version | sed -n 's/etcd Version: //p') one member, ZooKeeper standalone (forceSync=yes), loopback; load $(cut -d' ' -f1-3 /proc/loadavg); acquire+release cycles a second over ${SECS} s"
for c in 1 4; do
  a=$(ik "$euri" $c); b=$(py $c); d=$(ctl $c); z=$(ik "$zuri" $c)
  printf 'clients %d: idkeeper etcd:// %s   python3-etcd3 %s (x%s)   etcdctl lock %s (x%s)   idkeeper zk:// %s\n' \
    "$c" "$a" "$b" "$(echo "scale=2; $a / ${b%% *}" | bc)" "$d" "$(echo "scale=2; $a / $d" | bc)" "$z"
done
