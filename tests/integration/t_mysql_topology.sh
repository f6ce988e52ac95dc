#!/usr/bin/env bash
# labels: mysql
# timeout: 240
# What a MariaDB is, not only how it is set (docs/hazards.md, "MySQL and MariaDB"):
#   1. idkeeper tables made earlier in an engine without transactions (leaf_alloc in
#      MyISAM, idk_slots in Aria: CREATE TABLE IF NOT EXISTS keeps them): SELECT ...
#      FOR UPDATE locks nothing there, and two servers answered one range. `idkeeper
#      check` exits 5 with the "table engines" row refused naming both, and `serve`
#      refuses to start (before: check exit 0, serve served).
#   2. innodb_flush_log_at_trx_commit = 3 is durable on MariaDB: check exit 0 (it
#      was refused).
#   3. read_only = 1: for a user allowed to write anyway (SUPER / READ_ONLY ADMIN)
#      check exits 5 with the read_only row refused and serve refuses; for a user who
#      may not write, the schema cannot be made, and check exits 5 with a refused
#      "schema" row (before: exit 0, while serve could not start).
#   4. a replica (CHANGE MASTER TO ..., as a MariaDB replica with its default
#      read_only = 0): check exits 5 with the "replica" row refused naming its
#      primary, serve refuses; a user who may not see the replica status gets the
#      row as a risk (check exit 5, serve serves).
#   5. innodb_doublewrite = OFF (read at start only: a restart): refused as
#      PostgreSQL's full_page_writes = off is (before: accepted).
# A server of its own (global settings, a restart).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
PW=$IDKEEPER_PASSWORD

# check_rc URI OUT: idkeeper check's exit status, its table in OUT
check_rc() {
  local rc=0
  "$IK_BIN" check --coord "$1" >"$2" 2>&1 || rc=$?
  echo "$rc"
}
# serve_refused NAME URI WHAT: serve exits non-zero naming WHAT
serve_refused() {
  local rc=0
  timeout 20 "$IK_BIN" serve --http "127.0.0.1:$(free_port)" --coord "$2" >"$T/$1.log" 2>&1 || rc=$?
  [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "serve on $3 exited $rc (expected a refusal): $(tail -n 3 "$T/$1.log")"
  grep -q "$3" "$T/$1.log" || fail "serve's refusal does not name $3: $(tail -n 3 "$T/$1.log")"
}

# ---- 1. tables in an engine without transactions --------------------------------------
U=$(my_uri eng)
DB=${U##*/}
my_sql "$DB" -e "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '', max_id bigint NOT NULL DEFAULT 1,
  step int NOT NULL, description varchar(256) DEFAULT NULL,
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag)) ENGINE=MyISAM;
  CREATE TABLE idk_slots (app varchar(64) NOT NULL, worker int NOT NULL, holder varchar(256) NOT NULL,
  token varchar(64) NOT NULL, expires_ms bigint NOT NULL, record_ms bigint NOT NULL, since_ms bigint NOT NULL,
  PRIMARY KEY (app, worker)) ENGINE=Aria"
rc=$(check_rc "$U" "$T/check-eng.out")
[ "$rc" = 5 ] || fail "check exited $rc on MyISAM/Aria tables: $(cat "$T/check-eng.out")"
grep -Eq '^table engines +idk_slots Aria, leaf_alloc MyISAM +refused' "$T/check-eng.out" || fail "check does not refuse the engines: $(cat "$T/check-eng.out")"
serve_refused eng "$U" "table engines is idk_slots Aria, leaf_alloc MyISAM"
my_sql "$DB" -e "ALTER TABLE leaf_alloc ENGINE=InnoDB; ALTER TABLE idk_slots ENGINE=InnoDB"
rc=$(check_rc "$U" "$T/check-eng2.out")
[ "$rc" = 0 ] || fail "check exited $rc once the tables are InnoDB: $(cat "$T/check-eng2.out")"
pass "leaf_alloc in MyISAM, idk_slots in Aria: check exit 5 naming both, serve refused; ALTER ... ENGINE=InnoDB: exit 0"

