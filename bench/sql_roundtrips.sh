#!/usr/bin/env bash
# sql_roundtrips.sh [BUILD_DIR]: round trips (statements) per sequence batch on
# postgresql:// and mysql://, counted by the database itself, so the figure does not
# depend on what else the machine runs (docs/BENCHMARKS.md).
#
# One `idkeeper serve` per database (bench/sql_lib.sh: a PostgreSQL and a MariaDB of
# its own), one sequence tag, tests/tools/hammer with CLIENTS (64) keep-alive
# connections and count=1 for SECS (3) seconds, with every statement logged
# (PostgreSQL: log_statement = all on the database; MariaDB: the general query log).
# A batch is one group-commit transaction, and each writes one commit mark, so
#   batches          = the commit-mark upserts (INSERT INTO idk_commit_mark ...)
#   statements/batch = every statement of the daemon's user in the run / batches
# (the few of slot renewals and hazard checks included). Also prints the IDs per
# batch. The statement log shows each statement of a PostgreSQL pipeline on its own
# line, so the round trips are also counted on the client's side: strace -f of the
# daemon over a second run of the same load, the requests it wrote to the
# database's port (sendto/write/writev/sendmsg on that socket, one per round trip:
# a pipeline goes out in one), over the batches of that run (from
# IDKEEPER_BENCH_CYCLE's line at the daemon's stop; strace slows the daemon, not
# the count). Settings: CLIENTS (64), SECS (3), STORES ("postgresql mysql").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
secs=${SECS:-3}
clients=${CLIENTS:-64}
source "$here/../tests/integration/lib.sh"
source "$here/sql_lib.sh"

sql_start
echo "$(sql_versions) on loopback; $clients clients, count=1, ${secs}s"
for s in ${STORES:-postgresql mysql}; do
  uri=${SQL_URI[$s]} pw=(--password-file "${SQL_PW[$s]}")
  "$IK_BIN" tags add seq --kind sequence --coord "$uri" "${pw[@]}" >/dev/null
  serve_on "$s" --coord "$uri" "${pw[@]}" --quiet || fail "$s: $(tail -n 5 "$T/$s.log")"
  url="http://127.0.0.1:$PORT/v1/sequence/seq?count=1&format=text"
  "$hammer" --url "$url" --connections "$clients" --duration 1 --quiet >/dev/null 2>&1 || true # warm-up
  case $s in
    postgresql)
      log=$T/pg/pg.log
      sql_row "$s" "ALTER DATABASE bench SET log_statement = 'all'" >/dev/null
      # the daemon's connections are open already: reconnect them by a restart
      kill "${SERVER_PID[$s]}" && wait "${SERVER_PID[$s]}" 2>/dev/null || true
      serve_on "$s" --coord "$uri" "${pw[@]}" --quiet || fail "$s: $(tail -n 5 "$T/$s.log")"
      url="http://127.0.0.1:$PORT/v1/sequence/seq?count=1&format=text"
      "$hammer" --url "$url" --connections "$clients" --duration 1 --quiet >/dev/null 2>&1 || true
      from=$(wc -l <"$log")
      "$hammer" --url "$url" --connections "$clients" --duration "$secs" >"$T/h" 2>&1 || fail "hammer: $(cat "$T/h")"
      sql_row "$s" "ALTER DATABASE bench RESET log_statement" >/dev/null
      tail -n +"$((from + 1))" "$log" | grep -E 'LOG:  (statement|execute [^:]*):' |
        sed -E 's/.*LOG:  (statement|execute [^:]*): //' >"$T/stmts" || true
      ;;
    mysql)
      my_sql -e "SET GLOBAL general_log_file = '$T/my.general'; SET GLOBAL log_output = 'FILE'; SET GLOBAL general_log = 1"
      "$hammer" --url "$url" --connections "$clients" --duration "$secs" >"$T/h" 2>&1 || fail "hammer: $(cat "$T/h")"
      my_sql -e "SET GLOBAL general_log = 0"
      # every command the daemon's user sent: Query and Execute lines (a Prepare is
      # a round trip too, when one happens)
      awk '$0 ~ /\t(Query|Execute|Prepare)\t/ || $0 ~ / (Query|Execute|Prepare)\t/' "$T/my.general" |
        grep -v 'general_log' | sed -E 's/.*(Query|Execute|Prepare)\t//' >"$T/stmts" || true
      ;;
  esac
  ids=$(sed -n 's/.* ids_per_s=\([0-9]*\).*/\1/p' "$T/h")
  total=$(wc -l <"$T/stmts")
  batches=$(grep -ci 'INSERT INTO idk_commit_mark' "$T/stmts" || true)
  [ "$batches" -gt 0 ] || fail "$s: no batch seen in the statement log"
  echo "$s: $batches batches, $total statements: $(awk -v t="$total" -v b="$batches" 'BEGIN { printf "%.2f", t / b }') statements per batch; $(awk -v i="$ids" -v s="$secs" -v b="$batches" 'BEGIN { printf "%.1f", i * s / b }') IDs per batch"
  # the statements by kind, most frequent first
  sed -E 's/[0-9]+/N/g; s/ +/ /g' "$T/stmts" | cut -c1-70 | sort | uniq -c | sort -rn | head -n 10 | sed 's/^/   /'
  kill "${SERVER_PID[$s]}" && wait "${SERVER_PID[$s]}" 2>/dev/null || true
  # round trips, counted on the client's side (serial: a batch's statements sent one
  # by one, IDKEEPER_BENCH_CYCLE=serial, the path before the pipeline)
  case $s in postgresql) dbport=$PG_PORT ;; mysql) dbport=$MY_PORT ;; esac
  for mode in pipelined serial; do
  case $mode in serial) export IDKEEPER_BENCH_CYCLE=serial ;; *) export IDKEEPER_BENCH_CYCLE=1 ;; esac
  serve_on "$s" --coord "$uri" "${pw[@]}" --quiet || fail "$s: $(tail -n 5 "$T/$s.log")"
  unset IDKEEPER_BENCH_CYCLE
  url="http://127.0.0.1:$PORT/v1/sequence/seq?count=1&format=text"
  strace -f -qq -yy -e trace=sendto,write,writev,sendmsg -p "${SERVER_PID[$s]}" -o "$T/strace" &
  st=$!
  sleep 1
  "$hammer" --url "$url" --connections "$clients" --duration "$secs" >"$T/h" 2>&1 || fail "hammer: $(cat "$T/h")"
  kill "${SERVER_PID[$s]}" && wait "${SERVER_PID[$s]}" 2>/dev/null || true
  wait "$st" 2>/dev/null || true
  sends=$(grep -cE ":$dbport\]>" "$T/strace" || true)
  batches=$(sed -n 's/.*sql batch cycle ([a-z ]*): \([0-9]*\) advances.*/\1/p' "$T/$s.log")
  [ -n "$batches" ] && [ "$batches" -gt 0 ] || fail "$s: no batch cycle line in the log"
  echo "$s $mode: $batches batches, $sends requests written to the database: $(awk -v t="$sends" -v b="$batches" 'BEGIN { printf "%.2f", t / b }') round trips per batch (client side, under strace)"
  done
done
