# stores/mysql.sh: the hooks of conf.sh for mysql:// (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store: the shared
# fixture's MariaDB (tests/integration/mysql.sh), a database per conf_coord NAME.
#
# The groups that do not apply to this store (tests/conformance/CMakeLists.txt
# registers no test for them and prints why):
# skips: elect_outage: a candidate's GET_LOCK is its connection's, and a lost grant closes that connection (recipe_sql.c): the server frees the lock as it hears the close, so no contender of the old candidate can stay first in line under a live session as a ZooKeeper node can; the proxy's mute/down here closes both ends at once

# shellcheck source=../../integration/mysql.sh
source "$IK_SRC/tests/integration/mysql.sh"

# _conf_my_db NAME: this test's database NAME on the MariaDB (made on first use).
_conf_my_db() {
  local db="$1_$$"
  my_sql -e "CREATE DATABASE IF NOT EXISTS \`$db\`" || fail "could not create database $db"
  echo "$db"
}

conf_store_start() {
  # the shared fixture's server, or with CONF_OWN_STORE one of this test's own
  # (conf.sh); a database per conf_coord NAME
  [ -z "${CONF_OWN_STORE:-}" ] || unset IK_FIXTURE_MARIADB
  my_start
  CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
}

conf_coord() { echo "mysql://$MDB_USER@127.0.0.1:$MY_PORT/$(_conf_my_db "$1")"; }

conf_slot_free_ms() { echo "$CONF_SESSION_MS"; } # the slot's TTL (--lease-ttl)

conf_slot_wait_ms() { echo $((CONF_SESSION_MS + 2000)); }

conf_slot_record() {
  local uri=$1 app=$2 w=$3
  my_sql -D "${uri##*/}" -e "SELECT record_ms FROM idk_slots WHERE app = '$app' AND worker = $w"
}

conf_lock_free_ms() { echo 0; } # GET_LOCK: the server frees it as the holder's connection closes

conf_patient_args() { :; }

conf_lock_waiters() {
  local uri=$1 path=$2
  # GET_LOCK waiters (their statement names the key) and the holder, if any; the
  # process list is the whole server's, so a waiter counts only in the test's
  # database (another test's /x waits on a name of its own)
  my_sql -e "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST
      WHERE DB = '${uri##*/}' AND INFO LIKE 'SELECT GET_LOCK(%''lock:$path''%')
    + (IS_USED_LOCK(IF(CHAR_LENGTH(CONCAT('${uri##*/}/', 'lock:$path')) <= 61,
         CONCAT('ik/${uri##*/}/', 'lock:$path'),
         CONCAT('ik#', LEFT(SHA2(CONCAT('${uri##*/}/', 'lock:$path'), 256), 61)))) IS NOT NULL)"
}

conf_counter_raw() {
  local uri=$1 tag=$2 app=${3:-default}
  local biz=$tag
  [ "$app" = default ] || biz="$app/$tag"
  my_sql -D "${uri##*/}" -e "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$biz'"
}

conf_store_port() { echo "$MY_PORT"; }

# SQL writes a tag in a transaction: the COMMIT that follows the commit mark's
# INSERT (docs/sql.md) is the request that applies it.
conf_fault_answer_lost() { proxy hold-after 1 COMMIT INSERT INTO idk_commit_mark; }

conf_fault_freeze_after_write() { proxy mute-after 1 COMMIT INSERT INTO idk_commit_mark; }

# tags_two_sequences: the next COMMIT sent after a commit mark's INSERT on its
# connection, X's, never arrives
conf_fault_race_lost() { proxy request-lost 1 COMMIT INSERT INTO idk_commit_mark; }

conf_slow_args() { echo --lease-ttl $(($1 * 4)); } # the lease proves 2/3 TTL past a send

conf_release_bound_ms() {
  # a renewal in flight at the stop (its hazard check and its statement), then the
  # release's statement: each waits at most 5 s for its answer (docs/sql.md,
  # "Slots"; the slot's connection alive)
  echo $((3 * 5000))
}

# conf_unsafe_on URI: turns a durability setting of URI's server unsafe at run time
# (proof group, docs/hazards.md "Proof with every write") and prints its name once
# the server applies it (SET GLOBAL is in force for every session at once: a new
# session shows it). Server-wide: called on a server of the test's own only
# (CONF_OWN_STORE).
conf_unsafe_on() {
  my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 0' || fail "SET GLOBAL innodb_flush_log_at_trx_commit = 0 failed"
  [ "$(my_sql -e 'SELECT @@GLOBAL.innodb_flush_log_at_trx_commit')" = 0 ] || fail "innodb_flush_log_at_trx_commit did not turn 0"
  echo innodb_flush_log_at_trx_commit
}

