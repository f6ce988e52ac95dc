#!/usr/bin/env bash
# resp_seq_ab.sh BIN_A BIN_B: durable sequence INCR on local: (RESP, redis-benchmark
# -c 50) of two idkeeper binaries (main's and a branch's) in interleaved slices, next
# to redis-server with appendonly yes and appendfsync always measured just before
# each slice, pinned as resp_redis.sh pins (idkeeper with one loop thread and
# redis-server on core SERVER_CPU, redis-benchmark on LOAD_CPU).
#
# Each slice: a fresh data directory and server, then at -P 1 (N1 requests, default
# 50000) and -P 16 (N16, default 200000): redis-server's rate, the binary's rate,
# and the binary's CPU (user + system) and thread switches (voluntary and not, all
# its threads) a request, from /proc. On this shared VM the rates swing with its
# other work and its disk; the CPU and the switches a request move much less, so
# both are printed. At the end, per binary and depth, the medians over ROUNDS
# (default 5), and each binary's ratio to redis-server. Every slice checks that the
# next ID after it is one past the requests answered (no gap, no ID twice).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
A=$(realpath "${1:?usage: resp_seq_ab.sh BIN_A BIN_B}")
B=$(realpath "${2:?usage: resp_seq_ab.sh BIN_A BIN_B}")
n1=${N1:-50000} n16=${N16:-200000}
# shellcheck source-path=SCRIPTDIR
source "$here/lib.sh"
bench_scratch
pin_mode pinned

base=$((10000 + RANDOM % 20000))
http=$base rport=$((base + 1)) aof=$((base + 3))
mkdir -p "$T/aof"
"${pin_srv[@]}" redis-server --bind 127.0.0.1 --port $aof --dir "$T/aof" --save '' --appendonly yes \
  --appendfsync always --daemonize no --logfile "$T/aof/log" &
pids+=($!)
resp_up $aof

# shellcheck source-path=SCRIPTDIR
source "$here/proc.sh"

bench_stamp
echo "A=$A B=$B; redis-benchmark -c 50 INCR; $(redis-server --version | awk '{print $1, $2, $3}'), appendfsync always; pinned: servers on core $scpu, load on core $lcpu"
printf '%-5s %-3s %-5s %12s %12s %6s %10s %10s\n' round bin depth redis_req_s ik_req_s ratio cpu_us_req sw_req
declare -A rows
for round in $(seq "${ROUNDS:-5}"); do
  for who in a b; do
    bin=$A
    [ $who = b ] && bin=$B
    rm -rf "$T/data"
    "$bin" tags add seq --kind sequence --coord "local:$T/data" >/dev/null
    "${pin_srv[@]}" "$bin" serve --coord "local:$T/data" --http 127.0.0.1:$http --resp 127.0.0.1:$rport \
      --threads 1 --quiet 2>"$T/ik.log" &
    pid=$!
    resp_up $rport
    answered=0
    for pipe in 1 16; do
      count=$([ $pipe = 1 ] && echo "$n1" || echo "$n16")
      r=$(resp_rps $aof "$count" $pipe INCR counter)
      c0=$(pid_cpu_ms $pid) s0=$(pid_switches $pid)
      q=$(resp_rps $rport "$count" $pipe INCR seq)
      c1=$(pid_cpu_ms $pid) s1=$(pid_switches $pid)
      reqs=$((count + count / 10)) # resp_rps warms up with a tenth first
      answered=$((answered + reqs))
      cpu=$(echo "($c1 - $c0) * 1000 / $reqs" | bc -l | xargs printf '%.2f')
      sw=$(echo "($s1 - $s0) / $reqs" | bc -l | xargs printf '%.3f')
      printf '%-5s %-3s -P%-3s %12s %12s %6s %10s %10s\n' "$round" $who $pipe "$r" "$q" "$(ratio "$q" "$r")" "$cpu" "$sw"
      rows[$who,$pipe]+="$q $(ratio "$q" "$r") $cpu $sw"$'\n'
    done
    next=$(redis-cli -p $rport INCR seq)
    [ "$next" = $((answered + 1)) ] || { echo "slice $round $who: the next ID is $next, want $((answered + 1))" >&2; exit 1; }
    kill $pid
    wait $pid || true
    pid=
  done
done
# median COLUMN: the median of column COLUMN of the lines on stdin
median() { awk -v c="$1" 'NF {print $c}' | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "medians over ${ROUNDS:-5} rounds (ratio: to redis-server in the same slice):"
for pipe in 1 16; do
  for who in a b; do
    rs=${rows[$who,$pipe]}
    printf '%s -P%-3s req/s %10s  ratio %5s  cpu us/req %6s  switches/req %6s\n' $who $pipe \
      "$(median 1 <<<"$rs")" "$(median 2 <<<"$rs")" "$(median 3 <<<"$rs")" "$(median 4 <<<"$rs")"
  done
done
