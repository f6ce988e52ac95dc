#!/usr/bin/env bash
# labels: counters http
# timeout: 300
# Bad input on the tag routes (docs/guarantees.md promises 5, 15): an unknown tag 404
# unknown_tag; a tag used as the other kind 409 wrong_kind; step 0, a negative start,
# a name over 128 bytes or with characters outside [A-Za-z0-9._:-] 400; a duplicate
# POST /v1/tags 409 tag_exists; malformed bodies 400. Each answer is a JSON error
# with a message, refused creations leave the store as it was, and the server keeps
# serving.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_counters
source "$IK_SRC/tests/tools/counters.sh"

fleet 1 --max-batch 100
U=$(url s1)
add_tag s1 seg1 segment ',"step":10'
add_tag s1 seq1 sequence

# still_serving WHAT [all]: alive and serving segment IDs after each bad request;
# a sequence ID (one durable store write each: slow on zk:// and on a busy disk)
# after every 8th and when asked (all), so that the group costs little on any store.
still_n=0
still_serving() {
  kill -0 "${SERVER_PID[s1]}" 2>/dev/null || fail "server died after $1"
  http_get "$U/api/segment/get/seg1" 30 >/dev/null || fail "no segment ID after $1"
  if ((++still_n % 8 == 0)) || [ "${2:-}" = all ]; then
    # generous: a sequence ID is a durable commit, slow on a busy disk (rule 5)
    http_get "$U/v1/sequence/seq1" 30 >/dev/null || fail "no sequence ID after $1"
  fi
}

# expect CODE ERROR WHAT curl-args...
expect() {
  local want=$1 err=$2 what=$3 got; shift 3
  got=$(curl -s --max-time 10 -o "$T/body" -w '%{http_code}' "$@")
  [ "$got" = "$want" ] || fail "$what: HTTP $got, want $want: $(head -c 300 "$T/body")"
  # one jq for both: the error code, and whether a message is there
  [ "$(jq -r '.error + (if (.message // "") != "" then " with a message" else "" end)' "$T/body")" = "$err with a message" ] ||
    fail "$what: $(cat "$T/body"), want error $err with a message"
  still_serving "$what"
  pass "$what -> $want $err"
}
post() { expect "$1" "$2" "$3" -X POST "$U/v1/tags" -H 'Content-Type: application/json' --data-binary "$4"; }

# ---- unknown tags
expect 404 unknown_tag "unknown segment tag (Leaf)" "$U/api/segment/get/nope"
expect 404 unknown_tag "unknown segment tag" "$U/v1/segment/nope?count=2"
expect 404 unknown_tag "unknown sequence tag" "$U/v1/sequence/nope"
expect 404 unknown_tag "unknown tag (show)" "$U/v1/tags/nope"
for i in $(seq 300); do echo "url = \"$U/v1/segment/rnd$i\""; echo "output = /dev/null"; done >"$T/many"
curl -s --parallel --parallel-max 50 -K "$T/many" || true
still_serving "300 distinct unknown names at once" all
pass "300 distinct unknown names: answered, still serving"

# ---- the other kind
expect 409 wrong_kind "sequence tag on the segment route" "$U/v1/segment/seq1"
expect 409 wrong_kind "sequence tag on the Leaf segment route" "$U/api/segment/get/seq1"
expect 409 wrong_kind "segment tag on the sequence route" "$U/v1/sequence/seg1?count=3"

# ---- names in the path
long=$(printf 'a%.0s' $(seq 129))
ok128=$(printf 'b%.0s' $(seq 128))
expect 400 bad_tag "129-byte name in the path" "$U/v1/sequence/$long"
expect 400 bad_tag "bad character in the path" "$U/v1/segment/a\$b"
expect 400 bad_tag "non-ASCII name in the path" "$U/v1/segment/%C3%A9t%C3%A9"
expect 400 bad_tag "NUL escape in the path" "$U/v1/sequence/a%00b"
expect 400 bad_tag "broken escape in the path" "$U/v1/sequence/a%4"
expect 400 bad_tag "name '..'" --path-as-is "$U/v1/tags/.."
expect 400 bad_count "count=0 on sequence" "$U/v1/sequence/seq1?count=0"
expect 400 bad_count "count above max-batch on segment" "$U/v1/segment/seg1?count=101"
expect 400 bad_format "format=xml on sequence" "$U/v1/sequence/seq1?format=xml"

