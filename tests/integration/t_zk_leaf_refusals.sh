#!/usr/bin/env bash
# labels: zk
# timeout: 240
# fixtures: zk
# What an idkeeper server in a Meituan Leaf fleet refuses (docs/zookeeper.md, "A
# Leaf fleet"; Leaf servers are tests/interop/leaf_helper.py):
#   1. A Leaf helper SIGSTOPped (its heartbeat stops, it is not dead) while an
#      idkeeper server starts on its identity: the server refuses within its
#      --slot-wait, saying the Leaf server may be alive; another one waits, keeps
#      waiting while the helper, resumed, heartbeats again, and takes the number
#      only once the helper is stopped for good: no ID twice, none issued beside it.
#      A Leaf helper then started on the identity it holds refuses to start (its
#      node's timestamp, our record, is ahead of the clock).
#   2. Bad nodes, each refused naming the node: a malformed node name, data that is
#      not JSON, a timestamp in the future, a number above the worker range; a twin
#      idkeeper server on a held identity; --leaf-name on a store that is not
#      ZooKeeper; a layout other than Leaf's. And the default identity is Leaf's
#      IPv4:PORT.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
source "$(dirname "$0")/leaf.sh"

# refused NAME PATTERN WHAT: the server NAME exited non-zero and its log matches
refused() {
  local rc=0 i
  for ((i = 0; i < 300; i++)); do alive "${SERVER_PID[$1]}" || break; sleep 0.1; done
  alive "${SERVER_PID[$1]}" && fail "$3: $1 still runs 30 s on: $(tail -n 2 "$T/$1.log")"
  wait "${SERVER_PID[$1]}" || rc=$?
  ((rc != 0)) || fail "$3: $1 exited 0"
  grepq -E "$2" "$T/$1.log" || fail "$3: $1's refusal does not match '$2': $(grep -m1 'cannot' "$T/$1.log" || tail -n 2 "$T/$1.log")"
  pass "$3: $(grep -m1 -o -E "$2" "$T/$1.log" | cut -c1-300)"
}

# ---- 1. a Leaf server stopped, not dead ----------------------------------------
# (another node first: a Leaf server's first start on an empty path uses number 0,
# whose identity an idkeeper server never takes over, ZLF2 in backend_zk_leaf.c)
now_ms now
good="{\"ip\":\"10.9.9.9\",\"port\":\"1\",\"timestamp\":$now}"
leaf_tool seq /snowflake/fleet/forever/10.9.9.9:1- "$good" >/dev/null
leaf_start l fleet 10.1.0.1:8080
wl=$(leaf_worker l) || fail "l did not start: $(cat "$T/l.log")"
leaf_stop_after_beat l
p=$(zk_free_port)
leaf_serve s1 "$p" fleet 10.1.0.1:8080 --slot-wait 2000
refused s1 "Leaf server 10\.1\.0\.1:8080 \(number $wl\) may still be alive.*node /.*/snowflake/fleet/forever/10\.1\.0\.1:8080-0*$wl" "SIGSTOPped Leaf server"
kill -CONT "${LEAF_PID[l]}"

# stopped for 1 s only (a pause, not a death): the heartbeat never gets 5 s old
p2=$(zk_free_port)
leaf_stop_after_beat l
leaf_serve s2 "$p2" fleet 10.1.0.1:8080 --slot-wait 40000
sleep 1 # let time pass: a pause of a second, not a death
kill -CONT "${LEAF_PID[l]}" # resumed: heartbeats again
mono_ms t0
while (($(mono_ms) - t0 < 6000)); do # more than the 5 s a heartbeat takes to age
  [ "$(status_of "$p2" .lease.state 2>/dev/null)" != held ] || fail "s2 took number $wl beside a live Leaf server"
  sleep 0.1
done
kill -TERM "${LEAF_PID[l]}"
wait "${LEAF_PID[l]}" || true
log "the Leaf server stopped"
wait_held "$p2" 30 || fail "s2 never took the stopped Leaf server's number: $(tail -n 2 "$T/s2.log")"
[ "$(status_of "$p2" .lease.worker)" = "$wl" ] || fail "s2 took $(status_of "$p2" .lease.worker), not $wl"
fetch_ids "$p2" 5000 "$T/s2.ids" || fail "s2 refused IDs"
cat "$T/l.ids" "$T/s2.ids" >"$T/both.ids"
assert_unique "$T/both.ids"
ids_time_check "$T/s2.ids" "$(ids_time_max "$T/l.ids")"
pass "s2 waited while the Leaf server lived, then took number $wl; no ID twice"

