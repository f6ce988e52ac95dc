#!/usr/bin/env bash
# labels: zk
# timeout: 240
# SIGTERM with a slow ZooKeeper and the default --shutdown-timeout (5 s;
# docs/zookeeper.md, "A slow ZooKeeper"; docs/http.md, "Shutdown"): every answer
# comes 3 s late through a fault proxy, the session is the default 10 s, and the
# server serves through it. Three times, at different points of the lease's
# writes: SIGTERM, then the server exits 0 within --shutdown-timeout + 1 s, its log
# says it released its worker and names what the release waited on, and the slot's
# owner node is gone once it exited (a replacement need not wait for the session to
# expire).
# Before the fix: the stop's cut came 1.5 s before the deadline, so the release,
# which waits for the lease's write in flight (up to 3 s) and then its own (3 s),
# was given up ("release of worker N in doubt") at 3.6 s and its owner node stayed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

D=3000
STOP_MS=5000
BOUND_MS=$((STOP_MS + 1000))
ZK_SESSION_MS=10000
zk_start_standalone
zk_proxy_start

# persisted_late NAME: the server's lease holds through the delay: a time record
# written since the delay began was acknowledged (its status shows a record newer
# than the one seen at the delay's start)
record_of() { status_of "$1" .lease.record_ms; }
record_past() { local r; r=$(record_of "$1"); [ -n "$r" ] && [ "$r" != null ] && ((r > $2)); }

for round in 1 2 3; do
  name=s$round
  port=$(zk_free_port)
  start_server "$name" "$port" --coord "zk://127.0.0.1:$PP/t" --zk-session-timeout $ZK_SESSION_MS \
    --shutdown-timeout $STOP_MS
  wait_held "$port" 60 || fail "$name not ready through the proxy: $(tail -n 5 "$T/$name.log")"
  worker=$(status_of "$port" .lease.worker)
  proxy delay $D
  rec=$(record_of "$port")
  # two records acknowledged through the delay: the lease's writes now take D each
  wait_until 20 record_past "$port" "$rec" || fail "$name: no time record acknowledged with answers $D ms late"
  rec=$(record_of "$port")
  wait_until 20 record_past "$port" "$rec" || fail "$name: no second record acknowledged"
  # a different point of the lease's write cycle each round
  sleep "0.$((round * 3))" # let time pass: the SIGTERM lands at another point of a write's 3 s
  mono_ms t0
  kill -TERM "${SERVER_PID[$name]}"
  rc=0
  wait "${SERVER_PID[$name]}" || rc=$?
  took=$(($(mono_ms) - t0))
  proxy delay 0
  log "$name: exit $rc in $took ms: $(grep -E 'release|bye' "$T/$name.log" | tr '\n' ' ')"
  ((rc == 0)) || fail "$name exited $rc: $(tail -n 5 "$T/$name.log")"
  ((took <= BOUND_MS)) || fail "$name: the stop took $took ms, past --shutdown-timeout $STOP_MS + 1 s"
  grep -q "released worker $worker; bye" "$T/$name.log" ||
    fail "$name: worker $worker not released with answers $D ms late: $(grep -E 'release|bye|cut' "$T/$name.log")"
  grep -qE "releasing worker $worker: .*wait" "$T/$name.log" ||
    fail "$name: the log does not say what the release waits on: $(grep -E 'release' "$T/$name.log")"
  owner=$(slot_json "$worker" | jq -c .owner)
  [ "$owner" = null ] || fail "$name: worker $worker's owner node is still there after the exit: $owner"
  pass "round $round: released worker $worker in $took ms with answers $D ms late"
done
