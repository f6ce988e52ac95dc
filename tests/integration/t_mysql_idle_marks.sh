#!/usr/bin/env bash
# labels: mysql sql counters
# timeout: 240
# The tag connections' pool and the commit marks on mysql:// (docs/sql.md,
# "Connections" and "Tags"), on a server of this test's own:
#   idle   a pooled connection that the server ended while it was idle (KILL, as a
#          restart or an idle limit would) is not used again: a request after its
#          sessions were killed is answered 200, three times over (the idle limit
#          of our own, wait_timeout = TTL: t_mysql_idle_wait);
#   marks  idk_commit_mark is pruned at open: a mark older than a day (a writer
#          that crashed long ago) is deleted, a recent one (a writer that may still
#          settle a doubt) is kept; and a server that stops cleanly deletes its own
#          marks, having settled every doubt.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
URI=$(my_uri idle)
DB=${URI##*/}
sql() { my_sql -D "$DB" -e "$1"; }

"$IK_BIN" tags add orders --kind sequence --coord "$URI" >/dev/null || fail "tags add failed"
serve_on s --coord "$URI" || fail "serve did not start: $(tail -n 5 "$T/s.log")"
get() { curl -s -o "$T/body" -w '%{http_code}' -m 30 "http://127.0.0.1:$PORT/v1/sequence/orders?format=text"; }
code=$(get)
[ "$code" = 200 ] || fail "the first request answered $code: $(cat "$T/body")"
ours() { my_sql -e "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = '$DB' AND USER = '$MDB_USER'"; }
for i in 1 2 3; do
  ids=$(ours)
  [ -n "$ids" ] || fail "idle: no session of the server in the database"
  for id in $ids; do my_sql -e "KILL CONNECTION $id" 2>/dev/null || true; done
  gone() { ! ours | grep -qxF "$ids"; } # none of the killed ones (a slot's may reconnect)
  wait_until 15 gone || fail "idle: killed sessions are still there: $(ours | tr '\n' ' ')"
  code=$(get)
  [ "$code" = 200 ] || fail "idle: request $i after its sessions ($(echo "$ids" | tr "\n" " ")) were killed answered $code: $(cat "$T/body"); log: $(tail -n 3 "$T/s.log")"
done
pass "idle: three requests, each after the server's sessions were killed while idle, answered 200"
kill -TERM "${SERVER_PID[s]}"
wait "${SERVER_PID[s]}" || fail "serve did not exit 0: $(tail -n 5 "$T/s.log")"
left=$(sql "SELECT count(*) FROM idk_commit_mark")
[ "$left" = 0 ] || fail "marks: a clean stop left $left marks: $(sql "SELECT * FROM idk_commit_mark")"
pass "marks: a clean stop deleted the server's own marks"

now="CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
sql "INSERT INTO idk_commit_mark VALUES ('0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00', 'orders', 7, $now - 2 * 86400000),
     ('recentrecentrecentrecentrecent00', 'orders', 9, $now - 3600000)"
"$IK_BIN" tags list --coord "$URI" >/dev/null || fail "tags list failed"
have=$(sql "SELECT writer FROM idk_commit_mark ORDER BY writer" | tr '\n' ' ')
[ "$have" = "recentrecentrecentrecentrecent00 " ] || fail "marks: after an open the table holds: ${have:-nothing} (want the recent mark only)"
pass "marks: an open pruned the mark of two days ago and kept the one of an hour ago"
