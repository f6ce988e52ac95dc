# shellcheck shell=bash
# lib.sh: what the benchmarks that run their own servers share, sourced by them.
#   bench_scratch   T, a scratch directory, and a trap that at exit calls
#                   stop_servers (by default: kill and reap $pid; a script with more
#                   servers defines its own) and removes T.
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

stop_servers() {
  [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  pid=
  return 0
}

bench_scratch() {
  T=$(mktemp -d) pid=
  trap 'stop_servers; rm -rf "$T"' EXIT
}

bench_stamp() {
  echo "# $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
