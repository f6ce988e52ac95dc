#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 180
# fixtures: postgres
# Durability refusal on postgresql:// (docs/guarantees.md promise 23, docs/sql.md): a database configured to
# lose acknowledged commits is refused at start, with the setting named, unless
# --allow-unsafe-store is given:
#   synchronous_commit = off   (per database, on the shared server: ALTER DATABASE)
#   fsync = off                (server-wide: a server of this test's own)
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD

check() { # check URI SETTING: refused naming SETTING; accepted with --allow-unsafe-store
  local uri=$1 setting=$2 hp rc=0
  expect_fail 1 "$setting is off" "$IK_BIN" tags add t1 --kind sequence --coord "$uri"
  grep -q 'allow-unsafe-store' "$T/err" || fail "the refusal does not say how to override: $(cat "$T/err")"
  hp=$(free_port)
  "$IK_BIN" serve --coord "$uri" --http 127.0.0.1:"$hp" --identity a >"$T/refused.log" 2>&1 || rc=$?
  [ $rc -ne 0 ] || fail "serve started on $setting = off"
  grep -q "$setting is off" "$T/refused.log" || fail "serve's refusal: $(cat "$T/refused.log")"
  "$IK_BIN" tags add t1 --kind sequence --coord "$uri" --allow-unsafe-store >/dev/null
  start_server "a$setting" "$hp" --coord "$uri" --allow-unsafe-store
  wait_ready "$hp" || fail "serve --allow-unsafe-store not ready"
  [ "$(curl -fsS "http://127.0.0.1:$hp/v1/sequence/t1?count=2&format=text" | wc -l)" = 2 ] || fail "no sequence IDs"
  grep -q "$setting is off" "$T/a$setting.log" || fail "the accepted risk is not logged"
  kill -TERM "${SERVER_PID[a$setting]}"
  wait "${SERVER_PID[a$setting]}" || true
  pass "$setting = off: refused naming it ($(cat "$T/err")); served with --allow-unsafe-store"
}

db=tdur_$$
uri=$(pg_new_db "$PG_SHARED_PORT" "$db")
pg_psql "$PG_SHARED_PORT" postgres "ALTER DATABASE $db SET synchronous_commit = off"
check "$uri" synchronous_commit

own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_init "$T/pg"
echo "fsync = off" >>"$T/pg/pgdata/postgresql.conf"
PG_PORT=$(free_port)
pg_own_up "$T/pg" "$PG_PORT" || fail "own server did not start"
check "$(pg_new_db "$PG_PORT" d)" fsync
