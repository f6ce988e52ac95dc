#!/usr/bin/env bash
# labels: mysql recipes
# timeout: 120
# fixtures: mariadb
# A lock holder whose database connection is killed (KILL on MariaDB, docs/sql.md):
# the server frees the GET_LOCK with the session; the holder's ping fails, it
# learns it lost the lock, its CMD gets SIGTERM and `idkeeper lock` exits 125 saying
# so; a waiter takes the lock at once, with a greater fencing token. Then the same
# for `idkeeper elect --once`: the leader's CMD is stopped.
# Then the documented key: an SQL client holding GET_LOCK("ik/DB/lock:/app") excludes
# `idkeeper lock /app`. Last, a released lock keeps its connection for its next
# acquire (docs/recipes.md): after a resign it holds nothing (the other candidate
# leads), and once the server has killed it, the next campaign opens a new one.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
U=$(my_uri lockkill)
LOCK=("$IK_BIN" lock --coord "$U")

# holder_thread KEY: the connection id that holds the GET_LOCK of KEY in U's
# database (docs/recipes.md)
holder_thread() {
  my_sql -D "${U##*/}" -e "SELECT IS_USED_LOCK(IF(CHAR_LENGTH(CONCAT(DATABASE(), '/', '$1')) <= 61,
    CONCAT('ik/', DATABASE(), '/', '$1'), CONCAT('ik#', LEFT(SHA2(CONCAT(DATABASE(), '/', '$1'), 256), 61))))"
}

"${LOCK[@]}" /res -- sh -c 'echo $$ >"$0/a.pid"; echo "$IDKEEPER_FENCE" >"$0/a.fence"; exec sleep 300' "$T" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 20 test -s "$T/a.fence" || fail "a did not get the lock: $(cat "$T/a.err")"
# CMD's pid out here (it may run in a PID namespace of its own: docs/recipes.md)
acmd=$(host_pid $a "$(cat "$T/a.pid")") || fail "a's CMD not found"
"${LOCK[@]}" /res -- sh -c 'echo "$IDKEEPER_FENCE" >"$0/b.fence"' "$T" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
wait_until 10 my_lock_waiting "${U##*/}" lock:/res || fail "b never waited for /res: $(cat "$T/b.err")"
[ ! -e "$T/b.fence" ] || fail "b got the lock while a holds it"

th=$(holder_thread lock:/res)
[ -n "$th" ] && [ "$th" != NULL ] || fail "no session holds lock:/res"
my_sql -e "KILL $th"
mono_ms t0
log "killed a's connection (thread $th)"
rc=0
wait $a || rc=$?
took=$(($(mono_ms) - t0))
[ $rc = 125 ] || fail "a exited $rc after its connection was killed, not 125 (lost): $(cat "$T/a.err")"
grep -q "lost the lock" "$T/a.err" || fail "a did not say it lost the lock: $(cat "$T/a.err")"
((took < 10000)) || fail "a took $took ms to notice"
wait_until 5 not alive "$acmd" || fail "a's CMD still runs after a lost the lock"
wait $b || fail "b failed: $(cat "$T/b.err")"
(($(cat "$T/b.fence") > $(cat "$T/a.fence"))) || fail "fences do not increase: a $(cat "$T/a.fence"), b $(cat "$T/b.fence")"
pass "KILL of the holder's connection: a exited 125 after $took ms, its CMD stopped; b took the lock, fences $(cat "$T/a.fence") < $(cat "$T/b.fence")"

"$IK_BIN" elect --coord "$U" --once --id leader1 /el -- sh -c 'echo $$ >"$0/e.pid"; exec sleep 300' "$T" 2>"$T/e.err" &
e=$!
IK_PIDS+=($e)
wait_until 20 test -s "$T/e.pid" || fail "the candidate did not lead: $(cat "$T/e.err")"
ecmd=$(host_pid $e "$(cat "$T/e.pid")") || fail "the leader's CMD not found"
th=$(holder_thread elect:/el)
[ -n "$th" ] && [ "$th" != NULL ] || fail "no session holds elect:/el"
my_sql -e "KILL $th"
rc=0
wait $e || rc=$?
[ $rc -ne 0 ] || fail "elect --once exited 0 after losing the lead"
wait_until 5 not alive "$ecmd" || fail "the leader's CMD still runs after the lead was lost"
pass "KILL of the leader's connection: its CMD stopped, elect --once exited $rc: $(tail -n 1 "$T/e.err")"

# the documented key (docs/recipes.md): an app holding GET_LOCK('ik/DB/lock:/app')
# excludes `idkeeper lock /app`, and is not excluded by a holder that went
# (held until its connection is killed below: a fixed hold of 4 s raced with a loaded
# machine's slow checks)
APP_LOCK="ik/${U##*/}/lock:/app"
my_sql -e "SELECT GET_LOCK('$APP_LOCK', 10), SLEEP(120), RELEASE_LOCK('$APP_LOCK')" >/dev/null 2>&1 &
app=$!
app_held() { [ "$(holder_thread lock:/app)" != NULL ]; }
wait_until 10 app_held || fail "the SQL client did not take GET_LOCK('$APP_LOCK')"
rc=0
"${LOCK[@]}" --timeout 1000 /app -- true 2>"$T/app.err" || rc=$?
[ $rc = 124 ] || fail "idkeeper lock /app exited $rc while an SQL client held its key, not 124: $(cat "$T/app.err")"
my_sql -e "KILL $(holder_thread lock:/app)" || fail "could not end the SQL client's connection"
wait $app || true
"${LOCK[@]}" --timeout 5000 /app -- true 2>"$T/app.err" || fail "idkeeper lock /app failed once the client was gone: $(cat "$T/app.err")"
pass "an SQL client holding GET_LOCK('$APP_LOCK') excludes idkeeper lock /app (124); once its connection is gone, the lock is granted"

# spare: a lock's kept connection (tests/integration/sql_spare.sh)
source "$(dirname "$0")/sql_spare.sh"
latch_free() { [ "$(holder_thread elect:/sp)" = NULL ]; }
end_sessions() {
  local id
  for id in $(my_sql -e "SELECT id FROM information_schema.processlist WHERE db = '${U##*/}'"); do
    my_sql -e "KILL $id" 2>/dev/null || true
  done
}
spare_case "$U"
