#!/usr/bin/env bash
# labels: cli tags
# timeout: 120
# idkeeper tags list|show|add on local: (a real SQLite store): text and JSON output,
# the exit codes scripts rely on (2 usage, 3 exists, 4 not found), a duplicate or a
# bad add that leaves the store unchanged, concurrent adds of one name, options from
# the environment and a config file; then next segment|sequence against a scripted
# server that refuses (404, 409) in one line.
source "$(dirname "$0")/lib.sh"
cd "$T"

C=(--coord "local:$T/data")

ik() { "$IK_BIN" "$@"; }

# ---- add, show, list ---------------------------------------------------------------
before_ms=$(date +%s%3N)
ik tags add orders --kind segment --description 'web shop orders' "${C[@]}" >"$T/add" ||
  fail "tags add orders failed"
cat "$T/add" >&2
grep -qx 'tag: *orders' "$T/add" || fail "add does not print the tag"
grep -qx 'kind: *segment' "$T/add" || fail "add: kind"
grep -qx 'start: *1' "$T/add" || fail "add: default start is not 1"
grep -qx 'step: *1000' "$T/add" || fail "add: default segment step is not 1000"
grep -qx 'max_id: *1' "$T/add" || fail "add: max_id of a new tag is not its start"
grep -qx 'description: *web shop orders' "$T/add" || fail "add: description"
ik tags add invoices --kind sequence --start 1000 --json "${C[@]}" >"$T/add.json" ||
  fail "tags add invoices failed"
jq -e '.tag == "invoices" and .kind == "sequence" and .start == "1000" and .step == 1 and
       .max_id == "1000" and .description == ""' "$T/add.json" >/dev/null ||
  fail "add --json: $(cat "$T/add.json")"
ik tags add big.step:v2 --kind segment --start 0 --step 1000000 "${C[@]}" >/dev/null ||
  fail "add with start 0 and the largest step failed"
pass "add: segment and sequence tags, defaults start 1 and step 1000"

ik tags show orders "${C[@]}" >"$T/show" || fail "tags show orders failed"
cmp -s "$T/add" "$T/show" || fail "show differs from what add printed: $(diff "$T/add" "$T/show")"
ik tags show invoices --json "${C[@]}" >"$T/show.json" || fail "show --json failed"
jq -e --argjson t "$before_ms" '.kind == "sequence" and .update_time_ms >= $t and
       (.update_time | test("^20[0-9-]+T[0-9:.]+Z$"))' "$T/show.json" >/dev/null ||
  fail "show --json: $(cat "$T/show.json")"
[ "$(date -u -d "$(jq -r .update_time "$T/show.json")" +%s%3N)" = "$(jq -r .update_time_ms "$T/show.json")" ] ||
  fail "update_time and update_time_ms disagree: $(cat "$T/show.json")"

ik tags list "${C[@]}" >"$T/list" || fail "tags list failed"
cat "$T/list" >&2
head -n 1 "$T/list" | grep -Eq '^TAG +KIND +START +STEP +MAX_ID +UPDATED +DESCRIPTION$' ||
  fail "list: header: $(head -n 1 "$T/list")"
[ "$(tail -n +2 "$T/list" | awk '{print $1}' | tr '\n' ' ')" = "big.step:v2 invoices orders " ] ||
  fail "list: not the three tags by name: $(cat "$T/list")"
grep -Eq '^orders +segment +1 +1000 +1 +20[0-9-]+T[0-9:.]+Z +web shop orders$' "$T/list" ||
  fail "list: the orders line"
grep -Eq '^invoices +sequence +1000 +1 +1000 +20' "$T/list" || fail "list: the invoices line"
ik tags list --json "${C[@]}" >"$T/list.json" || fail "list --json failed"
jq -e --arg d "$T/data" '.coord == "local:" + $d and .app == "default" and
       ([.tags[].tag] == ["big.step:v2", "invoices", "orders"]) and
       (.tags[] | select(.tag == "big.step:v2") | .start == "0" and .step == 1000000)' \
  "$T/list.json" >/dev/null || fail "list --json: $(cat "$T/list.json")"
pass "show and list, text and JSON"

# apps are separate namespaces; an unused app lists the header alone
ik tags list "${C[@]}" --app other | wc -l | grepq -x 1 || fail "app 'other' is not empty"
ik tags list --json "${C[@]}" --app other | jq -e '.tags == []' >/dev/null || fail "other --json"
expect_fail 4 "no tag 'orders' in app 'other'" ik tags show orders "${C[@]}" --app other
ik tags add orders --kind sequence "${C[@]}" --app other >/dev/null || fail "same name in another app"
ik tags show orders --json "${C[@]}" | jq -e '.kind == "segment"' >/dev/null ||
  fail "adding orders to app 'other' changed app 'default'"
