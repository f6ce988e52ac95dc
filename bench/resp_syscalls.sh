#!/usr/bin/env bash
# resp_syscalls.sh [BUILD_DIR] [N]: what one pipelined RESP request costs the
# server besides its instructions (docs/BENCHMARKS.md, "RESP -P 16"): the server
# pinned on core 0 (idkeeper --threads 1, or redis-server), `redis-benchmark -c 50
# -P 16 INCR` pinned on core 1 (after a warm-up of 200,000), and `perf stat -p` on
# the server over the measured run: its CPU time, context switches (voluntary: it
# slept in epoll_wait; involuntary: preempted), read, write and epoll_wait calls, per
# request; and the client's CPU time per request. idkeeper, then redis-server in the
# same run (WHO="ik redis"; "ik" or "redis" alone for one), one block each.
# Settings: P (16), SERVER_CPU (0), LOAD_CPU (1). Counts of syscalls do not depend on
# the machine's load; sleeps and CPU time do (run pairs alternating, compare medians).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
n=${2:-2000000}
P=${P:-16}
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
bench_scratch
run_one() {
  local who=$1 key out cs0 cs1 ppid bin port=$((10000 + RANDOM % 20000))
  rm -rf "$T/d"
  if [ "$who" = redis ]; then
    taskset -c "$scpu" redis-server --bind 127.0.0.1 --port "$port" --dir "$T" --save '' \
      --appendonly no --daemonize no --logfile "$T/log" &
    pid=$! key=counter
  else
    bin=${IK_BIN:-$build/idkeeper}
    "$bin" tags add seg --kind segment --step 100000 --coord "local:$T/d" >/dev/null
    taskset -c "$scpu" "$bin" serve --coord "local:$T/d" --http "127.0.0.1:$((port + 1))" \
      --resp "127.0.0.1:$port" --threads 1 --quiet 2>"$T/log" &
    pid=$! key=seg
  fi
  for _ in $(seq 300); do [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ] && break; sleep 0.1; done
  taskset -c "$lcpu" redis-benchmark -p "$port" -c 50 -P "$P" -n 200000 -q INCR "$key" >/dev/null 2>&1
  perf stat -e "$ev" -p "$pid" -x, -o "$T/server.txt" &
  ppid=$!
  sleep 0.3
  cs0=$(ctx)
  out=$(taskset -c "$lcpu" perf stat -e task-clock -x, -o "$T/client.txt" \
    redis-benchmark -p "$port" -c 50 -P "$P" -n "$n" -q INCR "$key" 2>&1 |
    tr '\r' '\n' | grep -a 'requests per second' | tail -n 1)
  cs1=$(ctx)
  kill -INT "$ppid"
  wait "$ppid" 2>/dev/null || true
  echo "# $([ "$who" = redis ] && echo redis-server || echo "idkeeper $bin") -P $P, $n requests: $out"
  awk -F, -v n="$n" '/^#/ || NF < 3 {next} {if ($3 == "task-clock") printf "server CPU %.0f ms  %.3f us a request\n", $1, $1 * 1000 / n; else printf "server %-30s %10d  %.4f a request\n", $3, $1, $1 / n}' "$T/server.txt"
  echo "$cs0 $cs1" | awk -v n="$n" '{printf "server sleeps (voluntary switches) %d  %.4f a request; preempted %d\n", $3 - $1, ($3 - $1) / n, $4 - $2}'
  awk -F, -v n="$n" '/^#/ || NF < 3 {next} {printf "client CPU %.0f ms  %.3f us a request\n", $1, $1 * 1000 / n}' "$T/client.txt"
  kill -TERM "$pid"
  wait "$pid" 2>/dev/null || true
  pid=
}
ctx() { cat /proc/"$pid"/task/*/status | awk '/^voluntary/ {v += $2} /^nonvoluntary/ {nv += $2} END {print v, nv}'; }
ev=task-clock,context-switches,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait
for w in ${WHO:-ik redis}; do run_one "$w"; done
