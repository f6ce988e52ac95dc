#!/usr/bin/env bash
# counters_segment_http.sh BUILD_DIR: segment IDs over HTTP (issue 4 benchmark):
# wrk with keep-alive on the Leaf segment route /api/segment/get/TAG next to the
# snowflake route /api/snowflake/get/x, same daemon, same run, same wrk settings.
# Goal: segment at least the requests per second of snowflake. The two routes are
# measured in alternating rounds (ROUNDS, default 3), so that load from elsewhere on
# the machine falls on both alike; prints each round, the median requests/s of each
# route, and the ratio of the medians. Also the daemon's CPU time per request of
# each route (utime + stime from /proc, summed over the rounds), which other load on
# the machine disturbs much less than requests/s. Settings: WRK_THREADS (1), WRK_CONNS (50),
# WRK_SECONDS (10 per round), ROUNDS (3), SERVER_THREADS (0: one per core).
set -euo pipefail
build=${1:-build}
bin=${IK_BIN:-$build/idkeeper}
threads=${WRK_THREADS:-1}
conns=${WRK_CONNS:-50}
secs=${WRK_SECONDS:-10}
sthreads=${SERVER_THREADS:-0}
rounds=${ROUNDS:-3}
T=$(mktemp -d)
cleanup() {
  [ -n "${ik_pid:-}" ] && kill "$ik_pid" 2>/dev/null && wait "$ik_pid" 2>/dev/null
  rm -rf "$T"
}
trap cleanup EXIT

port=$(( 20000 + RANDOM % 20000 ))
"$bin" serve --coord "local:$T/data" --http 127.0.0.1:$port --threads "$sthreads" --quiet \
  2>"$T/ik.log" &
ik_pid=$!
for i in $(seq 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/readyz" 2>/dev/null && break; sleep 0.05; done
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$port/v1/tags" \
  -d '{"tag":"bench","kind":"segment","step":1000}'

cpu_ticks() { awk '{print $14 + $15}' "/proc/$ik_pid/stat"; }

# run NAME URL: prints "rps p50 p99" of one wrk run; adds the requests and the
# daemon's CPU ticks to $T/NAME.cpu.
run() {
  local c0 c1
  c0=$(cpu_ticks)
  wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "$2" >"$T/$1.wrk"
  c1=$(cpu_ticks)
  grep -q 'Non-2xx' "$T/$1.wrk" && { echo "$1: non-2xx answers:" >&2; cat "$T/$1.wrk" >&2; }
  awk -v t=$((c1 - c0)) '/ requests in / {print $1, t}' "$T/$1.wrk" >>"$T/$1.cpu"
  awk '/^Requests\/sec/ {r=$2} $1=="50%" {p50=$2} $1=="99%" {p99=$2} END {print r, p50, p99}' "$T/$1.wrk"
}
# ns of daemon CPU per request over all rounds of NAME
ns_per_req() { awk -v hz="$(getconf CLK_TCK)" '{n += $1; t += $2} END {printf "%.0f", t / hz * 1e9 / n}' "$T/$1.cpu"; }
median() { sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }

u=http://127.0.0.1:$port
echo "wrk -t$threads -c$conns -d${secs}s x $rounds alternating rounds, keep-alive; idkeeper --threads $sthreads on local:"
wrk -t"$threads" -c"$conns" -d2s "$u/api/snowflake/get/x" >/dev/null
wrk -t"$threads" -c"$conns" -d2s "$u/api/segment/get/bench" >/dev/null
for ((r = 1; r <= rounds; r++)); do
  read -r a p50a p99a < <(run snowflake "$u/api/snowflake/get/x")
  read -r b p50b p99b < <(run segment "$u/api/segment/get/bench")
  echo "$a" >>"$T/sf"; echo "$b" >>"$T/sg"
  printf 'round %d: snowflake %10s req/s (p50 %s, p99 %s)  segment %10s req/s (p50 %s, p99 %s)\n' \
    "$r" "$a" "$p50a" "$p99a" "$b" "$p50b" "$p99b"
done
sf=$(median <"$T/sf"); sg=$(median <"$T/sg")
printf '%-9s %12s req/s median  /api/snowflake/get/x\n' snowflake "$sf"
printf '%-9s %12s req/s median  /api/segment/get/bench\n' segment "$sg"
printf 'ratio segment/snowflake: %.2f (goal >= 1.00)\n' "$(echo "$sg / $sf" | bc -l)"
a=$(ns_per_req snowflake); b=$(ns_per_req segment)
printf 'daemon CPU per request: snowflake %s ns, segment %s ns (ratio %.2f)\n' "$a" "$b" \
  "$(echo "$b / $a" | bc -l)"
st=$(curl -fsS "$u/v1/status" | jq -c '.tags[0] | {step, loading, last_error}')
echo "segment tag after the run: $st"
