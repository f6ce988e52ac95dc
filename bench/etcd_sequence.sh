#!/usr/bin/env bash
# etcd_sequence.sh [BUILD_DIR]: gap-free sequence IDs per second on etcd:// at 64
# clients, next to the naive peer on the same etcd in the same run (Debian's etcd
# 3.4, one member of its own on loopback, its WAL fsynced on every write; then the
# same on a 3-member cluster):
#   idkeeper: `idkeeper serve` on one sequence tag, tests/tools/hammer with CLIENTS
#             keep-alive connections, count=1 per request: the daemon groups the
#             requests that wait into one advance (group commit: one txn compared on
#             the tag key's mod_revision, docs/etcd.md, "Counters");
#   peer:     the naive gap-free counter, one txn per ID: CLIENTS clients (8
#             processes of CLIENTS/8 threads, Debian's python3-etcd3 over gRPC) each
#             reading the key, then a txn that compares its mod_revision and puts
#             the value + 1, whose failure branch reads the key again for the next
#             try; an ID is a txn that succeeded.
# Prints IDs/s and, for idkeeper, the median and p99 latency, and the ratio; and the
# naive counter with one client (no lost races: what one txn costs). At the
# end of each peer run the key's value is checked against the IDs counted (no lost
# update). Settings: SECS (5), CLIENTS (64).
set -euo pipefail
source "$(dirname "$0")/test_libs.sh" # here, build, IK_BIN; the tests' lib.sh and etcd.sh
SECS=${SECS:-5}
CLIENTS=${CLIENTS:-64}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}

cat >"$T/naive.py" <<'PY'
import multiprocessing, sys, threading, time
import etcd3
port, key, clients, secs = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
procs = 8 if clients >= 8 else 1

def worker(q, nthreads, start_at):
    c = etcd3.client(host="127.0.0.1", port=port)
    counts = [0] * nthreads
    def loop(i):
        val, meta = c.get(key)
        while time.time() < start_at:
            time.sleep(0.001)
        end = start_at + secs
        while time.time() < end:
            v = int(val or b"0")
            rev = meta.mod_revision if meta else 0
            ok, resp = c.transaction(compare=[c.transactions.mod(key) == rev],
                                     success=[c.transactions.put(key, str(v + 1))],
                                     failure=[c.transactions.get(key)])
            if ok:
                counts[i] += 1
                val, meta = c.get(key)
            else:
                val, meta = resp[0][0] if resp[0] else (None, None)
    ts = [threading.Thread(target=loop, args=(i,)) for i in range(nthreads)]
    for t in ts: t.start()
    for t in ts: t.join()
    q.put(sum(counts))

if __name__ == "__main__":
    # spawned, not forked: a gRPC channel does not survive a fork
    ctx = multiprocessing.get_context("spawn")
    c = etcd3.client(host="127.0.0.1", port=port)
    c.put(key, "0")
    q = ctx.Queue()
    start_at = time.time() + 3.0  # every client connected first
    ps = [ctx.Process(target=worker, args=(q, clients // procs, start_at)) for _ in range(procs)]
    for p in ps: p.start()
    total = sum(q.get() for _ in ps)
    for p in ps: p.join()
    val, _ = c.get(key)
    print("ids_per_s %.0f ids %d value %s" % (total / secs, total, val.decode()))
PY
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" "$2"; }

etcd_own one
etcd_cluster3 c
echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p') on loopback, data on $(df -P "$T" | awk 'NR == 2 {print $1}'); $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $CLIENTS clients, $SECS s each"
for shape in one c; do
  if [ $shape = one ]; then
    eps=127.0.0.1:${ETCD_PORT_OF[one]} port=${ETCD_PORT_OF[one]} what="1 member"
  else
    eps=$ETCD_ENDPOINTS port=${ETCD_PORT_OF[c0]} what="3 members"
  fi
  uri="etcd://$eps/bench"
  "$IK_BIN" tags add seq --kind sequence --start 1 --coord "$uri" >/dev/null
  hp=$(free_port)
  # one member and auth off are risks this run accepts (docs/hazards.md, etcd)
  "$IK_BIN" serve --coord "$uri" --http "127.0.0.1:$hp" --allow-unsafe-store --quiet 2>"$T/serve.$shape.log" &
  srv=$!
  IK_PIDS+=("$srv")
  wait_ready "$hp" 30 || { cat "$T/serve.$shape.log" >&2; exit 1; }
  "$hammer" --url "http://127.0.0.1:$hp/v1/sequence/seq?count=1&format=text" --connections "$CLIENTS" \
    --duration 1 --quiet >/dev/null # warm
  "$hammer" --url "http://127.0.0.1:$hp/v1/sequence/seq?count=1&format=text" --connections "$CLIENTS" \
    --duration "$SECS" --out "$T/ids.$shape" >"$T/h.$shape"
  kill -TERM $srv
  wait $srv || true
  ik=$(field ids_per_s "$T/h.$shape")
  /usr/bin/python3 "$T/naive.py" "$port" "bench-naive" "$CLIENTS" "$SECS" >"$T/n.$shape"
  read -r _ nv _ nids _ nval <"$T/n.$shape"
  [ "$nids" = "$nval" ] || echo "peer check FAILED: $nids IDs counted, the key holds $nval"
  # and the naive counter with one client: no lost races, the cost of a txn alone
  /usr/bin/python3 "$T/naive.py" "$port" "bench-naive1" 1 "$SECS" >"$T/n1.$shape"
  read -r _ n1 _ n1ids _ n1val <"$T/n1.$shape"
  [ "$n1ids" = "$n1val" ] || echo "peer check FAILED: $n1ids IDs counted, the key holds $n1val"
  printf 'sequence, %d clients, etcd %s: idkeeper %s IDs/s (p50 %s ms, p99 %s ms, errors %s)  naive txn per ID %s IDs/s (key %s = IDs counted)  ratio %s  (the naive counter with 1 client: %s IDs/s)\n' \
    "$CLIENTS" "$what" "$ik" "$(field p50_ms "$T/h.$shape")" "$(field p99_ms "$T/h.$shape")" \
    "$(field errors "$T/h.$shape")" "$nv" "$nval" "$(ratio "$ik" "$nv")" "$n1"
done
