#!/usr/bin/env bash
# http_wrk.sh BUILD_DIR: keep-alive HTTP throughput of `idkeeper serve` on the Leaf
# route /api/snowflake/get/x, next to nginx (Debian) returning a fixed 19-byte body,
# same machine, same run, same wrk settings, in two ways (docs/BENCHMARKS.md says
# why both):
#   unpinned  both servers with one thread/worker per core (SERVER_THREADS), wrk
#             wherever the kernel puts it: what a default deployment gets
#   pinned    each server with one thread/worker on core SERVER_CPU (0) (`taskset`),
#             wrk on core LOAD_CPU (1): the server's code alone on its core, the load
#             generator never competing with it
# Prints requests/s, p50 and p99 latency of each, and the ratio, for each way.
# Settings: MODES ("unpinned pinned"), WRK_THREADS (1), WRK_CONNS (50), WRK_SECONDS
# (10), SERVER_THREADS (0: one per core, unpinned only), SERVER_CPU (0), LOAD_CPU (1).
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin # nginx
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
threads=${WRK_THREADS:-1}
conns=${WRK_CONNS:-50}
secs=${WRK_SECONDS:-10}
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
bench_scratch
stop_servers() {
  [ -n "${ik_pid:-}" ] && kill "$ik_pid" 2>/dev/null && wait "$ik_pid" 2>/dev/null
  ik_pid=
  [ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
  for _ in $(seq 100); do [ -f "$T/nginx.pid" ] || break; sleep 0.05; done
  return 0
}

port=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range
nport=$(( port + 1 ))

# start_servers MODE: idkeeper and nginx, unpinned or pinned; sets pin_load (the
# prefix of the load generator's command line) and workers
start_servers() {
  pin_mode "$1"
  rm -rf "$T/data"
  "${pin_srv[@]}" "$bin" serve --coord "local:$T/data" --http 127.0.0.1:$port --threads "$sthreads" --quiet \
    2>"$T/ik.log" &
  ik_pid=$!
  for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.05; done
  workers=$([ "$sthreads" = 0 ] && echo auto || echo "$sthreads")
  cat >"$T/nginx.conf" <<NG
worker_processes $workers; daemon on; pid $T/nginx.pid; error_log $T/nginx.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000000;
  server { listen 127.0.0.1:$nport reuseport; default_type text/plain;
           location / { return 200 "1859299536916623360"; } } }
NG
  # taskset on the master: its workers inherit the CPU mask
  "${pin_srv[@]}" nginx -c "$T/nginx.conf" -p "$T"
  for _ in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$nport/x" 2>/dev/null && break; sleep 0.05; done
}

# run NAME URL: prints "NAME rps p50 p99" from one wrk run (after a 2 s warm-up).
run() {
  "${pin_load[@]}" wrk -t"$threads" -c"$conns" -d2s "$2" >/dev/null
  "${pin_load[@]}" wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$2" >"$T/$1.wrk"
  local rps p50 p99
  rps=$(awk '/^Requests\/sec/ {print $2}' "$T/$1.wrk")
  p50=$(awk '$1=="50%" {print $2}' "$T/$1.wrk")
  p99=$(awk '$1=="99%" {print $2}' "$T/$1.wrk")
  grep -q 'Non-2xx' "$T/$1.wrk" && { echo "$1: non-2xx answers:" >&2; cat "$T/$1.wrk" >&2; }
  echo "$1 $rps $p50 $p99"
}

bench_stamp
for mode in ${MODES:-unpinned pinned}; do
  start_servers "$mode"
  if [ "$mode" = pinned ]; then
    desc="pinned: servers on core $scpu with 1 thread/worker, wrk on core $lcpu"
  else
    desc="unpinned: servers with $workers threads/workers"
  fi
  echo "[$mode] wrk -t$threads -c$conns -d${secs}s, keep-alive; $desc"
  read -r _ ng_rps ng_p50 ng_p99 < <(run nginx "http://127.0.0.1:$nport/api/snowflake/get/x")
  read -r _ ik_rps ik_p50 ik_p99 < <(run idkeeper "http://127.0.0.1:$port/api/snowflake/get/x")
  printf '[%s] %-9s %12s req/s  p50 %-8s p99 %-8s\n' "$mode" nginx "$ng_rps" "$ng_p50" "$ng_p99"
  printf '[%s] %-9s %12s req/s  p50 %-8s p99 %-8s\n' "$mode" idkeeper "$ik_rps" "$ik_p50" "$ik_p99"
  printf '[%s] ratio idkeeper/nginx: %.2f (goal >= 1.00 pinned)\n' "$mode" "$(echo "$ik_rps / $ng_rps" | bc -l)"
  stop_servers
done
