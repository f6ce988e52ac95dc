#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 120
# fixtures: postgres
# idkeeper tables that are not permanent on PostgreSQL (docs/hazards.md,
# "PostgreSQL"): CREATE TABLE IF NOT EXISTS keeps a leaf_alloc or idk_slots made
# earlier as UNLOGGED, which a crash empties (counters and slot records start
# again). `idkeeper check` exits 5 with the "table persistence" row refused naming
# them, and `serve` refuses to start (before: check exit 0, serve served); after
# ALTER TABLE ... SET LOGGED, check exits 0.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD

db=tunl_$$
uri=$(pg_new_db "$PG_SHARED_PORT" "$db")
"$IK_BIN" schema --coord "$uri" >"$T/schema.sql" 2>&1 || fail "idkeeper schema: $(cat "$T/schema.sql")"
sed -e 's/CREATE TABLE IF NOT EXISTS leaf_alloc/CREATE UNLOGGED TABLE IF NOT EXISTS leaf_alloc/' \
  -e 's/CREATE TABLE IF NOT EXISTS idk_slots/CREATE UNLOGGED TABLE IF NOT EXISTS idk_slots/' "$T/schema.sql" >"$T/unlogged.sql"
grep -c UNLOGGED "$T/unlogged.sql" | grep -qx 2 || fail "the schema's text changed: $(cat "$T/schema.sql")"
pg_psql "$PG_SHARED_PORT" "$db" "$(cat "$T/unlogged.sql")" >/dev/null
rc=0
"$IK_BIN" check --coord "$uri" >"$T/check.out" 2>&1 || rc=$?
[ "$rc" = 5 ] || fail "check exited $rc on UNLOGGED tables: $(cat "$T/check.out")"
grep -Eq '^table persistence +idk_slots UNLOGGED, leaf_alloc UNLOGGED +refused' "$T/check.out" || fail "check does not refuse them: $(cat "$T/check.out")"
rc=0
timeout 20 "$IK_BIN" serve --http "127.0.0.1:$(free_port)" --coord "$uri" >"$T/serve.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "serve on UNLOGGED tables exited $rc: $(tail -n 3 "$T/serve.log")"
grep -q "table persistence is idk_slots UNLOGGED, leaf_alloc UNLOGGED" "$T/serve.log" || fail "serve's refusal: $(tail -n 3 "$T/serve.log")"
pg_psql "$PG_SHARED_PORT" "$db" "ALTER TABLE leaf_alloc SET LOGGED; ALTER TABLE idk_slots SET LOGGED" >/dev/null
"$IK_BIN" check --coord "$uri" >"$T/check2.out" 2>&1 || fail "check after SET LOGGED: $(cat "$T/check2.out")"
pass "UNLOGGED leaf_alloc and idk_slots: check exit 5 naming both, serve refused; SET LOGGED: exit 0"
