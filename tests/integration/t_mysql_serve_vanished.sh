#!/usr/bin/env bash
# labels: mysql sql
# timeout: 240
# A serving host that vanishes without a FIN or RST, on MariaDB: every session it
# had (its pooled tag connections, its slot's connection) must leave the database
# about a TTL after its last packet, the server ending each at its session
# wait_timeout (--lease-ttl in s; docs/sql.md "Session settings"), not 8 h later
# (the server's default), one of max_connections each. The host is a network
# namespace joined by a veth pair (tests/integration/sql_vanish.sh: vh_net_up);
# `idkeeper serve` runs in it and serves sequence and snowflake IDs, then its link
# goes down and it is killed -9, so no FIN ever leaves. A server of this test's own:
# it listens on the veth address too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sql_vanish.sh"
source "$(dirname "$0")/mysql.sh"

vh_mysql_up svanish
TTL=6000
"$IK_BIN" tags add orders --kind sequence --coord "mysql://$MDB_USER@127.0.0.1:$MY_PORT/$DB" >/dev/null ||
  fail "tags add failed"

sessions() { # the sessions from the vanished host: id, command, idle s
  my_sql -e "SELECT ID, COMMAND, TIME FROM information_schema.PROCESSLIST WHERE HOST LIKE '$VH_NS_ADDR:%'"
}
none_left() { [ -z "$(sessions)" ]; }

# the server, in its namespace (127.0.0.1 there is its own)
P=$(free_port)
ip netns exec "$VH_NS" "$IK_BIN" serve --http "127.0.0.1:$P" --identity vh \
  --coord "mysql://$MDB_USER@$VH_HOST_ADDR:$MY_PORT/$DB" --lease-ttl "$TTL" >"$T/vh.log" 2>&1 &
SRV=$!
IK_PIDS+=("$SRV")
ns_get() { ip netns exec "$VH_NS" curl -s -o /dev/null -w '%{http_code}' -m 10 "http://127.0.0.1:$P/v1/$1"; }
ns_ready() { [ "$(ns_get "../readyz")" = 200 ]; }
wait_until 60 ns_ready || fail "the server in $VH_NS did not get ready: $(tail -n 5 "$T/vh.log")"
for i in 1 2 3; do
  for what in "sequence/orders?format=text" "snowflake?format=text"; do
    code=$(ns_get "$what")
    [ "$code" = 200 ] || fail "GET /v1/$what from the host answered $code: $(tail -n 3 "$T/vh.log")"
  done
done
n=$(sessions | wc -l)
((n >= 2)) || fail "only $n sessions from $VH_NS_ADDR (want a pooled one and the slot's): $(sessions | tr '\n' ';')"
log "the host serves from $VH_NS_ADDR with $n sessions: $(sessions | tr '\n' ';')"
sleep 1 # let time pass: a few of the slot's renewals (every TTL/3) pass

ip netns exec "$VH_NS" ip link set "$VH_PEER" down || fail "could not cut the host's link"
mono_ms cut
kill -KILL "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null || true
left=$(sessions | wc -l)
((left == n)) || fail "$((n - left)) of the host's $n sessions were gone at once: a FIN or RST reached the database"
log "the host vanished (link down, server killed -9); its $n sessions are still in the database"

BOUND_MS=$((2 * TTL + 15000))
if ! wait_until $((BOUND_MS / 1000)) none_left; then
  mono_ms now
  fail "$((now - cut)) ms after the host vanished (--lease-ttl $TTL, bound $BOUND_MS ms) its sessions are still in the database: $(sessions | tr '\n' ';')"
fi
mono_ms now
took=$((now - cut))
((took >= TTL / 3)) || fail "the host's sessions left $took ms after the cut, before any idle limit: the host did not vanish"
pass "every session of the vanished host ($n: pooled and slot) left the database $took ms after the cut (--lease-ttl $TTL, wait_timeout $((TTL / 1000)) s, bound $BOUND_MS ms)"
