#!/usr/bin/env bash
# labels: postgresql sql counters
# timeout: 180
# fixtures: postgres
# The tag connections' pool and the commit marks on postgresql:// (docs/sql.md,
# "Connections" and "Tags"), with idle_session_timeout = 2 s set on this test's
# database only: the idle and marks checks of idle_marks.sh.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/idle_marks.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
P=$PG_SHARED_PORT
db=tidle_$$
# shellcheck disable=SC2034 # idle_marks reads URI
URI=$(pg_new_db "$P" "$db")
sql() { pg_psql "$P" "$db" "$1"; }
idle_on() { sql "ALTER DATABASE $db SET idle_session_timeout = '2s'" >/dev/null; }
idle_off() { sql "ALTER DATABASE $db RESET idle_session_timeout" >/dev/null; }
idle_marks "idle_session_timeout 2 s" "(extract(epoch from clock_timestamp()) * 1000)::bigint"
