#!/usr/bin/env bash
# sql_sequence.sh [BUILD_DIR]: sequence IDs per second on postgresql:// and mysql://
# (issue 12 benchmark), next to the naive gap-free peer on the same database in the
# same run, at 1, 8 and 64 clients.
#
#   idkeeper: one `idkeeper serve` per database (bench/sql_lib.sh: a PostgreSQL and
#             a MariaDB of its own, durable), one sequence tag, tests/tools/hammer
#             with CLIENTS keep-alive connections, count=1 per request: the daemon
#             groups the requests that wait into one Leaf transaction (group commit).
#   peer:     bench/sql_naive (C, libpq and MariaDB Connector/C) with CLIENTS
#             connections, each ID one autocommit UPDATE of the row with the new
#             value read back: one durable commit per ID.
#
#   idkeeper over RESP: the same daemon's Redis-protocol port (`serve --resp`), the
#             same tag, `redis-benchmark -c CLIENTS -P RESP_P INCR seq`: at RESP_P=1
#             (the default) one ID a request as over HTTP, without HTTP's parsing
#             (docs/resp.md); RESP_P=16 lets each client keep 16 INCRs in flight,
#             which one HTTP count=1 request a connection cannot.
#
#   the front door's ceiling: the same daemon, the same hammer and connections,
#             count=1, on /v1/snowflake (no store round trip): the most HTTP count=1
#             requests reach on this machine, whatever the store. ceiling_x is it
#             over the naive peer: the highest ratio the sequence could show here.
#
#   the batch cycle: the daemon runs with IDKEEPER_BENCH_CYCLE (docs/sql.md, "Test
#             hooks") and logs at its stop the mean SQL batch (its statements' times,
#             IDs per batch) and the committer's (the time requests wait queued
#             before a batch takes them, the store's write, the answers' hand-on):
#             printed after each store's table rows.
#
# Prints IDs/s and the median and p99 latency of each, and the ratio. Settings:
# SECONDS_EACH (5), CLIENTS ("1 8 64"), STORES ("postgresql mysql"), RESP_N (100000
# requests a RESP run), RESP_P (1: redis-benchmark's -P), MODES ("pipelined"; "pipelined serial" also runs each store
# with a batch's statements sent one by one, the path of a driver without a
# pipeline, in the same run).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
naive=$build/bench/sql_naive
secs=${SECONDS_EACH:-5}
source "$here/../tests/integration/lib.sh"
source "$here/sql_lib.sh"
[ -x "$naive" ] || fail "build $naive first (make build)"

