#!/usr/bin/env bash
# zk_sequence.sh [BUILD_DIR]: sequence IDs per second on zk:// (issue 4 benchmark),
# next to the approach of the ZooKeeper recipe articles, measured in the same run on
# the same ZooKeeper.
#
#   idkeeper: one `idkeeper serve` on a standalone ZooKeeper, one sequence tag,
#             tests/tools/hammer with 1, 8 and 64 keep-alive connections, count=1 per
#             request. Requests that arrive while a commit is in flight go into the
#             next one (group commit): one version-checked setData of the tag node
#             per commit, whatever the number of IDs in it.
#   peer:     one PERSISTENT_SEQUENTIAL znode created per ID: one ZooKeeper
#             transaction per ID, 64 asynchronous creates always in flight on one
#             session, from C (bench/zk_seqnode.c, libzookeeper_mt) and from Python
#             (kazoo's create_async(sequence=True)); and kazoo's create(sequence=True)
#             one at a time, the loop the recipe articles show.
#   in-process: the same tag through libidkeeper without HTTP
#             (bench/zk_sequence_inproc.c: THREADS threads calling
#             ik_sequence_next_wait(count=1)), to tell the store's share from the
#             daemon's and the load client's on a small machine.
#
# ZooKeeper 3.8.0 (Debian's package) with full JIT and fsync on every transaction
# (forceSync=yes), as in production; both sides get a warm-up first. Prints IDs/s,
# latency and the ratio to the peer. Settings: SECONDS_EACH (10), CLIENTS ("1 8 64").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
[ -x "$hammer" ] || { echo "no $hammer" >&2; exit 1; }
secs=${SECONDS_EACH:-10}
clients=${CLIENTS:-1 8 64}
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"

cc -O2 -std=c11 -D_GNU_SOURCE -DTHREADED -o "$T/zk_seqnode" "$here/zk_seqnode.c" -lzookeeper_mt -lpthread
cc -O2 -std=c11 -D_GNU_SOURCE -I"$here/../include" -o "$T/zk_sequence_inproc" "$here/zk_sequence_inproc.c" \
  "$build/libidkeeper.a" -lzookeeper_mt -lcrypto -lsqlite3 -lpthread -lm
zk_start_standalone
port=$(free_port)
start_server bench "$port" --coord "$(zk_uri bench)" --quiet
wait_ready "$port" || fail "idkeeper did not start: $(cat "$T/bench.log")"
"$IK_BIN" tags add seq --kind sequence --coord "$(zk_uri bench)" >/dev/null
url="http://127.0.0.1:$port/v1/sequence/seq?count=1&format=text"

# warm-up of both paths (the JIT compiles ZooKeeper's hot code)
"$T/zk_seqnode" "$ZK_CONNECT" /bench-peer/warm 64 3 >/dev/null
"$hammer" --url "$url" --connections 64 --duration 3 --quiet >/dev/null

kazoo_peer() { # SECONDS INFLIGHT: IDs/s of kazoo creating sequential znodes
  /usr/bin/python3 - "$ZK_CONNECT" "$1" "$2" <<'PY'
import logging, sys, time
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start()
zk.ensure_path("/bench-kazoo")
secs, w = float(sys.argv[2]), int(sys.argv[3])
n, pend, t0 = 0, [], time.time()
while time.time() - t0 < secs:
    if w == 1:
        zk.create("/bench-kazoo/id-", b"", sequence=True)
    else:
        while len(pend) < w:
            pend.append(zk.create_async("/bench-kazoo/id-", b"", sequence=True))
        pend.pop(0).get()
    n += 1
print("%.0f" % (n / (time.time() - t0)))
zk.stop()
PY
}

peer=$("$T/zk_seqnode" "$ZK_CONNECT" /bench-peer/ids 64 "$secs")
peer_ids=$(awk '{print $2}' <<<"$peer")
kpeer=$(kazoo_peer "$secs" 64)
kpeer1=$(kazoo_peer "$secs" 1)
echo "sequence IDs on zk://, ZooKeeper 3.8.0 standalone on loopback, forceSync=yes, data dir on $(df -P "$T" | awk 'NR == 2 {print $1}'), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), ${secs}s each, count=1 per request"
printf '%-46s %9s IDs/s  p50 %7s ms  p99 %8s ms\n' "peer: 1 znode per ID, C, 64 in flight" \
  "$peer_ids" "$(awk '{print $4}' <<<"$peer")" "$(awk '{print $6}' <<<"$peer")"
printf '%-46s %9s IDs/s\n' "peer: 1 znode per ID, kazoo, 64 in flight" "$kpeer"
printf '%-46s %9s IDs/s\n' "peer: 1 znode per ID, kazoo, one at a time" "$kpeer1"
row() { # LABEL IDS P50 P99 ERRORS
  printf '%-46s %9s IDs/s  p50 %7s ms  p99 %8s ms  errors %s  x%.1f C  x%.1f kazoo  x%.1f kazoo 1-by-1\n' \
    "$1" "$2" "$3" "$4" "$5" "$(echo "$2 / $peer_ids" | bc -l)" "$(echo "$2 / $kpeer" | bc -l)" \
    "$(echo "$2 / $kpeer1" | bc -l)"
}
for c in $clients; do
  "$hammer" --url "$url" --connections "$c" --duration "$secs" >"$T/h.$c"
  row "idkeeper over HTTP, $c client(s)" "$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' "$T/h.$c")" \
    "$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' "$T/h.$c")" "$(sed -n 's/.* p99_ms=\([^ ]*\).*/\1/p' "$T/h.$c")" \
    "$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' "$T/h.$c")"
done
kill -TERM "${SERVER_PID[bench]}"
wait "${SERVER_PID[bench]}" 2>/dev/null || true
for c in $clients; do
  r=$("$T/zk_sequence_inproc" "$(zk_uri bench)" seq "$c" "$secs")
  row "libidkeeper in-process, $c thread(s)" "$(awk '{print $2}' <<<"$r")" "$(awk '{print $4}' <<<"$r")" \
    "$(awk '{print $6}' <<<"$r")" "$(awk '{print $8}' <<<"$r")"
done
echo "goal (issue 4): 64 clients >= 50 x 930 = 46,500 IDs/s"
