#!/usr/bin/env bash
# etcd_sequence.sh [BUILD_DIR]: sequence IDs on etcd:// at 64 clients, next to the
# naive peer on the same etcd in the same run: 64 clients each taking one ID per
# etcd txn (read the counter, then a txn that compares its mod_revision and puts
# it + 1, again on a lost race: python3-etcd3, gRPC). idkeeper: one server
# (`serve --coord etcd://...`), 64 keep-alive HTTP connections (tests/tools/hammer)
# asking one ID each; its committer group-commits, one txn per batch. A one-member
# etcd on loopback (Debian's 3.4, fsync on every write); SECS seconds each (10).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/etcd.sh"
SECS=${SECS:-10}
C=${CLIENTS:-64}
etcd_own one
uri=etcd://127.0.0.1:${ETCD_PORT_OF[one]}/bench
"$IK_BIN" tags add --coord "$uri" seq --kind sequence >/dev/null
port=$(free_port)
start_server s1 "$port" --coord "$uri" --quiet
wait_ready "$port" 20 || { echo "server not ready" >&2; exit 1; }
"$build/tests/tools/hammer" --url "http://127.0.0.1:$port/v1/sequence/seq?count=1&format=text" \
  --connections "$C" --duration "$SECS" --out "$T/ik.ids" >"$T/ik.hammer" 2>&1
ik=$(sed -n 's/.* ids_per_s=\([0-9.]*\).*/\1/p' "$T/ik.hammer")
cat >"$T/naive.py" <<'PY'
import sys, threading, time, etcd3
port, clients, secs = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
key = "naive/counter"
etcd3.client(host="127.0.0.1", port=port).put(key, "0")
got, lost = [0] * clients, [0] * clients
def run(i):
    c = etcd3.client(host="127.0.0.1", port=port)
    end = time.monotonic() + secs
    while time.monotonic() < end:
        v, meta = c.get(key)
        ok, _ = c.transaction(compare=[c.transactions.mod(key) == meta.mod_revision],
                              success=[c.transactions.put(key, str(int(v) + 1))], failure=[])
        if ok: got[i] += 1
        else: lost[i] += 1
ts = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
for t in ts: t.start()
for t in ts: t.join()
print("%.0f %d" % (sum(got) / secs, sum(lost)))
PY
read -r naive lost < <(python3 "$T/naive.py" "${ETCD_PORT_OF[one]}" "$C" "$SECS")
echo "etcd $(etcd --version | sed -n 's/etcd Version: //p') one member, loopback; load $(cut -d' ' -f1-3 /proc/loadavg); $C clients, ${SECS} s each"
echo "idkeeper sequence on etcd:// (group commit): $ik IDs/s ($(sed -n 's/.* errors=\([0-9]*\).*/\1/p' "$T/ik.hammer") errors)"
echo "naive: one txn per ID (python3-etcd3, CAS on mod_revision): $naive IDs/s ($lost lost races)"
echo "ratio $(echo "scale=1; $ik / $naive" | bc)"
