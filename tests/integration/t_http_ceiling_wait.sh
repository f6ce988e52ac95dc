#!/usr/bin/env bash
# labels: http slots
# timeout: 120
# A snowflake request that finds the clock past the slot's persisted time record
# (the ceiling) may wait up to 50 ms for the lease to extend it; that wait must not
# block the loop thread. The test-only hook IDKEEPER_TEST_PERSIST_STALL_MS holds the
# lease's persists back for 20 s, so the clock stays past the ceiling. One loop
# (--threads 1): client A pipelines 200 snowflake requests on one connection, each
# of which waits its 50 ms; client B asks /healthz on another connection meanwhile.
# A loop that slept in each request would answer B only after A's 200 x 50 ms = 10 s;
# a loop that never blocks answers B at once (here: within 3 s).
source "$(dirname "$0")/lib.sh"

N=200
IDKEEPER_TEST_PERSIST_STALL_MS=20000 serve_on a --coord "local:$T/data" --threads 1 --quiet ||
  fail "the server never got ready"
# the acquisition wrote a record 1 s ahead; the next persist comes 20 s later
past_ceiling() {
  curl -s "http://127.0.0.1:$PORT/readyz" >"$T/ready" || true
  grep -q 'not been persisted past now' "$T/ready"
}
wait_until 15 past_ceiling || fail "the clock never passed the ceiling: $(cat "$T/ready")"
log "past the ceiling: $(cat "$T/ready")"

# A: N pipelined requests on one connection, answers read in the background
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
req=$'GET /v1/snowflake?count=3 HTTP/1.1\r\nHost: x\r\n\r\n'
all=
for ((i = 0; i < N; i++)); do all+=$req; done
mono_ms t0
printf '%s' "$all" >&3
timeout 60 cat <&3 >"$T/a.out" &
reader=$!
# A's requests are being served, each after its wait: its first answer came
a_begun() { grep -q '^HTTP/1.1 ' "$T/a.out" 2>/dev/null; }
wait_until 10 a_begun || fail "A's pipeline got no answer"
# B: another connection, while A's requests wait
b=$(curl -s -m 30 -o "$T/b.out" -w '%{http_code} %{time_total}' "http://127.0.0.1:$PORT/healthz") || true
mono_ms tb
log "B: $b, $((tb - t0)) ms after A's requests went out"
[ "${b%% *}" = 200 ] || fail "/healthz on another connection answered '$b'"
secs=${b#* }
awk -v s="$secs" 'BEGIN { exit !(s < 3.0) }' ||
  fail "/healthz took $secs s while another connection's requests waited for the ceiling: the loop thread was blocked"
pass "the loop answered another connection in $secs s while $N requests waited for the ceiling"

# A's requests all get an answer: 503 no_lease after their wait (the ceiling stayed)
all_answered() { [ "$(grep -c '^HTTP/1.1 ' "$T/a.out" 2>/dev/null)" -ge "$N" ]; }
wait_until 30 all_answered || true
exec 3<&-
kill "$reader" 2>/dev/null || true
got=$(grep -c '^HTTP/1.1 ' "$T/a.out" || true)
[ "$got" -eq "$N" ] || fail "A got $got answers of $N"
bad=$(grep '^HTTP/1.1 ' "$T/a.out" | grep -vc -e '^HTTP/1.1 503' -e '^HTTP/1.1 200' || true)
[ "$bad" -eq 0 ] || fail "A got answers other than 200/503: $(grep '^HTTP/1.1 ' "$T/a.out" | sort | uniq -c)"
log "A's answers: $(grep '^HTTP/1.1 ' "$T/a.out" | tr -d '\r' | sort | uniq -c | tr '\n' ' ')"
grep -q '"no_lease"' "$T/a.out" || fail "no 503 no_lease among A's answers"
pass "A's $N requests answered (503 no_lease after the ceiling wait), in order on their connection"
