#!/usr/bin/env bash
# labels: nosan http resp local
# timeout: 600
# The instruction-count guard (docs/testing.md, "Instructions"): the instructions one
# request costs, counted by callgrind as bench/instructions.sh counts them (the
# daemon alone under valgrind, one connection, (Ir(N=12000) - Ir(N=2000)) / 10000),
# must stay under the limits below, set 5-15% above the figures of
# docs/BENCHMARKS.md ("Instructions per request"). Instructions do not depend on the
# machine's speed or load, so a slow machine passes and a slower path fails: a cut
# undone (the advance's SQLite statement prepared at every commit again, say: 145,041
# a sequence request where it is 62,693) fails here. Not on the ASan build
# (valgrind cannot run it); the release build's figures are the ones measured.
source "$(dirname "$0")/lib.sh"
command -v valgrind >/dev/null || fail "valgrind missing: run scripts/install-deps.sh test"

# route: the line bench/instructions.sh prints for it, and the limit
declare -A limit=(
  ["http GET /api/snowflake/get/x"]=6000   # 5,698-5,709 measured
  ["resp INCR (segment tag)"]=2500         # 2,352-2,366
  ["seq GET /v1/sequence/seq?count=1 on local"]=75000 # 62,693-65,273 (one SQLite commit each)
)
HTTP_PORT=$(free_port) RESP_PORT=$(free_port) PEERS=0 CASES="http resp seq" IK_BIN=$IK_BIN bash "$IK_SRC/bench/instructions.sh" >"$T/ir" 2>&1 ||
  fail "bench/instructions.sh failed: $(tail -n 5 "$T/ir")"
cat "$T/ir"
for route in "${!limit[@]}"; do
  got=$(grep -F "$route: idkeeper " "$T/ir" | sed 's/.*: idkeeper \([0-9]*\).*/\1/')
  [ -n "$got" ] || fail "no figure for '$route' in: $(cat "$T/ir")"
  [ "$got" -le "${limit[$route]}" ] ||
    fail "$route costs $got instructions a request, over its limit of ${limit[$route]} (docs/testing.md, \"Instructions\")"
  pass "$route: $got instructions a request (limit ${limit[$route]})"
done
