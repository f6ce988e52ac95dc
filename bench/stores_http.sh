#!/usr/bin/env bash
# stores_http.sh [BUILD_DIR]: segment and sequence IDs over HTTP on every store in
# one run (issues 12 and 13): local:, zk://, redis://, postgresql:// and mysql://.
# One daemon per store (one event-loop thread), tests/tools/hammer (keep-alive,
# count=1 per request) for SECONDS_EACH (5) seconds: segment with 8 clients,
# sequence with 8 and 64. Then sequence at 64 clients on redis:// next to the naive
# Redis peer: one INCR per ID from a Redis client over the network
# (redis-benchmark -c 64 -t incr, pipeline 1) on the same Redis (appendonly yes,
# appendfsync always, as idkeeper requires); the SQL stores' naive peer is
# bench/sql_sequence.sh.
# Stores of their own on loopback, durable as in production: Redis, ZooKeeper
# (forceSync=yes), PostgreSQL and MariaDB (bench/sql_lib.sh); local: in a temporary
# directory on the same disk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
secs=${SECONDS_EACH:-5}
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
source "$here/../tests/integration/redis.sh"
source "$here/sql_lib.sh"
STORES=(local zk redis postgresql mysql)

redis_own bench
rport=${REDIS_PORT_OF[bench]}
zk_start_standalone
sql_start
declare -A URI=([local]="local:$T/data" [zk]="$(zk_uri bench)" [redis]="redis://127.0.0.1:$rport/0"
  [postgresql]=${SQL_URI[postgresql]} [mysql]=${SQL_URI[mysql]})
declare -A P
for s in "${STORES[@]}"; do
  pw=()
  [ -z "${SQL_PW[$s]:-}" ] || pw=(--password-file "${SQL_PW[$s]}")
  "$IK_BIN" tags add seg --kind segment --coord "${URI[$s]}" "${pw[@]}" >/dev/null
  "$IK_BIN" tags add seq --kind sequence --coord "${URI[$s]}" "${pw[@]}" >/dev/null
  serve_on "$s" --coord "${URI[$s]}" "${pw[@]}" --threads 1 --quiet || fail "$s: $(tail -n 5 "$T/$s.log")"
  P[$s]=$PORT
done

run() { # run STORE KIND CLIENTS: prints "IDs/s p50 p99 errors"
  "$hammer" --url "http://127.0.0.1:${P[$1]}/v1/$2?count=1&format=text" --connections "$3" \
    --duration "$secs" >"$T/h" 2>&1
  printf '%s %s %s %s\n' "$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' "$T/h")" \
    "$(sed -n 's/.* p50_ms=\([^ ]*\).*/\1/p' "$T/h")" "$(sed -n 's/.* p99_ms=\([^ ]*\).*/\1/p' "$T/h")" \
    "$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' "$T/h")"
}
echo "$(redis-server --version | cut -d' ' -f1-3), ZooKeeper (forceSync=yes), $(sql_versions) on loopback, local: on $(df -P "$T" | awk 'NR == 2 {print $1}'); ${secs}s each, count=1 per request, one server thread"
printf '%-26s' ""
printf ' %14s' local: zk:// redis:// postgresql:// mysql://
echo
declare -A R
for w in "segment/seg 8" "sequence/seq 8" "sequence/seq 64"; do
  set -- $w
  line=$(printf '%-26s' "${1%%/*}, $2 clients (IDs/s)")
  for s in "${STORES[@]}"; do
    R[$s,$1,$2]=$(run "$s" "$1" "$2")
    line+=$(printf ' %14s' "$(echo "${R[$s,$1,$2]}" | cut -d' ' -f1)")
  done
  echo "$line"
  line=$(printf '%-26s' "  p50 / p99 ms")
  for s in "${STORES[@]}"; do
    line+=$(printf ' %14s' "$(echo "${R[$s,$1,$2]}" | awk '{print $2 "/" $3}')")
  done
  echo "$line"
done
for s in "${STORES[@]}"; do
  for k in "segment/seg 8" "sequence/seq 8" "sequence/seq 64"; do
    set -- $k
    e=$(echo "${R[$s,$1,$2]}" | cut -d' ' -f4)
    [ "$e" = 0 ] || echo "note: $s $1 $2 clients: $e errors"
  done
done
peer=$(redis-benchmark -p "$rport" -c 64 -n 200000 -t incr -q 2>/dev/null | tr '\r' '\n' |
  sed -n 's/^INCR: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1)
ours=$(echo "${R[redis,sequence/seq,64]}" | cut -d' ' -f1)
printf 'sequence at 64 clients: idkeeper on redis:// %s IDs/s; naive peer, one INCR per ID (redis-benchmark -c 64 -t incr, same Redis) %s IDs/s; ratio %.2f\n' \
  "$ours" "$peer" "$(echo "$ours / $peer" | bc -l)"
