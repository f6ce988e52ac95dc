#!/usr/bin/env bash
# labels: cli tags
# timeout: 120
# Tags made with `idkeeper tags add` serve IDs through a real daemon on the same
# local: store: next segment (unique, increasing, in batches over one connection),
# next sequence (one contiguous run from the tag's start), tags show sees max_id
# advance; an unknown tag (404) and a tag of the other kind (409) exit 1 in one line.
source "$(dirname "$0")/lib.sh"
cd "$T"

C=(--coord "local:$T/data" --app tagapp)

"$IK_BIN" tags add orders --kind segment --start 5000 --step 100 "${C[@]}" >/dev/null ||
  fail "tags add orders failed"
"$IK_BIN" tags add invoices --kind sequence --start 70 "${C[@]}" >/dev/null ||
  fail "tags add invoices failed"
serve_on tags1 "${C[@]}" --worker-range 0-7 --max-batch 1000 || fail "server did not become ready"
S=(--server "http://127.0.0.1:$PORT")

# ---- segment: unique, increasing, from the tag's start ---------------------------------
"$IK_BIN" next "${S[@]}" --count 2500 --batch 5000 segment orders >"$T/seg" ||
  fail "next segment orders failed: $(tail -n 5 "$T/tags1.log")"
[ "$(wc -l <"$T/seg")" -eq 2500 ] || fail "next segment printed $(wc -l <"$T/seg") IDs, not 2500"
assert_unique "$T/seg"
assert_increasing "$T/seg"
[ "$(head -n 1 "$T/seg")" -ge 5000 ] || fail "first segment ID $(head -n 1 "$T/seg") is below the start 5000"
max=$("$IK_BIN" tags show orders "${C[@]}" --json | jq -r .max_id)
[ "$max" -gt "$(tail -n 1 "$T/seg")" ] || fail "max_id $max is not above the last segment ID handed out"
pass "next segment: 2500 unique increasing IDs from 5000 (batch lowered to the server's 1000), max_id $max"

# ---- sequence: one contiguous run from the start ---------------------------------------
"$IK_BIN" next "${S[@]}" --count 100 sequence invoices >"$T/seq" || fail "next sequence invoices failed"
"$IK_BIN" next "${S[@]}" --count 5 sequence invoices >>"$T/seq" || fail "next sequence invoices (again) failed"
seq 70 174 | cmp -s - "$T/seq" || fail "sequence IDs are not exactly 70..174: $(head -n 3 "$T/seq" | tr '\n' ' ')..."
"$IK_BIN" tags show invoices "${C[@]}" --json | jq -e '.max_id == "175"' >/dev/null ||
  fail "sequence max_id: $("$IK_BIN" tags show invoices "${C[@]}" --json)"
pass "next sequence: IDs 70..174, contiguous; max_id 175"

# ---- refusals: one line, exit 1 ----------------------------------------------------------
expect_fail 1 "(HTTP 404" "$IK_BIN" next "${S[@]}" segment nosuch
expect_fail 1 "(HTTP 404" "$IK_BIN" next "${S[@]}" sequence nosuch
expect_fail 1 "(HTTP 409" "$IK_BIN" next "${S[@]}" sequence orders
expect_fail 1 "(HTTP 409" "$IK_BIN" next "${S[@]}" segment invoices
# a tag added while the server runs is served without a restart
"$IK_BIN" tags add late --kind sequence "${C[@]}" >/dev/null || fail "tags add late failed"
[ "$("$IK_BIN" next "${S[@]}" --count 3 sequence late | tr '\n' ' ')" = "1 2 3 " ] ||
  fail "a tag added while the server runs is not served from 1"
pass "unknown tag 404 and wrong kind 409 exit 1 in one line; a tag added later is served"

kill -TERM "${SERVER_PID[tags1]}"
wait "${SERVER_PID[tags1]}" || fail "server did not exit 0 on SIGTERM"
