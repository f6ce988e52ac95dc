#!/usr/bin/env bash
# labels: recipes
# timeout: 240
# An outage between 2/3 T and T during an election (docs/recipes.md, "A lost
# grant's node"): candidate a leads through a fault proxy, b waits on a direct
# connection. The proxy goes mute (requests still reach the store, nothing comes
# back: a's session stays alive in the store, as in an outage shorter than T) for
# 0.8 T, so a's monitor says LOST (2/3 T without an answer) and stops its CMD, then
# the store answers a again on the same session. Within T + 5 s of that there must
# be exactly one leader, and a's old contender gone (or leading): before the fix,
# a forgot its old node, which stayed first in line under a's live session, and
# nobody led any more.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_proxy_start || fail "no proxy in front of $IK_STORE"
COORD=$(conf_coord elect)
VIA=$(conf_proxy_coord elect)
TMS=10000
read -ra EARGS <<<"$(conf_elect_args $TMS)"
source "$(dirname "$0")/lock_cases.sh"

declare -A ELECT_PID=() # running_leaders finds each CMD below its idkeeper
"$IK_BIN" elect --coord "$VIA" "${EARGS[@]}" --id a --grace 500 /svc -- sh -c "$elect_cmd" "$T" 2>"$T/a.err" &
ELECT_PID[a]=$!
IK_PIDS+=($!)
leader=$(wait_one_leader 30000) || fail "a does not lead: $(cat "$T/a.err")"
[ "$leader" = a ] || fail "$leader leads, not a"
old=$(conf_elect_nodes "$COORD" /svc | head -n 1)
[ -n "$old" ] || fail "no contender of a's in the store"
"$IK_BIN" elect --coord "$COORD" "${EARGS[@]}" --id b --grace 500 /svc -- sh -c "$elect_cmd" "$T" 2>"$T/b.err" &
ELECT_PID[b]=$!
IK_PIDS+=($!)
# (zk_tool: python3 with kazoo, about 100 ms a call)
contenders_at_least() { [ "$(conf_elect_nodes "$COORD" /svc | wc -l)" -ge "$1" ]; }
wait_until 45 contenders_at_least 2 || fail "b's contender never showed: $(cat "$T/b.err")"
sleep 3 # a's probes prove its session afresh

proxy mute # a hears nothing; its requests and pings still keep its session alive
mono_ms t0
log "store mute for a (its node $old)"
while (($(mono_ms) - t0 < TMS * 3 / 10)); do sleep 0.05; done
proxy down # and now nothing reaches the store either: a's delete cannot
proxy unmute
# the window's end is seen by the hold monitor and by the guardian at one instant;
# whichever acts first, idkeeper says "lost leadership" (docs/recipes.md, "If
# idkeeper is frozen": a loaded machine ran the guardian first)
told_lost='lost leadership'
wait_until $((TMS / 1000)) grep -qE "$told_lost" "$T/a.err" || fail "a not told lost within T of the outage: $(cat "$T/a.err")"
log "a lost leadership after $(($(mono_ms) - t0)) ms"
while (($(mono_ms) - t0 < TMS * 8 / 10)); do sleep 0.05; done
proxy up
mono_ms t1
log "store answers a again after $((t1 - t0)) ms"

limit=$((TMS + 5000))
ok=
while (($(mono_ms) - t1 < limit)); do
  r=$(running_leaders)
  nodes=$(conf_elect_nodes "$COORD" /svc)
  if [ "$(echo -n "$r" | grep -c .)" = 1 ] && { ! grep -qx -- "$old" <<<"$nodes" || [ "$r" = a ]; }; then
    ok=$r
    break
  fi
  sleep 0.1
done
[ -n "$ok" ] || fail "$((limit / 1000)) s after the store came back: leaders [$(running_leaders | tr '\n' ' ')], contenders [$(conf_elect_nodes "$COORD" /svc | tr '\n' ' ')], a's old node $old; a: $(tail -n 3 "$T/a.err")"
took=$(($(mono_ms) - t1))
assert_one_leader_for 1000

pass "outage of $((t1 - t0)) ms (T = $TMS): $ok leads $took ms after the store came back; a's old node $old is gone or leads"
