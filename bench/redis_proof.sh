#!/usr/bin/env bash
# redis_proof.sh [BUILD_DIR]: the cost of the proof that rides with every Redis write
# (docs/hazards.md, Redis: MULTI, the evidence, the script, EXEC), in one run: the
# binary of $IK_BASE_BUILD (a build of the commit before; without it the bench says
# so and stops, as run-all.sh has none) against BUILD_DIR's,
# on one Redis of its own (appendonly yes, appendfsync always, as idkeeper requires),
# each on a key prefix of its own, one server thread each, taking turns:
#   - segment, 8 clients; sequence, 8 and 64 clients (tests/tools/hammer, count=1 per
#     request, SECONDS_EACH s each, ROUNDS rounds, the median round kept; WORKLOADS
#     "segment/seg 8|..." picks others);
#   - round trips per write: Redis's own command counts over each run (CONFIG
#     RESETSTAT before it): writes are EVALSHA and EVAL calls, a hazard check of its
#     own is a ROLE outside a MULTI; (writes + checks alone) / writes; and the Redis
#     process's CPU time per write (INFO cpu, user + system: the fsyncs included);
#   - slot renewal (and take, release) latency through the backend's calls
#     (bench/slot_latency, each build's own);
#   - instructions per sequence write of Redis and of the idkeeper server, counted
#     by callgrind (valgrind), which do not depend on what else the machine runs:
#     both under callgrind for each build, N1 and N2 sequence requests one at a
#     time, stopped, (Ir(N2) - Ir(N1)) / (N2 - N1) (the server's includes its HTTP
#     request and the lease's renewals meanwhile).
# PARTS picks the sections (default "http slots ir").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ -n "${IK_BASE_BUILD:-}" ] || {
  echo "skipped: set IK_BASE_BUILD to a build of the commit to compare against"
  exit 0
}
base=$(cd "$IK_BASE_BUILD" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=$build/idkeeper
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
secs=${SECONDS_EACH:-5} rounds=${ROUNDS:-3}
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/redis.sh"

redis_own bench
rport=${REDIS_PORT_OF[bench]}
declare -A BIN=([base]=$base/idkeeper [new]=$build/idkeeper) P
for b in base new; do
  uri="redis://127.0.0.1:$rport/0?prefix=$b/"
  "${BIN[$b]}" tags add seg --kind segment --coord "$uri" >/dev/null
  "${BIN[$b]}" tags add seq --kind sequence --coord "$uri" >/dev/null
  IK_BIN=${BIN[$b]} serve_on "$b" --coord "$uri" --threads 1 --quiet || fail "$b: $(tail -n 5 "$T/$b.log")"
  P[$b]=$PORT
done

stat() {
  local n
  n=$(rcli "$rport" INFO commandstats | tr -d '\r' | sed -n "s/^cmdstat_$1:calls=\([0-9]*\),.*/\1/p")
  echo "${n:-0}"
}
# the Redis process's CPU time so far (user + system, us: INFO cpu)
cpu_us() { rcli "$rport" INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(user|sys):/ {n += $2} END {printf "%d\n", n * 1e6}'; }
# run BUILD KIND CLIENTS: prints "IDs/s round-trips-per-write redis-us-per-write"
run() {
  rcli "$rport" CONFIG RESETSTAT >/dev/null
  local c0
  c0=$(cpu_us)
  "$hammer" --url "http://127.0.0.1:${P[$1]}/v1/$2?count=1&format=text" --connections "$3" \
    --duration "$secs" >"$T/h" 2>&1
  local w r m
  w=$(($(stat evalsha) + $(stat eval)))
  r=$(stat role) m=$(stat multi)
  printf '%s %.3f %.1f\n' "$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' "$T/h")" \
    "$(echo "($w + $r - $m) / $w" | bc -l)" "$(echo "($(cpu_us) - $c0) / $w" | bc -l)"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

parts=" ${PARTS:-http slots ir} "
loads=()
[[ $parts != *" http "* ]] ||
  IFS='|' read -r -a loads <<<"${WORKLOADS:-segment/seg 8|sequence/seq 8|sequence/seq 64}"
echo "$(redis-server --version | cut -d' ' -f1-3) on loopback, appendonly yes, appendfsync always; ${secs}s x $rounds rounds each, count=1 per request, one server thread"
((${#loads[@]} == 0)) || printf '%-22s %12s %12s %7s %10s %10s %11s %11s\n' "" "base IDs/s" "new IDs/s" "new/base" "base rt/w" \
  "new rt/w" "base us/w" "new us/w"
for w in ${loads[@]+"${loads[@]}"}; do
  set -- $w
  : >"$T/base.r" && : >"$T/new.r"
  for ((i = 0; i < rounds; i++)); do
    for b in base new; do run "$b" "$1" "$2" >>"$T/$b.r"; done
  done
  bi=$(cut -d' ' -f1 "$T/base.r" | median) ni=$(cut -d' ' -f1 "$T/new.r" | median)
  br=$(cut -d' ' -f2 "$T/base.r" | median) nr=$(cut -d' ' -f2 "$T/new.r" | median)
  bu=$(cut -d' ' -f3 "$T/base.r" | median) nu=$(cut -d' ' -f3 "$T/new.r" | median)
  printf '%-22s %12s %12s %7.3f %10s %10s %11s %11s\n' "${1%%/*}, $2 clients" "$bi" "$ni" \
    "$(echo "$ni / $bi" | bc -l)" "$br" "$nr" "$bu" "$nu"
done
[[ $parts != *" slots "* ]] ||
  echo "slot renewal (and take, release), through the backend's calls, 300 each, range 0-31, twice in turn:"
[[ $parts != *" slots "* ]] || for b in base new base new; do
  d=$base
  [ "$b" = new ] && d=$build
  echo "$b:"
  "$d/bench/slot_latency" "redis://127.0.0.1:$rport/0?prefix=lat$b/" warm 0 31 50 random 0 fresh >/dev/null
  "$d/bench/slot_latency" "redis://127.0.0.1:$rport/0?prefix=lat$b/" small 0 31 300 random 0 sticky
done

[[ $parts == *" ir "* ]] || exit 0
command -v valgrind >/dev/null || { echo "no valgrind: Redis's instructions per write not counted"; exit 0; }
n1=${N1:-500} n2=${N2:-2500}
# ir BUILD N: Redis's instructions (callgrind's total) over a run of N sequence requests
ir() {
  local d=$T/cg-$1-$2 p pid sp i
  mkdir -p "$d"
  p=$(free_port)
  redis_conf "$d" "$p" >"$d/redis.conf"
  valgrind --tool=callgrind --callgrind-out-file="$d/cg.out" redis-server "$d/redis.conf" \
    >"$d/vg.log" 2>&1 &
  pid=$!
  IK_PIDS+=($pid)
  wait_until 60 _redis_up "$p" || fail "redis under callgrind did not start: $(tail -n 5 "$d/vg.log")"
  "${BIN[$1]}" tags add seq --kind sequence --coord "redis://127.0.0.1:$p/0" >/dev/null
  # the server under callgrind too (a wrapper in IK_BIN's place)
  printf '#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=%s %s "$@"\n' \
    "$d/cg-ik.out" "${BIN[$1]}" >"$d/ik"
  chmod +x "$d/ik"
  IK_BIN=$d/ik serve_on "ir$1$2" --coord "redis://127.0.0.1:$p/0" --threads 1 --quiet ||
    fail "serve under callgrind: $(tail -n 3 "$T/ir$1$2.log")"
  sp=${SERVER_PID[ir$1$2]}
  for ((i = 0; i < $2; i++)); do ik_http "http://127.0.0.1:$PORT/v1/sequence/seq?count=1&format=text" "" 30 >/dev/null; done
  kill -TERM "$sp"
  wait_until 60 not alive "$sp" || true
  redis-cli -p "$p" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait_until 60 not alive "$pid" || true
  echo "$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$d/cg.out" | head -n 1) $(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$d/cg-ik.out" | head -n 1)"
}
echo "instructions per sequence write (callgrind, (Ir($n2) - Ir($n1)) / $((n2 - n1)); one request at a time):"
printf '  %-5s %12s %12s\n' "" "Redis" "idkeeper"
for b in base new; do
  read -r ra ia <<<"$(ir "$b" "$n1")"
  read -r rz iz <<<"$(ir "$b" "$n2")"
  printf '  %-5s %12.0f %12.0f\n' "$b" "$(echo "($rz - $ra) / ($n2 - $n1)" | bc -l)" \
    "$(echo "($iz - $ia) / ($n2 - $n1)" | bc -l)"
done
