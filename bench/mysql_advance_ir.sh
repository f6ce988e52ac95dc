#!/usr/bin/env bash
# mysql_advance_ir.sh BIN... : MariaDB's instructions per sequence advance (count=1,
# one client: one advance an ID) of each idkeeper binary, counted by callgrind, so
# the figure does not move with what else the machine runs (docs/BENCHMARKS.md).
#
# 1. Each binary serves a sequence tag of its own on a MariaDB of the script's own
#    (tests/integration/mysql.sh), with the general query log on from before it
#    connects. After a few requests, the log gives that binary's advance as the
#    server saw it: on the connection of its last advance, the session's setup
#    (every SET and PREPARE it sent) and the advance's two multi-statement texts.
# 2. The same MariaDB is restarted on its data under valgrind --tool=callgrind, and
#    for each binary the mariadb client replays on one connection the setup, then
#    the advance's two texts N (200) times, each text one query as the daemon sends
#    it; callgrind_control zeroes the counts before and dumps them after. Printed:
#    each binary's instructions per advance and its ratio to the first binary's.
# What it leaves out, on purpose: slot renewals and hazard checks (they run on a
# timer, so under valgrind they would count valgrind's slowness), the InnoDB log
# writes done by threads of their own (the same per commit for every binary), and
# the daemon's own CPU (bench/sql_ab.sh measures the CPU of both, in wall-clock
# slices). Settings: N (200), REPS (1: the replays of each binary, interleaved).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 1 ] || { echo "usage: mysql_advance_ir.sh BIN..." >&2; exit 2; }
bins=()
for b in "$@"; do bins+=("$(realpath "$b")"); done
export IK_BIN=${bins[0]}
n=${N:-200}
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/mysql.sh"
command -v valgrind >/dev/null || fail "no valgrind (apt-get install valgrind)"
my_start
unset IDKEEPER_PASSWORD
printf '%s\n' "$MDB_PASSWORD" >"$T/my.pw"

# ---- 1. each binary's advance, from the general log ------------------------------------
for i in "${!bins[@]}"; do
  db=ir$i uri=mysql://$MDB_USER@127.0.0.1:$MY_PORT/ir$i log=$T/general.$i.log
  my_sql -e "CREATE DATABASE $db; SET GLOBAL general_log_file = '$log', general_log = 1"
  "${bins[$i]}" tags add s --kind sequence --coord "$uri" --password-file "$T/my.pw" >/dev/null
  IK_BIN=${bins[$i]} serve_on "b$i" --coord "$uri" --password-file "$T/my.pw" --quiet ||
    fail "${bins[$i]} did not serve: $(tail -n 5 "$T/b$i.log")"
  for _ in 1 2 3 4 5 6; do
    [ "$(ik_http "http://127.0.0.1:$PORT/v1/sequence/s?count=1&format=text" "$T/body" 20)" = 200 ] ||
      fail "${bins[$i]}: no sequence ID: $(cat "$T/body")"
  done
  my_sql -e "SET GLOBAL general_log = 0"
  kill "${SERVER_PID[b$i]}" 2>/dev/null || true
  wait "${SERVER_PID[b$i]}" 2>/dev/null || true
  # the log's lines: [time] TABs id command TAB argument; ours are one line each
  awk -v setup="$T/setup.$i.sql" -v rt1="$T/rt1.$i.sql" -v rt2="$T/rt2.$i.sql" '
    {
      line = $0
      if (!sub(/^[^\t]*\t+/, "", line)) next
      t = index(line, "\t")
      if (!t) next
      split(substr(line, 1, t - 1), w, " ")
      id = w[1]; cmd = w[2]; arg = substr(line, t + 1)
    }
    cmd == "Query" && arg ~ /^(SET |PREPARE )/ { pre[id] = pre[id] arg ";\n" }
    cmd == "Query" && arg ~ /^START TRANSACTION/ { last = id; a[id] = arg; want[id] = 1; next }
    cmd == "Query" && want[id] { b[id] = arg; want[id] = 0 }
    END {
      if (last == "" || b[last] == "") exit 1
      printf "%s", pre[last] > setup; print a[last] > rt1; print b[last] > rt2
    }' "$T/general.$i.log" || fail "${bins[$i]}: no advance in the general log"
done

# ---- 2. replayed under callgrind -----------------------------------------------------
my_sql -e "SHUTDOWN" || true
wait "$MY_PID" 2>/dev/null || true
# shellcheck disable=SC2154 # _mdb_opts: tests/fixtures/mariadb_srv.sh
(exec valgrind --tool=callgrind --callgrind-out-file="$T/cg.%p.out" mariadbd "${_mdb_opts[@]}" \
  --datadir="$MY_DIR/data" --tmpdir="$MY_DIR/tmp" --user="$(id -un)" --bind-address=127.0.0.1 \
  --port="$MY_PORT" --socket="$MY_DIR/sock" --pid-file="$MY_DIR/mariadbd.pid" \
  --log-error="$MY_DIR/err.log" --skip-name-resolve --performance-schema=OFF --skip-log-bin \
  --max-connections=1000 --innodb-flush-log-at-trx-commit=1 --innodb-use-native-aio=0 \
  --innodb-buffer-pool-size-max=64M) </dev/null >"$T/valgrind.log" 2>&1 &
MY_PID=$!
IK_PIDS+=("$MY_PID")
mdb_wait "$MY_DIR" "$MY_PID" 600 || fail "mariadbd did not start under valgrind: $(tail -n 5 "$MY_DIR/err.log")"
echo "MariaDB $(my_sql -e 'SELECT VERSION()' | cut -d- -f1) under callgrind, $n advances a replay, load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A ir
dumps=0 # callgrind numbers its dumps from 1
for rep in $(seq 1 "${REPS:-1}"); do
  for i in "${!bins[@]}"; do
    f=$T/replay.$i.sql
    {
      cat "$T/setup.$i.sql"
      echo "DELIMITER //"
      for _ in $(seq 1 "$n"); do
        echo "$(cat "$T/rt1.$i.sql")//"
        echo "$(cat "$T/rt2.$i.sql")//"
      done
    } >"$f"
    callgrind_control -z "$MY_PID" >/dev/null 2>&1
    my_sql "ir$i" <"$f" >/dev/null || fail "${bins[$i]}: the replay failed"
    callgrind_control -d "$MY_PID" >/dev/null 2>&1
    dumps=$((dumps + 1))
    out=$T/cg.$MY_PID.out.$dumps
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$out")
    ir[$i]=$((total / n))
    printf 'replay %d  %-48s %9d instructions an advance  (%s of the first)\n' "$rep" "${bins[$i]}" "${ir[$i]}" \
      "$(awk -v a="${ir[0]}" -v b="${ir[$i]}" 'BEGIN { printf "%.3f", b / a }')"
  done
done
for i in "${!bins[@]}"; do
  echo "advance of ${bins[$i]}: $(tr '\n' ' ' <"$T/setup.$i.sql" | cut -c1-60)... | $(cut -c1-40 "$T/rt1.$i.sql")... | $(cat "$T/rt2.$i.sql")"
done