# ---- 2. innodb_flush_log_at_trx_commit = 3 -------------------------------------------------
my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 3'
rc=$(check_rc "$U" "$T/check-f3.out")
[ "$rc" = 0 ] || fail "check exited $rc with innodb_flush_log_at_trx_commit = 3 (durable on MariaDB): $(cat "$T/check-f3.out")"
grep -Eq '^innodb_flush_log_at_trx_commit +3 +ok' "$T/check-f3.out" || fail "the row is not 3 ok: $(cat "$T/check-f3.out")"
my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1'
pass "innodb_flush_log_at_trx_commit = 3: check exit 0"

# ---- 3. read_only ------------------------------------------------------------------------
# a user who may write its own databases only (no SUPER, no READ_ONLY ADMIN)
my_sql -e "CREATE USER 'plain'@'127.0.0.1' IDENTIFIED BY '$PW'; GRANT ALL ON \`ro%\`.* TO 'plain'@'127.0.0.1'"
RO=$(my_db ro)
my_sql -e 'SET GLOBAL read_only = 1'
rc=$(check_rc "$U" "$T/check-ro.out")
[ "$rc" = 5 ] || fail "check exited $rc on a read_only server (a user allowed to write anyway): $(cat "$T/check-ro.out")"
grep -Eq '^read_only +ON +refused' "$T/check-ro.out" || fail "check does not refuse read_only: $(cat "$T/check-ro.out")"
serve_refused ro "$U" "read_only is ON"
rc=$(check_rc "mysql://plain@127.0.0.1:$MY_PORT/$RO" "$T/check-ro2.out")
[ "$rc" = 5 ] || fail "check exited $rc on a read_only server where the schema cannot be made: $(cat "$T/check-ro2.out")"
grep -Eq '^schema .* refused' "$T/check-ro2.out" || fail "check has no refused schema row: $(cat "$T/check-ro2.out")"
my_sql -e 'SET GLOBAL read_only = 0'
pass "read_only = 1: check exit 5 with read_only refused, serve refused; a user who cannot write: exit 5 with the schema row refused"

# ---- 4. a replica ---------------------------------------------------------------------------
my_sql -e "CHANGE MASTER TO MASTER_HOST = '127.0.0.1', MASTER_PORT = 9, MASTER_USER = 'repl'"
rc=$(check_rc "$U" "$T/check-rep.out")
[ "$rc" = 5 ] || fail "check exited $rc on a replica: $(cat "$T/check-rep.out")"
grep -Eq '^replica +replica of 127.0.0.1:9 +refused' "$T/check-rep.out" || fail "check does not refuse the replica: $(cat "$T/check-rep.out")"
serve_refused rep "$U" "replica is replica of 127.0.0.1:9"
# the plain user may not see SHOW ALL SLAVES STATUS: a risk, named
rc=$(check_rc "mysql://plain@127.0.0.1:$MY_PORT/$RO" "$T/check-rep2.out")
[ "$rc" = 5 ] || fail "check exited $rc where the replica status is unreadable: $(cat "$T/check-rep2.out")"
grep -Eq '^replica +unreadable .* risk' "$T/check-rep2.out" || fail "check does not show the replica row as a risk: $(cat "$T/check-rep2.out")"
my_sql -e "RESET SLAVE ALL"
rc=$(check_rc "$U" "$T/check-rep3.out")
[ "$rc" = 0 ] || fail "check exited $rc after RESET SLAVE ALL: $(cat "$T/check-rep3.out")"
pass "a replica: check exit 5 naming its primary, serve refused; unreadable status: a risk; RESET SLAVE ALL: exit 0"

# ---- 5. innodb_doublewrite = OFF ------------------------------------------------------------
my_kill TERM
my_restart --innodb-doublewrite=0
rc=$(check_rc "$U" "$T/check-dw.out")
[ "$rc" = 5 ] || fail "check exited $rc with innodb_doublewrite = OFF: $(cat "$T/check-dw.out")"
grep -Eq '^innodb_doublewrite +OFF +refused' "$T/check-dw.out" || fail "check does not refuse innodb_doublewrite OFF: $(cat "$T/check-dw.out")"
serve_refused dw "$U" "innodb_doublewrite is OFF"
pass "innodb_doublewrite = OFF: check exit 5 naming it, serve refused"
