#!/usr/bin/env bash
# labels: zk
# timeout: 240
# A slow ZooKeeper (docs/zookeeper.md, "The safe window"): with a 10 s session, a proxy that delivers
# every answer 1.3 s late, then 3 s late, must not stop snowflake issuance (the
# session is alive and every write is answered: the lease is proven, only later);
# answers that stop altogether must still stop issuance within the safe window
# (2/3 of the session timeout after the last answered write was sent, docs/guarantees.md
# promise 10), and the server serves again once answers come back on the same session.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=10000
WINDOW_MS=$((ZK_SESSION_MS * 2 / 3))
zk_start_standalone
zk_proxy_start
pa=$(zk_free_port)
start_server a "$pa" --coord "zk://127.0.0.1:$PP/t" --zk-session-timeout "$ZK_SESSION_MS"
wait_held "$pa" 30 || fail "a not ready through the proxy"
fetch_loop "$pa" "$T/ids"

for d in 1300 3000; do
  proxy delay "$d"
  now_ms t0
  log "every answer from ZooKeeper now comes ${d} ms late"
  sleep 16 # let time pass: the lease must hold through several of its windows so slowed
  now_ms t1
  # 4 s to settle after the change, then 12 s in which every request is answered
  st_check "$T/ids.st" $((t0 + 4000)) "$t1" ok
  [ "$(status_of "$pa" .lease.state)" = held ] || fail "lease is $(status_of "$pa" .lease) with answers ${d} ms late"
  pass "answers ${d} ms late: a serves (lease $(status_of "$pa" .lease.state))"
done

# No answer at all, on open and new connections: the requests still reach
# ZooKeeper (the session lives), their answers are lost.
proxy mute
now_ms tm
log "ZooKeeper's answers stop"
sleep 11 # let time pass: past the safe window (WINDOW_MS), with time to see it stop
proxy delay 0
proxy unmute
now_ms tu
st_check "$T/ids.st" $((tm + WINDOW_MS + 500)) $((tu - 200)) down
pass "no answers: a stopped issuing within the safe window (${WINDOW_MS} ms)"
wait_held "$pa" 30 || fail "a does not serve again once answers come back: $(status_of "$pa" .lease)"
[ "$(status_of "$pa" .lease.acquisitions)" = 1 ] || fail "a took a slot again: $(status_of "$pa" .lease)"
now_ms tb
wait_until 30 fetched "$T/ids" 10 "$tb" || fail "a serves no IDs once answers come back"
fetch_stop
assert_unique "$T/ids"
assert_increasing "$T/ids"
pass "answers back: a serves again on its session; $(wc -l <"$T/ids") IDs, unique and increasing"