sql_start
echo "$(sql_versions) on loopback, durable, data on $(df -P "$T" | awk 'NR == 2 {print $1}'); ${secs}s each, count=1 per request; RESP at -P ${RESP_P:-1}"
printf '%-11s %-9s %-8s %12s %14s %12s %14s %8s %12s %8s %12s %9s\n' store mode clients idkeeper_ids_s "p50/p99_ms" naive_ids_s "p50/p99_ms" ratio resp_ids_s ratio front_door_s ceiling_x
for s in ${STORES:-postgresql mysql}; do
  uri=${SQL_URI[$s]} pw=(--password-file "${SQL_PW[$s]}")
  "$IK_BIN" tags add seq --kind sequence --coord "$uri" "${pw[@]}" >/dev/null
  sql_row "$s" "INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES ('naive', 1, 1)" >/dev/null
  for mode in ${MODES:-pipelined}; do
    rport=$(free_port)
    case $mode in serial) export IDKEEPER_BENCH_CYCLE=serial ;; *) export IDKEEPER_BENCH_CYCLE=1 ;; esac
    serve_on "$s" --coord "$uri" "${pw[@]}" --resp "127.0.0.1:$rport" --quiet || fail "$s: $(tail -n 5 "$T/$s.log")"
    unset IDKEEPER_BENCH_CYCLE
    port=$PORT
    for c in ${CLIENTS:-1 8 64}; do
      url="http://127.0.0.1:$port/v1/sequence/seq?count=1&format=text"
      "$hammer" --url "$url" --connections "$c" --duration 1 --quiet >/dev/null 2>&1 || true # warm-up
      db0=$(sql_cpu_ms "$s") ik0=$(pid_cpu_ms "${SERVER_PID[$s]}")
      /usr/bin/time -f 'cpu_ms=%e %U %S' -o "$T/ht" "$hammer" --url "$url" --connections "$c" --duration "$secs" >"$T/h" 2>&1 || fail "hammer: $(cat "$T/h")"
      db1=$(sql_cpu_ms "$s") ik1=$(pid_cpu_ms "${SERVER_PID[$s]}")
      hm=$(awk '/cpu_ms=/ { printf "%d", ($2 + $3) * 1000 }' "$T/ht")
      ik=$(sed -n 's/.* ids_per_s=\([0-9]*\).*/\1/p' "$T/h")
      iklat=$(sed -n 's/.* p50_ms=\([^ ]*\).* p99_ms=\([^ ]*\).*/\1\/\2/p' "$T/h")
      errors=$(sed -n 's/.* errors=\([^ ]*\).*/\1/p' "$T/h")
      [ "$errors" = 0 ] || fail "$s, $c clients: $errors errors ($(cat "$T/h"))"
      IDKEEPER_PASSWORD=$(cat "${SQL_PW[$s]}") "$naive" "$uri" "$c" "$secs" >"$T/n" || fail "sql_naive: $(cat "$T/n")"
      nv=$(sed -n 's/.*ids_per_s=\([0-9]*\).*/\1/p' "$T/n")
      nvlat=$(sed -n 's/.* p50_ms=\([^ ]*\) p99_ms=\([^ ]*\).*/\1\/\2/p' "$T/n")
      redis-benchmark -p "$rport" -c "$c" -n 10000 -q INCR seq >/dev/null 2>&1 || true # warm-up
      redis-benchmark -p "$rport" -c "$c" -P "${RESP_P:-1}" -n "${RESP_N:-100000}" -q INCR seq >"$T/r" 2>&1 || fail "redis-benchmark: $(cat "$T/r")"
      ! grep -qi error "$T/r" || fail "redis-benchmark: $(cat "$T/r")"
      rv=$(tr '\r' '\n' <"$T/r" | sed -n 's/^INCR seq: \([0-9.]*\) requests per second.*/\1/p' | tail -n 1 | cut -d. -f1)
      [ -n "$rv" ] || fail "no rate from redis-benchmark: $(cat "$T/r")"
      # the front door's ceiling: the same requests without a store round trip
      read -r fu0 fs0 < <(pid_cpu_split "${SERVER_PID[$s]}")
      /usr/bin/time -f 'cpu_ms=%e %U %S' -o "$T/ft" "$hammer" --url "http://127.0.0.1:$port/v1/snowflake?count=1&format=text" --connections "$c" --duration "$secs" >"$T/f" 2>&1 || fail "hammer: $(cat "$T/f")"
      read -r fu1 fs1 < <(pid_cpu_split "${SERVER_PID[$s]}")
      fd=$(sed -n 's/.* ids_per_s=\([0-9]*\).*/\1/p' "$T/f")
      printf '%-11s %-9s %-8s %12s %14s %12s %14s %8s %12s %8s %12s %9s\n' "$s" "$mode" "$c" "$ik" "$iklat" "$nv" "$nvlat" \
        "$(awk -v a="$ik" -v b="$nv" 'BEGIN { printf "%.1fx", a / b }')" "$rv" \
        "$(awk -v a="$rv" -v b="$nv" 'BEGIN { printf "%.1fx", a / b }')" "$fd" \
        "$(awk -v a="$fd" -v b="$nv" 'BEGIN { printf "%.1fx", a / b }')"
      # CPU for 1,000 sequence IDs, over the idkeeper run: the database, idkeeper, hammer
      awk -v d=$((db1 - db0)) -v k=$((ik1 - ik0)) -v h="$hm" -v i="$ik" -v t="$secs" 'BEGIN {
        n = i * t / 1000; printf "   cpu ms per 1,000 IDs: database %.1f, idkeeper %.1f, hammer %.1f (of %d ms on 2 cores)\n", d / n, k / n, h / n, 2000 / (i / 1000) }'
      # the front door's run: CPU a request, user and kernel, idkeeper and hammer (the
      # kernel's part is the loopback TCP of one read and one write a request)
      awk -v ku=$((fu1 - fu0)) -v ks=$((fs1 - fs0)) -v f="$fd" -v t="$secs" '/cpu_ms=/ {
        n = f * t / 1000; printf "   front door, cpu us a request: idkeeper user %.1f kernel %.1f, hammer user %.1f kernel %.1f (of %.1f us on 2 cores)\n", ku / n, ks / n, $2 * 1000 / n, $3 * 1000 / n, 2e6 / f }' "$T/ft"
    done
    kill "${SERVER_PID[$s]}" && wait "${SERVER_PID[$s]}" 2>/dev/null || true
    # the batch cycle over the whole run of this server (every client count)
    grep -E 'sql batch cycle|sequence batches:' "$T/$s.log" | sed -E 's/^\[[^]]*\] *//; s/^/   /' || true
  done
done