# a Leaf server started on s2's identity while s2 holds it: s2's record (the node's
# timestamp) is ahead of the clock, so Leaf's own start-up check refuses it
leaf_start l4 fleet 10.1.0.1:8080
for ((i = 0; i < 300; i++)); do alive "${LEAF_PID[l4]}" || break; sleep 0.1; done
grepq '^refused: init timestamp check error' "$T/l4.log" || fail "a Leaf server started on s2's held identity: $(head -n 2 "$T/l4.log")"
pass "a Leaf server on the identity s2 holds refuses to start: $(head -n 1 "$T/l4.log")"

# a twin: s2's identity again
p3=$(zk_free_port)
leaf_serve twin "$p3" fleet 10.1.0.1:8080 --slot-wait 1000
refused twin "Leaf number $wl .* is held by idkeeper session 0x[0-9a-f]+" "a twin idkeeper server"

# ---- 2. bad nodes ---------------------------------------------------------------
# a malformed name: Leaf cannot start on this path either
leaf_tool put /snowflake/bad1/forever/garbage x
p=$(zk_free_port)
leaf_serve b1 "$p" bad1 10.2.0.1:8080 --slot-wait 1000
refused b1 "Leaf node /.*/snowflake/bad1/forever/garbage: the name is not IP:PORT-NNNNNNNNNN" "a malformed node name"

# data that is not JSON (a first node takes number 0, which is never used)
leaf_tool seq /snowflake/bad2/forever/10.9.9.9:1- "$good" >/dev/null
n=$(leaf_tool seq /snowflake/bad2/forever/10.2.0.2:8080- "not json")
p=$(zk_free_port)
leaf_serve b2 "$p" bad2 10.2.0.2:8080 --slot-wait 1000
refused b2 "Leaf node /.*$n: its data is not Leaf's JSON" "data that is not JSON"

# a timestamp an hour ahead
leaf_tool seq /snowflake/bad3/forever/10.9.9.9:1- "$good" >/dev/null
n=$(leaf_tool seq /snowflake/bad3/forever/10.2.0.3:8080- "{\"timestamp\":$((now + 3600000)),\"port\":\"8080\",\"ip\":\"10.2.0.3\"}")
p=$(zk_free_port)
leaf_serve b3 "$p" bad3 10.2.0.3:8080 --slot-wait 1000
refused b3 "Leaf server 10\.2\.0\.3:8080 \(number 1\): its node's timestamp is 3[0-9]{6} ms ahead of this clock.*node /.*$n" "a timestamp in the future"

# a number above the worker range (here 0-3; Leaf refuses above 1023)
for i in 1 2 3 4 5; do leaf_tool seq /snowflake/bad4/forever/10.9.9.$i:1- "$good" >/dev/null; done
p=$(zk_free_port)
leaf_serve b4 "$p" bad4 10.2.0.4:8080 --worker-range 0-3 --slot-wait 1000
refused b4 "Leaf node /.*/snowflake/bad4/forever/10\.2\.0\.4:8080-0000000005: number 5 is outside the worker range 0-3" "a number above the range"

# an identity Leaf cannot name a node by
p=$(zk_free_port)
leaf_serve b5 "$p" bad5 my-host:8080 --slot-wait 1000
refused b5 "identity 'my-host:8080' is not a Leaf IP:PORT" "an identity with a '-'"

# not ZooKeeper
p=$(zk_free_port)
start_server b6 "$p" --coord "local:$T/data" --leaf-name fleet --identity 127.0.0.1:1
refused b6 "lives on ZooKeeper: use a zk:// coord" "--leaf-name on local:"

# another layout than Leaf's: the IDs would not share Leaf's number space
p=$(zk_free_port)
leaf_serve b7 "$p" fleet 10.2.0.7:8080 --layout js53
refused b7 "the layout must be Leaf's" "a layout other than Leaf's"

# no --identity: Leaf's own form, the host's first non-loopback IPv4 address (or
# 127.0.0.1 on a host with none) and the HTTP port
p=$(zk_free_port)
"$IK_BIN" serve --http 127.0.0.1:"$p" --coord "$(zk_uri "$ZK_CHROOT")" --zk-session-timeout "$ZK_SESSION_MS" \
  --leaf-name dflt >"$T/d.log" 2>&1 &
SERVER_PID[d]=$!
IK_PIDS+=($!)
wait_held "$p" 30 || fail "d not ready: $(tail -n 2 "$T/d.log")"
id=$(status_of "$p" .server.identity 2>/dev/null || true)
[ -n "$id" ] && [ "$id" != null ] || id=$(grep -o 'identity [^)]*' "$T/d.log" | head -n 1 | cut -d' ' -f2)
[[ $id =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:$p$ ]] || fail "d's default identity is '$id', not IPv4:$p"
"$IK_BIN" workers --coord "$(zk_uri "$ZK_CHROOT")" --leaf-name dflt | grepq -E " held +$id " ||
  fail "workers does not list d's node as $id"
pass "the default identity is Leaf's form: $id"
