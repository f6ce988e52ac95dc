#!/usr/bin/env bash
# counters_sequence_http.sh BUILD_DIR: sequence IDs over HTTP on local: (issue 4
# benchmark, local flavour): IDs per second with 1, 8 and 64 concurrent clients
# (tests/tools/hammer, keep-alive, count=1 per request), next to the approach
# without group commit measured in the same run on the same disk: one SQLite
# transaction per ID (UPDATE ... RETURNING, WAL, synchronous=FULL, as the store
# does). Prints IDs/s, p50 and p99 latency, and the ratio to that peer.
# Settings: SECONDS_EACH (10), SERVER_THREADS (0: one per core), CLIENTS ("1 8 64").
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
bin=${IK_BIN:-$build/idkeeper}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
secs=${SECONDS_EACH:-10}
sthreads=${SERVER_THREADS:-0}
clients=${CLIENTS:-1 8 64}
T=$(mktemp -d "${TMPDIR:-/var/tmp}/ik-bench.XXXXXX")
cleanup() {
  [ -n "${ik_pid:-}" ] && kill "$ik_pid" 2>/dev/null && wait "$ik_pid" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

# the peer: one durable SQLite transaction per ID, same schema shape, same disk
peer=$(python3 - "$T/peer.db" "$secs" <<'PY'
import sqlite3, sys, time
db, secs = sys.argv[1], float(sys.argv[2])
c = sqlite3.connect(db, isolation_level=None)
c.execute("PRAGMA journal_mode=WAL"); c.execute("PRAGMA synchronous=FULL")
c.execute("CREATE TABLE t (biz_tag TEXT PRIMARY KEY, max_id INTEGER NOT NULL)")
c.execute("INSERT INTO t VALUES ('bench', 1)")
n, end = 0, time.time() + secs
t0 = time.time()
while time.time() < end:
    c.execute("UPDATE t SET max_id = max_id + 1 WHERE biz_tag = 'bench' RETURNING max_id - 1").fetchall()
    n += 1
print("%.0f" % (n / (time.time() - t0)))
PY
)

port=$(( 20000 + RANDOM % 20000 ))
"$bin" serve --coord "local:$T/data" --http 127.0.0.1:$port --threads "$sthreads" --quiet \
  2>"$T/ik.log" &
ik_pid=$!
for i in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.05; done
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$port/v1/tags" -d '{"tag":"bench","kind":"sequence"}'

echo "sequence over HTTP on local:$T (disk: $(df --output=source "$T" | tail -n 1)), ${secs}s each, count=1 per request"
printf '%-28s %10s IDs/s\n' "peer: 1 SQLite txn per ID" "$peer"
for c in $clients; do
  "$hammer" --url "http://127.0.0.1:$port/v1/sequence/bench?count=1&format=text" \
    --connections "$c" --duration "$secs" --out "$T/ids.$c" >"$T/h.$c"
  ids=$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' "$T/h.$c")
  p50=$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' "$T/h.$c")
  p99=$(sed -n 's/.* p99_ms=\([^ ]*\).*/\1/p' "$T/h.$c")
  errs=$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' "$T/h.$c")
  printf '%-28s %10s IDs/s  p50 %7s ms  p99 %8s ms  errors %s  ratio to peer %.1f\n' \
    "idkeeper, $c client(s)" "$ids" "$p50" "$p99" "$errs" "$(echo "$ids / $peer" | bc -l)"
done
