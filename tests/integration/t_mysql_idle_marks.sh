#!/usr/bin/env bash
# labels: mysql sql counters
# timeout: 240
# The tag connections' pool and the commit marks on mysql:// (docs/sql.md,
# "Connections" and "Tags"): the idle and marks checks of idle_marks.sh. The idle
# limit is the session's own wait_timeout, --lease-ttl in s (docs/sql.md "Session
# settings"), 2 s here through IDKEEPER_LEASE_TTL; a global wait_timeout would not
# do, each session sets its own.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
source "$(dirname "$0")/idle_marks.sh"
my_start
URI=$(my_uri idle)
DB=${URI##*/}
sql() { my_sql -D "$DB" -e "$1"; }
idle_on() { export IDKEEPER_LEASE_TTL=2000; }
idle_off() { unset IDKEEPER_LEASE_TTL; }
idle_marks "wait_timeout 2 s, --lease-ttl 2000" "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
