#!/usr/bin/env bash
# labels: sql recipes
# timeout: 120
# variants: postgresql mysql
# fixtures.postgresql: postgres
# fixtures.mysql: mariadb
# A role's own statement limit (PostgreSQL ALTER ROLE ... SET statement_timeout,
# MariaDB's per-user MAX_STATEMENT_TIME) must not end a lock wait: a waiter without
# --timeout waits in the database's queue for as long as the holder holds
# (docs/sql.md, "Session settings": a lock's session sets the limit to 0 and reads
# it back). With the role's 2 s limit, the waiter used to exit 1 "store
# unreachable" after 2 s while the holder still held.
source "$(dirname "$0")/lib.sh"
U=stmt_$$
case $IK_STORE in
  postgresql)
    source "$IK_FIXTURE_POSTGRES/env"
    IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
    pg_psql "$PG_SHARED_PORT" postgres "CREATE ROLE $U LOGIN PASSWORD 'stmt-pw' IN ROLE pg_read_all_settings" >/dev/null
    pg_psql "$PG_SHARED_PORT" postgres "ALTER ROLE $U SET statement_timeout = '2s'" >/dev/null
    pg_psql "$PG_SHARED_PORT" postgres "CREATE DATABASE $U OWNER $U" >/dev/null
    URI="postgresql://$U@127.0.0.1:$PG_SHARED_PORT/$U"
    ;;
  mysql)
    source "$(dirname "$0")/mysql.sh"
    my_start
    db=$(my_db st)
    my_sql -e "CREATE USER '$U'@'127.0.0.1' IDENTIFIED BY 'stmt-pw' WITH MAX_STATEMENT_TIME 2; GRANT ALL ON $db.* TO '$U'@'127.0.0.1'"
    URI="mysql://$U@127.0.0.1:$MY_PORT/$db"
    ;;
  *) fail "IK_STORE=$IK_STORE: want postgresql mysql" ;;
esac
export IDKEEPER_PASSWORD=stmt-pw

"$IK_BIN" lock --coord "$URI" /x -- sh -c 'touch "$0/a.held"; while [ ! -e "$0/a.done" ]; do sleep 0.1; done' "$T" \
  >"$T/a.out" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 30 test -e "$T/a.held" || fail "A did not get /x: $(cat "$T/a.err")"
"$IK_BIN" lock --coord "$URI" /x -- touch "$T/b.held" >"$T/b.out" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
sleep 5 # let time pass: more than twice the role's limit
if ! alive $b; then
  rc=0
  wait $b || rc=$?
  fail "the waiter exited $rc after the role's 2 s statement limit, A still holding: $(cat "$T/b.err")"
fi
[ -e "$T/b.held" ] && fail "B ran CMD while A held /x"
touch "$T/a.done"
wait $a || fail "A exited $?: $(cat "$T/a.err")"
wait_until 20 test -e "$T/b.held" || fail "B did not get /x after A released it: $(cat "$T/b.err")"
wait $b || fail "B exited $?: $(cat "$T/b.err")"
pass "$IK_STORE: a waiter outlived the role's 2 s statement limit and got /x when A released it"
