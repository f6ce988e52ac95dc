#!/usr/bin/env bash
# labels: mysql
# timeout: 240
# A MariaDB with SET GLOBAL autocommit = 0 (docs/sql.md "Session settings",
# docs/hazards.md "MySQL and MariaDB"). Without a session autocommit = 1 of its own,
# every slot renewal sat in a transaction that never committed although the server
# answered OK; when the slot's connection died they all rolled back, the row's
# expiry fell back to the take, and another server took the worker while the holder
# still issued (duplicate snowflake IDs). Here:
#   - a server holds worker 0 for 30 s, and another session sees the row's expiry
#     advance at every look, always in the future;
#   - the holder's slot connection is killed (KILL CONNECTION): the row is still
#     held (not expired, same holder) in another session's view, a second server
#     on the same single worker does not take it, and no ID is issued twice;
#   - `idkeeper check` shows the session's autocommit read back as 1, exit 0.
# A server of its own (a global setting).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
my_sql -e "SET GLOBAL autocommit = 0"
[ "$(my_sql -e 'SELECT @@GLOBAL.autocommit')" = 0 ] || fail "SET GLOBAL autocommit = 0 did not hold"
U=$(my_uri ac)
DB=${U##*/}
TTL=3000

# row FIELD: the slot row's FIELD, in a new session of its own (autocommit 0 there
# too: a new session's first read sees what was committed, nothing else)
row() { my_sql -e "SELECT $1 FROM \`$DB\`.idk_slots WHERE app = 'default' AND worker = 0"; }

serve_on a --coord "$U" --worker-range 0-0 --lease-ttl "$TTL" || fail "server a did not start: $(tail -n 5 "$T/a.log")"
PA=$PORT
fetch_ids "$PA" 1000 "$T/a.ids" || fail "no IDs from a"

prev=$(row expires_ms)
[ -n "$prev" ] || fail "no committed slot row for worker 0"
# advanced PREV: another session sees the row's expiry past PREV (a renewal committed)
advanced() { local e; e=$(row expires_ms) && [ -n "$e" ] && ((e > $1)); }
for i in $(seq 1 10); do
  wait_until 10 advanced "$prev" || true # judged below, with what the row says
  e=$(row expires_ms)
  left=$(row "expires_ms - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
  ((e > prev)) || fail "look $i: the row's expiry did not advance in 10 s ($prev then $e): renewals do not commit"
  ((left > 0)) || fail "look $i: the row's expiry is $left ms away: expired in another session's view"
  prev=$e
done
pass "held: another session saw the expiry advance at each of 10 looks"

"$IK_BIN" check --coord "$U" >"$T/check.out" 2>&1 || fail "idkeeper check exited non-zero: $(cat "$T/check.out")"
grep -E 'session autocommit +1 +ok' "$T/check.out" >/dev/null || fail "check does not show autocommit 1 ok: $(cat "$T/check.out")"
pass "idkeeper check: exit 0, session autocommit 1 ok"

# a second server on the same single worker: it waits for a slot
PB=$(free_port)
start_server b "$PB" --coord "$U" --worker-range 0-0 --lease-ttl "$TTL"
: >"$T/a.ids"
probe a "http://127.0.0.1:$PA/v1/snowflake?count=200&format=text" "$T/probe.stop" 0.01 &
IK_PIDS+=($!)
probe b "http://127.0.0.1:$PB/v1/snowflake?count=200&format=text" "$T/probe.stop" 0.01 &
IK_PIDS+=($!)
b_waits() { [ "$(ik_http "http://127.0.0.1:$PB/readyz" "$T/b.readyz")" = 503 ] && grep -q "free slot" "$T/b.readyz"; }
both_going() { probe_answered a 5 && b_waits; }
wait_until 30 both_going || fail "a does not serve, or b does not wait for the slot: $(tail -n 2 "$T/b.log")"

thread=$(curl -fsS "http://127.0.0.1:$PA/v1/status" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["lease"]["session"].split()[-1])')
[[ $thread =~ ^[0-9]+$ ]] || fail "no slot session in a's status: $thread"
my_sql -e "KILL CONNECTION $thread" || fail "KILL CONNECTION $thread failed"
log "killed a's slot connection (thread $thread)"
left=$(row "expires_ms - CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)")
holder=$(row holder)
((left > 0)) || fail "right after the kill the row's expiry is $left ms away: the renewals rolled back"
[ "$holder" = a ] || fail "right after the kill the row's holder is '$holder'"
pass "the slot connection killed: the row is still a's, expiring in $left ms"

sleep 6 # let time pass: past the TTL, so that b would take a slot a failed to keep
touch "$T/probe.stop"
[ ! -s "$T/b.ids" ] || log "b issued $(wc -l <"$T/b.ids") IDs (it took a slot a lost)"
cat "$T/a.ids" "$T/b.ids" >"$T/all.ids"
assert_unique "$T/all.ids"
wait_ready "$PA" 5 || fail "a is not ready after its slot connection was killed: $(tail -n 5 "$T/a.log")"
grep -q "^[0-9]* 200" "$T/a.st" || fail "a served nothing during the probe"
pass "after the kill: a serves on ($(wc -l <"$T/a.ids") IDs), b got $(wc -l <"$T/b.ids"), none issued twice"
