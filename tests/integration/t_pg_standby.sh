#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 120
# A PostgreSQL standby (in recovery: standby.signal, no primary) answers reads and
# refuses every write. `idkeeper check` exits 5 with the row pg_is_in_recovery()
# refused, saying why writes fail there (docs/hazards.md, "PostgreSQL"), and `serve`
# refuses to start naming it; before that row, check exited 0 on a standby. A server
# of its own: it is restarted as a standby.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_start "$T/pg" || fail "PostgreSQL did not start"
URI=$(pg_new_db "$PG_PORT" sb)
"$IK_BIN" tags add t --kind sequence --coord "$URI" >/dev/null 2>"$T/add.err" || fail "tags add: $(cat "$T/add.err")"
pg_own_stop "$T/pg"
touch "$T/pg/pgdata/standby.signal"
[ "$(id -u)" = 0 ] && chown postgres: "$T/pg/pgdata/standby.signal"
pg_own_up "$T/pg" "$PG_PORT" || fail "PostgreSQL did not start again as a standby"
[ "$(pg_psql "$PG_PORT" sb "SELECT pg_is_in_recovery()")" = t ] || fail "the server is not in recovery"
rc=0
"$IK_BIN" check --coord "$URI" >"$T/check.out" 2>&1 || rc=$?
[ $rc -eq 5 ] || fail "idkeeper check on a standby exited $rc, not 5: $(cat "$T/check.out")"
grep 'pg_is_in_recovery' "$T/check.out" | grep -q refused ||
  fail "idkeeper check does not refuse pg_is_in_recovery(): $(cat "$T/check.out")"
pass "check on a standby exits 5: $(grep 'pg_is_in_recovery' "$T/check.out")"
rc=0
"$IK_BIN" serve --coord "$URI" --http 127.0.0.1:$(free_port) >"$T/serve.out" 2>&1 || rc=$?
((rc != 0)) || fail "serve started on a standby"
grep -q 'pg_is_in_recovery' "$T/serve.out" || fail "serve (exit $rc) does not name the standby: $(tail -n 3 "$T/serve.out")"
pass "serve refuses a standby (exit $rc): $(tail -n 1 "$T/serve.out")"
