#!/usr/bin/env bash
# labels: zk
# timeout: 300
# fixtures: zk
# What an idkeeper server in a Meituan Leaf fleet refuses, and what makes one stop
# (docs/zookeeper.md, "A Leaf fleet"; Leaf servers are tests/interop/leaf_helper.py):
#   1. A Leaf helper running, then SIGSTOPped (its heartbeat stops, it is not dead).
#      An idkeeper server on its identity without --leaf-takeover refuses at once.
#      With it, one refuses within its --slot-wait, saying the Leaf server may be
#      alive (the whole node path in its "no worker slot yet" line); another one,
#      started while the helper is stopped for 1 s, waits, keeps
#      waiting while the helper, resumed, heartbeats again, and takes the number
#      only once the helper is stopped for good and its cache removed: no ID twice.
#      A Leaf helper then started on the identity it holds without a cache refuses
#      to start (its node's timestamp, our record, is ahead of the clock; by 5 s at
#      least: one whose clock is 3 s ahead refuses too); one with
#      a cache (a host that ran Leaf on port 8080 before) starts on its cached number
#      and writes nothing: the idkeeper server keeps issuing, no ID twice. A twin
#      idkeeper server on the held identity waits, naming the holder's session.
#   2. A second writer, each stopping an idkeeper server that holds its own number
#      and keeping it stopped: a write to its node by another (a Leaf heartbeat); a
#      second node for its identity.
#   3. Bad nodes, each refused naming the node: a malformed node name, data that is
#      not JSON (a Leaf server fails on each too, unless it has a cache: then it
#      starts on it); a timestamp in the future; a number above the worker range;
#      an identity Leaf cannot name; --leaf-takeover of another identity, or without
#      --leaf-name; --leaf-name on a store that is not ZooKeeper; a layout other
#      than Leaf's. `workers` on a node whose timestamp is INT64_MAX says it is
#      ahead. And the default identity is Leaf's IPv4:PORT.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
source "$(dirname "$0")/leaf.sh"
URI=$(zk_uri "$ZK_CHROOT")

# refused NAME PATTERN WHAT: the server NAME exited non-zero and its log matches
refused() {
  local rc=0
  wait_until 30 not alive "${SERVER_PID[$1]}" || fail "$3: $1 still runs 30 s on: $(tail -n 2 "$T/$1.log")"
  wait "${SERVER_PID[$1]}" || rc=$?
  ((rc != 0)) || fail "$3: $1 exited 0"
  grepq -E -e "$2" "$T/$1.log" || fail "$3: $1's refusal does not match '$2': $(grep -m1 'cannot' "$T/$1.log" || tail -n 2 "$T/$1.log")"
  pass "$3: $(grep -m1 -o -E -e "$2" "$T/$1.log" | cut -c1-300)"
}

# why_has PORT TEXT: the server's lease is not held and its reason says TEXT
why_has() {
  [ "$(status_of "$1" .lease.state 2>/dev/null)" != held ] &&
    status_of "$1" .lease.why 2>/dev/null | grepq -F "$2"
}

