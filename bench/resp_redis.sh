#!/usr/bin/env bash
# resp_redis.sh BUILD_DIR: redis-benchmark against idkeeper's RESP port (serve
# --resp) next to Debian's redis-server, same machine, same run, same flags
# (-c 50, -P 1 and -P 16). idkeeper answers INCR on a segment tag and
# IDK.SNOWFLAKE; redis-server answers INCR. Goal: at least redis-server's requests
# per second at both depths. Then sequence tags (every ID durably recorded before
# the answer) through INCR at -P 1 (SEQ_N/4 requests) and -P 16, next to
# redis-server with appendonly yes and appendfsync always (the only durable Redis
# counter; goal at -P 16: at least 1.0). Prints requests/s and ratios.
# Everything runs in two ways (docs/BENCHMARKS.md says why both):
#   unpinned  idkeeper with one loop thread per core (SERVER_THREADS), the servers
#             and redis-benchmark wherever the kernel puts them
#   pinned    idkeeper with one loop thread and both redis-servers on core
#             SERVER_CPU (0), redis-benchmark on core LOAD_CPU (1) (`taskset`)
# Settings: MODES ("unpinned pinned"), BENCH_N (requests at -P 1; 10x at -P 16;
# default 200000), SEQ_N (default 100000), SERVER_THREADS (idkeeper's loops
# unpinned; 0: one per core), SERVER_CPU (0), LOAD_CPU (1).
# Both redis-servers are started here on loopback ports with a temp dir and always
# stopped on exit; the system's redis service is never used.
set -euo pipefail
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
n=${BENCH_N:-200000}
seq_n=${SEQ_N:-100000}
# shellcheck source-path=SCRIPTDIR
source "$(dirname "$0")/lib.sh"
bench_scratch

base=$(( 10000 + RANDOM % 20000 )) # below the ephemeral range
http=$base rport=$((base + 1)) redis=$((base + 2)) redis_aof=$((base + 3))

# start_servers MODE: idkeeper (fresh data), redis-server and redis-server with
# appendfsync always, unpinned or pinned; sets pin_load and workers
start_servers() {
  pin_mode "$1"
  workers=$([ "$sthreads" = 0 ] && nproc || echo "$sthreads")
  rm -rf "$T/data" "$T/r1" "$T/r2"
  "$bin" tags add seg --kind segment --step 1000 --coord "local:$T/data" >/dev/null
  "$bin" tags add seq --kind sequence --coord "local:$T/data" >/dev/null
  "${pin_srv[@]}" "$bin" serve --coord "local:$T/data" --http 127.0.0.1:$http --resp 127.0.0.1:$rport \
    --threads "$sthreads" --quiet 2>"$T/ik.log" &
  pids+=($!)
  mkdir -p "$T/r1" "$T/r2"
  "${pin_srv[@]}" redis-server --bind 127.0.0.1 --port $redis --dir "$T/r1" --save '' --appendonly no \
    --daemonize no --logfile "$T/r1/log" &
  pids+=($!)
  "${pin_srv[@]}" redis-server --bind 127.0.0.1 --port $redis_aof --dir "$T/r2" --save '' --appendonly yes \
    --appendfsync always --daemonize no --logfile "$T/r2/log" &
  pids+=($!)
  for p in $rport $redis $redis_aof; do resp_up $p; done
}


bench_stamp
for mode in ${MODES:-unpinned pinned}; do
  start_servers "$mode"
  if [ "$mode" = pinned ]; then
    desc="pinned: idkeeper (1 loop thread) and redis-server on core $scpu, redis-benchmark on core $lcpu"
  else
    desc="unpinned: idkeeper with $workers loop threads"
  fi
  echo "[$mode] redis-benchmark -c 50 -q; idkeeper $($bin version | head -1 | awk '{print $2}'); $(redis-server --version | awk '{print $1, $2, $3}') (one thread); $desc"
  for pipe in 1 16; do
    count=$([ $pipe = 1 ] && echo $n || echo $((n * 10)))
    r=$(resp_rps $redis $count $pipe INCR counter)
    s=$(resp_rps $rport $count $pipe INCR seg)
    f=$(resp_rps $rport $count $pipe IDK.SNOWFLAKE)
    printf -- '[%s] -P %-2s n=%-8s redis-server INCR %12s req/s\n' "$mode" $pipe $count "$r"
    printf -- '[%s] -P %-2s n=%-8s idkeeper INCR seg (segment) %12s req/s  ratio %s (goal >= 1.00)\n' "$mode" $pipe $count "$s" "$(ratio "$s" "$r")"
    printf -- '[%s] -P %-2s n=%-8s idkeeper IDK.SNOWFLAKE %12s req/s  ratio %s (goal >= 1.00)\n' "$mode" $pipe $count "$f" "$(ratio "$f" "$r")"
  done
  for pipe in 1 16; do
    count=$([ $pipe = 1 ] && echo $((seq_n / 4)) || echo $seq_n)
    a=$(resp_rps $redis_aof $count $pipe INCR counter)
    q=$(resp_rps $rport $count $pipe INCR seq)
    printf -- '[%s] -P %-2s n=%-8s redis-server appendfsync always INCR %12s req/s\n' "$mode" $pipe $count "$a"
    printf -- '[%s] -P %-2s n=%-8s idkeeper INCR seq (sequence, local: SQLite) %12s req/s  ratio %s (goal at -P 16 >= 1.00)\n' \
      "$mode" $pipe $count "$q" "$(ratio "$q" "$a")"
  done
  last=$(redis-cli -p $rport INCR seq)
  echo "[$mode] sequence check: the next ID after the runs is $last (every INCR seq answered one ID, no gap)"
  stop_servers
done
