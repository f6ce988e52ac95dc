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
#   2. A durability setting turned unsafe under a running server with a long hazard
#      interval (--lease-ttl 30000: 10 s): the sequence request sent right after
#      SET GLOBAL innodb_flush_log_at_trx_commit = 0 returned is answered 503
#      naming it (the setting rides in the advance's own round trip), /readyz fails
#      within 2 s (the renewal's round trip carries it too), not after the 10 s
#      interval; once put back, the server serves again, and the sequence IDs
#      answered form one run.
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
for i in 1 2 3 4; do
  sleep 2
  e=$(row expires_ms)
  left=$(row "expires_ms - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
  ((e > prev)) || fail "completion_type CHAIN, look $i (after $((i * 2)) s): the row's committed expiry did not advance ($prev then $e): renewals do not commit"
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
U=$(my_uri proof)
"$IK_BIN" tags add q --kind sequence --coord "$U" >/dev/null || fail "tags add q"
serve_on b --coord "$U" --lease-ttl 30000 || fail "server b did not start: $(tail -n 5 "$T/b.log")"
PB=$PORT
base=http://127.0.0.1:$PB
: >"$T/seq.ids"
seq_get() {
  local code
  code=$(ik_http "$base/v1/sequence/q?count=5&format=text" "$T/seq.body")
  [ "$code" != 200 ] || cat "$T/seq.body" >>"$T/seq.ids"
  echo "$code"
}
for i in 1 2 3; do [ "$(seq_get)" = 200 ] || fail "no sequence IDs before the setting: $(cat "$T/seq.body")"; done
sleep 1 # the pooled connection's last check is fresh: the interval (10 s) is far off
my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 0'
mono_ms t0
code=$(seq_get)
[ "$code" = 503 ] || fail "the sequence request sent after SET GLOBAL innodb_flush_log_at_trx_commit = 0 returned was answered $code: $(cat "$T/seq.body")"
grep -q 'innodb_flush_log_at_trx_commit is 0' "$T/seq.body" || fail "the 503 does not name the setting: $(cat "$T/seq.body")"
rz() { [ "$(ik_http "$base/readyz" "$T/readyz.body")" = 503 ]; }
wait_until 2 rz || fail "/readyz still 200 2 s after the setting (the interval is 10 s): $(cat "$T/readyz.body")"
rzms=$(($(mono_ms) - t0))
grep -q 'innodb_flush_log_at_trx_commit is 0' "$T/readyz.body" || fail "/readyz does not name the setting: $(cat "$T/readyz.body")"
wait_grep 'store hazard: .*innodb_flush_log_at_trx_commit is 0' "$T/b.log" 2 || fail "no log line names the setting: $(tail -n 5 "$T/b.log")"
for i in 1 2 3; do [ "$(seq_get)" = 503 ] || fail "a sequence request answered while the setting is 0"; done
my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1'
serving() { [ "$(seq_get)" = 200 ] && ready_probe "$PB"; }
wait_until 3 serving || fail "not serving 3 s after the setting was put back: $(tail -n 5 "$T/b.log")"
assert_unique "$T/seq.ids"
assert_increasing "$T/seq.ids"
[ "$(tail -n 1 "$T/seq.ids")" = "$(wc -l <"$T/seq.ids")" ] || fail "the sequence IDs answered are not one run from 1: $(tr '\n' ' ' <"$T/seq.ids")"
pass "innodb_flush_log_at_trx_commit = 0 under a server with a 10 s interval: the next sequence request 503 naming it, /readyz failing after $rzms ms; put back: serving, $(wc -l <"$T/seq.ids") sequence IDs in one run"
