#!/usr/bin/env bash
# sql_acquire.sh [BUILD_DIR]: worker-slot acquire, renewal and release latency
# (median, p99) on postgresql:// and mysql:// (issue 12 benchmark), through the
# backend's own calls (bench/slot_latency.c), on a PostgreSQL and a MariaDB of its
# own (bench/sql_lib.sh: loopback, durable):
#   - a small app: range 0-31, 16 slots held by another coord
#   - a large one: range 0-1023, 200 held (each held slot keeps a connection of its
#     own, docs/sql.md, and the test PostgreSQL allows 300)
# each with the same identity throughout (a restart: it takes back its own slot) and
# a new identity each time (a new server). The peer: a bare durable write on the
# same database, one autocommit UPDATE of one row (bench/sql_naive, one client).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$here/../tests/integration/lib.sh"
source "$here/sql_lib.sh"
lat=$build/bench/slot_latency naive=$build/bench/sql_naive
[ -x "$lat" ] && [ -x "$naive" ] || fail "build $lat and $naive first (make build)"

sql_start
echo "$(sql_versions) on loopback, durable, data on $(df -P "$T" | awk 'NR == 2 {print $1}')"
for s in ${STORES:-postgresql mysql}; do
  uri=${SQL_URI[$s]}
  export IDKEEPER_PASSWORD
  IDKEEPER_PASSWORD=$(cat "${SQL_PW[$s]}")
  echo "## $s"
  "$lat" "$uri" warm 0 31 300 random 0 fresh >/dev/null # schema, connections, page cache
  "$lat" "$uri" small1 0 31 2000 random 16 sticky
  "$lat" "$uri" small2 0 31 2000 random 16 fresh
  "$lat" "$uri" large1 0 1023 1000 random 200 sticky
  "$lat" "$uri" large2 0 1023 1000 random 200 fresh
  sql_row "$s" "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('naive', 1, 1)" >/dev/null
  echo "peer: one autocommit UPDATE of one row (one durable commit), one client, 5 s: $("$naive" "$uri" 1 5)"
done
