#!/usr/bin/env bash
# redis_acquire.sh [BUILD_DIR]: slot acquire, renewal and release latency (median,
# p99) on a Redis of its own (Debian's redis-server on loopback, appendonly yes,
# appendfsync always: every write is fsynced before its answer, as idkeeper
# requires), through the backend's own calls (bench/slot_latency.c):
#   - a small app: range 0-31, 16 slots held by another coord
#   - a large one: range 0-1023, 512 held
# each with the same identity throughout (a restart: it takes back its own slot) and
# a new identity each time (a new server). The peer: a bare write on the same
# server, SET with appendfsync always, from redis-benchmark with one client.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/redis.sh"

lat=$build/bench/slot_latency
[ -x "$lat" ] || { echo "build $lat first (make build)" >&2; exit 1; }
redis_own bench
port=${REDIS_PORT_OF[bench]}
uri=redis://127.0.0.1:$port/0
echo "$(redis-server --version | cut -d' ' -f1-3) on loopback, appendonly yes, appendfsync always, data on $(df -P "$T" | awk 'NR == 2 {print $1}')"
"$lat" "$uri" warm 0 31 300 random 0 fresh >/dev/null # connections, page cache
"$lat" "$uri" small1 0 31 2000 random 16 sticky
"$lat" "$uri" small2 0 31 2000 random 16 fresh
"$lat" "$uri" large1 0 1023 1000 random 512 sticky
"$lat" "$uri" large2 0 1023 1000 random 512 fresh
echo "peer: a bare SET (one fsync), one client, one at a time:"
redis-benchmark -p "$port" -c 1 -n 5000 -t set 2>/dev/null | tr '\r' '\n' |
  grep -E 'requests per second|^ +avg|^ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+' | tail -n 3
