#!/usr/bin/env bash
# labels: mysql
# timeout: 180
# fixtures: mariadb
# One frozen server does not stall a tag for the fleet, on MariaDB (the session's
# idle_transaction_timeout; tests/integration/sql_frozen.sh says how).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
URI=$(my_uri frozen)
# trx_open: a session of URI's database is inside a transaction (sql_frozen.sh)
trx_open() {
  [ "$(my_sql -e "SELECT COUNT(*) FROM information_schema.INNODB_TRX t
      JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id WHERE p.DB = '${URI##*/}'")" -ge 1 ] 2>/dev/null
}
source "$(dirname "$0")/sql_frozen.sh"
