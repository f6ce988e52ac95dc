#!/usr/bin/env bash
# labels: zk
# timeout: 180
# fixtures: zk
# A full range at start (docs/guarantees.md promise 9): the server waits for a
# slot to free up, serving 503 on /readyz meanwhile and saying why. A holder of a
# full range killed with -9 and replaced at once: the replacement serves within the
# session timeout plus 3 s, without a crash loop. With nothing freeing up it gives
# up after --slot-wait, naming the range and the holders.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=4000
zk_start_standalone
pa=$(zk_free_port)
pb=$(zk_free_port)
zk_serve a "$pa" --worker-range 0-1
zk_serve b "$pb" --worker-range 0-1
wait_held "$pa" 30 || fail "a not ready"
wait_held "$pb" 30 || fail "b not ready"
fetch_ids "$pa" 5000 "$T/ids"
fetch_ids "$pb" 5000 "$T/ids"

kill -KILL "${SERVER_PID[a]}"
mono_ms t_kill
pa2=$(zk_free_port)
zk_serve a2 "$pa2" --worker-range 0-1
# while the range is full: alive, not ready, and /readyz says why
seen=0
while :; do
  alive "${SERVER_PID[a2]}" || fail "a2 exited: $(tail -n 2 "$T/a2.log")"
  body=$(curl -s -m 2 "http://127.0.0.1:$pa2/readyz" || true)
  if grep -q '"status":"ready"' <<<"$body"; then break; fi
  if grep -q 'free slot' <<<"$body"; then
    ((seen)) || log "a2 waits: $body"
    seen=1
  fi
  (($(mono_ms) - t_kill < ZK_SESSION_MS + 3000)) || fail "a2 not ready $(( $(mono_ms) - t_kill )) ms after the kill: $body"
  sleep 0.1
done
took=$(( $(mono_ms) - t_kill ))
((seen)) || fail "a2 never said on /readyz that it waits for a free slot"
wait_held "$pa2" 5 || fail "a2 ready but its lease is $(status_of "$pa2" .lease)"
fetch_ids "$pa2" 5000 "$T/ids"
assert_unique "$T/ids"
pass "a2 (range full at its start) serves ${took} ms after a's kill -9 (session ${ZK_SESSION_MS} ms)"

# nothing frees up: c gives up after its --slot-wait, naming the range and holders
pc=$(zk_free_port)
mono_ms t0
zk_serve c "$pc" --worker-range 0-1 --slot-wait 1500
rc=0
wait "${SERVER_PID[c]}" || rc=$?
took=$(( $(mono_ms) - t0 ))
((rc != 0)) || fail "c exited 0 with no slot free"
grep -q 'cannot take a worker slot: none freed in [0-9]* ms: no free worker slot: all 2 slots of app default in 0-1 are held: 0 by [ab2]*, 1 by [ab2]*' "$T/c.log" ||
  fail "c's refusal does not name the range and holders: $(grep -m1 cannot "$T/c.log" || tail -n 2 "$T/c.log")"
((took >= 1500)) || fail "c gave up after ${took} ms, before its --slot-wait"
pass "c gave up after ${took} ms: $(grep -m1 -o 'cannot take.*' "$T/c.log")"
