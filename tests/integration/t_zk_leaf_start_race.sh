#!/usr/bin/env bash
# labels: zk
# timeout: 420
# Two idkeeper servers started together on a new identity of a Meituan Leaf fleet,
# through a slow ZooKeeper (docs/zookeeper.md, "A Leaf fleet": the number). Each
# round: tests/interop/fault_proxy.py delivers every answer DELAY ms late, server a
# starts, server b GAP ms later, both on the round's new identity with a long
# --slot-wait. Then: one node for the identity in Leaf's forever path, one server
# issuing on its number, the other waiting and saying it waits for the first's
# session. Both stop (SIGTERM), and a third server on the identity takes the same
# number: the identity stays usable. Rounds: GAP 0, 100, 200, 300 ms at DELAY 200
# ms, and GAP 0 at DELAY 300 ms. Then a Leaf server (tests/interop/leaf_helper.py,
# through the same proxy, on a host without a cache) and an idkeeper server started
# together on a new identity: the Leaf server first by 0, 150, 300 ms; the idkeeper
# server first by 0 ms; the Leaf server started the moment the idkeeper server's node
# appears (before its take has written the record). Whoever gets the number, no two
# issuers on one number at once (the idkeeper server's node is ahead of the clock
# from its creation; a Leaf node beside its own stops it).
# Its own ZooKeeper: the proxy sits in front of it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=10000 # the proxy's delay must stay far from the session's timeouts
zk_start_standalone
zk_proxy_start
URI="zk://127.0.0.1:$PP/t"
source "$(dirname "$0")/leaf.sh"
LEAF_HOSTS="127.0.0.1:$PP/t" # the Leaf helpers through the slow proxy too

# start NAME PORT ID: serve in fleet "race" through the proxy
start() {
  start_server "$1" "$2" --coord "$URI" --zk-session-timeout "$ZK_SESSION_MS" \
    --leaf-name race --identity "$3" --slot-wait 120000
}

# nodes_of ID: the names of the forever path's nodes for identity ID, one a line
nodes_of() { zk_tool ls /t/snowflake/race/forever | grep -F "$1-" || true; }

# one_held PA PB: exactly one of the two servers holds its number and is ready
one_held() {
  local a b
  a=$(status_of "$1" .lease.state 2>/dev/null || true)
  b=$(status_of "$2" .lease.state 2>/dev/null || true)
  [ "$a" = held ] || [ "$b" = held ]
}

# waits_for PORT SESSION: the server's lease is acquiring and its reason names SESSION
waits_for() {
  [ "$(status_of "$1" .lease.state 2>/dev/null)" = acquiring ] &&
    status_of "$1" .lease.why 2>/dev/null | grepq -F "$2"
}

