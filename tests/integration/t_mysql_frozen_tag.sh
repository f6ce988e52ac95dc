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
source "$(dirname "$0")/sql_frozen.sh"
