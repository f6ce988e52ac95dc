#!/usr/bin/env bash
# labels: mysql counters
# timeout: 240
# The transaction state as the evidence of a write's tables (docs/hazards.md, "MySQL
# and MariaDB"; SP5 of src/lib/backends/sql/backend_sql_proof.c). Each session sets
# session_track_transaction_info = STATE, and MariaDB then answers every statement
# that changes it with the transaction's state, where a table without transactions
# shows as 'r' or 'w'; that is a transaction's evidence that its tables keep its
# writes, and the engine is read after the COMMIT only where the state did not come.
# A server of its own (SET GLOBAL, init_connect). Five parts:
#   1. the metadata lock: ALTER TABLE leaf_alloc ENGINE = MyISAM while an advance is
#      held between its two round trips (IDKEEPER_TEST_SQL_COMMIT_HOLD) waits for
#      the advance's transaction: leaf_alloc is InnoDB until its COMMIT, the request
#      is answered (its write was InnoDB's), and the next one 503 naming the table
#      engines. So the state read with the write's statements still holds at its
#      COMMIT.
#   2. the state turned off in the session between two advances
#      (IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT): the next advance has no state to go
#      by, and is not trusted for it: its table's engine is read after its COMMIT,
#      and after ALTER ... ENGINE = MyISAM the request is 503 naming "leaf_alloc
#      MyISAM", its range a logged gap. Taking the missing state for a safe one would
#      answer it 200.
#   3. the state turned off for new sessions, SET GLOBAL and init_connect (a user
#      without SUPER, whom init_connect reaches): the session's own setting wins,
#      and after ALTER ... ENGINE = MyISAM the next request is 503 from the state
#      itself ("transaction state" with its 'w').
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start

seq_get() { # seq_get PORT BODY: one sequence request of 3 IDs; prints the status, keeps a 200's IDs in $ANS
  local code
  code=$(ik_http "http://127.0.0.1:$1/v1/sequence/q?count=3&format=text" "$2" 20)
  [ "$code" != 200 ] || cat "$2" >>"$ANS"
  echo "$code"
}
engine() { my_sql -e "SELECT ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = '$1' AND TABLE_NAME = 'leaf_alloc'"; }
# warm WHO PORT: three advances answered before the change under test
warm() { for i in 1 2 3; do [ "$(seq_get "$2" "$T/pre.body")" = 200 ] || fail "$1: no sequence IDs: $(cat "$T/pre.body")"; done; }
# serve_warm WHO URI: tag q on URI, a server WHO on it (its port in PORT), warmed
serve_warm() {
  "$IK_BIN" tags add q --kind sequence --coord "$2" >/dev/null || fail "tags add q on $2"
  serve_on "$1" --coord "$2" --lease-ttl 30000 || fail "$1 did not start: $(tail -n 5 "$T/$1.log")"
  warm "$1" "$PORT"
}
# refused WHO PORT BODY WORDS WHAT: WHO's next advance (WHAT: its table's case) is
# 503 saying WORDS, its range a gap, no ID answered twice
refused() {
  local code
  code=$(seq_get "$2" "$3")
  [ "$code" = 503 ] || fail "$1 answered the first advance $5 $code: $(cat "$3")"
  grep -q "$4" "$3" || fail "$1's 503 does not say '$4': $(cat "$3")"
  grep -q 'tag gap tag=q first=[0-9]* count=3 why=store_unsafe' "$T/$1.log" ||
    fail "$1: its range is not logged as a gap: $(grep 'tag gap' "$T/$1.log" | head -n 3)"
  assert_unique "$ANS"
}
# stop WHO: SIGTERM, and its exit waited for
stop() { kill -TERM "${SERVER_PID[$1]}" 2>/dev/null || true; wait "${SERVER_PID[$1]}" 2>/dev/null || true; }

