#!/usr/bin/env bash
# labels: mysql release
# timeout: 240
# Evidence read at the commit point on MariaDB (docs/hazards.md, "Proof with every
# write"): SET GLOBAL innodb_flush_log_at_trx_commit = 0 while a sequence advance sits
# between its two round trips, then kill -9 of mariadbd right after the request is
# answered (tests/integration/sql_commit_point.sh says how). Before, the proof rode in
# the first round trip and the COMMIT alone in the second: the request was answered
# with IDs the crash took back, and answered them again after the restart. A server
# of its own, which writes its redo log to disk only every 30 s with the setting at 0
# (innodb_flush_log_at_timeout), so that the crash finds the COMMIT in memory.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start --innodb-flush-log-at-timeout=30
URI=$(my_uri commitpoint)
DB=${URI##*/}
UNSAFE_NAME="innodb_flush_log_at_trx_commit is 0"
unsafe_set() {
  my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 0' || fail "SET GLOBAL failed"
  [ "$(my_sql -e 'SELECT @@GLOBAL.innodb_flush_log_at_trx_commit')" = 0 ] || fail "the setting did not turn 0"
}
store_crash() { my_kill KILL; }
store_restart() { my_restart --innodb-flush-log-at-timeout=30; } # the setting back at 1 (mdb_exec)
max_id() { my_sql -e "SELECT max_id FROM \`$DB\`.leaf_alloc WHERE biz_tag = 'q'"; }
lock_waiters() { my_sql -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT GET_LOCK(%'"; }
source "$(dirname "$0")/sql_commit_point.sh"
