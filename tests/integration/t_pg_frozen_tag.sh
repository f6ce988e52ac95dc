#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 180
# fixtures: postgres
# One frozen server does not stall a tag for the fleet, on PostgreSQL (the session's
# idle_in_transaction_session_timeout and lock_timeout; tests/integration/
# sql_frozen.sh says how).
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
URI=$(pg_new_db "$PG_SHARED_PORT" tfrozen_$$)
# trx_open: a session of URI's database is inside a transaction (sql_frozen.sh)
trx_open() {
  [ "$(pg_psql "$PG_SHARED_PORT" "${URI##*/}" "SELECT count(*) FROM pg_stat_activity
      WHERE datname = current_database() AND state = 'idle in transaction'")" -ge 1 ] 2>/dev/null
}
source "$(dirname "$0")/sql_frozen.sh"
