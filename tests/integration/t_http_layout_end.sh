#!/usr/bin/env bash
# labels: http notsan
# timeout: 90
# A server whose clock has passed its layout's end date (the time field is used up)
# answers 503 layout_exhausted naming that date, on every snowflake route and on
# /readyz, and keeps serving everything else; never a 500. The layout is the
# default (41 bits of ms from 2010-11-04, ending in 2080): libfaketime moves the
# server's clock 60 years ahead a few seconds after it started, once it holds its
# slot (FAKETIME_START_AFTER_SECONDS). Both clocks move, as in tests/conformance/slots_time.sh.
source "$(dirname "$0")/lib.sh"

AFTER_S=4
faketime_bin "$T/ik-later" +21900d FAKETIME_START_AFTER_SECONDS=$AFTER_S

end=$("$IK_BIN" decode --expiry --json | jq -r .expires)
log "the default layout ends: $end"
end_date=${end%%T*}
t0=$SECONDS
IK_BIN=$T/ik-later serve_on later --coord "local:$T/data" --quiet || fail "the server never got ready"
((SECONDS - t0 < AFTER_S)) || log "note: ready only after the clock had moved"
# wait for the clock to have moved: the first ID route that does not answer 200
code=200
for ((i = 0; i < 400; i++)); do
  code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/snowflake?count=3") || code=000
  [ "$code" = 200 ] || break
  sleep 0.05
done
[ "$code" != 200 ] || fail "the server still issues IDs 20 s after its clock passed the layout's end"
[ "$code" = 503 ] || fail "/v1/snowflake past the layout's end answered $code, not 503: $(cat "$T/body")"
jq -e '.error == "layout_exhausted"' "$T/body" >/dev/null || fail "error code: $(cat "$T/body")"
grep -q "$end_date" "$T/body" || fail "the message does not name the end date $end_date: $(cat "$T/body")"
pass "/v1/snowflake: 503 $(cat "$T/body")"

code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/api/snowflake/get/x")
[ "$code" = 503 ] || fail "Leaf route answered $code: $(cat "$T/body")"
grep -q "$end_date" "$T/body" || fail "Leaf route's message lacks the end date: $(cat "$T/body")"
code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz")
[ "$code" = 503 ] || fail "/readyz answered $code past the layout's end: $(cat "$T/body")"
grep -q "$end_date" "$T/body" || fail "/readyz does not name the end date: $(cat "$T/body")"
code=$(http_status "http://127.0.0.1:$PORT/healthz")
[ "$code" = 200 ] || fail "/healthz answered $code"
pass "Leaf route and /readyz name the end date; /healthz still 200"
