#!/usr/bin/env bash
# labels: mysql sql
# timeout: 180
# fixtures: mariadb
# Every session of ours has wait_timeout = --lease-ttl in s (docs/sql.md "Session
# settings"), so the server ends a pooled connection that sits idle that long. A
# server idle for twice that must then serve sequence and snowflake IDs with no
# 503: the pool replaces a connection idle for half its wait_timeout before it
# sends on it, and the slot's connection, renewed every TTL/3, never idles that
# long. Three rounds of: requests (200), 2 x wait_timeout idle, the pooled sessions
# idle past wait_timeout gone from the database, requests again (all 200).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
URI=$(my_uri idlew)
DB=${URI##*/}
TTL=2000
W=2 # s: the wait_timeout of --lease-ttl 2000
"$IK_BIN" tags add orders --kind sequence --coord "$URI" >/dev/null || fail "tags add failed"
serve_on s --coord "$URI" --lease-ttl "$TTL" || fail "serve did not start: $(tail -n 5 "$T/s.log")"

sessions() { # the server's sessions: id, command, idle ms
  my_sql -e "SELECT ID, COMMAND, TIME_MS FROM information_schema.PROCESSLIST
    WHERE DB = '$DB' AND USER = '$MDB_USER'"
}
# none of them idle for more than wait_timeout and a second of the server's rounding
none_overdue() { [ -z "$(sessions | awk -v lim=$((W * 1000 + 1000)) '$3 > lim')" ]; }
requests() {
  local what code i
  for i in 1 2 3; do
    for what in "sequence/orders?format=text" "snowflake?format=text&count=10"; do
      code=$(ik_http "http://127.0.0.1:$PORT/v1/$what" "$T/body" 30)
      [ "$code" = 200 ] || fail "round $1: GET /v1/$what answered $code: $(cat "$T/body"); log: $(tail -n 3 "$T/s.log")"
    done
  done
}

requests 0
for round in 1 2 3; do
  before=$(sessions | awk '{print $1}' | sort | tr '\n' ' ')
  sleep $((2 * W)) # idle: twice the wait_timeout, no request
  wait_until 15 none_overdue ||
    fail "round $round: after $((2 * W)) s idle, sessions idle past wait_timeout ($W s) are still in the database: $(sessions | tr '\n' ';')"
  after=$(sessions | awk '{print $1}' | sort | tr '\n' ' ')
  requests "$round"
  log "round $round: sessions before the idle: $before; after it: $after; requests all 200"
done
pass "three rounds of $((2 * W)) s idle (wait_timeout $W s, --lease-ttl $TTL): the server ended the idle pooled sessions, and sequence and snowflake requests after each idle all answered 200"
