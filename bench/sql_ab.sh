#!/usr/bin/env bash
# sql_ab.sh BIN_A BIN_B [BUILD_DIR]: sequence IDs per second of two idkeeper binaries
# (main's and a branch's) on the same databases in one run, in interleaved slices,
# so that a machine loaded by other work loads both alike (docs/BENCHMARKS.md).
#
# One PostgreSQL and one MariaDB of its own (bench/sql_lib.sh, durable); on each
# store one `idkeeper serve` per binary, each with a sequence tag of its own; then
# ROUNDS (5) times, for each client count in CLIENTS ("1 64"): tests/tools/hammer
# with that many keep-alive connections, count=1, SECS (3) seconds against A, then
# the same against B. Prints every slice (IDs/s, and the CPU the database and the
# daemon used per 1,000 IDs: on a loaded machine the rate swings with the load,
# the CPU an ID costs much less), and per store and client count the median of
# each binary and B's median over A's. STORES ("mysql postgresql").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
A=$(realpath "${1:?usage: sql_ab.sh BIN_A BIN_B [BUILD_DIR]}")
B=$(realpath "${2:?usage: sql_ab.sh BIN_A BIN_B [BUILD_DIR]}")
build=$(cd "${3:-$here/../build}" && pwd)
export IK_BIN=$A
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
secs=${SECS:-3}
source "$here/../tests/integration/lib.sh"
source "$here/sql_lib.sh"

sql_start
echo "$(sql_versions) on loopback, durable; A=$A B=$B; ${secs}s slices, count=1 per request, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-11s %-8s %-6s %10s %10s %16s %16s\n' store clients round a_ids_s b_ids_s a_cpu_db/ik b_cpu_db/ik
declare -A got cpu
for s in ${STORES:-mysql postgresql}; do
  uri=${SQL_URI[$s]} pw=(--password-file "${SQL_PW[$s]}")
  declare -A port
  for who in a b; do
    bin=$A
    [ $who = b ] && bin=$B
    "$bin" tags add "seq$who" --kind sequence --coord "$uri" "${pw[@]}" >/dev/null
    IK_BIN=$bin serve_on "$s$who" --coord "$uri" "${pw[@]}" --quiet || fail "$s $who: $(tail -n 5 "$T/$s$who.log")"
    port[$who]=$PORT
  done
  for c in ${CLIENTS:-1 64}; do
    for who in a b; do # warm-up
      "$hammer" --url "http://127.0.0.1:${port[$who]}/v1/sequence/seq$who?count=1&format=text" --connections "$c" --duration 1 --quiet >/dev/null 2>&1 || true
    done
    for r in $(seq 1 "${ROUNDS:-5}"); do
      for who in a b; do
        db0=$(sql_cpu_ms "$s") ik0=$(pid_cpu_ms "${SERVER_PID[$s$who]}")
        "$hammer" --url "http://127.0.0.1:${port[$who]}/v1/sequence/seq$who?count=1&format=text" --connections "$c" --duration "$secs" >"$T/h" 2>&1 || fail "hammer: $(cat "$T/h")"
        db1=$(sql_cpu_ms "$s") ik1=$(pid_cpu_ms "${SERVER_PID[$s$who]}")
        errors=$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' "$T/h")
        [ "$errors" = 0 ] || fail "$s $who, $c clients: $errors errors ($(cat "$T/h"))"
        got[$who]=$(sed -n 's/.* ids_per_s=\([0-9]*\).*/\1/p' "$T/h")
        echo "${got[$who]}" >>"$T/$s.$c.$who"
        n=$((got[$who] * secs))
        cpu[$who]=$(awk -v d=$((db1 - db0)) -v k=$((ik1 - ik0)) -v n="$n" 'BEGIN { printf "%.1f/%.1f", d * 1000 / n, k * 1000 / n }')
        awk -v d=$((db1 - db0)) -v k=$((ik1 - ik0)) -v n="$n" 'BEGIN { printf "%.2f\n", (d + k) * 1000 / n }' >>"$T/$s.$c.$who.cpu"
      done
      printf '%-11s %-8s %-6s %10s %10s %16s %16s\n' "$s" "$c" "$r" "${got[a]}" "${got[b]}" "${cpu[a]}" "${cpu[b]}"
    done
  done
  for who in a b; do kill "${SERVER_PID[$s$who]}" && wait "${SERVER_PID[$s$who]}" 2>/dev/null || true; done
done
med() { sort -g "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "medians:"
for s in ${STORES:-mysql postgresql}; do
  for c in ${CLIENTS:-1 64}; do
    ma=$(med "$T/$s.$c.a") mb=$(med "$T/$s.$c.b")
    ca=$(med "$T/$s.$c.a.cpu") cb=$(med "$T/$s.$c.b.cpu")
    printf '%-11s %-8s IDs/s a %8s  b %8s  b/a %s;  CPU ms per 1,000 IDs (database + daemon) a %s  b %s  b/a %s\n' "$s" "$c" "$ma" "$mb" \
      "$(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.3f", b / a }')" "$ca" "$cb" "$(awk -v a="$ca" -v b="$cb" 'BEGIN { printf "%.3f", b / a }')"
  done
done
