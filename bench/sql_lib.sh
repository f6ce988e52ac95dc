# sql_lib.sh: a PostgreSQL and a MariaDB of the benchmark's own (bash, sourced by the
# SQL benchmarks after tests/integration/lib.sh; both stopped when the script exits).
# The tests' own configurations (tests/fixtures/postgres.sh, mariadb_srv.sh): on
# loopback, data under $T, durable (fsync and synchronous_commit on;
# innodb_flush_log_at_trx_commit=1), as idkeeper requires.
#
#   sql_start           starts both; sets SQL_URI[postgresql] and SQL_URI[mysql] (a
#                       fresh database "bench" on each) and SQL_PW[...] (the
#                       --password-file argument for each)
#   sql_row STORE SQL   runs SQL on STORE's bench database
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
source "$IK_SRC/tests/integration/mysql.sh"
declare -A SQL_URI SQL_PW

_sql_pg_stop() { pg_own_stop "$T/pg"; }

sql_start() {
  IK_CLEANUPS+=(_sql_pg_stop)
  pg_own_start "$T/pg" || fail "PostgreSQL did not start"
  SQL_URI[postgresql]=$(pg_new_db "$PG_PORT" bench)
  printf '%s\n' "$PG_TEST_PASSWORD" >"$T/pg.pw"
  SQL_PW[postgresql]=$T/pg.pw
  my_start
  unset IDKEEPER_PASSWORD # each store gets its own file
  my_sql -e 'CREATE DATABASE bench' || fail "could not create the MariaDB database"
  SQL_URI[mysql]=mysql://$MDB_USER@127.0.0.1:$MY_PORT/bench
  printf '%s\n' "$MDB_PASSWORD" >"$T/my.pw"
  SQL_PW[mysql]=$T/my.pw
}

sql_row() {
  case $1 in
    postgresql) pg_psql "$PG_PORT" bench "$2" ;;
    mysql) my_sql bench -e "$2" ;;
  esac
}

# sql_versions: "PostgreSQL 15.x and MariaDB 10.11.x"
sql_versions() {
  echo "PostgreSQL $(pg_psql "$PG_PORT" bench 'SHOW server_version' | cut -d' ' -f1) and MariaDB $(my_sql -e 'SELECT VERSION()' | cut -d- -f1)"
}

# sql_cpu_ms STORE: the CPU time (user + system, ms) the store's server has used so
# far: PostgreSQL's postmaster and its backends now alive, MariaDB's one process.
# Taken before and after a run, it is the database's CPU for that run, a figure
# that moves less with the machine's other work than a rate does.
sql_cpu_ms() {
  local root p t=0
  case $1 in
    postgresql) root=$(cat "$T/pg/pid") ;;
    mysql) root=$MY_PID ;;
  esac
  for p in "$root" $(pgrep -P "$root"); do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo $((t * 1000 / $(getconf CLK_TCK)))
}

# pid_cpu_ms and pid_cpu_split, for one process
# shellcheck source=proc.sh
source "$(dirname "${BASH_SOURCE[0]}")/proc.sh"

