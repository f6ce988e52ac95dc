#!/usr/bin/env bash
# labels: cli tags
# timeout: 180
# The CLI on the backend, as an operator uses it (docs/cli.md):
#   tags       idkeeper tags add/show/list on the store directly: text and JSON, apps
#              as namespaces, exit 3 for a duplicate (nothing changed), 4 for a missing
#              tag, 8 concurrent adds of one name (one wins, seven exit 3);
#   next       tags made with `idkeeper tags add` serve IDs through a real daemon on the
#              same store: next segment (unique, increasing, in batches over one
#              connection), next sequence (one contiguous run from the tag's start),
#              tags show sees max_id advance; an unknown tag (404) and a tag of the
#              other kind (409) exit 1 in one line; a tag added while the server runs
#              is served without a restart;
#   workers    idkeeper workers shows the server holding its slot (text and JSON), an
#              unused app as the header alone, and after SIGTERM the slot free with its
#              time record.
# (idkeeper lock and elect: the groups locks, locks_stopped and elect.)
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
cd "$T"
ik() { "$IK_BIN" "$@"; }

# ---- tags: add, show, list -------------------------------------------------------------
A=(--coord "$(conf_coord cli)" "${CONF_SERVE_ARGS[@]}")
before_ms=$(date +%s%3N)
ik tags add orders --kind segment --description 'web shop orders' "${A[@]}" >"$T/add" || fail "add orders"
grep -qx 'kind: *segment' "$T/add" && grep -qx 'start: *1' "$T/add" && grep -qx 'step: *1000' "$T/add" &&
  grep -qx 'max_id: *1' "$T/add" && grep -qx 'description: *web shop orders' "$T/add" ||
  fail "add printed: $(cat "$T/add")"
ik tags add invoices --kind sequence --start 1000 --json "${A[@]}" >"$T/add.json" || fail "add invoices"
jq -e '.tag == "invoices" and .kind == "sequence" and .start == "1000" and .step == 1 and
       .max_id == "1000"' "$T/add.json" >/dev/null || fail "add --json: $(cat "$T/add.json")"
ik tags add big.step:v2 --kind segment --start 0 --step 1000000 "${A[@]}" >/dev/null || fail "add big.step:v2"
ik tags show orders "${A[@]}" >"$T/show" || fail "show orders"
cmp -s "$T/add" "$T/show" || fail "show differs from add: $(diff "$T/add" "$T/show")"
ik tags show invoices --json "${A[@]}" >"$T/show.json" || fail "show --json"
jq -e --argjson t "$before_ms" '.kind == "sequence" and .update_time_ms >= $t - 2000' "$T/show.json" >/dev/null ||
  fail "show --json: $(cat "$T/show.json")"
ik tags list "${A[@]}" >"$T/list" || fail "list"
[ "$(tail -n +2 "$T/list" | awk '{print $1}' | tr '\n' ' ')" = "big.step:v2 invoices orders " ] ||
  fail "list: not the three tags by name: $(cat "$T/list")"
ik tags list --json "${A[@]}" | jq -e '[.tags[].tag] == ["big.step:v2", "invoices", "orders"]' >/dev/null ||
  fail "list --json"
ik tags list "${A[@]}" --app other | wc -l | grepq -x 1 || fail "app 'other' is not empty"
ik tags add orders --kind sequence "${A[@]}" --app other >/dev/null || fail "same name in another app"
ik tags show orders --json "${A[@]}" | jq -e '.kind == "segment"' >/dev/null || fail "app 'other' changed 'default'"
pass "add, show and list, text and JSON; apps are separate namespaces"

ik tags list --json "${A[@]}" >"$T/before.json"
expect_fail 3 "tag 'orders' exists already in app 'default'" ik tags add orders --kind sequence --start 5 "${A[@]}"
expect_fail 4 "no tag 'nosuch' in app 'default'" ik tags show nosuch "${A[@]}"
ik tags list --json "${A[@]}" >"$T/after.json"
cmp -s "$T/before.json" "$T/after.json" || fail "a refused add changed the store"
pass "duplicate add exits 3 and changes nothing; a missing tag exits 4"

tags_add_race "${A[@]}"

# ---- next through a server ---------------------------------------------------------------
C=(--coord "$(conf_coord cli)" --app tagapp "${CONF_SERVE_ARGS[@]}")
"$IK_BIN" tags add orders --kind segment --start 5000 --step 100 "${C[@]}" >/dev/null ||
  fail "tags add orders failed"
"$IK_BIN" tags add invoices --kind sequence --start 70 "${C[@]}" >/dev/null ||
  fail "tags add invoices failed"
