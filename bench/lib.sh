# shellcheck shell=bash
# lib.sh: what the benchmarks that run their own servers share, sourced by them.
#   bench_scratch   T, a scratch directory, and a trap that at exit calls
#                   stop_servers (by default: kill and reap $pid and every pid in the
#                   array pids; a script with other servers defines its own) and
#                   removes T.
#   bench_stamp     the "# DATE on N cores, load L1 L5 L15" line a run starts with.
# and the two ways a front-door benchmark runs (docs/BENCHMARKS.md, "Why two
# wall-clock figures"):
#   pin_mode MODE   pinned: sthreads=1, pin_srv and pin_load are `taskset -c` on
#                   SERVER_CPU (0) and LOAD_CPU (1); unpinned: sthreads is
#                   SERVER_THREADS (0, one loop thread a core) and both are empty.
#                   Prefix the servers' command lines with "${pin_srv[@]}" and the
#                   load generator's with "${pin_load[@]}".
scpu=${SERVER_CPU:-0}
lcpu=${LOAD_CPU:-1}

pin_mode() {
  pin_srv=() pin_load=()
  if [ "$1" = pinned ]; then
    sthreads=1 pin_srv=(taskset -c "$scpu") pin_load=(taskset -c "$lcpu")
  else
    sthreads=${SERVER_THREADS:-0}
  fi
}

pids=()
stop_servers() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  pid=
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  pids=()
  return 0
}

bench_scratch() {
  T=$(mktemp -d) pid=
  trap 'stop_servers; rm -rf "$T"' EXIT
}

bench_stamp() {
  echo "# $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# The RESP benchmarks' own (resp_redis.sh, redis_sequence.sh):
#   resp_up PORT            until PORT answers PING (10 s), else exits 1
#   resp_rps PORT N PIPELINE CMD...
#                           requests per second of one redis-benchmark run of N
#                           requests with CLIENTS (50) connections, after a warm-up
#                           of N/10, the load generator pinned as pin_load says;
#                           exits 1 on any error line
#   ratio A B               A / B with two decimals
resp_up() {
  local i
  for i in $(seq 200); do [ "$(redis-cli -p "$1" PING 2>/dev/null)" = PONG ] && return 0; sleep 0.05; done
  echo "port $1 did not come up" >&2
  exit 1
}

resp_rps() {
  local port=$1 count=$2 pipe=$3 c=${CLIENTS:-50}
  shift 3
  "${pin_load[@]}" redis-benchmark -p "$port" -c "$c" -P "$pipe" -n $((count / 10)) -q "$@" >/dev/null 2>&1
  "${pin_load[@]}" redis-benchmark -p "$port" -c "$c" -P "$pipe" -n "$count" -q "$@" >"$T/out" 2>&1
  if grep -qi 'error' "$T/out"; then echo "error from redis-benchmark $*:" >&2; cat "$T/out" >&2; exit 1; fi
  tr '\r' '\n' <"$T/out" | awk '/requests per second/ {for (i = 1; i <= NF; i++) if ($(i+1) == "requests") v = $i} END {print v}'
}

ratio() { echo "$1 / $2" | bc -l | xargs printf '%.2f'; }
