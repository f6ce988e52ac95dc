#!/usr/bin/env bash
# labels: local slots
# timeout: 120
# SPEC 3 rule 6 on local: a slot whose time record lies beyond the clock makes its
# new holder wait (503, /readyz failing) and never issue an ID at or below the record.
source "$(dirname "$0")/lib.sh"

mkdir -p "$T/data/default/slots"
now_ms=$(( $(date +%s%N) / 1000000 ))
record=$(( now_ms + 3000 ))
{ printf 'idkeeper-slot 1\nrecord_ms=%s\nholder=ahead:1\npid=1\nhost=elsewhere\nsince_ms=0\nend\n' "$record"
  head -c 440 /dev/zero | tr '\0' '\n'; } | head -c 512 >"$T/data/default/slots/0005.slot"

port=$(free_port)
start_server guarded "$port" --coord "local:$T/data" --worker-range 5-5 --quiet
for i in $(seq 100); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break; sleep 0.05
done
code=$(http_status "http://127.0.0.1:$port/api/snowflake/get/x")
[ "$code" = 503 ] || fail "issued (HTTP $code) while the clock is behind the slot's record"
code=$(http_status "http://127.0.0.1:$port/readyz")
[ "$code" = 503 ] || fail "/readyz answered $code while the clock is behind the record"
pass "503 while behind the record"

# poll hard until it issues: the first ID must be past the record
id=
for i in $(seq 400); do
  id=$(curl -fsS "http://127.0.0.1:$port/api/snowflake/get/x" 2>/dev/null) && break
  sleep 0.02
done
[ -n "$id" ] || fail "never issued after the record passed"
t=$("$IK_BIN" decode --json "$id" | jq -r '.time_ms')
w=$("$IK_BIN" decode --json "$id" | jq -r '.worker')
[ "$w" = 5 ] || fail "worker $w, want 5"
[ "$t" -gt "$record" ] || fail "first ID's time $t is not past the record $record"
pass "first ID at $t ms, past the record $record"
