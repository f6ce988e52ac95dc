#!/usr/bin/env bash
# labels: mysql sql
# timeout: 120
# fixtures: mariadb
# GET_LOCK names are server-wide, so idkeeper's lock name holds the database
# (docs/recipes.md, "MySQL and MariaDB: GET_LOCK"): /x held in one database does
# not block /x in another database on the same server (before, `idkeeper lock
# --timeout 2000 /x` there exited 124, and one deployment's election starved
# another's); the same key in the same database still excludes (124); an SQL client
# holding the documented name GET_LOCK('ik/DB/lock:/x') excludes idkeeper in DB.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
U1=$(my_uri lka)
U2=$(my_uri lkb)
DB2=${U2##*/}

"$IK_BIN" lock --coord "$U1" /x -- sh -c 'touch "$0/held"; exec sleep 60' "$T" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 20 test -e "$T/held" || fail "a did not get /x in ${U1##*/}: $(cat "$T/a.err")"
rc=0
"$IK_BIN" lock --coord "$U2" --timeout 2000 /x -- true 2>"$T/b.err" || rc=$?
[ "$rc" = 0 ] || fail "lock /x in $DB2 exited $rc while /x is held in another database: $(cat "$T/b.err")"
rc=0
"$IK_BIN" lock --coord "$U1" --timeout 1000 /x -- true 2>"$T/c.err" || rc=$?
[ "$rc" = 124 ] || fail "lock /x in the holder's own database exited $rc, not 124: $(cat "$T/c.err")"
pass "/x held in one database: /x in another granted at once, in the same one 124"

# the documented name, from an SQL client
my_sql -e "SELECT GET_LOCK('ik/$DB2/lock:/app', 30), SLEEP(30)" >/dev/null 2>&1 &
app=$!
IK_PIDS+=($app)
held() { [ "$(my_sql -e "SELECT IS_USED_LOCK('ik/$DB2/lock:/app') IS NOT NULL")" = 1 ]; }
wait_until 10 held || fail "the SQL client did not take ik/$DB2/lock:/app"
rc=0
"$IK_BIN" lock --coord "$U2" --timeout 1000 /app -- true 2>"$T/d.err" || rc=$?
[ "$rc" = 124 ] || fail "idkeeper lock /app in $DB2 exited $rc while a client held GET_LOCK('ik/$DB2/lock:/app'): $(cat "$T/d.err")"
pass "an SQL client holding GET_LOCK('ik/$DB2/lock:/app') excludes idkeeper lock /app in $DB2 (124)"
