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
URI=$(my_uri proof)
UNSAFE_NAME="innodb_flush_log_at_trx_commit is 0"
unsafe_set() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 0'; }
unsafe_unset() { my_sql -e 'SET GLOBAL innodb_flush_log_at_trx_commit = 1'; }
source "$(dirname "$0")/sql_proof.sh"
