#!/usr/bin/env bash
# http_wrk.sh BUILD_DIR: keep-alive HTTP throughput of `idkeeper serve` on the Leaf
# route /api/snowflake/get/x, next to nginx (Debian) returning a fixed 19-byte body,
# same machine, same run, same wrk settings. Goal: at least 80% of nginx's requests
# per second. Prints requests/s, p50 and p99 latency of each, and the ratio.
# Settings: WRK_THREADS (1), WRK_CONNS (50), WRK_SECONDS (10), SERVER_THREADS (0:
# one per core, for both servers).
set -euo pipefail
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
threads=${WRK_THREADS:-1}
conns=${WRK_CONNS:-50}
secs=${WRK_SECONDS:-10}
sthreads=${SERVER_THREADS:-0}
T=$(mktemp -d)
cleanup() {
  [ -n "${ik_pid:-}" ] && kill "$ik_pid" 2>/dev/null && wait "$ik_pid" 2>/dev/null
  [ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

port=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range
nport=$(( port + 1 ))
"$bin" serve --coord "local:$T/data" --http 127.0.0.1:$port --threads "$sthreads" --quiet \
  2>"$T/ik.log" &
ik_pid=$!
for i in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.05; done

workers=$([ "$sthreads" = 0 ] && echo auto || echo "$sthreads")
cat >"$T/nginx.conf" <<NG
worker_processes $workers; daemon on; pid $T/nginx.pid; error_log $T/nginx.err;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 100000000;
  server { listen 127.0.0.1:$nport reuseport; default_type text/plain;
           location / { return 200 "1859299536916623360"; } } }
NG
nginx -c "$T/nginx.conf" -p "$T"
for i in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$nport/x" 2>/dev/null && break; sleep 0.05; done

# run NAME URL: prints "NAME rps p50 p99" from one wrk run (after a 2 s warm-up).
run() {
  wrk -t"$threads" -c"$conns" -d2s "$2" >/dev/null
  wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$2" >"$T/$1.wrk"
  local rps p50 p99
  rps=$(awk '/^Requests\/sec/ {print $2}' "$T/$1.wrk")
  p50=$(awk '$1=="50%" {print $2}' "$T/$1.wrk")
  p99=$(awk '$1=="99%" {print $2}' "$T/$1.wrk")
  grep -q 'Non-2xx' "$T/$1.wrk" && { echo "$1: non-2xx answers:" >&2; cat "$T/$1.wrk" >&2; }
  echo "$1 $rps $p50 $p99"
}

echo "wrk -t$threads -c$conns -d${secs}s, keep-alive; servers with $workers threads/workers"
read -r _ ng_rps ng_p50 ng_p99 < <(run nginx "http://127.0.0.1:$nport/api/snowflake/get/x")
read -r _ ik_rps ik_p50 ik_p99 < <(run idkeeper "http://127.0.0.1:$port/api/snowflake/get/x")
printf '%-9s %12s req/s  p50 %-8s p99 %-8s\n' nginx "$ng_rps" "$ng_p50" "$ng_p99"
printf '%-9s %12s req/s  p50 %-8s p99 %-8s\n' idkeeper "$ik_rps" "$ik_p50" "$ik_p99"
printf 'ratio idkeeper/nginx: %.2f (goal >= 0.80)\n' "$(echo "$ik_rps / $ng_rps" | bc -l)"
