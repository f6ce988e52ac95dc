#!/usr/bin/env bash
# labels: mysql sql counters
# timeout: 240
# The tag connections' pool and the commit marks on mysql:// (docs/sql.md,
# "Connections" and "Tags"), on a server of this test's own (wait_timeout is
# global, set to 2 s): the idle and marks checks of idle_marks.sh.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
source "$(dirname "$0")/idle_marks.sh"
my_start --wait-timeout=2
URI=$(my_uri idle)
DB=${URI##*/}
sql() { my_sql -D "$DB" -e "$1"; }
idle_marks "wait_timeout 2" "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