# ---- 1. the metadata lock ------------------------------------------------------------
ANS=$T/answered.1
URI=$(my_uri txmdl)
DB=${URI##*/}
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
HOLD=$T/hold
IDKEEPER_TEST_SQL_COMMIT_HOLD=$HOLD serve_on a --coord "$URI" --lease-ttl 30000 || fail "a did not start: $(tail -n 5 "$T/a.log")"
PA=$PORT
for i in 1 2 3; do [ "$(seq_get "$PA" "$T/pre.body")" = 200 ] || fail "no sequence IDs before the hold: $(cat "$T/pre.body")"; done
: >"$HOLD" # armed: the next advance holds before its COMMIT, its row and table locked
seq_get "$PA" "$T/held.body" >"$T/held.code" &
held=$!
IK_PIDS+=("$held")
wait_until 20 grep -q held "$HOLD" || fail "the advance never reached its COMMIT's hold: $(tail -n 5 "$T/a.log")"
my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = MyISAM" >"$T/alter.out" 2>&1 &
alter=$!
IK_PIDS+=("$alter")
alter_waits() {
  [ "$(my_sql -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = '$DB'
      AND INFO LIKE 'ALTER TABLE leaf_alloc%' AND STATE LIKE 'Waiting for table metadata lock%'")" -ge 1 ] 2>/dev/null
}
wait_until 20 alter_waits || fail "the ALTER does not wait for the held advance's metadata lock: $(cat "$T/alter.out"); processlist: $(my_sql -e 'SHOW PROCESSLIST' | tr '\n' ' ')"
alive "$alter" || fail "the ALTER finished while the advance held its table: $(cat "$T/alter.out")"
[ "$(engine "$DB")" = InnoDB ] || fail "leaf_alloc is $(engine "$DB") while the advance holds it"
rm -f "$HOLD" # the COMMIT goes out; the ALTER may then run
wait "$held" || true
code=$(cat "$T/held.code")
[ "$code" = 200 ] || fail "the held advance, whose write was InnoDB's, was answered $code: $(cat "$T/held.body")"
wait "$alter" || fail "the ALTER failed: $(cat "$T/alter.out")"
[ "$(engine "$DB")" = MyISAM ] || fail "leaf_alloc is $(engine "$DB") after the ALTER"
refused a "$PA" "$T/after.body" 'table engines' "on MyISAM"
pass "ALTER ... ENGINE = MyISAM waited on the held advance's metadata lock (InnoDB until its COMMIT), the advance answered 200, the next one 503 naming the table engines with its range a gap"
stop a

# ---- 2. the state turned off in the session --------------------------------------------
ANS=$T/answered.2
URI=$(my_uri txoff)
DB=${URI##*/}
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT="SET SESSION session_track_transaction_info = OFF" \
  serve_on b --coord "$URI" --lease-ttl 30000 || fail "b did not start: $(tail -n 5 "$T/b.log")"
PB=$PORT
# every pooled connection that carries an advance turns its tracking off before that
# advance's COMMIT; sequential requests go on one of them
for i in 1 2 3 4 5 6; do [ "$(seq_get "$PB" "$T/pre.body")" = 200 ] || fail "b: no sequence IDs with the tracking off: $(cat "$T/pre.body")"; done
my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = MyISAM" || fail "ALTER TABLE failed"
# with no transaction state to go by: the engine read after the COMMIT
refused b "$PB" "$T/off.body" 'leaf_alloc MyISAM' "on MyISAM"
pass "tracking turned off in the session: the next advance on MyISAM was 503 by the engine read after its COMMIT (leaf_alloc MyISAM), its range a gap"
stop b

# ---- 3. SET GLOBAL and init_connect turn it off for new sessions -----------------------
ANS=$T/answered.3
URI=$(my_uri txglobal)
DB=${URI##*/}
my_sql -e "CREATE USER ikn@'127.0.0.1' IDENTIFIED BY '$IDKEEPER_PASSWORD';
  GRANT CREATE, SELECT, INSERT, UPDATE, DELETE ON \`$DB\`.* TO ikn@'127.0.0.1';
  SET GLOBAL session_track_transaction_info = OFF;
  SET GLOBAL init_connect = 'SET SESSION session_track_transaction_info = OFF'" || fail "could not set up user ikn and the globals"
reached=$(mariadb --no-defaults -h 127.0.0.1 -P "$MY_PORT" -uikn -p"$IDKEEPER_PASSWORD" --batch --skip-column-names -e 'SELECT @@SESSION.session_track_transaction_info')
[ "$reached" = OFF ] || fail "init_connect did not reach ikn's session (session_track_transaction_info $reached)"
URI=mysql://ikn@127.0.0.1:$MY_PORT/$DB
serve_warm c "$URI"
PC=$PORT
my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = MyISAM" || fail "ALTER TABLE failed"
refused c "$PC" "$T/global.body" 'transaction state T_*w' "on MyISAM"
pass "SET GLOBAL and init_connect turned the tracking off for new sessions; idkeeper's own setting kept it, and the advance on MyISAM was 503 by its transaction state"
stop c

# ---- 4. Aria, crash-safe but without transactions --------------------------------------
# Aria (TRANSACTIONAL=1, its default) logs its writes, yet cannot roll one back nor
# lock a row for a transaction: a table of ours in it is refused like MyISAM. Its
# handler says so (HA_NO_TRANSACTIONS), and the state shows it as 'w': a state that
# took Aria for transactional would answer 200 here.
ANS=$T/answered.4
URI=$(my_uri txaria)
DB=${URI##*/}
serve_warm d "$URI"
PD=$PORT
my_sql -D "$DB" -e "ALTER TABLE leaf_alloc ENGINE = Aria TRANSACTIONAL = 1" || fail "ALTER TABLE ... ENGINE = Aria failed"
[ "$(engine "$DB")" = Aria ] || fail "leaf_alloc is $(engine "$DB") after the ALTER to Aria"
refused d "$PD" "$T/aria.body" 'transaction state T_*w' "on Aria"
pass "ALTER ... ENGINE = Aria TRANSACTIONAL = 1: the next advance was 503 by its transaction state ('w'), its range a gap"
stop d

# ---- 5. a prepared proof the session lost ----------------------------------------------
# The proof after the COMMIT is prepared once per session and sent as EXECUTE
# (M7 of src/lib/backends/mysql/backend_mysql.c). A session that lost it
# (DEALLOCATE PREPARE between the advance's round trips, IDKEEPER_TEST_SQL_BEFORE_
# ADVANCE_COMMIT) has its EXECUTE refused after the COMMIT; the proof is then read
# again as text, still after the COMMIT (SP1 of backend_sql_proof.c), and judged.
# With innodb_flush_log_at_trx_commit = 0 set while the advance is held between its
# round trips (IDKEEPER_TEST_SQL_COMMIT_HOLD, before the hook), that read refuses it:
# 503, its committed range a gap. Taking the refused EXECUTE for no news, or the
# proof read before the COMMIT for the write's, would answer 200. With the setting
# back at 1, the session's next advances send the proof as text and are answered.
ANS=$T/answered.5
URI=$(my_uri txps)
DB=${URI##*/}
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
HOLD=$T/hold.5
IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT="DEALLOCATE PREPARE ik_proof" IDKEEPER_TEST_SQL_COMMIT_HOLD=$HOLD \
  serve_on e --coord "$URI" --lease-ttl 30000 || fail "e did not start: $(tail -n 5 "$T/e.log")"
PE=$PORT
: >"$HOLD"
seq_get "$PE" "$T/lost.body" >"$T/lost.code" &
held=$!
IK_PIDS+=("$held")
wait_until 20 grep -q held "$HOLD" || fail "e: the advance never reached its COMMIT's hold: $(tail -n 5 "$T/e.log")"
my_sql -e "SET GLOBAL innodb_flush_log_at_trx_commit = 0" || fail "SET GLOBAL failed"
rm -f "$HOLD"
wait "$held" || true
code=$(cat "$T/lost.code")
my_sql -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1" || fail "SET GLOBAL back failed"
[ "$code" = 503 ] || fail "e answered $code the advance whose prepared proof was lost, committed under innodb_flush_log_at_trx_commit = 0: $(cat "$T/lost.body")"
grep -q 'innodb_flush_log_at_trx_commit' "$T/lost.body" || fail "e's 503 does not name the setting the proof read again found: $(cat "$T/lost.body")"
grep -q 'tag gap tag=q first=[0-9]* count=3 why=store_unsafe' "$T/e.log" || fail "e: its committed range is not logged as a gap: $(grep 'tag gap' "$T/e.log" | head -n 3)"
for i in 1 2 3; do [ "$(seq_get "$PE" "$T/after.body")" = 200 ] || fail "e: no sequence IDs after the lost proof: $(cat "$T/after.body")"; done
assert_unique "$ANS"
pass "a prepared proof the session lost after the COMMIT: read again as text, it refused the advance committed under innodb_flush_log_at_trx_commit = 0 (503, its range a gap); the next advances answered"
