#!/usr/bin/env bash
# redis_sequence.sh BUILD_DIR: sequence IDs on redis:// next to the counter they
# replace, on one durable Redis (appendonly yes, appendfsync always), same run, same
# client count: redis-benchmark's clients calling INCR on Redis directly (one INCR,
# one fsync'd AOF append, per ID), against the same clients calling INCR on a
# sequence tag through idkeeper's RESP door (`serve --coord redis://... --resp`),
# which group-commits: one INCRBY, in MULTI with its proof (docs/hazards.md), per
# batch. Goal: idkeeper at least 1.0 of the direct INCR. Both at -P 1 and -P 16,
# pinned and unpinned (docs/BENCHMARKS.md, "Why two wall-clock figures"); at the end
# the tag's next ID checks that every INCR answered one ID.
# Settings: MODES ("unpinned pinned"), N (requests per run, default 100000),
# CLIENTS (50), SERVER_THREADS, SERVER_CPU (0), LOAD_CPU (1). Redis is started here on
# a loopback port with a temp dir and always stopped on exit.
set -euo pipefail
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
n=${N:-100000}
clients=${CLIENTS:-50} # resp_rps reads CLIENTS
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
bench_scratch

base=$((10000 + RANDOM % 20000))
http=$base rport=$((base + 1)) redis=$((base + 2))

start_servers() {
  pin_mode "$1"
  rm -rf "$T/r"
  mkdir -p "$T/r"
  "${pin_srv[@]}" redis-server --bind 127.0.0.1 --port $redis --dir "$T/r" --save '' --appendonly yes \
    --appendfsync always --daemonize no --logfile "$T/r/log" &
  pids+=($!)
  resp_up $redis
  local coord=redis://127.0.0.1:$redis/0
  "$bin" tags add seq --kind sequence --coord "$coord" >/dev/null
  "${pin_srv[@]}" "$bin" serve --coord "$coord" --http 127.0.0.1:$http --resp 127.0.0.1:$rport \
    --threads "$sthreads" --quiet 2>"$T/ik.log" &
  pids+=($!)
  resp_up $rport
}


bench_stamp
for mode in ${MODES:-unpinned pinned}; do
  start_servers "$mode"
  echo "[$mode] redis-benchmark -c $clients -q; idkeeper $($bin version | head -1 | awk '{print $2}') on redis://; $(redis-server --version | awk '{print $1, $2, $3}') appendfsync always"
  for pipe in 1 16; do
    d=$(resp_rps $redis "$n" $pipe INCR counter)
    q=$(resp_rps $rport "$n" $pipe INCR seq)
    printf -- '[%s] -P %-2s n=%-7s redis-server INCR (durable, direct)        %12s req/s\n' "$mode" $pipe "$n" "$d"
    printf -- '[%s] -P %-2s n=%-7s idkeeper INCR seq (sequence on redis://) %12s req/s  ratio %s (goal >= 1.00)\n' \
      "$mode" $pipe "$n" "$q" "$(ratio "$q" "$d")"
  done
  # redis-benchmark sends whole pipelines, a few more than -n at -P 16: the direct
  # counter, driven with the same runs, counts what was really sent
  last=$(redis-cli -p $rport INCR seq)
  want=$(($(redis-cli -p $redis GET counter) + 1))
  echo "[$mode] sequence check: the next ID is $last (want $want, one more than the direct counter: every INCR seq answered one ID, no gap)"
  stop_servers
done
