#!/usr/bin/env bash
# labels: mysql release
# timeout: 240
# MariaDB turned unsafe under a running server (SET GLOBAL
# innodb_flush_log_at_trx_commit = 2, then sync_binlog = 0 with the binary log on),
# and its clock stepped forward under it (libfaketime in mariadbd): `idkeeper check`
# exits 5 naming the setting, serving stops and resumes, a clock step puts the lease
# in doubt, no ID twice (tests/integration/sql_hazards_run.sh says how). A server of
# its own: it changes global settings and runs under libfaketime.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
LIBFAKETIME=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
  [ -f "$f" ] && { LIBFAKETIME=$f; break; }
done
[ -n "$LIBFAKETIME" ] || fail "libfaketime.so.1 not found (apt-get install libfaketime)"
DBCLOCK=$T/dbclock
echo "+0" >"$DBCLOCK"
# mariadbd's clock (NOW(3) included) is libfaketime's, offset by what $DBCLOCK says
LD_PRELOAD=$LIBFAKETIME FAKETIME_TIMESTAMP_FILE=$DBCLOCK FAKETIME_NO_CACHE=1 my_start --log-bin="$T/mariadb/binlog" --sync-binlog=1
URI=$(my_uri hz)
UNSAFE_SET=unsafe_set UNSAFE_UNSET=unsafe_unset UNSAFE_NAME="innodb_flush_log_at_trx_commit is 2"
unsafe_set() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 2'; }
unsafe_unset() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1'; }
source "$(dirname "$0")/sql_hazards_run.sh"

# sync_binlog = 0 with the binary log on: idkeeper check names it, and back
my_sql -e 'SET GLOBAL sync_binlog = 0'
rc=0
"$IK_BIN" check --coord "$URI" >"$T/check-sb.out" 2>/dev/null || rc=$?
[ "$rc" = 5 ] || fail "idkeeper check exited $rc with sync_binlog = 0: $(cat "$T/check-sb.out")"
grep -Eq '^sync_binlog +0 \(binary log on\) +refused' "$T/check-sb.out" || fail "check does not name sync_binlog: $(cat "$T/check-sb.out")"
my_sql -e 'SET GLOBAL sync_binlog = 1'
"$IK_BIN" check --coord "$URI" >"$T/check-sb2.out" 2>&1 || fail "idkeeper check after sync_binlog = 1: $(cat "$T/check-sb2.out")"
pass "sync_binlog = 0 with the binary log on: idkeeper check exit 5 naming it; back to 1: exit 0"
