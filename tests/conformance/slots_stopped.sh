#!/usr/bin/env bash
# labels: slots release
# timeout: 120
# A server frozen with SIGSTOP past its lease (on zk:// the session timeout) while
# another server takes its slot, then SIGCONT (docs/guarantees.md promise 10): the woken one issues
# no ID under its old worker number (503 until it holds a lease again, a request
# queued while it was frozen included), takes the slot again without a restart once
# it is free (on a new session), and the IDs of both hold no duplicate.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start

C=$(conf_coord stopped)
S=(--coord "$C" --worker-range 7-7 --quiet "${CONF_SERVE_ARGS[@]}")
pa=$(free_port)
pb=$(free_port)
start_server a "$pa" "${S[@]}"
wait_ready "$pa" 60 || fail "a not ready"
fetch_ids "$pa" 5000 "$T/ids.a1"
session_a=$(status_of "$pa" .lease.session)

kill -STOP "${SERVER_PID[a]}"
log "a frozen (session $session_a)"
# A request that reaches a while it is frozen: served only after SIGCONT.
curl -s -m 30 -o "$T/queued.body" -w '%{http_code}' \
  "http://127.0.0.1:$pa/v1/snowflake?count=5&format=text" >"$T/queued.code" &
queued=$!
# b waits (the default --slot-wait: the free time + 2 s) for a's lease to end
start_server b "$pb" "${S[@]}"
wait_ready "$pb" $(($(conf_slot_wait_ms) / 1000 + 30)) || fail "b not ready: $(tail -n 3 "$T/b.log")"
[ "$(status_of "$pb" .worker)" = 7 ] || fail "b serves under $(status_of "$pb" .worker)"
# b serves IDs in the background until it leaves
(while [ ! -e "$T/b.stop" ]; do fetch_ids "$pb" 50 "$T/ids.b" || exit 1; sleep 0.04; done) &
loop_b=$!
log "b holds slot 7; waking a"

kill -CONT "${SERVER_PID[a]}"
wait $queued || true
[ "$(cat "$T/queued.code")" = 503 ] ||
  fail "the request queued while a was frozen got $(cat "$T/queued.code"): $(cat "$T/queued.body")"
# For 4 s after waking, a answers 503 to every request and issues nothing.
t_end=$(( $(date +%s%3N) + 4000 ))
n=0
while (( $(date +%s%3N) < t_end )); do
  code=$(http_status "http://127.0.0.1:$pa/v1/snowflake?count=5&format=text")
  [ "$code" = 503 ] || fail "a answered $code after waking while b holds its slot"
  code=$(http_status "http://127.0.0.1:$pa/readyz")
  [ "$code" = 503 ] || fail "a's /readyz answered $code after waking"
  n=$((n + 1))
  sleep 0.05
done
state=$(status_of "$pa" .lease.state)
log "a answered 503 $n times; lease state $state, why: $(status_of "$pa" .lease.why)"
[ "$state" != held ] || fail "a claims to hold a lease while b holds slot 7"
pass "the woken server refuses while its slot is someone else's"

# b leaves (SIGTERM releases the slot): a takes slot 7 again, without a restart.
touch "$T/b.stop"
wait $loop_b || fail "fetching from b failed"
kill -TERM "${SERVER_PID[b]}"
wait "${SERVER_PID[b]}" || fail "b did not exit 0 on SIGTERM"
wait_ready "$pa" 20 || fail "a does not serve again after b released the slot"
kill -0 "${SERVER_PID[a]}" || fail "a died"
[ "$(status_of "$pa" .worker)" = 7 ] || fail "a serves under $(status_of "$pa" .worker)"
session_a2=$(status_of "$pa" .lease.session)
[ "$session_a2" != "$session_a" ] || [ "$session_a" = null ] || fail "a kept its expired session $session_a"
fetch_ids "$pa" 5000 "$T/ids.a2"
ids_time_check "$T/ids.a2" "$(ids_time_max "$T/ids.b")"
cat "$T/ids.a1" "$T/ids.b" "$T/ids.a2" >"$T/all"
assert_unique "$T/all"
assert_increasing "$T/all"
pass "a serves again on a new session ($session_a -> $session_a2); $(wc -l <"$T/all") IDs, no duplicate"
