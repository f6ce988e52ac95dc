# stores/postgresql.sh: the hooks of conf.sh for postgresql:// (docs/testing.md,
# "Adding a backend to the suite"; conf.sh says what each hook does). The store:
# the shared server (tests/fixtures/postgres.sh), a database per conf_coord NAME.
#
# The groups that do not apply to this store (tests/conformance/CMakeLists.txt
# registers no test for them and prints why):
# skips: elect_outage: a candidate's advisory lock is its connection's, and a lost grant closes that connection (recipe_sql.c): the server frees the lock as it hears the close, so no contender of the old candidate can stay first in line under a live session as a ZooKeeper node can; the proxy's mute/down here closes both ends at once

[ -r "${IK_FIXTURE_POSTGRES:-}/env" ] || fail "stores/postgresql.sh: no postgres fixture (IK_FIXTURE_POSTGRES)"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD

# conf_pg_db NAME: the database of conf_coord NAME: made once per test ("c<pid>_NAME").
conf_pg_db() {
  local db
  db=$(printf 'c%s_%s' "$$" "$1" | tr -c 'a-zA-Z0-9_\n' _ | tr 'A-Z' 'a-z' | cut -c1-63)
  if [ -z "$(pg_psql "$PG_SHARED_PORT" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
    pg_psql "$PG_SHARED_PORT" postgres "CREATE DATABASE $db" >/dev/null 2>&1 ||
      [ -n "$(pg_psql "$PG_SHARED_PORT" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" ] ||
      fail "cannot create database $db"
  fi
  echo "$db"
}

conf_store_start() {
  if [ -n "${CONF_OWN_STORE:-}" ]; then # a server of this test's own (conf.sh)
    _conf_pg_own_stop() { pg_own_stop "$T/pg"; }
    IK_CLEANUPS+=(_conf_pg_own_stop)
    pg_own_start "$T/pg" || fail "PostgreSQL of this test's own did not start"
    PG_SHARED_PORT=$PG_PORT PG_USER=$PG_TEST_USER PG_PASSWORD=$PG_TEST_PASSWORD
    export IDKEEPER_PASSWORD=$PG_PASSWORD
  fi
  CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
}

conf_coord() { echo "postgresql://$PG_USER@127.0.0.1:$PG_SHARED_PORT/$(conf_pg_db "$1")"; }

conf_slot_free_ms() { echo "$CONF_SESSION_MS"; } # the slot's TTL (--lease-ttl)

conf_slot_wait_ms() { echo $((CONF_SESSION_MS + 2000)); }

conf_slot_record() {
  local uri=$1 app=$2 w=$3
  pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT record_ms FROM idk_slots WHERE app = '$app' AND worker = $w"
}

conf_lock_free_ms() { echo 1000; } # the server frees it when the connection closes

conf_patient_args() { echo --lease-ttl 10000; }

# pg_locks lists the whole cluster's locks, and every test's database on the shared
# server has its own advisory lock of "lock:/x": a condition on pg_locks names the
# test's database too (_CONF_PG_HERE), or it counts, or terminates, another test's
_CONF_PG_HERE="database = (SELECT oid FROM pg_database WHERE datname = current_database())"

conf_lock_waiters() { # waiting or granted, on the advisory lock of "lock:PATH" (docs/recipes.md)
  local uri=$1 path=$2
  pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT count(*) FROM pg_locks WHERE $_CONF_PG_HERE AND locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('lock:$path', 0)"
}

conf_counter_raw() { # docs/sql.md: the default app's tag is its biz_tag, another's APP/TAG
  local uri=$1 tag=$2 app=${3:-default}
  local biz=$tag
  [ "$app" = default ] || biz=$app/$tag
  pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$biz'"
}

conf_store_port() { echo "$PG_SHARED_PORT"; }

# SQL writes a tag in a transaction: the COMMIT that follows the batch's pipeline
# (docs/sql.md) is the request that applies it. The statements are named once a
# session, so the pipeline is found by the tag's name among its parameters.
conf_fault_answer_lost() { proxy hold-after 1 COMMIT "${1:-orders}"; }

conf_fault_freeze_after_write() { proxy mute-after 1 COMMIT "${1:-orders}"; }

# tags_two_sequences: the next COMMIT sent on a connection that sent TAG's batch,
# X's, never arrives
conf_fault_race_lost() { proxy request-lost 1 COMMIT "$1"; }

conf_slow_args() { echo --lease-ttl $(($1 * 4)); } # the lease proves 2/3 TTL past a send

conf_release_bound_ms() {
  # a renewal in flight at the stop (its hazard check and its statement), then the
  # release's statement: each waits at most 5 s for its answer (docs/sql.md,
  # "Slots"; the slot's connection alive)
  echo $((3 * 5000))
}

# conf_unsafe_on URI: turns a durability setting of URI's server unsafe at run time
# (proof group, docs/hazards.md "Proof with every write"): ALTER SYSTEM SET
# synchronous_commit = off and a reload, then waits until a new session of URI's
# database shows it (every backend takes a reload at its next command), and prints
# the setting's name. Server-wide: called on a server of the test's own only
# (CONF_OWN_STORE).
conf_unsafe_on() {
  local db=${1##*/} i
  pg_psql "$PG_SHARED_PORT" postgres "ALTER SYSTEM SET synchronous_commit = off" >/dev/null || fail "ALTER SYSTEM SET synchronous_commit = off failed"
  pg_psql "$PG_SHARED_PORT" postgres "SELECT pg_reload_conf()" >/dev/null || fail "pg_reload_conf() failed"
  for i in $(seq 1 100); do
    [ "$(pg_psql "$PG_SHARED_PORT" "$db" "SHOW synchronous_commit")" = off ] && { echo synchronous_commit; return 0; }
    sleep 0.05
  done
  fail "synchronous_commit did not turn off within 5 s of pg_reload_conf()"
}

# conf_unsafe_off URI: puts conf_unsafe_on's setting back (ALTER SYSTEM RESET and a
# reload), waiting until a new session shows it.
conf_unsafe_off() {
  local db=${1##*/} i
  pg_psql "$PG_SHARED_PORT" postgres "ALTER SYSTEM RESET synchronous_commit" >/dev/null || fail "ALTER SYSTEM RESET synchronous_commit failed"
  pg_psql "$PG_SHARED_PORT" postgres "SELECT pg_reload_conf()" >/dev/null || fail "pg_reload_conf() failed"
  for i in $(seq 1 100); do
    [ "$(pg_psql "$PG_SHARED_PORT" "$db" "SHOW synchronous_commit")" = on ] && return 0
    sleep 0.05
  done
  fail "synchronous_commit did not turn on within 5 s of pg_reload_conf()"
}

# proof's second case: the write held between its round trips (a setting changed
# after the write began, before its commit point read the evidence)
conf_write_hold_var() { echo IDKEEPER_TEST_SQL_COMMIT_HOLD; }

# hold_lost (tests/conformance/hold_lost.sh) and elections. KIND:PATH's advisory
# lock (docs/recipes.md, "SQL").
_conf_pg_key_sql() { # KIND PATH: the condition on pg_locks for the lock of KIND at PATH
  local k="lock:$2"
  [ "$1" = elect ] && k="elect:$2"
  echo "$_CONF_PG_HERE AND locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('$k', 0)"
}

conf_elect_args() { echo --lease-ttl "$1"; }

conf_elect_nodes() { # the candidates' sessions, the leader's first
  local uri=$1 path=$2
  pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT pid FROM pg_locks WHERE $(_conf_pg_key_sql elect "$path") ORDER BY granted DESC"
}

conf_hold_revokes() { echo terminate; }

conf_hold_revoke() { # URI KIND PATH HOW: the holder's session terminated by hand
  local n
  n=$(pg_psql "$PG_SHARED_PORT" "${1##*/}" "SELECT count(pg_terminate_backend(pid)) FROM pg_locks WHERE granted AND $(_conf_pg_key_sql "$2" "$3")")
  [ "$n" = 1 ] || fail "stores/postgresql.sh: terminated $n holders of $2 $3"
  echo "terminated the holder's session"
}

conf_hold_reset_frees() {
  echo "a reset ends the database session, and the server frees its lock as it hears the close: only the fencing token covers that (docs/recipes.md, SQL)"
}

# semaphore (tests/conformance/semaphore.sh): the queue is the advisory lock of
# "semq:PATH", a lease that of "sema:PATH#I" (docs/recipes.md, "Semaphores")
conf_sema_queued() { # waiting or granted
  pg_psql "$PG_SHARED_PORT" "${1##*/}" "SELECT count(*) FROM pg_locks WHERE $_CONF_PG_HERE AND locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('semq:$2', 0)"
}

conf_sema_revoke() { # URI PATH HOW: the session of the lowest slot held terminated
  local n
  n=$(pg_psql "$PG_SHARED_PORT" "${1##*/}" "SELECT count(pg_terminate_backend(pid)) FROM (SELECT l.pid FROM pg_locks l, generate_series(0, 999) s WHERE l.$_CONF_PG_HERE AND l.granted AND l.locktype = 'advisory' AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtextextended('sema:$2#' || s, 0) ORDER BY s LIMIT 1) x")
  [ "$n" = 1 ] || fail "stores/postgresql.sh: terminated $n holders of a lease of $2"
  echo "terminated the session of a lease"
}

# the store frozen: the test's own server (CONF_OWN_STORE), the postmaster and its
# backends
_conf_pg_signal() {
  local pid
  pid=$(head -n 1 "$T/pg/pgdata/postmaster.pid")
  kill "-$1" $(pgrep -P "$pid") "$pid"
}
conf_store_freeze() { _conf_pg_signal STOP; }
conf_store_thaw() { _conf_pg_signal CONT; }
