# mysql.sh: a real MariaDB for the tests of mysql:// (bash, sourced after lib.sh).
#
# Debian's mariadb-server, started directly (never the init scripts) with the
# configuration of tests/fixtures/mariadb_srv.sh. A test whose header says
# "# fixtures: mariadb" uses the stage's shared server (IK_FIXTURE_MARIADB) and a
# database of its own on it; any other test gets a server of its own under $T,
# stopped when the test exits, pass or fail. No test passes without its server.
#
#   my_start              the server (shared, or this test's own); sets MY_PORT,
#                         MY_SOCK, and exports IDKEEPER_PASSWORD (the test user's)
#   my_db NAME            creates database NAME_<pid> (fresh); prints its name
#   my_uri NAME           creates a fresh database and prints mysql://ik@127.0.0.1:PORT/DB
#   my_sql [ARGS...]      the mariadb client as root (batch, no column names)
#   my_lock_waiting DB KEY  (a condition) a session of database DB waits in GET_LOCK
#                         for the lock KEY ("lock:/x": idkeeper lock /x waits)
#   my_kill [SIGNAL]      this test's own server: kill (default SIGKILL), wait for it
#   my_restart [ARGS...]  this test's own server: start again on its data, same port
#   MY_PID                this test's own server's pid
# shellcheck source=../fixtures/mariadb_srv.sh
source "$IK_SRC/tests/fixtures/mariadb_srv.sh"
MY_START_TIMEOUT=${MY_START_TIMEOUT:-120}
MY_PORT= MY_SOCK= MY_PID= MY_DIR=

command -v mariadbd >/dev/null || fail "mysql.sh: no mariadbd (apt-get install mariadb-server)"

my_sql() {
  mariadb --no-defaults -S "$MY_SOCK" -uroot --batch --skip-column-names "$@"
}

_my_own() {
  [ -z "${IK_FIXTURE_MARIADB:-}" ] ||
    fail "$1 on the shared MariaDB (this test declares '# fixtures: mariadb'): a test that stops or reconfigures the server needs one of its own; remove the fixture from its header"
}

my_start() {
  export IDKEEPER_PASSWORD=$MDB_PASSWORD
  if [ -n "${IK_FIXTURE_MARIADB:-}" ]; then
    [ -r "$IK_FIXTURE_MARIADB/env" ] || fail "the shared MariaDB fixture did not start ($IK_FIXTURE_MARIADB/env missing)"
    # shellcheck disable=SC1091
    source "$IK_FIXTURE_MARIADB/env"
    MY_PORT=$MDB_SHARED_PORT MY_SOCK=$MDB_SHARED_SOCK
    my_sql -e 'SELECT 1' >/dev/null || fail "the shared MariaDB (port $MY_PORT) does not answer"
    return 0
  fi
  MY_DIR=$T/mariadb
  MY_SOCK=$MY_DIR/sock
  mdb_init "$MY_DIR" || fail "mariadb-install-db failed: $(tail -n 5 "$MY_DIR/install.log")"
  MY_PORT=$(ik_free_port "$T/.ports")
  my_restart "$@"
  mdb_setup "$MY_DIR" || fail "could not create the test user"
}

my_restart() {
  _my_own my_restart
  (mdb_exec "$MY_DIR" "$MY_PORT" "$@") </dev/null >/dev/null 2>&1 &
  MY_PID=$!
  IK_PIDS+=("$MY_PID")
  mdb_wait "$MY_DIR" "$MY_PID" "$MY_START_TIMEOUT" ||
    fail "MariaDB did not serve on 127.0.0.1:$MY_PORT: $(tail -n 5 "$MY_DIR/err.log")"
  log "mariadb: serving on 127.0.0.1:$MY_PORT (pid $MY_PID)"
}

my_kill() {
  _my_own my_kill
  kill "-${1:-KILL}" "$MY_PID" 2>/dev/null || true
  wait "$MY_PID" 2>/dev/null || true
  log "mariadb: server stopped (${1:-KILL})"
}

my_db() {
  local db="$1_$$"
  my_sql -e "DROP DATABASE IF EXISTS \`$db\`; CREATE DATABASE \`$db\`" || fail "could not create database $db"
  echo "$db"
}

my_uri() { echo "mysql://$MDB_USER@127.0.0.1:$MY_PORT/$(my_db "$1")"; }

my_lock_waiting() {
  [ "$(my_sql -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST
      WHERE DB = '$1' AND INFO LIKE 'SELECT GET_LOCK(%''$2''%'")" -ge 1 ] 2>/dev/null
}