# ---- 1. a Leaf server stopped, not dead ----------------------------------------
# (another node first: a Leaf server's first start on an empty path uses number 0,
# which an idkeeper server never uses, ZLF2 in backend_zk_leaf.c)
now_ms now
good="{\"ip\":\"10.9.9.9\",\"port\":\"1\",\"timestamp\":$now}"
leaf_tool seq /snowflake/fleet/forever/10.9.9.9:1- "$good" >/dev/null
leaf_start l fleet 10.1.0.1:8080
wl=$(leaf_worker l) || fail "l did not start: $(cat "$T/l.log")"
p=$(zk_free_port)
leaf_serve s0 "$p" fleet 10.1.0.1:8080 --slot-wait 20000
refused s0 "Leaf number $wl is a Leaf server's \(node /.*/snowflake/fleet/forever/10\.1\.0\.1:8080-0*$wl .*--leaf-takeover 10\.1\.0\.1:8080" "a Leaf server's number, no --leaf-takeover"
# (the Leaf server runs: its heartbeat never gets 5 s old, however slow the machine)
p=$(zk_free_port)
leaf_serve s1 "$p" fleet 10.1.0.1:8080 --leaf-takeover 10.1.0.1:8080 --slot-wait 2000
refused s1 "Leaf node /.*/snowflake/fleet/forever/10\.1\.0\.1:8080-0*$wl \(number $wl\): Leaf server 10\.1\.0\.1:8080 may still be alive" "a live Leaf server, --leaf-takeover"
grepq -E "no worker slot yet \(.*Leaf node /.*/snowflake/fleet/forever/10\.1\.0\.1:8080-0*$wl \(number $wl\): Leaf server .* may still be alive: written [0-9]+ ms ago, taken once 5000 ms old\); serving HTTP" "$T/s1.log" ||
  fail "s1's 'no worker slot yet' line lost the reason's end: $(grep -m1 'no worker slot yet' "$T/s1.log")"

# stopped for 1 s only (a pause, not a death): the heartbeat never gets 5 s old
p2=$(zk_free_port)
leaf_stop_after_beat l
leaf_serve s2 "$p2" fleet 10.1.0.1:8080 --leaf-takeover 10.1.0.1:8080 --slot-wait 40000
sleep 1 # let time pass: a pause of a second, not a death
kill -CONT "${LEAF_PID[l]}" # resumed: heartbeats again
mono_ms t0
while (($(mono_ms) - t0 < 6000)); do # more than the 5 s a heartbeat takes to age
  [ "$(status_of "$p2" .lease.state 2>/dev/null)" != held ] || fail "s2 took number $wl beside a live Leaf server"
  sleep 0.1
done
kill -TERM "${LEAF_PID[l]}" # the runbook: stopped for good, gone, its cache removed
wait "${LEAF_PID[l]}" || true
rm "$(leaf_cache_file fleet 8080 10.1.0.1)"
log "the Leaf server stopped, its cache removed"
wait_held "$p2" 30 || fail "s2 never took the stopped Leaf server's number: $(tail -n 2 "$T/s2.log")"
[ "$(status_of "$p2" .lease.worker)" = "$wl" ] || fail "s2 took $(status_of "$p2" .lease.worker), not $wl"
fetch_loop "$p2" "$T/s2.ids"
pass "s2 waited while the Leaf server lived, then took number $wl"

