#!/usr/bin/env bash
# labels: postgresql sql release
# timeout: 240
# Evidence read at the commit point on PostgreSQL (docs/hazards.md, "Proof with every
# write"): ALTER SYSTEM SET synchronous_commit = off and a reload while a sequence
# advance sits between its two round trips, then kill -9 of PostgreSQL right after the
# request is answered (tests/integration/sql_commit_point.sh says how). PostgreSQL
# applies a reload when it reads its next message, which is the COMMIT: before, the
# proof read in the first round trip said "on", the COMMIT ran asynchronously, the
# request was answered with IDs the crash took back, and they were answered again
# after the restart. A server of its own, whose WAL writer flushes asynchronous
# commits only every 10 s (wal_writer_delay), so that the crash finds the COMMIT
# unflushed.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_init "$T/pg" || fail "initdb failed"
echo "wal_writer_delay = 10s" >>"$T/pg/pgdata/postgresql.conf"
pg_own_up_free "$T/pg" 2>"$T/pg.err" || fail "PostgreSQL did not start: $(cat "$T/pg.err")"
URI=$(pg_new_db "$PG_PORT" commitpoint)
UNSAFE_NAME="synchronous_commit is off"
sync_shows() { [ "$(pg_psql "$PG_PORT" commitpoint "SHOW synchronous_commit")" = "$1" ]; }
unsafe_set() {
  pg_psql "$PG_PORT" postgres "ALTER SYSTEM SET synchronous_commit = off" >/dev/null
  pg_psql "$PG_PORT" postgres "SELECT pg_reload_conf()" >/dev/null
  wait_until 5 sync_shows off || fail "synchronous_commit did not turn off after the reload"
}
store_crash() { pg_own_kill "$T/pg"; }
store_restart() {
  pg_own_up "$T/pg" "$PG_PORT" 2>"$T/pg.err" || fail "PostgreSQL did not start again: $(cat "$T/pg.err")"
  pg_psql "$PG_PORT" postgres "ALTER SYSTEM RESET synchronous_commit" >/dev/null
  pg_psql "$PG_PORT" postgres "SELECT pg_reload_conf()" >/dev/null
  wait_until 5 sync_shows on || fail "synchronous_commit did not turn on after the reload"
}
max_id() { pg_psql "$PG_PORT" commitpoint "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'q'"; }
lock_waiters() { pg_psql "$PG_PORT" commitpoint "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"; }
source "$(dirname "$0")/sql_commit_point.sh"
