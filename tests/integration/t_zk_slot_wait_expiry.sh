#!/usr/bin/env bash
# labels: zk
# timeout: 180
# --slot-wait outlives a session that expires during the wait (docs/snowflake.md, the slot lease;
# docs/zookeeper.md, "The lease on ZooKeeper"): a's holds the only slot of the range;
# b starts through a fault proxy with --slot-wait 60000 and waits. The proxy is down
# for 7 s, longer than b's 4 s session, which expires. b must make a new session and
# keep waiting for the rest of its --slot-wait, and take the slot once a leaves.
# Before the fix the first acquisition took the expired session as final: b exited
# 1 after 9 s of its 60 s wait.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=4000
zk_start_standalone
zk_proxy_start
pa=$(zk_free_port)
pb=$(zk_free_port)
zk_serve a "$pa" --worker-range 0-0
wait_held "$pa" 30 || fail "a not ready: $(tail -n 3 "$T/a.log")"
start_server b "$pb" --coord "zk://127.0.0.1:$PP/$ZK_CHROOT" --zk-session-timeout "$ZK_SESSION_MS" \
  --worker-range 0-0 --slot-wait 60000
for ((i = 0; i < 300; i++)); do
  curl -s -m 2 "http://127.0.0.1:$pb/readyz" 2>/dev/null | grep -q 'free slot' && break
  alive "${SERVER_PID[b]}" || fail "b exited before waiting: $(tail -n 3 "$T/b.log")"
  sleep 0.1
done
((i < 300)) || fail "b never said it waits for a free slot"
log "b waits for a free slot"

proxy down
sleep 7 # let time pass: b's session (4 s) expires meanwhile
proxy up
log "proxy up again after 7 s"
t0=$SECONDS
while ((SECONDS - t0 < 8)); do
  alive "${SERVER_PID[b]}" || fail "b gave up its --slot-wait 60000 after its session expired: $(grep -v ZOO_ "$T/b.log" | tail -n 3)"
  sleep 0.2
done
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not stop cleanly"
wait_held "$pb" 30 || fail "b did not take the freed slot: $(curl -s "http://127.0.0.1:$pb/readyz"; grep -v ZOO_ "$T/b.log" | tail -n 3)"
fetch_ids "$pb" 1000 "$T/ids" || fail "b does not issue"
pass "b kept waiting across its expired session and took the slot when a left"
kill -TERM "${SERVER_PID[b]}"
wait "${SERVER_PID[b]}" || fail "b did not stop cleanly"