# a Leaf server started on s2's identity while s2 holds it: s2's record (the node's
# timestamp) is ahead of the clock, so Leaf's start-up check fails; without a cache
# it does not start
leaf_start l4 fleet 10.1.0.1:8080
wait_until 30 not alive "${LEAF_PID[l4]}" || fail "l4 runs beside s2: $(head -n 2 "$T/l4.log")"
grepq '^refused: .*init timestamp check error' "$T/l4.log" || fail "l4 did not refuse as Leaf does: $(head -n 2 "$T/l4.log")"
pass "a Leaf server on the identity s2 holds, without a cache, refuses to start: $(head -n 1 "$T/l4.log" | cut -c1-120)"
# ... even with its clock 3 s ahead: the node stays 5 s ahead of s2's clock (ZLF8),
# whatever the session's safe window (2.7 s here)
LEAF_FAKETIME=+3s leaf_start l4f fleet 10.1.0.1:8080 F
wait_until 30 not alive "${LEAF_PID[l4f]}" || fail "l4f (clock 3 s ahead) runs beside s2: $(head -n 2 "$T/l4f.log")"
grepq '^refused: .*init timestamp check error' "$T/l4f.log" || fail "l4f (clock 3 s ahead) did not refuse: $(head -n 2 "$T/l4f.log")"
pass "a Leaf server on s2's identity with its clock 3 s ahead refuses to start too"
# ... and with one (host X ran Leaf as 10.1.0.9:8080 before), it starts on its
# cached number without a heartbeat, beside s2
leaf_start l5 fleet 10.1.0.9:8080 X
w5=$(leaf_worker l5) || fail "l5 did not start: $(cat "$T/l5.log")"
wait_grep '^beat' "$T/l5.log" 10 || fail "l5 wrote no heartbeat"
kill -TERM "${LEAF_PID[l5]}"
wait "${LEAF_PID[l5]}" || true
mv "$T/l5.ids" "$T/l5a.ids"
ver=$("$IK_BIN" workers --coord "$URI" --leaf-name fleet --json | jq -r --argjson w "$wl" '.slots[] | select(.worker == $w) | .detail')
leaf_start l5 fleet 10.1.0.1:8080 X
[ "$(leaf_worker l5)" = "$w5" ] || fail "l5 did not start on its cached $w5: $(cat "$T/l5.log")"
leaf_from_cache l5 || fail "l5 did not start from its cache: $(cat "$T/l5.log")"
wait_until 10 ids_at_least "$T/l5.ids" 2000 || fail "l5 issued too few IDs"
kill -TERM "${LEAF_PID[l5]}"
wait "${LEAF_PID[l5]}" || true
grepq '^beat' "$T/l5.log" && fail "l5 wrote a heartbeat from its cache"
[ "$(status_of "$p2" .lease.state)" = held ] || fail "s2 is $(status_of "$p2" .lease.state) after l5"
fetch_stop
ids_apart "$T/l.ids" "$T/s2.ids" "$T/l5a.ids" "$T/l5.ids"
ids_time_check "$T/s2.ids" "$(ids_time_max "$T/l.ids")"
pass "a Leaf server on s2's identity with a cache started on its cached $w5, wrote nothing, and s2 ($ver) kept $wl; no two issuers on one number at once"

# a twin: s2's identity again
p3=$(zk_free_port)
leaf_serve twin "$p3" fleet 10.1.0.1:8080 --slot-wait 1000
refused twin "held by idkeeper session 0x[0-9a-f]+: Leaf number $wl \(" "a twin idkeeper server"

# ---- 2. a second writer stops the holder --------------------------------------
# a write to the node an idkeeper server holds, not its own (a Leaf heartbeat)
p6=$(zk_free_port)
leaf_serve s6 "$p6" fleet 10.1.0.6:8080
wait_held "$p6" 30 || fail "s6 not ready: $(tail -n 2 "$T/s6.log")"
w6=$(status_of "$p6" .lease.worker)
n6=$(printf '/snowflake/fleet/forever/10.1.0.6:8080-%010d' "$w6")
now_ms now
leaf_tool put "$n6" "{\"ip\":\"10.1.0.6\",\"port\":\"8080\",\"timestamp\":$now}"
wait_until 5 not ready_probe "$p6" || fail "s6 still ready after another wrote its node"
wait_until 20 why_has "$p6" "Leaf number $w6 is a Leaf server's" ||
  fail "s6 does not refuse its number after another wrote it: $(status_of "$p6" .lease)"
pass "a write to s6's node by another stopped s6, which does not take number $w6 back: $(status_of "$p6" .lease.why | cut -c1-120)"

# a second node for the identity of an idkeeper server (a Leaf server made it)
p7=$(zk_free_port)
leaf_serve s7 "$p7" fleet 10.1.0.7:8080
wait_held "$p7" 30 || fail "s7 not ready: $(tail -n 2 "$T/s7.log")"
n7=$(leaf_tool seq /snowflake/fleet/forever/10.1.0.7:8080- "$good")
wait_until 5 not ready_probe "$p7" || fail "s7 still ready beside a second node of its identity"
grepq -E "Leaf node /.*${n7##*/} names identity 10\.1\.0\.7:8080 beside ours" "$T/s7.log" ||
  fail "s7 did not say why it stopped: $(tail -n 3 "$T/s7.log")"
wait_until 20 why_has "$p7" "identity 10.1.0.7:8080 has two Leaf nodes" ||
  fail "s7 does not refuse its identity's two nodes: $(status_of "$p7" .lease)"
