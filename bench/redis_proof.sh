#!/usr/bin/env bash
# redis_proof.sh BASE_BUILD [BUILD_DIR]: the cost of the proof that rides with every
# Redis write (docs/hazards.md, Redis: MULTI, the evidence, the script, EXEC), in one
# run: the binary of BASE_BUILD (a build of the commit before) against BUILD_DIR's,
# on one Redis of its own (appendonly yes, appendfsync always, as idkeeper requires),
# each on a key prefix of its own, one server thread each, taking turns:
#   - segment, 8 clients; sequence, 8 and 64 clients (tests/tools/hammer, count=1 per
#     request, SECONDS_EACH s each, ROUNDS rounds, the median round kept);
#   - round trips per write: Redis's own command counts over each run (CONFIG
#     RESETSTAT before it): writes are EVALSHA and EVAL calls, a hazard check of its
#     own is a ROLE outside a MULTI; (writes + checks alone) / writes;
#   - slot renewal (and take, release) latency through the backend's calls
#     (bench/slot_latency, each build's own).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: $0 BASE_BUILD [BUILD_DIR]" >&2; exit 2; }
base=$(cd "$1" && pwd)
build=$(cd "${2:-$here/../build}" && pwd)
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
# run BUILD KIND CLIENTS: prints "IDs/s round-trips-per-write"
run() {
  rcli "$rport" CONFIG RESETSTAT >/dev/null
  "$hammer" --url "http://127.0.0.1:${P[$1]}/v1/$2?count=1&format=text" --connections "$3" \
    --duration "$secs" >"$T/h" 2>&1
  local w r m
  w=$(($(stat evalsha) + $(stat eval)))
  r=$(stat role) m=$(stat multi)
  printf '%s %.3f\n' "$(sed -n 's/.* ids_per_s=\([^ ]*\).*/\1/p' "$T/h")" \
    "$(echo "($w + $r - $m) / $w" | bc -l)"
}
median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

echo "$(redis-server --version | cut -d' ' -f1-3) on loopback, appendonly yes, appendfsync always; ${secs}s x $rounds rounds each, count=1 per request, one server thread"
printf '%-22s %12s %12s %7s %10s %10s\n' "" "base IDs/s" "new IDs/s" "new/base" "base rt/w" "new rt/w"
for w in "segment/seg 8" "sequence/seq 8" "sequence/seq 64"; do
  set -- $w
  : >"$T/base.r" && : >"$T/new.r"
  for ((i = 0; i < rounds; i++)); do
    for b in base new; do run "$b" "$1" "$2" >>"$T/$b.r"; done
  done
  bi=$(cut -d' ' -f1 "$T/base.r" | median) ni=$(cut -d' ' -f1 "$T/new.r" | median)
  br=$(cut -d' ' -f2 "$T/base.r" | median) nr=$(cut -d' ' -f2 "$T/new.r" | median)
  printf '%-22s %12s %12s %7.3f %10s %10s\n' "${1%%/*}, $2 clients" "$bi" "$ni" \
    "$(echo "$ni / $bi" | bc -l)" "$br" "$nr"
done
echo "slot renewal (and take, release), through the backend's calls, 300 each, range 0-31, twice in turn:"
for b in base new base new; do
  d=$base
  [ "$b" = new ] && d=$build
  echo "$b:"
  "$d/bench/slot_latency" "redis://127.0.0.1:$rport/0?prefix=lat$b/" warm 0 31 50 random 0 fresh >/dev/null
  "$d/bench/slot_latency" "redis://127.0.0.1:$rport/0?prefix=lat$b/" small 0 31 300 random 0 sticky
done
