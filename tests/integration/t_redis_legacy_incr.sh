#!/usr/bin/env bash
# labels: redis
# timeout: 400
# processors: 2
# fixtures: redis
# An app that numbers orders with INCR on a Redis key keeps doing so while two
# idkeeper servers hand out segment IDs of a tag on that same key (docs/guarantees.md promise 25,
# docs/redis.md "Adopting a key"): the key had counted to 5000 before the tag was
# made, so `idkeeper tags add` adopts it (max_id 5001); then the legacy client (one
# INCR an ID, tests/tools/incr_client.py) and both servers draw at once: 200,000+ IDs in
# all, none twice, none at or below 5000.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_start
DATA=$(redis_uri data)
key=${REDIS_PREFIX}data/order_id # the counter key of tag order_id in app default
rcli INCRBY "$key" 5000 >/dev/null
"$IK_BIN" tags add order_id --kind segment --step 1000 --coord "$DATA" >/dev/null
[ "$("$IK_BIN" tags show order_id --json --coord "$DATA" | jq -r .max_id)" = 5001 ] ||
  fail "the adopted key's tag does not start above its value: $("$IK_BIN" tags show order_id --coord "$DATA")"
pass "tags add adopted the INCR key at 5000: max_id 5001"

HAMMER=$IK_BUILD/tests/tools/hammer
declare -A P HP
for s in s1 s2; do
  serve_on "$s" --coord "$DATA" --threads 1 --quiet || fail "$s: $(cat "$T/$s.log")"
  P[$s]=$PORT
done
# each server draws 85,000 IDs at least, in 4-second rounds of one ID a request: a
# count, not a duration, so a slow machine takes longer but never fails the test
draw() { # SERVER
  : >"$T/$1.ids"
  while [ "$(wc -l <"$T/$1.ids")" -lt 85000 ]; do
    "$HAMMER" --url "http://127.0.0.1:${P[$1]}/v1/segment/order_id?count=1&format=text" --connections 2 \
      --duration 4 --out "$T/$1.round" >>"$T/$1.hammer" 2>&1 || return 1
    cat "$T/$1.round" >>"$T/$1.ids"
  done
}
for s in s1 s2; do
  draw "$s" &
  IK_PIDS+=($!)
  HP[$s]=$!
done
# the legacy client: one INCR an ID, 32 in flight on its connection
python3 "$IK_SRC/tests/tools/incr_client.py" "$REDIS_PORT" "$key" 30000 32 >"$T/legacy.ids" ||
  fail "the legacy client failed"
for s in s1 s2; do wait "${HP[$s]}" || fail "$s: the hammer failed: $(tail -n 3 "$T/$s.hammer")"; log "$s: $(wc -l <"$T/$s.ids") IDs"; done
grep -qv '^[0-9][0-9]*$' "$T/legacy.ids" && fail "the legacy client got a non-integer: $(grep -v '^[0-9]*$' "$T/legacy.ids" | head -n 3)"
n=$(cat "$T/legacy.ids" "$T"/s?.ids | wc -l)
((n >= 200000)) || fail "only $n IDs in all (legacy $(wc -l <"$T/legacy.ids"))"
python3 "$IK_SRC/tests/tools/idcheck.py" unique "$T/legacy.ids" "$T/s1.ids" "$T/s2.ids" >"$T/check" || fail "duplicates"
low=$(awk 'NR == 1 || $1 < m { m = $1 } END { print m }' "$T/legacy.ids" "$T"/s?.ids)
((low > 5000)) || fail "an ID at or below the adopted value: $low"
pass "legacy INCR beside two servers: $(cat "$T/check") (legacy $(wc -l <"$T/legacy.ids")), lowest $low"
for s in s1 s2; do
  kill -TERM "${SERVER_PID[$s]}"
  wait "${SERVER_PID[$s]}" || fail "$s: exit after SIGTERM"
done
