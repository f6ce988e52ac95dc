#!/usr/bin/env bash
# labels: http local
# timeout: 60
# Query parameters (docs/http.md, "Query parameters"): one percent-decoder and one
# number rule for every parameter. A number is plain decimal digits, no sign, no
# leading zero, after percent-decoding; anything else is a 400 naming the parameter.
# Before, ?seconds= of /v1/history went through strtol (so "+5" and "0000005" were
# accepted) while ?count= refused "+1" but took "007", and no value was decoded
# (count=%31 was a 400).
source "$(dirname "$0")/lib.sh"

serve_on a --coord "local:$T/data" --quiet || fail "a not ready: $(cat "$T/a.log")"
U="http://127.0.0.1:$PORT"
# expect STATUS WHAT PATH [JQ-TEST]: GET PATH answers STATUS (and, with a jq test,
# a body for which it holds)
expect() {
  local code
  code=$(curl -s -o "$T/out" -w '%{http_code}' "$U$3")
  [ "$code" = "$1" ] || fail "$2: $3 answered $code, want $1: $(head -c 300 "$T/out")"
  if [ -n "${4:-}" ]; then jq -e "$4" "$T/out" >/dev/null || fail "$2: $3: $(head -c 300 "$T/out")"; fi
}

expect 400 "a sign" "/v1/history?seconds=+5" '.error == "bad_seconds"'
expect 400 "a sign, encoded" "/v1/history?seconds=%2B5" '.error == "bad_seconds"'
expect 400 "leading zeros" "/v1/history?seconds=0000005" '.error == "bad_seconds"'
expect 400 "a space" "/v1/history?seconds=5%20" '.error == "bad_seconds"'
expect 200 "seconds, encoded" "/v1/history?seconds=%35" '.seconds == 5'
expect 200 "seconds" "/v1/history?seconds=7" '.seconds == 7'
pass "seconds: +5, %2B5, 0000005 and '5 ' refused; %35 is 5"

expect 400 "count with a sign" "/v1/snowflake?count=+1" '.error == "bad_count"'
expect 400 "count with leading zeros" "/v1/snowflake?count=007" '.error == "bad_count"'
expect 400 "count, a bad escape" "/v1/snowflake?count=%3" '.error == "bad_count"'
expect 200 "count, encoded" "/v1/snowflake?count=%31" '.ids | length == 1'
expect 200 "count, encoded" "/v1/snowflake?count=1%30" '.ids | length == 10'
pass "count: +1, 007 and %3 refused; %31 is 1, 1%30 is 10"

[ "$(curl -fsS "$U/v1/snowflake?format=%74ext&count=2" | wc -l)" = 2 ] || fail "format=%74ext is not text"
# ids=number: numbers, or (this layout's IDs are above 2^53) ids_too_large; not bad_format
curl -s "$U/v1/snowflake?ids=%6Eumber" >"$T/out"
jq -e '(.ids[0] | type == "number") or .error == "ids_too_large"' "$T/out" >/dev/null ||
  fail "ids=%6Eumber is not read as number: $(cat "$T/out")"
expect 400 "format, a bad escape" "/v1/snowflake?format=%zz" '.error == "bad_format"'
pass "format=%74ext is text, ids=%6Eumber numbers, format=%zz refused"
