#!/usr/bin/env bash
# labels: postgresql sql counters
# timeout: 180
# fixtures: postgres
# The tag connections' pool and the commit marks on postgresql:// (docs/sql.md,
# "Connections" and "Tags"):
#   idle   a pooled connection that the server ended while it was idle
#          (idle_session_timeout = 2 s, set on this test's database only) is not
#          used again: a request after 4 s idle is answered 200, three times over;
#   marks  idk_commit_mark is pruned at open: a mark older than a day (a writer
#          that crashed long ago) is deleted, a recent one (a writer that may still
#          settle a doubt) is kept; and a server that stops cleanly deletes its own
#          marks, having settled every doubt.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
P=$PG_SHARED_PORT
db=tidle_$$
URI=$(pg_new_db "$P" "$db")
sql() { pg_psql "$P" "$db" "$1"; }

"$IK_BIN" tags add orders --kind sequence --coord "$URI" >/dev/null || fail "tags add failed"
sql "ALTER DATABASE $db SET idle_session_timeout = '2s'" >/dev/null
serve_on s --coord "$URI" || fail "serve did not start: $(tail -n 5 "$T/s.log")"
get() { curl -s -o "$T/body" -w '%{http_code}' -m 30 "http://127.0.0.1:$PORT/v1/sequence/orders?format=text"; }
code=$(get)
[ "$code" = 200 ] || fail "the first request answered $code: $(cat "$T/body")"
for i in 1 2 3; do
  sleep 4 # longer than idle_session_timeout: the server ends the pooled connection
  code=$(get)
  [ "$code" = 200 ] || fail "idle: request $i after 4 s idle answered $code: $(cat "$T/body"); log: $(tail -n 3 "$T/s.log")"
done
pass "idle: three requests, each after 4 s idle (idle_session_timeout 2 s), answered 200"
kill -TERM "${SERVER_PID[s]}"
wait "${SERVER_PID[s]}" || fail "serve did not exit 0: $(tail -n 5 "$T/s.log")"
sql "ALTER DATABASE $db RESET idle_session_timeout" >/dev/null
left=$(sql "SELECT count(*) FROM idk_commit_mark")
[ "$left" = 0 ] || fail "marks: a clean stop left $left marks: $(sql "SELECT * FROM idk_commit_mark")"
pass "marks: a clean stop deleted the server's own marks"

now="(extract(epoch from clock_timestamp()) * 1000)::bigint"
sql "INSERT INTO idk_commit_mark VALUES ('0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00', 'orders', 7, $now - 2 * 86400000),
     ('recentrecentrecentrecentrecent00', 'orders', 9, $now - 3600000)" >/dev/null
"$IK_BIN" tags list --coord "$URI" >/dev/null || fail "tags list failed"
have=$(sql "SELECT writer FROM idk_commit_mark ORDER BY writer" | tr '\n' ' ')
[ "$have" = "recentrecentrecentrecentrecent00 " ] || fail "marks: after an open the table holds: ${have:-nothing} (want the recent mark only)"
pass "marks: an open pruned the mark of two days ago and kept the one of an hour ago"