serve_on tags1 "${C[@]}" --worker-range 0-7 --max-batch 1000 || fail "server did not become ready"
S=(--server "http://127.0.0.1:$PORT")

# ---- next segment: unique, increasing, from the tag's start ---------------------------------
"$IK_BIN" next "${S[@]}" --count 2500 --batch 5000 segment orders >"$T/seg" ||
  fail "next segment orders failed: $(tail -n 5 "$T/tags1.log")"
[ "$(wc -l <"$T/seg")" -eq 2500 ] || fail "next segment printed $(wc -l <"$T/seg") IDs, not 2500"
assert_unique "$T/seg"
assert_increasing "$T/seg"
[ "$(head -n 1 "$T/seg")" -ge 5000 ] || fail "first segment ID $(head -n 1 "$T/seg") is below the start 5000"
max=$("$IK_BIN" tags show orders "${C[@]}" --json | jq -r .max_id)
[ "$max" -gt "$(tail -n 1 "$T/seg")" ] || fail "max_id $max is not above the last segment ID handed out"
pass "next segment: 2500 unique increasing IDs from 5000 (batch lowered to the server's 1000), max_id $max"

# ---- next sequence: one contiguous run from the start ---------------------------------------
"$IK_BIN" next "${S[@]}" --count 100 sequence invoices >"$T/seq" || fail "next sequence invoices failed"
"$IK_BIN" next "${S[@]}" --count 5 sequence invoices >>"$T/seq" || fail "next sequence invoices (again) failed"
seq 70 174 | cmp -s - "$T/seq" || fail "sequence IDs are not exactly 70..174: $(head -n 3 "$T/seq" | tr '\n' ' ')..."
"$IK_BIN" tags show invoices "${C[@]}" --json | jq -e '.max_id == "175"' >/dev/null ||
  fail "sequence max_id: $("$IK_BIN" tags show invoices "${C[@]}" --json)"
pass "next sequence: IDs 70..174, contiguous; max_id 175"

# ---- next: refusals in one line, exit 1 --------------------------------------------------
expect_fail 1 "(HTTP 404" "$IK_BIN" next "${S[@]}" segment nosuch
expect_fail 1 "(HTTP 404" "$IK_BIN" next "${S[@]}" sequence nosuch
expect_fail 1 "(HTTP 409" "$IK_BIN" next "${S[@]}" sequence orders
expect_fail 1 "(HTTP 409" "$IK_BIN" next "${S[@]}" segment invoices
# a tag added while the server runs is served without a restart
"$IK_BIN" tags add late --kind sequence "${C[@]}" >/dev/null || fail "tags add late failed"
[ "$("$IK_BIN" next "${S[@]}" --count 3 sequence late | tr '\n' ' ')" = "1 2 3 " ] ||
  fail "a tag added while the server runs is not served from 1"
pass "unknown tag 404 and wrong kind 409 exit 1 in one line; a tag added later is served"

# ---- workers --------------------------------------------------------------------------------
worker=$(curl -fsS "http://127.0.0.1:$PORT/v1/status" | jq -r .worker)
t_ms=$(date +%s%3N)
"$IK_BIN" next "${S[@]}" --count 10 >/dev/null || fail "next snowflake"
ik workers "${C[@]}" >"$T/w" || fail "workers failed"
cat "$T/w" >&2
head -n 1 "$T/w" | grepq '^WORKER *STATE *HOLDER *SINCE *RECORD *DETAIL' || fail "workers: no header"
grep -Eq "^$worker +held +tags1 +20[0-9-]+T" "$T/w" || fail "workers does not show tags1 holding $worker"
# the same from the environment, as JSON
IDKEEPER_COORD=$(conf_coord cli) IDKEEPER_APP=tagapp ik workers "${CONF_SERVE_ARGS[@]}" --json |
  jq -e ".app == \"tagapp\" and (.slots[] | select(.worker == $worker) | .state == \"held\" and .holder == \"tags1\" and .since_ms > 0)" >/dev/null ||
  fail "workers --json: $(ik workers "${C[@]}" --json)"
ik workers "${A[@]}" --app unused | wc -l | grepq -x 1 || fail "workers of an unused app should be the header alone"
pass "workers lists the holder"

kill -TERM "${SERVER_PID[tags1]}"
wait "${SERVER_PID[tags1]}" || fail "server did not exit 0 on SIGTERM"
ik workers "${C[@]}" --json |
  jq -e "(.slots[] | select(.worker == $worker) | .state == \"free\" and .record_ms >= $t_ms)" >/dev/null ||
  fail "after SIGTERM: $(ik workers "${C[@]}")"
pass "workers shows the released slot free, with its time record"