pass "apps are separate namespaces"

# ---- exists: code 3, the store unchanged ---------------------------------------------
ik tags list --json "${C[@]}" >"$T/before.json"
expect_fail 3 "tag 'orders' exists already in app 'default'" \
  ik tags add orders --kind segment "${C[@]}"
expect_fail 3 "(a segment tag, start 1); nothing changed" \
  ik tags add orders --kind sequence --start 5 --description other "${C[@]}"
expect_fail 3 "exists already" ik tags add invoices --kind sequence --start 1000 "${C[@]}"
ik tags list --json "${C[@]}" >"$T/after.json"
cmp -s "$T/before.json" "$T/after.json" || fail "a refused add changed the store: $(diff "$T/before.json" "$T/after.json")"
pass "a duplicate add exits 3 and changes nothing"

# ---- not found: code 4 -------------------------------------------------------------------
expect_fail 4 "no tag 'nosuch' in app 'default' on local:$T/data" ik tags show nosuch "${C[@]}"
expect_fail 4 "no tag" ik tags show nosuch --json "${C[@]}"
pass "show of a missing tag exits 4"

# ---- usage: code 2, nothing stored -------------------------------------------------------
long=$(printf 'x%.0s' {1..129})
ok128=$(printf 'y%.0s' {1..128})
expect_fail 2 "tag name is 129 bytes, over 128" ik tags add "$long" --kind segment "${C[@]}"
expect_fail 2 "tag name is 129 bytes, over 128" ik tags show "$long" "${C[@]}"
expect_fail 2 "bad tag name 'a/b'" ik tags add a/b --kind segment "${C[@]}"
expect_fail 2 "bad tag name 'a b'" ik tags add 'a b' --kind sequence "${C[@]}"
expect_fail 2 "bad tag name 'a?b'" ik tags add $'a\nb' --kind sequence "${C[@]}"
expect_fail 2 "bad tag name '..'" ik tags add .. --kind segment "${C[@]}"
expect_fail 2 "bad tag name 'a/b'" ik tags show a/b "${C[@]}"
expect_fail 2 "--step: 0 is out of range 1..1000000" ik tags add s0 --kind segment --step 0 "${C[@]}"
expect_fail 2 "--step: 1000001 is out of range" ik tags add s0 --kind segment --step 1000001 "${C[@]}"
expect_fail 2 "--start: '-1' is not a number" ik tags add neg --kind segment --start -1 "${C[@]}"
expect_fail 2 "--start: '-5' is not a number" ik tags add neg --kind sequence --start=-5 "${C[@]}"
expect_fail 2 "--step: a sequence tag takes no step" ik tags add q --kind sequence --step 10 "${C[@]}"
expect_fail 2 "add needs --kind segment or --kind sequence" ik tags add nokind "${C[@]}"
expect_fail 2 "--kind: 'counter' is not one of segment|sequence" ik tags add k --kind counter "${C[@]}"
expect_fail 2 "--description: 256 bytes, over 255" \
  ik tags add d --kind segment --description "$(printf 'd%.0s' {1..256})" "${C[@]}"
expect_fail 2 "which one: tags list, tags show TAG or tags add TAG" ik tags "${C[@]}"
expect_fail 2 "unknown subcommand 'remove'" ik tags remove orders "${C[@]}"
expect_fail 2 "show needs a TAG" ik tags show "${C[@]}"
expect_fail 2 "add needs a TAG" ik tags add --kind segment "${C[@]}"
expect_fail 2 "unexpected argument 'extra'" ik tags show orders extra "${C[@]}"
expect_fail 2 "unexpected argument 'orders'" ik tags list orders "${C[@]}"
expect_fail 2 "--start is an option of tags add, not of tags list" ik tags list --start 5 "${C[@]}"
expect_fail 2 "--kind is an option of tags add, not of tags show" ik tags show orders --kind segment "${C[@]}"
expect_fail 2 "--count is not an option of tags" ik tags list --count 3 "${C[@]}"
expect_fail 2 "--coord" ik tags list --coord nosuch:x
ik tags list --json "${C[@]}" >"$T/after2.json"
cmp -s "$T/before.json" "$T/after2.json" || fail "a usage error changed the store"
ik tags add "$ok128" --kind segment "${C[@]}" >/dev/null || fail "a 128-byte name is refused"
ik tags show "$ok128" --json "${C[@]}" | jq -e --arg n "$ok128" '.tag == $n' >/dev/null ||
  fail "show of a 128-byte name"
pass "bad names, step 0, negative start, a step for sequence, missing kind: exit 2, store unchanged"

# a store that cannot be opened: exit 1, one line naming why
: >"$T/not-a-dir"
expect_fail 1 "cannot open local:$T/not-a-dir: $T/not-a-dir is not a directory" ik tags list --coord "local:$T/not-a-dir"
expect_fail 1 "local:$T/not-a-dir" ik tags add x --kind segment --coord "local:$T/not-a-dir"
pass "an unusable store exits 1"

