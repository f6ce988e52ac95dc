#!/usr/bin/env bash
# rss_idle.sh BUILD_DIR: resident memory of an idle daemon on local:, next to an
# idle nginx (Debian, 1 worker) measured in the same run. Goal: at most 8 MiB.
set -euo pipefail
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
T=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; [ -f "$T/nginx.pid" ] && kill "$(cat "$T/nginx.pid")" 2>/dev/null; rm -rf "$T"' EXIT
port=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range
"$bin" serve --coord "local:$T/data" --http 127.0.0.1:$port --quiet 2>"$T/ik.log" &
pid=$!
for i in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.05; done
curl -fsS -o /dev/null "http://127.0.0.1:$port/api/snowflake/get/x"
sleep 2
ik_kb=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)

nport=$(( port + 1 ))
cat >"$T/nginx.conf" <<NG
worker_processes 1; daemon on; pid $T/nginx.pid; error_log $T/nginx.err;
events { worker_connections 1024; }
http { access_log off; server { listen 127.0.0.1:$nport; location / { return 200 "1859299536916623360"; } } }
NG
nginx -c "$T/nginx.conf" -p "$T"
sleep 1
curl -fsS -o /dev/null "http://127.0.0.1:$nport/"
ng_kb=0
for p in $(pgrep -f "nginx.*$T/nginx.conf"; pgrep -P "$(cat "$T/nginx.pid")"); do
  ng_kb=$(( ng_kb + $(awk '/VmRSS/ {print $2}' /proc/$p/status) ))
done
printf 'idle RSS: idkeeper %.1f MiB (goal <= 8 MiB); peer nginx master+1 worker %.1f MiB; ratio %.2f\n' \
  "$(echo "$ik_kb/1024" | bc -l)" "$(echo "$ng_kb/1024" | bc -l)" "$(echo "$ik_kb/$ng_kb" | bc -l)"
