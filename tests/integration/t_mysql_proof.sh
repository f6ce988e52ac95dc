#!/usr/bin/env bash
# labels: mysql
# timeout: 240
# Proof with every write on MariaDB (docs/hazards.md, "MySQL and MariaDB"):
#   1. SET GLOBAL completion_type = 'CHAIN': every session of ours sets NO_CHAIN and
#      reads it back. Before, a slot's take COMMIT opened a chained transaction in
#      which every renewal ran and never committed: another session saw the row's
#      expiry stuck at the take's, and once the holder's sessions died another
#      server took the worker while the holder still issued (duplicate snowflake
#      IDs). Here another session sees the expiry advance at every look, and
#      `idkeeper check` shows completion_type NO_CHAIN read back.
#   2. SET GLOBAL innodb_flush_log_at_trx_commit = 0 under a running server: the
#      next write carries it (tests/integration/sql_proof.sh says how).
#   3. A session left in a transaction after a COMMIT by something no check reads
#      (test hooks: completion_type CHAIN set on the connection just before the
#      COMMIT, docs/sql.md "Test hooks"); the COMMIT's own answer shows the open
#      transaction:
#      - before each take's COMMIT: the take is released, never granted: serve
#        refuses to start naming "session transaction", and no slot row is held;
#      - before each advance's COMMIT: every sequence request is answered 503 and
#        its committed range logged as a gap (why=store_unsafe): the gaps cover
#        leaf_alloc's advance exactly, and no ID is answered.
# A server of its own (global settings).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
TTL=3000

# ---- 1. completion_type = CHAIN --------------------------------------------------------
my_sql -e "SET GLOBAL completion_type = 'CHAIN'"
U=$(my_uri chain)
DB=${U##*/}
row() { my_sql -e "SELECT $1 FROM \`$DB\`.idk_slots WHERE app = 'default' AND worker = 0"; }
serve_on a --coord "$U" --worker-range 0-0 --lease-ttl "$TTL" || fail "server a did not start: $(tail -n 5 "$T/a.log")"
PA=$PORT
fetch_ids "$PA" 100 "$T/a.ids" || fail "no IDs from a"
prev=$(row expires_ms)
[ -n "$prev" ] || fail "no committed slot row for worker 0"
# advanced PREV: another session sees the row's expiry past PREV (a renewal committed)
advanced() { local e; e=$(row expires_ms) && [ -n "$e" ] && ((e > $1)); }
for i in 1 2 3 4; do
  wait_until 10 advanced "$prev" || true # judged below, with what the row says
  e=$(row expires_ms)
  left=$(row "expires_ms - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
  ((e > prev)) || fail "completion_type CHAIN, look $i: the row's committed expiry did not advance in 10 s ($prev then $e): renewals do not commit"
  ((left > 0)) || fail "completion_type CHAIN, look $i: the row's committed expiry is $left ms away while a is ready"
  prev=$e
done
"$IK_BIN" check --coord "$U" >"$T/check-chain.out" 2>&1 || fail "idkeeper check exited non-zero: $(cat "$T/check-chain.out")"
grep -Eq '^session completion_type +NO_CHAIN +ok' "$T/check-chain.out" || fail "check does not show completion_type NO_CHAIN ok: $(cat "$T/check-chain.out")"
kill "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" 2>/dev/null || true
my_sql -e "SET GLOBAL completion_type = 'NO_CHAIN'"
pass "completion_type CHAIN: renewals committed (another session saw the expiry advance at 4 looks), check shows NO_CHAIN read back"

# ---- 2. the setting rides with the write ----------------------------------------------
URI=$(my_uri proof)
UNSAFE_NAME="innodb_flush_log_at_trx_commit is 0"
unsafe_set() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 0'; }
unsafe_unset() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1'; }
source "$(dirname "$0")/sql_proof.sh"

# ---- 3. a transaction left open after the COMMIT -------------------------------------
U=$(my_uri chainhook)
DB=${U##*/}
CHAIN="SET SESSION completion_type = 'CHAIN'"
"$IK_BIN" tags add q --kind sequence --coord "$U" >/dev/null || fail "tags add q"
rc=0
IDKEEPER_TEST_SQL_BEFORE_TAKE_COMMIT=$CHAIN timeout 30 "$IK_BIN" serve --http "127.0.0.1:$(free_port)" --coord "$U" \
  --identity c --lease-ttl 30000 >"$T/c.log" 2>&1 || rc=$?
[ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "serve with a transaction left open after its take's COMMIT exited $rc: $(tail -n 3 "$T/c.log")"
grep -q "session transaction is open" "$T/c.log" || fail "serve's refusal does not name the session transaction: $(tail -n 3 "$T/c.log")"
rows=$(my_sql -e "SELECT COUNT(*) FROM \`$DB\`.idk_slots")
held=$(my_sql -e "SELECT COUNT(*) FROM \`$DB\`.idk_slots WHERE token <> '' AND expires_ms > CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
((rows >= 1)) || fail "no slot row: the take was never committed"
[ "$held" = 0 ] || fail "$held slot rows are held after serve refused its takes"
pass "completion_type CHAIN before the take's COMMIT: serve refused naming the session transaction, the committed take released ($rows row, none held)"

PC=$(free_port)
IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT=$CHAIN start_server d "$PC" --coord "$U" --lease-ttl 30000
wait_ready "$PC" 30 || fail "d not ready: $(tail -n 5 "$T/d.log")"
for i in 1 2 3 4 5; do
  code=$(ik_http "http://127.0.0.1:$PC/v1/sequence/q?count=3&format=text" "$T/d.body")
  [ "$code" = 503 ] || fail "sequence request $i answered $code with a transaction left open after the COMMIT: $(cat "$T/d.body")"
done
max=$(my_sql -e "SELECT max_id FROM \`$DB\`.leaf_alloc WHERE biz_tag = 'q'")
{ grep -o 'tag gap tag=q first=[0-9]* count=[0-9]* why=store_unsafe' "$T/d.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\).*/\1 \2/' | sort -n >"$T/gaps"
[ -s "$T/gaps" ] || fail "no advance was committed and logged as a gap (max_id $max): $(tail -n 5 "$T/d.log")"
# the gaps, one after another from 1, end where leaf_alloc's max_id says the next ID is
awk -v max="$max" 'BEGIN { next_id = 1 } { if ($1 != next_id) { print "gap at " $1 ", expected " next_id; bad = 1; exit } next_id = $1 + $2 }
  END { if (!bad && next_id != max) { print "the gaps end at " next_id ", max_id is " max; bad = 1 } exit bad }' "$T/gaps" ||
  fail "the logged gaps do not cover the committed advances: $(tr '\n' ' ' <"$T/gaps")"
pass "completion_type CHAIN before each advance's COMMIT: 5 sequence requests 503, the $(wc -l <"$T/gaps") committed ranges logged as gaps up to max_id $max"