# ---- concurrent adds of one name: exactly one wins, the rest exit 3 -----------------------
tags_add_race "${C[@]}"

# ---- the environment and the config file ---------------------------------------------------
IDKEEPER_COORD="local:$T/data" IDKEEPER_APP=envapp IDKEEPER_KIND=sequence IDKEEPER_START=42 \
  ik tags add fromenv >/dev/null || fail "add from the environment failed"
IDKEEPER_COORD="local:$T/data" ik tags show fromenv --app envapp --json |
  jq -e '.kind == "sequence" and .start == "42"' >/dev/null || fail "add from the environment"
# add's options in the environment are ignored by list and show
IDKEEPER_START=5 IDKEEPER_KIND=segment ik tags list "${C[@]}" --app envapp >/dev/null ||
  fail "IDKEEPER_START broke tags list"
cat >"$T/tags.ini" <<EOF
coord = local:$T/data
app = fileapp

[tags]
kind = segment
step = 250
description = from the file
EOF
ik tags add fromfile --config "$T/tags.ini" --start 9 >/dev/null || fail "add from a config file failed"
ik tags show fromfile --config "$T/tags.ini" --json |
  jq -e '.kind == "segment" and .start == "9" and .step == 250 and .description == "from the file"' \
  >/dev/null || fail "add from a config file: $(ik tags show fromfile --config "$T/tags.ini" --json)"
IDKEEPER_KIND=sequence ik tags add fromfile2 --config "$T/tags.ini" 2>"$T/err" && fail "a step from the file with kind sequence was accepted"
grep -qF "$T/tags.ini:6: step: a sequence tag takes no step" "$T/err" || fail "step source not named: $(cat "$T/err")"
printf '[tags]\nstep = 0\n' >"$T/bad.ini"
expect_fail 2 "$T/bad.ini:2: step: 0 is out of range" ik tags list --config "$T/bad.ini" "${C[@]}"
printf '[tags]\ncount = 3\n' >"$T/notmine.ini"
expect_fail 2 "$T/notmine.ini:2: 'count' is not an option of tags" ik tags list --config "$T/notmine.ini" "${C[@]}"
pass "options from the environment and the config file"

# ---- next segment|sequence: the server's refusals in one line, exit 1 -----------------------
# A scripted server answers each request with the next canned response, so the
# CLI's handling of 404 and 409 does not depend on the daemon's routes.
cat >"$T/fake.py" <<'EOF'
import socket, sys
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(8)
print(srv.getsockname()[1], flush=True)
answers = {
  "/v1/segment/missing": (404, '{"error":"unknown_tag","message":"no segment tag \'missing\': create it first (idkeeper tags add TAG --kind segment)"}'),
  "/v1/sequence/orders": (409, '{"error":"wrong_kind","message":"tag \'orders\' is a segment tag,\\nnot a sequence tag"}'),
  "/v1/segment/orders": (200, "1\n2\n3\n"),
}
while True:
    c, _ = srv.accept()
    req = b""
    while b"\r\n\r\n" not in req:
        d = c.recv(4096)
        if not d: break
        req += d
    path = req.split(b" ")[1].decode() if req else ""
    status, body = answers.get(path.split("?")[0], (500, '{"error":"x","message":"unexpected ' + path + '"}'))
    ctype = "text/plain" if status == 200 else "application/json"
    c.sendall(("HTTP/1.1 %d X\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s"
               % (status, ctype, len(body), body)).encode())
    c.close()
EOF
python3 "$T/fake.py" >"$T/fake.port" 2>"$T/fake.log" &
IK_PIDS+=($!)
wait_until 5 test -s "$T/fake.port" || true
fport=$(cat "$T/fake.port")
[ -n "$fport" ] || fail "the scripted server did not start"
S=(--server "http://127.0.0.1:$fport")
expect_fail 1 "no segment tag 'missing': create it first (idkeeper tags add TAG --kind segment) (HTTP 404, unknown_tag" \
  ik next "${S[@]}" segment missing
expect_fail 1 "tag 'orders' is a segment tag, not a sequence tag (HTTP 409, wrong_kind" \
  ik next "${S[@]}" sequence orders
[ "$(ik next "${S[@]}" --count 3 segment orders | tr '\n' ' ')" = "1 2 3 " ] ||
  fail "next segment orders through the scripted server"
expect_fail 2 "bad tag name: tag name may hold only letters" ik next "${S[@]}" segment 'a/b'
expect_fail 2 "bad tag name: tag name is 129 bytes" ik next "${S[@]}" sequence "$long"
pass "next segment|sequence: 404 and 409 in one line with exit 1, bad names exit 2"
