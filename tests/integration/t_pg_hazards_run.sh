#!/usr/bin/env bash
# labels: postgresql sql release
# timeout: 240
# PostgreSQL turned unsafe under a running server (ALTER SYSTEM SET
# synchronous_commit = off and pg_reload_conf()), and its clock stepped forward
# under it (libfaketime in the postmaster and so in every backend): `idkeeper check`
# exits 5 naming the setting, serving stops and resumes, a clock step puts the lease
# in doubt, no ID twice (tests/integration/sql_hazards_run.sh says how). A server of
# its own (run as the user postgres, tests/fixtures/postgres.sh): it changes the
# server's settings and runs under libfaketime.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
LIBFAKETIME=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
  [ -f "$f" ] && { LIBFAKETIME=$f; break; }
done
[ -n "$LIBFAKETIME" ] || fail "libfaketime.so.1 not found (apt-get install libfaketime)"
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_init "$T/pg" || fail "initdb failed"
DBCLOCK=$T/pg/dbclock # in DIR, which the user postgres can reach
echo "+0" >"$DBCLOCK"
chmod 644 "$DBCLOCK"
PG_PORT=$(free_port)
# the postmaster's clock (clock_timestamp() in every backend) is libfaketime's, offset
# by what $DBCLOCK says; pg_ctl passes its environment on
LD_PRELOAD=$LIBFAKETIME FAKETIME_TIMESTAMP_FILE=$DBCLOCK FAKETIME_NO_CACHE=1 pg_own_up "$T/pg" "$PG_PORT" ||
  fail "own server did not start: $(tail -n 5 "$T/pg/pg.log")"
URI=$(pg_new_db "$PG_PORT" hz)
# sync_set VALUE|DEFAULT: ALTER SYSTEM (which cannot share psql -c's transaction with
# the reload), then until a new session sees it (the postmaster rereads its files
# after the signal, asynchronously)
sync_set() {
  local want=${1/DEFAULT/on}
  pg_psql "$PG_PORT" postgres "ALTER SYSTEM SET synchronous_commit = $1" >/dev/null
  pg_psql "$PG_PORT" postgres "SELECT pg_reload_conf()" >/dev/null
  wait_until 10 sync_is "$want" || fail "synchronous_commit did not become $want"
}
sync_is() { [ "$(pg_psql "$PG_PORT" postgres "SHOW synchronous_commit")" = "$1" ]; }
unsafe_set() { sync_set off; }
unsafe_unset() { sync_set DEFAULT; }
UNSAFE_SET=unsafe_set UNSAFE_UNSET=unsafe_unset UNSAFE_NAME="synchronous_commit is off"
source "$(dirname "$0")/sql_hazards_run.sh"
