#!/usr/bin/env bash
# labels: zk
# timeout: 240
# Lost answers while taking a slot (docs/zookeeper.md, "Taking a slot"). A proxy between a server and
# ZooKeeper lets each slot take (a zoo_multi) through and cuts the connection before
# its answer, then does the same to the check that follows it (zoo_exists of the
# owner node) and to the checks of the next passes. The take landed: our session
# owns the owner node. The server must keep track of it and take that slot back,
# never leave it held by nobody: on a 2-slot range with two servers, both end up
# holding a slot, a different one each, and no owner node is left without a server.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=10000
zk_start_standalone
zk_proxy_start
VIA=zk://127.0.0.1:$PP/$ZK_CHROOT
cuts() { grep -c '^cut' "$T/proxy.log" || true; }

# up NAME PORT: waits until NAME holds a slot and serves, or fails with its log.
up() {
  local name=$1 port=$2 i
  for ((i = 0; i < 300; i++)); do
    alive "${SERVER_PID[$name]}" || fail "$name exited: $(grep -m1 'cannot\|FAIL\|error' "$T/$name.log" || tail -n 3 "$T/$name.log")"
    [ "$(status_of "$port" .lease.state 2>/dev/null)" = held ] &&
      [ "$(http_status "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  fail "$name does not serve after 30 s: $(status_of "$port" .lease)"
}

# check_both PA PB: two different workers, both owner nodes theirs, nothing else held.
check_both() {
  local wa wb held
  wa=$(status_of "$1" .worker)
  wb=$(status_of "$2" .worker)
  [ "$wa" != "$wb" ] || fail "both servers report worker $wa"
  held=$(zk_tool held "$(app_base)" | tr '\n' ' ')
  [ "$held" = "0 1 " ] || fail "held slots: '$held'"
  for w in "$wa" "$wb"; do
    [ "$(slot_json "$w" | jq -r '.owner.session')" = "$(status_of "$([ "$w" = "$wa" ] && echo "$1" || echo "$2")" .lease.session)" ] ||
      fail "slot $w's owner node is not its server's: $(slot_json "$w")"
  done
  log "workers $wa and $wb"
}

# Round 1: a (through the proxy) loses the answers of its first 4 takes/checks;
# b (direct) starts once a serves.
proxy cut 4 3,14 /owners/
pa=$(zk_free_port)
start_server a "$pa" --coord "$VIA" --zk-session-timeout "$ZK_SESSION_MS" --worker-range 0-1
up a "$pa"
log "a serves after $(cuts) cut requests"
(($(cuts) == 4)) || fail "the proxy cut $(cuts) requests, not 4"
pb=$(zk_free_port)
zk_serve b "$pb" --worker-range 0-1
up b "$pb"
check_both "$pa" "$pb"
pass "round 1: a's lost takes did not cost a slot; a and b both hold one"

fetch_ids "$pa" 2000 "$T/ids"
fetch_ids "$pb" 2000 "$T/ids"
for n in a b; do kill -TERM "${SERVER_PID[$n]}"; wait "${SERVER_PID[$n]}" || fail "$n exited non-zero"; done
[ -z "$(zk_tool held "$(app_base)")" ] || fail "slots still held after both stopped"

# Round 2: both through the proxy, started together, 8 lost answers between them.
proxy cut 8 3,14 /owners/
pc=$(zk_free_port)
pd=$(zk_free_port)
start_server c "$pc" --coord "$VIA" --zk-session-timeout "$ZK_SESSION_MS" --worker-range 0-1
start_server d "$pd" --coord "$VIA" --zk-session-timeout "$ZK_SESSION_MS" --worker-range 0-1
up c "$pc"
up d "$pd"
check_both "$pc" "$pd"
fetch_ids "$pc" 2000 "$T/ids"
fetch_ids "$pd" 2000 "$T/ids"
assert_unique "$T/ids"
pass "round 2: c and d both hold a slot after $(cuts) cut requests in all; IDs unique"