# LEAF_RACE_ROUNDS="DELAY GAP,DELAY GAP,...": other rounds (to chase one)
ROUNDS=("200 0" "200 100" "200 200" "200 300" "300 0")
[ -z "${LEAF_RACE_ROUNDS:-}" ] || IFS=, read -ra ROUNDS <<<"$LEAF_RACE_ROUNDS"
r=0
for round in "${ROUNDS[@]}"; do
  read -r delay gap <<<"$round"
  r=$((r + 1))
  id=10.2.0.$r:9000
  proxy delay "$delay"
  pa=$(zk_free_port)
  pb=$(zk_free_port)
  start a$r "$pa" "$id"
  sleep "$(printf '0.%03d' "$gap")" # let time pass: the gap between the starts is the test's input
  start b$r "$pb" "$id"
  wait_until 90 one_held "$pa" "$pb" ||
    fail "round $r: neither a$r nor b$r holds a number: a$r $(status_of "$pa" .lease.why 2>/dev/null || tail -n 1 "$T/a$r.log"); b$r $(status_of "$pb" .lease.why 2>/dev/null || tail -n 1 "$T/b$r.log")"
  if [ "$(status_of "$pa" .lease.state)" = held ]; then win=a$r pw=$pa lose=b$r pl=$pb; else win=b$r pw=$pb lose=a$r pl=$pa; fi
  sess=$(status_of "$pw" .lease.session)
  w=$(status_of "$pw" .lease.worker)
  # the other waits, naming the first's session (and never holds meanwhile)
  wait_until 30 waits_for "$pl" "$sess" ||
    fail "round $r (delay $delay, gap $gap): $lose is $(status_of "$pl" .lease.state 2>/dev/null || echo gone) ($(status_of "$pl" .lease.why 2>/dev/null)), not waiting for $win's session $sess; nodes: $(nodes_of "$id" | tr '\n' ' ')"
  n=$(nodes_of "$id" | wc -l)
  ((n == 1)) || fail "round $r (delay $delay, gap $gap): $n nodes for $id: $(nodes_of "$id" | tr '\n' ' ')"
  one=$(nodes_of "$id")
  ((10#${one##*-} == w)) || fail "round $r: $win issues on $w, the node is $one"
  wait_held "$pw" 30 || fail "round $r: $win holds $w but is not ready"
  fetch_ids "$pw" 2000 "$T/$win.ids" || fail "round $r: $win refused IDs ($IK_HTTP_CODE)"
  [ "$(ids_workers "$T/$win.ids")" = "$w" ] || fail "round $r: $win's IDs carry workers $(ids_workers "$T/$win.ids" | tr '\n' ' ')"
  [ "$(status_of "$pl" .lease.state)" = acquiring ] || fail "round $r: $lose is $(status_of "$pl" .lease.state) beside $win"
  pass "round $r (delay $delay ms, gap $gap ms): one node $one, $win issues on $w, $lose waits: $(status_of "$pl" .lease.why | cut -c1-150)"

  kill -TERM "${SERVER_PID[$win]}" "${SERVER_PID[$lose]}"
  wait "${SERVER_PID[$win]}" || true
  wait "${SERVER_PID[$lose]}" || true
  proxy delay 0
  pc=$(zk_free_port)
  start c$r "$pc" "$id"
  wait_held "$pc" 40 || fail "round $r: a restart on $id did not take its number: $(grep -m1 -E 'cannot|no worker slot' "$T/c$r.log" || tail -n 2 "$T/c$r.log")"
  [ "$(status_of "$pc" .lease.worker)" = "$w" ] || fail "round $r: the restart took $(status_of "$pc" .lease.worker), not $w"
  kill -TERM "${SERVER_PID[c$r]}"
  wait "${SERVER_PID[c$r]}" || true
  pass "round $r: both stopped, a restart on $id took number $w again"
done

# ---- a Leaf server and an idkeeper server together on a new identity ----------
proxy delay 200
r=0
has_node() { [ -n "$(nodes_of "$1")" ]; }
for round in "leaf 0" "leaf 150" "leaf 300" "idk 0" "idk node"; do
  read -r first gap <<<"$round"
  r=$((r + 1))
  id=10.3.0.$r:9000
  pk=$(zk_free_port)
  if [ "$first" = leaf ]; then leaf_start l$r race "$id" fresh$r; else start k$r "$pk" "$id"; fi
  if [ "$gap" = node ]; then
    wait_until 60 has_node "$id" || fail "round L$r: k$r made no node: $(status_of "$pk" .lease.why)"
  else
    sleep "$(printf '0.%03d' "$gap")" # let time pass: the gap between the starts is the test's input
  fi
  if [ "$first" = leaf ]; then start k$r "$pk" "$id"; else leaf_start l$r race "$id" fresh$r; fi
  decided() { grepq -E '^(worker|refused)' "$T/l$r.log"; }
  wait_until 60 decided || fail "round L$r: the Leaf helper neither started nor refused: $(cat "$T/l$r.log")"
  settled() { ! alive "${SERVER_PID[k$r]}" || [ "$(status_of "$pk" .lease.state 2>/dev/null)" = held ]; }
  wait_until 90 settled || fail "round L$r: k$r neither holds nor exits: $(status_of "$pk" .lease.why)"
  : >"$T/k$r.ids"
  : >>"$T/l$r.ids"
  if alive "${SERVER_PID[k$r]}"; then
    wait_held "$pk" 30 || fail "round L$r: k$r holds but is not ready"
    fetch_ids "$pk" 2000 "$T/k$r.ids" || fail "round L$r: k$r refused IDs ($IK_HTTP_CODE)"
  fi
  # What the helper printed decides, not whether its process is still there: a helper
  # that refused is on its way out, and under load its exit can take a while.
  if grepq '^worker' "$T/l$r.log"; then
    wait_until 10 ids_at_least "$T/l$r.ids" 2000 ||
      fail "round L$r: l$r started ($(grep -m1 '^worker' "$T/l$r.log")) but issued $(wc -l <"$T/l$r.ids") IDs in 10 s"
  else # Leaf's start failed: the service does not start (leaf_helper.py: exit 3)
    wait_until 30 not alive "${LEAF_PID[l$r]}" || fail "round L$r: l$r refused but still runs: $(cat "$T/l$r.log")"
    lrc=0
    wait "${LEAF_PID[l$r]}" || lrc=$?
    ((lrc == 3)) || fail "round L$r: l$r refused, then exited $lrc, not 3: $(cat "$T/l$r.log")"
  fi
  ids_apart "$T/k$r.ids" "$T/l$r.ids"
  pass "round L$r ($first first, $([ "$gap" = node ] && echo "the Leaf server as k$r's node appeared" || echo "gap $gap ms")): idkeeper $(alive "${SERVER_PID[k$r]}" && echo "issues on $(status_of "$pk" .lease.worker)" || echo "refused: $(grep -m1 -o 'cannot take a worker slot: .\{0,60\}' "$T/k$r.log")"); Leaf $(head -n 1 "$T/l$r.log" | cut -c1-80); nodes: $(nodes_of "$id" | tr '\n' ' ')"
  if grepq '^worker' "$T/l$r.log"; then # a reaped pid is not signalled: its number may be another's now
    kill -TERM "${LEAF_PID[l$r]}"
    wait "${LEAF_PID[l$r]}" || true
  fi
  kill -TERM "${SERVER_PID[k$r]}" 2>/dev/null || true
  wait "${SERVER_PID[k$r]}" || true
done
