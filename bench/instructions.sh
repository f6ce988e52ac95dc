#!/usr/bin/env bash
# instructions.sh [BUILD_DIR]: instructions per request of the front doors, counted
# by callgrind (valgrind), next to their peers, in one run. Instruction counts do not
# depend on what else the machine runs, so this is the regression guard that a
# shared machine can measure (docs/BENCHMARKS.md).
#
# Each server runs alone under `valgrind --tool=callgrind` (one loop thread), serves
# N keep-alive requests over one connection from one client, and is stopped with
# SIGTERM; the whole process's instructions are counted at N = N1 and N = N2, and
# (Ir(N2) - Ir(N1)) / (N2 - N1) is the cost of one request, without start-up and
# shutdown:
#   http   idkeeper GET /api/snowflake/get/x      vs nginx `return 200` of a 19-byte body
#   resp   idkeeper INCR on a segment tag         vs redis-server INCR counter
#   seq    idkeeper GET /v1/sequence/seq?count=1 on local: (each ID committed to
#          SQLite before the answer; no peer: its figure is printed alone)
#   query  idkeeper GET /v1/snowflake?count=1&format=text: the ID route with a query
#          to read (count, format, ids; no peer: printed alone)
# Prints one line per pair: both figures and the ratio (goal: at most 0.50).
# Settings: N1 (2000), N2 (12000), CASES ("http resp seq query"), KEEP (a directory:
# keep the callgrind files of the N2 runs there, for callgrind_annotate), PEERS (0:
# idkeeper's figures alone, as the suite's guard runs it: tests/integration/
# t_instructions.sh), HTTP_PORT and RESP_PORT (idkeeper's; default random).
set -euo pipefail
export PATH=$PATH:/usr/sbin:/sbin # nginx
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
bin=${IK_BIN:-$build/idkeeper}
n1=${N1:-2000}
n2=${N2:-12000}
cases=${CASES:-http resp seq query}
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
bench_scratch
port=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range
hport=${HTTP_PORT:-$port} rport=${RESP_PORT:-$((port + 1))} # the suite's guard passes ports it claimed

# wait_http URL / wait_resp PORT: until the server under valgrind answers
wait_http() {
  for _ in $(seq 600); do curl -fsS -o /dev/null "$1" 2>/dev/null && return 0; sleep 0.1; done
  echo "instructions.sh: $1 did not answer" >&2; return 1
}
wait_resp() {
  for _ in $(seq 600); do [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0; sleep 0.1; done
  echo "instructions.sh: port $1 did not answer" >&2; return 1
}
# drive_http URL N: N GETs over one keep-alive connection (one curl, one config)
drive_http() {
  awk -v u="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "url = \"%s\"\noutput = /dev/null\n", u }' >"$T/curl.cfg"
  curl -s -K "$T/curl.cfg" || { echo "instructions.sh: curl failed on $1" >&2; return 1; }
}
# drive_resp PORT N CMD: N commands, one at a time, over one connection
drive_resp() {
  awk -v c="$3" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) print c }' | redis-cli -p "$1" >"$T/resp.out"
  [ "$(grep -c . "$T/resp.out")" = "$2" ] || { echo "instructions.sh: $2 answers expected" >&2; return 1; }
}
# stop_ir FILE: SIGTERM the server, print the whole process's instruction count
stop_ir() {
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
  awk '/^summary:/ {print $2}' "$1"
}
vg=(valgrind --tool=callgrind --quiet)

