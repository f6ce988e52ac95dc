#!/usr/bin/env bash
# labels: postgresql sql recipes
# timeout: 120
# fixtures: postgres
# Locks on postgresql:// (docs/guarantees.md promises 19-21, docs/recipes.md), on advisory locks, beyond the
# conformance group locks.postgresql (whose counter case is the exclusion stress:
# 8 processes of locked increments, fences strictly increasing):
#   terminate pg_terminate_backend of a holder's session: its CMD gets SIGTERM and
#             `idkeeper lock` exits 125 (lost), at once;
#   interop   a client that holds pg_advisory_lock(hashtextextended('lock:/x', 0))
#             (docs/recipes.md) excludes `idkeeper lock /x`, and the reverse;
#   spare     a released lock keeps its connection for its next acquire
#             (docs/recipes.md): after a resign that connection holds nothing (the
#             other candidate leads), and once the server has ended it, the next
#             campaign opens a new one and leads.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
P=$PG_SHARED_PORT
db=tlocks_$$
# pg_locks lists the whole shared server's locks: each condition on it names this
# test's database, or it counts (or terminates) the locks of tests running beside it
HERE="database = (SELECT oid FROM pg_database WHERE datname = current_database())"
URI=$(pg_new_db "$P" "$db")

# terminate: the holder's session is ended by the server
"$IK_BIN" lock --coord "$URI" /held -- sh -c 'trap "echo term >\"$0/held.term\"; exit 0" TERM; echo $$ >"$0/held.pid"; while :; do sleep 0.1; done' "$T" \
  2>"$T/held.err" &
h=$!
IK_PIDS+=($h)
wait_until 10 test -s "$T/held.pid" || fail "the holder did not get /held"
n=$(pg_psql "$P" "$db" "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE $HERE AND locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('lock:/held', 0)")
[ "$n" = 1 ] || fail "terminated $n sessions holding lock:/held"
mono_ms t0
rc=0
wait $h || rc=$?
took=$(($(mono_ms) - t0))
[ $rc -eq 125 ] || fail "idkeeper lock exited $rc after its session was terminated, not 125: $(cat "$T/held.err")"
[ -e "$T/held.term" ] || fail "CMD did not get SIGTERM"
((took < 5000)) || fail "CMD stopped only $took ms after the termination"
pass "terminate: CMD stopped $took ms after pg_terminate_backend: $(cat "$T/held.err")"

# interop: a plain SQL client on the documented key
PGOPTIONS='-c client_min_messages=warning' PGPASSWORD=$PG_PASSWORD "$PG_BIN/psql" -h 127.0.0.1 -p "$P" -U "$PG_USER" -d "$db" -Atq \
  -c "SELECT pg_advisory_lock(hashtextextended('lock:/x', 0))" -c "SELECT pg_sleep(120)" >/dev/null 2>&1 &
sqlc=$!
IK_PIDS+=($sqlc)
# The SQL client holds the lock until its session is ended (the server frees the lock):
# a fixed hold of 4 s raced with a loaded machine's slow start of the checks.
advisory_held() { pg_psql "$P" "$db" "SELECT count(*) FROM pg_locks WHERE $HERE AND locktype = 'advisory' AND granted"; }
advisory_is() { [ "$(advisory_held)" = "$1" ]; }
wait_until 30 advisory_is 1 || fail "the SQL client did not take lock:/x within 30 s"
expect_fail 124 "timed out" "$IK_BIN" lock --coord "$URI" --timeout 1000 /x -- true
# (a killed psql leaves its backend asleep, the lock held: the server ends the session)
pg_psql "$P" "$db" "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE $HERE AND locktype = 'advisory' AND granted" >/dev/null
wait $sqlc || true
wait_until 30 advisory_is 0 || fail "lock:/x still held 30 s after the SQL client's session was ended"
"$IK_BIN" lock --coord "$URI" /x -- sh -c "[ \"\$(PGPASSWORD=$PG_PASSWORD $PG_BIN/psql -h 127.0.0.1 -p $P -U $PG_USER -d $db -Atqc \"SELECT pg_try_advisory_lock(hashtextextended('lock:/x', 0))\")\" = f ]" ||
  fail "a SQL client took lock:/x while idkeeper held it"
pass "interop: pg_advisory_lock(hashtextextended('lock:/x', 0)) and idkeeper lock /x exclude each other"

# spare: a lock's kept connection (tests/integration/sql_spare.sh)
source "$(dirname "$0")/sql_spare.sh"
elect_key="hashtextextended('elect:/sp', 0)"
latch_free() {
  [ "$(pg_psql "$P" "$db" "SELECT count(*) FROM pg_locks WHERE $HERE AND locktype = 'advisory' AND granted AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = $elect_key")" = 0 ]
}
end_sessions() {
  pg_psql "$P" "$db" "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '$db' AND pid <> pg_backend_pid()" >/dev/null
}
spare_case "$URI"
