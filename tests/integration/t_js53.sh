#!/usr/bin/env bash
# labels: http
# timeout: 240
# processors: 2
# The js53 layout keeps every ID below 2^53, so a JavaScript number holds it exactly:
# 1,000,000 IDs from two servers of one app (local:) are all below 2^53 and unique,
# and they decode (server and CLI) to the worker that issued them. ?ids=number
# answers them as JSON numbers; on a 63-bit layout it answers 400.
source "$(dirname "$0")/lib.sh"

serve_on a --coord "local:$T/data" --layout js53 --quiet || fail "a not ready: $(cat "$T/a.log")"
pa=$PORT
serve_on b --coord "local:$T/data" --layout js53 --quiet || fail "b not ready: $(cat "$T/b.log")"
pb=$PORT
"$IK_BIN" next --server "http://127.0.0.1:$pa" --count 500000 snowflake >"$T/a.ids" &
na=$!
"$IK_BIN" next --server "http://127.0.0.1:$pb" --count 500000 snowflake >"$T/b.ids" || fail "next from b"
wait $na || fail "next from a"
cat "$T/a.ids" "$T/b.ids" >"$T/all.ids"
[ "$(wc -l <"$T/all.ids")" -eq 1000000 ] || fail "expected 1,000,000 IDs, got $(wc -l <"$T/all.ids")"
assert_unique "$T/all.ids"
# Compared as digit strings: awk's numbers are doubles, exact only below 2^53.
big=$(awk 'length($1) > 16 || (length($1) == 16 && $1 "" >= "9007199254740992")' "$T/all.ids" | head -n 3)
[ -z "$big" ] || fail "IDs at or above 2^53: $big"
pass "1,000,000 js53 IDs from two servers: unique, all below 2^53"

wa=$(curl -fsS "http://127.0.0.1:$pa/v1/status" | jq -r .worker)
id=$(tail -n 1 "$T/a.ids")
[ "$(curl -fsS "http://127.0.0.1:$pa/v1/decode/$id" | jq -r .worker)" = "$wa" ] || fail "server decode of $id"
[ "$("$IK_BIN" decode --layout js53 --json "$id" | jq -r .worker)" = "$wa" ] || fail "CLI decode of $id"
nums=$(curl -fsS "http://127.0.0.1:$pa/v1/snowflake?count=100&ids=number")
[ "$(jq '[.ids[] | type] | unique' -c <<<"$nums")" = '["number"]' ] || fail "ids=number gave $nums"
pass "decode by server and CLI, ids=number"

serve_on c --coord "local:$T/data2" --quiet || fail "c not ready"
[ "$(http_status "http://127.0.0.1:$PORT/v1/snowflake?ids=number")" = 400 ] || fail "ids=number on 63 bits is not 400"
[ "$(http_status "http://127.0.0.1:$PORT/v1/snowflake?ids=bogus")" = 400 ] || fail "ids=bogus is not 400"
pass "ids=number refused above 2^53"
