# shellcheck shell=bash
# pin_lib.sh: the two ways a front-door benchmark runs (docs/BENCHMARKS.md, "Why
# two wall-clock figures"), sourced by http_wrk.sh and resp_redis.sh.
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
