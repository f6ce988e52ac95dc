#!/usr/bin/env bash
# labels: sql counters release
# timeout: 300
# processors: 2
# variants: postgresql mysql
# Two batch writes of one sequence tag in flight (docs/sequence.md, "Two writes in
# flight"): once a batch holds leaf_alloc's row lock, the committer sends the next
# batch's pipeline, which waits on that lock while the first commits. This tries to
# break it, on a database of the test's own, every batch holding its row lock
# before its COMMIT (IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS) so that the second write
# waits on it for long:
#   1. one server, 16 clients: a second transaction of the server waits for the row
#      lock while the first holds it (two writes in flight; one at a time, nothing
#      of the server ever waits), and the ranges it committed, in the order its log
#      shows them handed out, are one run without a hole or a step back (the second
#      write is placed behind the first, and answered after it);
#   2. two servers, 16 clients each, on another tag: the database frozen (SIGSTOP)
#      with pipelines and COMMITs in flight, killed -9 and started again, and then
#      one server killed -9 with its batches in flight. Every ID of 1..max_id-1
#      that no client received lies in a range a server logged as committed or as a
#      gap (tests/tools/seqgaps.py), none is received twice, and each server's
#      logged ranges only ever increase.
source "$(dirname "$0")/lib.sh"
case $IK_STORE in
  postgresql)
    IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
    export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
    own_stop() { pg_own_stop "$T/pg"; }
    IK_CLEANUPS+=(own_stop)
    pg_own_start "$T/pg" || fail "PostgreSQL did not start"
    DATA=$(pg_new_db "$PG_PORT" d)
    # transactions of the test's database waiting for a row lock on leaf_alloc
    lock_waits() {
      pg_psql "$PG_PORT" d "SELECT count(*) FROM pg_stat_activity WHERE datname = 'd'
        AND wait_event_type = 'Lock' AND query ILIKE '%leaf_alloc%'"
    }
    db_freeze() {
      local pid
      pid=$(cat "$T/pg/pid")
      kill -STOP $(pgrep -P "$pid") "$pid"
    }
    db_kill() { pg_own_kill "$T/pg"; }
    db_up() { pg_own_up "$T/pg" "$PG_PORT" || fail "PostgreSQL did not come back"; }
    ;;
  mysql)
    source "$(dirname "$0")/mysql.sh"
    my_start
    DATA=$(my_uri ovl)
    lock_waits() {
      my_sql -e "SELECT count(*) FROM information_schema.innodb_trx
        WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE '%leaf_alloc%'"
    }
    db_freeze() { kill -STOP "$MY_PID"; }
    db_kill() { my_kill KILL; }
    db_up() { my_restart; }
    ;;
  *) fail "IK_STORE must be postgresql or mysql, not '$IK_STORE'" ;;
esac
IK_STORE=local # counters.sh's helpers; the store is DATA
CONF_COUNTERS=1
source "$IK_SRC/tests/tools/counters.sh"
SERVE_ARGS=(--lease-ttl 10000)
export IDKEEPER_LOG_SEQUENCE_COMMITS=1

# ranges LOG TAG: the "sequence tag=TAG first=A count=K" lines of LOG as "A K", in
# the order the server handed them out
ranges() { sed -n "s/.*sequence tag=$2 first=\([0-9]*\) count=\([0-9]*\).*/\1 \2/p" "$1"; }

# 1. one server: two writes in flight, handed out in order
IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS=50 fleet 1
add_tag s1 a sequence ',"start":1'
hammer a "$(url s1)/v1/sequence/a?count=1&format=text" 16 8
waiting() { [ "$(lock_waits)" -ge 1 ]; }
wait_until 8 waiting ||
  fail "no second write of s1 ever waited for the row lock of tag a: one write in flight at a time"
pass "a second write of s1 waits for the row lock while the first holds it"
hammer_wait a
[ "$(hammer_field a errors)" = 0 ] || fail "tag a: errors: $(cat "$T/a.hammer")"
ranges "$T/s1.log" a >"$T/a.ranges"
awk 'NR == 1 && $1 != 1 { printf "the first range starts at %s, not 1\n", $1; bad = 1; exit }
     NR > 1 && $1 != next_ { printf "range %d starts at %s, not at %s where range %d ended\n", NR, $1, next_, NR - 1; bad = 1; exit }
     { next_ = $1 + $2 }
     END { if (!bad) printf "%d ranges, %d IDs\n", NR, next_ - 1; exit bad }' "$T/a.ranges" >"$T/a.order" ||
  fail "tag a: s1 handed its ranges out of order: $(cat "$T/a.order")"
sort -n "$T/a.ids" | uniq -d | head -n 3 >"$T/a.dups"
[ ! -s "$T/a.dups" ] || fail "tag a: IDs received twice: $(cat "$T/a.dups")"
pass "tag a: s1 handed out one run in order, none twice: $(cat "$T/a.order")"
stop_clean s1

# 2. two servers; the database frozen, killed -9, back; then a server killed -9
export IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS=20
fleet 2
add_tag s1 b sequence ',"start":1'
for s in s1 s2; do
  hammer "b.$s" "$(url $s)/v1/sequence/b?count=1&format=text" 16 16 --reconnect
done
serves_again() {
  local s
  for s in s1 s2; do
    curl -fsS --max-time 3 "$(url $s)/v1/sequence/b?format=text" >>"$T/b.curl.ids" 2>/dev/null || return 1
    echo >>"$T/b.curl.ids"
  done
}
sleep 3
wait_until 5 waiting || fail "no write waited for the row lock of tag b before the freeze"
db_freeze
log "database frozen (SIGSTOP) with writes in flight"
sleep 1
db_kill
log "database killed -9 while frozen"
sleep 1
db_up
wait_until 20 serves_again || fail "the servers do not serve tag b 20 s after the database's return"
log "both serve tag b again"
sleep 2
wait_until 5 waiting || fail "no write waited for the row lock of tag b before the kill of s2"
kill -KILL "${SERVER_PID[s2]}"
wait "${SERVER_PID[s2]}" 2>/dev/null || true
log "s2 killed -9 with writes in flight"
for s in s1 s2; do hammer_wait "b.$s"; done
[ "$(hammer_field b.s1 ok)" -gt 100 ] || fail "s1 answered few requests: $(cat "$T/b.s1.hammer")"
end=$(tag_field s1 b max_id)
stop_clean s1 # a doubt still open is settled or logged at the stop
sed '/^$/d' "$T/b.curl.ids" >"$T/b.curl.clean"
python3 "$IK_SRC/tests/tools/seqgaps.py" 1 "$end" b "$T/s1.log" "$T/s2.log" -- \
  "$T/b.s1.ids" "$T/b.s2.ids" "$T/b.curl.clean" >"$T/check" ||
  fail "tag b: $(cat "$T/check")"
pass "tag b: $(cat "$T/check")"
for s in s1 s2; do
  ranges "$T/$s.log" b | awk '$1 <= last { printf "range %d (%s) is not above the one before (%s)\n", NR, $1, last; bad = 1; exit }
    { last = $1 } END { if (!bad) printf "%d ranges, increasing\n", NR; exit bad }' >"$T/$s.order" ||
    fail "tag b: $s handed a range out of order: $(cat "$T/$s.order")"
  log "$s: $(cat "$T/$s.order")"
done
settled=$(cat "$T/s1.log" "$T/s2.log" | grep -c 'tag doubt settled tag=b \|tag gap tag=b ' || true)
pass "tag b: each server's ranges increase; doubts settled or gaps logged: $settled"