pass "a second node of s7's identity stopped s7: $(status_of "$p7" .lease.why | cut -c1-120)"
kill -TERM "${SERVER_PID[s6]}" "${SERVER_PID[s7]}"

# ---- 3. bad nodes ---------------------------------------------------------------
# a malformed name: a Leaf server fails on this path too, and starts on its cache
leaf_tool put /snowflake/bad1/forever/garbage x
p=$(zk_free_port)
leaf_serve b1 "$p" bad1 10.2.0.1:8080 --slot-wait 1000
refused b1 "Leaf node /.*/snowflake/bad1/forever/garbage: the name is not IP:PORT-NNNNNNNNNN" "a malformed node name"
leaf_start lm bad1 10.2.0.1:8080 M
wait_until 30 not alive "${LEAF_PID[lm]}" || fail "lm started on a path with a malformed node: $(cat "$T/lm.log")"
grepq '^refused: .*ArrayIndexOutOfBoundsException' "$T/lm.log" || fail "lm did not fail as Leaf does: $(cat "$T/lm.log")"
mkdir -p "$(dirname "$(leaf_cache_file bad1 8080 M)")"
printf 'workerID=7' >"$(leaf_cache_file bad1 8080 M)"
leaf_start lm bad1 10.2.0.1:8080 M
[ "$(leaf_worker lm)" = 7 ] && leaf_from_cache lm || fail "lm did not start on its cache: $(cat "$T/lm.log")"
kill -TERM "${LEAF_PID[lm]}"
pass "a Leaf server on that path fails without a cache, starts on its cached 7 with one"

# data that is not JSON (a first node takes number 0, which is never used)
leaf_tool seq /snowflake/bad2/forever/10.9.9.9:1- "$good" >/dev/null
n=$(leaf_tool seq /snowflake/bad2/forever/10.2.0.2:8080- "not json")
p=$(zk_free_port)
leaf_serve b2 "$p" bad2 10.2.0.2:8080 --leaf-takeover 10.2.0.2:8080 --slot-wait 1000
refused b2 "Leaf node /.*$n: its data is not Leaf's JSON" "data that is not JSON"
leaf_start lj bad2 10.2.0.2:8080 J # Leaf's own start fails there too: no cache, no start
wait_until 30 not alive "${LEAF_PID[lj]}" || fail "lj started on a node that is not JSON: $(cat "$T/lj.log")"
grepq '^refused' "$T/lj.log" || fail "lj did not refuse: $(cat "$T/lj.log")"
mkdir -p "$(dirname "$(leaf_cache_file bad2 8080 J)")"
printf 'workerID=%d' "$((10#${n##*-}))" >"$(leaf_cache_file bad2 8080 J)"
leaf_start lj bad2 10.2.0.2:8080 J # ... and with a cache, it starts on it, no heartbeat
[ "$(leaf_worker lj)" = "$((10#${n##*-}))" ] && leaf_from_cache lj || fail "lj did not start on its cache: $(cat "$T/lj.log")"
kill -TERM "${LEAF_PID[lj]}"
pass "a Leaf server on that node fails without a cache, starts on its cached number with one"

# a timestamp an hour ahead
leaf_tool seq /snowflake/bad3/forever/10.9.9.9:1- "$good" >/dev/null
n=$(leaf_tool seq /snowflake/bad3/forever/10.2.0.3:8080- "{\"timestamp\":$((now + 3600000)),\"port\":\"8080\",\"ip\":\"10.2.0.3\"}")
p=$(zk_free_port)
leaf_serve b3 "$p" bad3 10.2.0.3:8080 --leaf-takeover 10.2.0.3:8080 --slot-wait 1000
refused b3 "Leaf node /.*$n \(number 1\): its timestamp is 3[0-9]{6} ms ahead of this clock" "a timestamp in the future"

