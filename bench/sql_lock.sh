#!/usr/bin/env bash
# sql_lock.sh [BUILD_DIR]: lock acquire+release cycles per second on postgresql://
# and mysql:// (libidkeeper's ik_lock, tests/interop/ik_interop.c bench-lock: each
# client its own coord), next to the database's own session lock in a loop on the
# same database in the same run (bench/sql_naive ... lock: pg_advisory_lock /
# pg_advisory_unlock, GET_LOCK / RELEASE_LOCK), with 1 and 4 contending clients.
# Each figure is the median of RUNS (3) runs of SECS (3) s, idkeeper and the peer
# alternating. Prints both and the ratio. Settings: RUNS, SECS, STORES
# ("postgresql mysql"), CLIENTS ("1 4").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
naive=$build/bench/sql_naive
source "$here/../tests/integration/lib.sh"
source "$here/sql_lib.sh"
source "$here/../tests/interop/build.sh"
SECS=${SECS:-3}
RUNS=${RUNS:-3}
[ -x "$naive" ] || fail "build $naive first (make build)"

sql_start
interop_build_c
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "$(sql_versions) on loopback; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); median of $RUNS runs of $SECS s"
for s in ${STORES:-postgresql mysql}; do
  uri=${SQL_URI[$s]} pw=$(cat "${SQL_PW[$s]}")
  for n in ${CLIENTS:-1 4}; do
    : >"$T/c" && : >"$T/p"
    for ((r = 0; r < RUNS; r++)); do
      IDKEEPER_PASSWORD=$pw "${IK_INTEROP[@]}" bench-lock "$uri" "/bench/l$n.$r" "$n" "$SECS" 2>"$T/err" |
        awk '{print int($2)}' >>"$T/c" || fail "$s: ik_interop bench-lock failed: $(cat "$T/err")"
      IDKEEPER_PASSWORD=$pw "$naive" "$uri" "$n" "$SECS" lock >"$T/n" || fail "$s: sql_naive lock failed"
      sed -n 's/.*cycles_per_s=\([0-9]*\).*/\1/p' "$T/n" >>"$T/p"
    done
    c=$(median <"$T/c") p=$(median <"$T/p")
    printf '%s lock acquire+release, %d client(s): idkeeper %s/s  %s loop %s/s  ratio %s  (all runs: %s| %s)\n' \
      "$s" "$n" "$c" "$([ "$s" = postgresql ] && echo pg_advisory_lock || echo GET_LOCK)" "$p" \
      "$(awk -v a="$c" -v b="$p" 'BEGIN { printf "%.2f", a / b }')" "$(tr '\n' ' ' <"$T/c")" "$(tr '\n' ' ' <"$T/p")"
  done
done
