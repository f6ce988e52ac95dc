# shellcheck shell=bash
# idle_marks.sh: the checks t_mysql_idle_marks and t_pg_idle_marks share (bash, sourced
# after lib.sh), on the tag connections' pool and the commit marks (docs/sql.md,
# "Connections" and "Tags").
#
#   idle_marks LIMIT NOW   runs both checks against URI. The caller defines sql (one
#                          statement on the test's database, prints the rows) and may
#                          define idle_on (after the tag is made, before serve: sets
#                          the server's idle limit to 2 s) and idle_off (after serve
#                          stopped). LIMIT names the limit in the messages
#                          ("wait_timeout 2"); NOW is the store's SQL for now in ms.
#   idle   a pooled connection that the server closed while it was idle is not used
#          again: a request after 4 s idle is answered 200, three times over;
#   marks  a server that stops cleanly deletes its own marks, having settled every
#          doubt; and idk_commit_mark is pruned at open: a mark older than a day (a
#          writer that crashed long ago) is deleted, a recent one (a writer that may
#          still settle a doubt) is kept.
idle_marks() {
  local limit=$1 now=$2 code i left have
  "$IK_BIN" tags add orders --kind sequence --coord "$URI" >/dev/null || fail "tags add failed"
  if declare -F idle_on >/dev/null; then idle_on; fi
  serve_on s --coord "$URI" || fail "serve did not start: $(tail -n 5 "$T/s.log")"
  code=$(_idle_marks_get)
  [ "$code" = 200 ] || fail "the first request answered $code: $(cat "$T/body")"
  for i in 1 2 3; do
    sleep 4 # let time pass: longer than the idle limit: the server ends the pooled connection
    code=$(_idle_marks_get)
    [ "$code" = 200 ] || fail "idle: request $i after 4 s idle answered $code: $(cat "$T/body"); log: $(tail -n 3 "$T/s.log")"
  done
  pass "idle: three requests, each after 4 s idle ($limit), answered 200"
  kill -TERM "${SERVER_PID[s]}"
  wait "${SERVER_PID[s]}" || fail "serve did not exit 0: $(tail -n 5 "$T/s.log")"
  if declare -F idle_off >/dev/null; then idle_off; fi
  left=$(sql "SELECT count(*) FROM idk_commit_mark")
  [ "$left" = 0 ] || fail "marks: a clean stop left $left marks: $(sql "SELECT * FROM idk_commit_mark")"
  pass "marks: a clean stop deleted the server's own marks"

  sql "INSERT INTO idk_commit_mark VALUES ('0ld0ld0ld0ld0ld0ld0ld0ld0ld0ld00', 'orders', 7, $now - 2 * 86400000),
       ('recentrecentrecentrecentrecent00', 'orders', 9, $now - 3600000)" >/dev/null
  "$IK_BIN" tags list --coord "$URI" >/dev/null || fail "tags list failed"
  have=$(sql "SELECT writer FROM idk_commit_mark ORDER BY writer" | tr '\n' ' ')
  [ "$have" = "recentrecentrecentrecentrecent00 " ] || fail "marks: after an open the table holds: ${have:-nothing} (want the recent mark only)"
  pass "marks: an open pruned the mark of two days ago and kept the one of an hour ago"
}

_idle_marks_get() {
  curl -s -o "$T/body" -w '%{http_code}' -m 30 "http://127.0.0.1:$PORT/v1/sequence/orders?format=text"
}