# a number above the worker range (here 0-3; Leaf refuses above 1023)
for i in 1 2 3 4 5; do leaf_tool seq /snowflake/bad4/forever/10.9.9.$i:1- "$good" >/dev/null; done
p=$(zk_free_port)
leaf_serve b4 "$p" bad4 10.2.0.4:8080 --worker-range 0-3 --slot-wait 1000
refused b4 "Leaf node /.*/snowflake/bad4/forever/10\.2\.0\.4:8080-0000000005: number 5 is outside the worker range 0-3" "a number above the range"

# an identity Leaf cannot name a node by
p=$(zk_free_port)
leaf_serve b5 "$p" bad5 my-host:8080 --slot-wait 1000
refused b5 "identity 'my-host:8080' is not a Leaf IP:PORT" "an identity with a '-'"

# a take-over of another identity than the server's, or without a fleet
p=$(zk_free_port)
leaf_serve b8 "$p" fleet 10.2.0.8:8080 --leaf-takeover 10.1.0.1:8080 --slot-wait 1000
refused b8 "--leaf-takeover names 10\.1\.0\.1:8080, but this server's identity is 10\.2\.0\.8:8080" "--leaf-takeover of another identity"
p=$(zk_free_port)
zk_serve b9 "$p" --leaf-takeover 10.1.0.1:8080
refused b9 "a Leaf take-over \(10\.1\.0\.1:8080\) is of a Leaf fleet's number: it needs a leaf name" "--leaf-takeover without --leaf-name"

# not ZooKeeper
p=$(zk_free_port)
start_server b6 "$p" --coord "local:$T/data" --leaf-name fleet --identity 127.0.0.1:1
refused b6 "lives on ZooKeeper: use a zk:// coord" "--leaf-name on local:"

# another layout than Leaf's: the IDs would not share Leaf's number space
p=$(zk_free_port)
leaf_serve b7 "$p" fleet 10.2.0.7:8080 --layout js53
refused b7 "the layout must be Leaf's" "a layout other than Leaf's"

# a timestamp far ahead (INT64_MAX): `workers` says it is ahead, not a negative age
n=$(leaf_tool seq /snowflake/fleet/forever/10.2.0.9:8080- '{"ip":"10.2.0.9","port":"8080","timestamp":9223372036854775807}')
"$IK_BIN" workers --coord "$URI" --leaf-name fleet >"$T/workers.txt"
grepq -E "^$((10#${n##*-})) +held +10\.2\.0\.9:8080 .*leaf: timestamp [0-9]+ ms ahead of this clock" "$T/workers.txt" ||
  fail "workers on a timestamp of INT64_MAX: $(grep 10.2.0.9 "$T/workers.txt")"
grepq -E 'heartbeat -[0-9]+ ms ago' "$T/workers.txt" && fail "workers shows a negative age: $(grep -E 'heartbeat -' "$T/workers.txt")"
pass "workers on a timestamp of INT64_MAX: $(grep 10.2.0.9 "$T/workers.txt" | tr -s ' ')"

# no --identity: Leaf's own form, the host's first non-loopback IPv4 address (or
# 127.0.0.1 on a host with none) and the HTTP port
p=$(zk_free_port)
"$IK_BIN" serve --http 127.0.0.1:"$p" --coord "$URI" --zk-session-timeout "$ZK_SESSION_MS" \
  --leaf-name dflt >"$T/d.log" 2>&1 &
SERVER_PID[d]=$!
IK_PIDS+=($!)
wait_held "$p" 30 || fail "d not ready: $(tail -n 2 "$T/d.log")"
id=$(status_of "$p" .server.identity 2>/dev/null || true)
[ -n "$id" ] && [ "$id" != null ] || id=$(grep -o 'identity [^)]*' "$T/d.log" | head -n 1 | cut -d' ' -f2)
[[ $id =~ ^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+:$p$ ]] || fail "d's default identity is '$id', not IPv4:$p"
"$IK_BIN" workers --coord "$URI" --leaf-name dflt | grepq -E " held +$id " ||
  fail "workers does not list d's node as $id"
pass "the default identity is Leaf's form: $id"
