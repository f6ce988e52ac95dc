#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 180
# fixtures: postgres
# Proof with every write on PostgreSQL (docs/hazards.md, "PostgreSQL"): ALTER SYSTEM
# SET synchronous_commit = off and a reload under a running server; the next write
# carries it (tests/integration/sql_proof.sh says how). A server of its own (a
# server-wide setting); the shared fixture gives the test user and password.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_init "$T/pg"
pg_own_up_free "$T/pg" 2>"$T/pg.err" || fail "own server did not start: $(cat "$T/pg.err")"
URI=$(pg_new_db "$PG_PORT" proof)
UNSAFE_NAME="synchronous_commit is off"
# sync_shows VALUE: a new session of the database shows synchronous_commit VALUE
sync_shows() { [ "$(pg_psql "$PG_PORT" "${URI##*/}" "SHOW synchronous_commit")" = "$1" ]; }
unsafe_set() {
  pg_psql "$PG_PORT" postgres "ALTER SYSTEM SET synchronous_commit = off" >/dev/null
  pg_psql "$PG_PORT" postgres "SELECT pg_reload_conf()" >/dev/null
  wait_until 5 sync_shows off || fail "synchronous_commit did not turn off after the reload"
}
unsafe_unset() {
  pg_psql "$PG_PORT" postgres "ALTER SYSTEM RESET synchronous_commit" >/dev/null
  pg_psql "$PG_PORT" postgres "SELECT pg_reload_conf()" >/dev/null
  wait_until 5 sync_shows on || fail "synchronous_commit did not turn on after the reload"
}
source "$(dirname "$0")/sql_proof.sh"