# ir_ik KIND N: one idkeeper run (fresh local: data), prints its instruction count
ir_ik() {
  local kind=$1 n=$2 d=$T/ik.$1.$2 out=$T/cg.ik.$1.$2
  rm -rf "$d"
  "$bin" tags add seg --kind segment --step 100000 --coord "local:$d" >/dev/null
  "$bin" tags add seq --kind sequence --coord "local:$d" >/dev/null
  "${vg[@]}" --callgrind-out-file="$out" "$bin" serve --coord "local:$d" --http "127.0.0.1:$hport" \
    --resp "127.0.0.1:$rport" --threads 1 --quiet 2>"$T/ik.log" &
  pid=$!
  wait_http "http://127.0.0.1:$hport/readyz"
  case $kind in
    http) drive_http "http://127.0.0.1:$hport/api/snowflake/get/x" "$n" ;;
    seq) drive_http "http://127.0.0.1:$hport/v1/sequence/seq?count=1&format=text" "$n" ;;
    query) drive_http "http://127.0.0.1:$hport/v1/snowflake?count=1&format=text" "$n" ;;
    resp) drive_resp "$rport" "$n" "INCR seg" ;;
  esac
  stop_ir "$out"
}
ir_nginx() {
  local n=$1 d=$T/ng.$1 out=$T/cg.nginx.$1
  mkdir -p "$d"
  cat >"$d/nginx.conf" <<NG
worker_processes 1; daemon off; master_process off; pid $d/nginx.pid; error_log $d/nginx.err;
events { worker_connections 1024; }
http { access_log off; keepalive_requests 100000000;
  server { listen 127.0.0.1:$((port + 2)); default_type text/plain;
           location / { return 200 "1859299536916623360"; } } }
NG
  "${vg[@]}" --callgrind-out-file="$out" nginx -c "$d/nginx.conf" -p "$d" 2>"$d/stderr" &
  pid=$!
  wait_http "http://127.0.0.1:$((port + 2))/x"
  drive_http "http://127.0.0.1:$((port + 2))/api/snowflake/get/x" "$n"
  stop_ir "$out"
}
ir_redis() {
  local n=$1 d=$T/rd.$1 out=$T/cg.redis.$1
  mkdir -p "$d"
  "${vg[@]}" --callgrind-out-file="$out" redis-server --bind 127.0.0.1 --port $((port + 3)) \
    --dir "$d" --save '' --appendonly no --daemonize no --logfile "$d/log" &
  pid=$!
  wait_resp $((port + 3))
  drive_resp $((port + 3)) "$n" "INCR counter"
  stop_ir "$out"
}
# per_req NAME CMD...: runs CMD at N1 and N2, prints the instructions per request
per_req() {
  local a b
  a=$("$@" "$n1") && [ -n "$a" ] || { echo "instructions.sh: $* failed" >&2; exit 1; }
  b=$("$@" "$n2") && [ -n "$b" ] || { echo "instructions.sh: $* failed" >&2; exit 1; }
  if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$(ls -t "$T"/cg.* | head -n 1)" "$KEEP/"; fi
  echo $(((b - a) / (n2 - n1)))
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
# beside LABEL IK PEER RUN_PEER: LABEL's line, idkeeper's figure IK next to the
# peer's (RUN_PEER, counted as per_req counts) and the ratio; IK alone with PEERS=0
beside() {
  if [ "${PEERS:-1}" = 0 ]; then echo "$1: idkeeper $2"; return; fi
  local peer
  peer=$(per_req "$4") || return 1
  echo "$1: idkeeper $2  $3 $peer  ratio $(ratio "$2" "$peer") (goal <= 0.50)"
}

echo "# instructions per request (callgrind, server alone, one connection, (Ir(N=$n2) - Ir(N=$n1)) / $((n2 - n1)))"
echo "# idkeeper $("$bin" version | head -n 1 | awk '{print $2}'), $(nginx -v 2>&1 | sed 's/.*: //'), $(redis-server --version | awk '{print $3}' | tr -d v=) redis-server"
for c in $cases; do
  case $c in
    http) ik=$(per_req ir_ik http) && beside "http GET /api/snowflake/get/x" "$ik" nginx ir_nginx || exit 1 ;;
    resp) ik=$(per_req ir_ik resp) && beside "resp INCR (segment tag)" "$ik" redis-server ir_redis || exit 1 ;;
    seq)
      ik=$(per_req ir_ik seq) || exit 1
      echo "seq GET /v1/sequence/seq?count=1 on local: idkeeper $ik (no peer)" ;;
    query)
      ik=$(per_req ir_ik query) || exit 1
      echo "query GET /v1/snowflake?count=1&format=text: idkeeper $ik (no peer)" ;;
    *) echo "instructions.sh: unknown case $c" >&2; exit 2 ;;
  esac
done