# conf_unsafe_off URI: puts conf_unsafe_on's setting back.
conf_unsafe_off() {
  my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1' || fail "SET GLOBAL innodb_flush_log_at_trx_commit = 1 failed"
  [ "$(my_sql -e 'SELECT @@GLOBAL.innodb_flush_log_at_trx_commit')" = 1 ] || fail "innodb_flush_log_at_trx_commit did not turn 1"
}

# proof's second case: the write held between its round trips (a setting changed
# after the write began, before its commit point read the evidence)
conf_write_hold_var() { echo IDKEEPER_TEST_SQL_COMMIT_HOLD; }

# hold_lost (tests/conformance/hold_lost.sh) and elections. The GET_LOCK name of
# KIND:PATH in URI's database (docs/recipes.md, "MySQL and MariaDB").
_conf_my_name_sql() { # URI KIND PATH
  local db=${1##*/} k="lock:$3"
  [ "$2" = elect ] && k="elect:$3"
  echo "IF(CHAR_LENGTH(CONCAT('$db/', '$k')) <= 61, CONCAT('ik/$db/', '$k'), CONCAT('ik#', LEFT(SHA2(CONCAT('$db/', '$k'), 256), 61)))"
}

conf_elect_args() { echo --lease-ttl "$1"; }

conf_elect_nodes() { # the holder's connection first, then the waiters'
  local uri=$1 path=$2
  my_sql -e "SELECT IS_USED_LOCK($(_conf_my_name_sql "$uri" elect "$path"))" | grep -v NULL || true
  my_sql -e "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '${uri##*/}' AND INFO LIKE 'SELECT GET_LOCK(%''elect:$path''%'"
}

conf_hold_revokes() { echo kill; }

conf_hold_revoke() { # URI KIND PATH HOW: the holder's connection killed by hand
  local id
  id=$(my_sql -e "SELECT IS_USED_LOCK($(_conf_my_name_sql "$1" "$2" "$3"))")
  [ -n "$id" ] && [ "$id" != NULL ] || fail "stores/mysql.sh: nobody holds $2 $3"
  my_sql -e "KILL $id" || fail "KILL $id failed"
  echo "killed the holder's connection $id"
}

conf_hold_reset_frees() {
  echo "a reset ends the database session, and the server frees its GET_LOCK as it hears the close: only the fencing token covers that (docs/recipes.md, SQL)"
}

# semaphore (tests/conformance/semaphore.sh): the queue is the GET_LOCK of
# "semq:PATH", a lease that of "sema:PATH#I" (docs/recipes.md, "Semaphores")
_conf_my_key_sql() { # URI KEY: the GET_LOCK name of a lock key (backend_mysql.c's LOCK_NAME)
  local db=${1##*/} k=$2
  echo "IF(CHAR_LENGTH(CONCAT('$db/', '$k')) <= 61, CONCAT('ik/$db/', '$k'), CONCAT('ik#', LEFT(SHA2(CONCAT('$db/', '$k'), 256), 61)))"
}

conf_sema_queued() { # the queue's waiters (their statement names the key) and its holder
  local uri=$1 path=$2
  my_sql -e "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST
      WHERE DB = '${uri##*/}' AND INFO LIKE 'SELECT GET_LOCK(%''semq:$path''%')
    + (IS_USED_LOCK($(_conf_my_key_sql "$uri" "semq:$path")) IS NOT NULL)"
}

conf_sema_revoke() { # URI PATH HOW: the connection of the lowest slot held killed
  local i id
  for ((i = 0; i < 1000; i++)); do
    id=$(my_sql -e "SELECT IS_USED_LOCK($(_conf_my_key_sql "$1" "sema:$2#$i"))")
    [ -z "$id" ] || [ "$id" = NULL ] || break
  done
  [ -n "$id" ] && [ "$id" != NULL ] || fail "stores/mysql.sh: nobody holds a lease of $2"
  my_sql -e "KILL $id" || fail "KILL $id failed"
  echo "killed the connection $id of slot $i"
}

# the store frozen: the test's own server (CONF_OWN_STORE)
conf_store_freeze() { kill -STOP "$MY_PID"; }
conf_store_thaw() { kill -CONT "$MY_PID"; }
