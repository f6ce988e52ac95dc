#!/usr/bin/env bash
# zk_http.sh BUILD_DIR: keep-alive throughput of /api/snowflake/get/x with the slot
# leased from ZooKeeper, next to the same daemon on local: in the same run (wrk -t1
# -c50, median of 3 alternating 5 s runs after a warm-up). The lease is off the request path, so the ratio
# should be about 1.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$(dirname "$0")/../tests/integration/lib.sh"
source "$(dirname "$0")/../tests/integration/zk.sh"
zk_start_standalone
pz=$(free_port); pl=$(free_port)
start_server zkserver "$pz" --coord "$(zk_uri bench)" --quiet
start_server localserver "$pl" --coord "local:$T/data" --quiet
wait_ready "$pz" 30 && wait_ready "$pl" 30 || fail "servers not ready"
run() {
  wrk -t1 -c50 -d5s "$1" | awk '/^Requests\/sec/ {print $2}'
}
median() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
wrk -t1 -c50 -d2s "http://127.0.0.1:$pz/api/snowflake/get/x" >/dev/null
wrk -t1 -c50 -d2s "http://127.0.0.1:$pl/api/snowflake/get/x" >/dev/null
zs=(); ls=()
for round in 1 2 3; do # alternate, so load from elsewhere falls on both
  zs+=("$(run "http://127.0.0.1:$pz/api/snowflake/get/x")")
  ls+=("$(run "http://127.0.0.1:$pl/api/snowflake/get/x")")
done
z=$(median "${zs[@]}"); l=$(median "${ls[@]}")
printf 'snowflake over HTTP (wrk -t1 -c50, median of 3 alternating 5 s runs): zk:// %.0f req/s, local: %.0f req/s, ratio zk/local %.2f\n' \
  "$z" "$l" "$(echo "$z / $l" | bc -l)"