# ---- POST /v1/tags
post 400 bad_step "step 0 (segment)" '{"tag":"t1","kind":"segment","step":0}'
post 400 bad_step "step 0 (sequence)" '{"tag":"t1","kind":"sequence","step":0}'
post 400 bad_step "step on a sequence tag" '{"tag":"t1","kind":"sequence","step":5}'
post 400 bad_step "step over 1000000" '{"tag":"t1","kind":"segment","step":1000001}'
post 400 bad_step "step 1.5" '{"tag":"t1","kind":"segment","step":1.5}'
post 400 bad_start "negative start" '{"tag":"t1","kind":"segment","start":-1}'
post 400 bad_start "start as text" '{"tag":"t1","kind":"sequence","start":"ten"}'
post 400 bad_start "start above 2^63-1" '{"tag":"t1","kind":"sequence","start":9223372036854775808}'
post 400 bad_tag "129-byte name" "{\"tag\":\"$long\",\"kind\":\"segment\"}"
post 400 bad_tag "name with a space" '{"tag":"a b","kind":"segment"}'
post 400 bad_tag "name with a slash" '{"tag":"a/b","kind":"segment"}'
post 400 bad_tag "empty name" '{"tag":"","kind":"segment"}'
post 400 bad_tag "no name" '{"kind":"segment"}'
post 400 bad_kind "kind counter" '{"tag":"t1","kind":"counter"}'
post 400 bad_kind "no kind" '{"tag":"t1"}'
post 400 bad_json "not JSON" 'tag=t1&kind=segment'
post 400 bad_json "truncated JSON" '{"tag":"t1","kind":"seg'
post 400 bad_json "nested value" '{"tag":"t1","kind":"segment","step":{"n":1}}'
post 400 bad_json "unknown field" '{"tag":"t1","kind":"segment","stpe":10}'
post 400 bad_json "field twice" '{"tag":"t1","tag":"t2","kind":"segment"}'
post 400 bad_json "empty body" ''
post 400 bad_description "description too long" "{\"tag\":\"t1\",\"kind\":\"segment\",\"description\":\"$(printf 'd%.0s' $(seq 256))\"}"
post 409 tag_exists "duplicate POST" '{"tag":"seq1","kind":"sequence"}'
post 409 tag_exists "duplicate POST of the other kind" '{"tag":"seq1","kind":"segment","step":5}'
[ "$(tag_field s1 seq1 kind)" = sequence ] || fail "a refused POST changed seq1"
code=$(curl -s -o /dev/null -w '%{http_code}' "$U/v1/tags/t1")
[ "$code" = 404 ] || fail "a refused POST created t1 (GET says $code)"
pass "refused creations left the store as it was"

# ---- what is allowed: 128 bytes, every allowed character, escapes, defaults
add_tag s1 "$ok128" segment
add_tag s1 'A.b_c:d-9' sequence ',"start":"12345678901234567","description":"caf\u00e9 \"x\""'
[ "$(tag_field s1 'A.b_c:d-9' start)" = 12345678901234567 ] || fail "start as a string"
[ "$(tag_field s1 'A.b_c:d-9' description)" = 'café "x"' ] || fail "description unescaped"
id=$(curl -fsS "$U/v1/sequence/A.b_c%3Ad-9?format=text")
[ "$id" = 12345678901234567 ] || fail "percent-escaped name: $id"
[ "$(curl -fsS "$U/api/segment/get/$ok128")" = 1 ] || fail "128-byte tag: first ID not 1 (default start)"
[ "$(tag_field s1 "$ok128" step)" = 1000 ] || fail "default segment step not 1000"
n=$(curl -fsS "$U/v1/tags" | jq '.tags | length')
[ "$n" = 4 ] || fail "GET /v1/tags lists $n tags"
pass "128-byte names, [A-Za-z0-9._:-], percent-escapes and defaults (start 1, step 1000) work"

# ---- errors are counted per route and status
m=$(curl -fsS "$U/metrics")
grep -q 'ik_http_requests_total{route="/v1/tags",code="409"} 2' <<<"$m" || fail "409s not counted: $(grep tags <<<"$m")"
grep -q 'ik_http_requests_total{route="/v1/segment/{tag}",code="409"}' <<<"$m" || fail "wrong_kind not counted"
pass "errors counted"

stop_clean s1
pass "clean exit"
