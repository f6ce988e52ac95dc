#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 180
# The one order of `idkeeper elect` and `idkeeper lock` (docs/recipes.md, "One
# order"): on a loss, CMD's whole tree ends first, then the grant is given back.
# A leader (or lock holder) A reaches ZooKeeper through a proxy that drops every
# answer while A's requests still arrive (a one-way outage: the server keeps A's
# session and node alive). A is told LOST 2/3 of the session timeout after its last
# proof; its CMD ignores SIGTERM, so it runs on through the whole grace (1 s) until
# SIGKILL. A second candidate B, on a direct connection, waits behind A's node.
# B's CMD must start only after A's CMD is gone: A's node goes only after that.
# Before, `elect`'s campaign thread deleted A's node the moment LOST was told (the
# delete arrives: requests pass), and B's CMD started while A's was in its grace:
# 763-977 ms of overlap in four runs. `lock` kept the order already; it runs here
# too, so that both keep it.
# Heartbeats: A's CMD appends "A PID TIME" every 20 ms, B's "B PID TIME" once.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
zk_proxy_start
VIA=zk://127.0.0.1:$PP/t # through the proxy
DIRECT=$(zk_uri t)
S=6000 # the session: LOST at 4 s, a 1 s grace, expiry (were A cut off) at 6 s

cat >"$T/worker" <<'SH'
#!/usr/bin/env bash
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
trap '' TERM
while :; do
  echo "A $$ $EPOCHREALTIME" >>"$1"
  sleep 0.02
done
SH
chmod +x "$T/worker"

case_order() {
  local tool=$1 hb="$T/hb.$1" a b rc=0
  : >"$hb"
  local b_cmd='echo "B $$ $EPOCHREALTIME" >>"$0"; sleep 0.5'
  if [ "$tool" = elect ]; then
    "$IK_BIN" elect --coord "$VIA" --zk-session-timeout $S --grace 1000 --once --id A /order -- \
      "$T/worker" "$hb" 2>"$hb.a.err" &
  else
    "$IK_BIN" lock --coord "$VIA" --zk-session-timeout $S --grace 1000 /order -- \
      "$T/worker" "$hb" 2>"$hb.a.err" &
  fi
  a=$!
  IK_PIDS+=($a)
  wait_until 60 grepq '^A ' "$hb" || fail "$tool: A's CMD never started: $(cat "$hb.a.err")"
  if [ "$tool" = elect ]; then
    "$IK_BIN" elect --coord "$DIRECT" --zk-session-timeout $S --once --id B /order -- bash -c "$b_cmd" "$hb" \
      2>"$hb.b.err" &
  else
    "$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout $S /order -- bash -c "$b_cmd" "$hb" 2>"$hb.b.err" &
  fi
  b=$!
  IK_PIDS+=($b)
  # B queued behind A (its node is there) before the outage
  wait_until 30 zk_nodes_at_least /t/order 2 || fail "$tool: B never queued"
  proxy mute # A's requests reach ZooKeeper; no answer comes back
  # the monitor's LOST, or the guardian's own stop at the end of the trust window
  wait_until 30 grepq -E 'lost|safe window' "$hb.a.err" || fail "$tool: A was never told it lost: $(cat "$hb.a.err")"
  wait_until 60 not alive $b || fail "$tool: B did not end within 60 s: $(cat "$hb.b.err")"
  wait $b || fail "$tool: B exited $?: $(cat "$hb.b.err")"
  wait $a || rc=$?
  proxy unmute
  [ $rc = 125 ] || fail "$tool: A exited $rc, not 125: $(cat "$hb.a.err")"
  local after
  after=$(awk '$1 == "B" && b == "" { b = $3; next } b != "" && $1 == "A" { n++; last = $3 }
               END { if (n) printf "%d heartbeats of A after B started, the last %.0f ms after", n, (last - b) * 1000 }' "$hb")
  [ -z "$after" ] || fail "$tool: $after"
  pass "$tool: A's CMD gone $(awk '$1 == "A" { a = $3 } $1 == "B" { printf "%.0f", ($3 - a) * 1000; exit }' "$hb") ms before B's started"
}

# zk_nodes_at_least PATH N: PATH has N children or more (kazoo: about 100 ms a call)
zk_nodes_at_least() {
  local n
  n=$(ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 -c '
import logging, os, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"]); zk.start(timeout=20)
try:
    print(len(zk.get_children(sys.argv[1])))
except Exception:
    print(0)
zk.stop()' "$1")
  ((n >= $2))
}

case_order elect
case_order lock
