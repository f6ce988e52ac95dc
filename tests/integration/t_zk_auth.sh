#!/usr/bin/env bash
# labels: zk
# timeout: 90
# fixtures: zk
# With --zk-auth, the app's nodes carry a digest ACL: the app's credentials have
# every right, the world may only read. Other clients (kazoo without credentials, or
# with other credentials) cannot delete or overwrite a slot node or its owner node;
# a server with other credentials cannot take a slot of the app.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
pa=$(zk_free_port)
zk_serve a "$pa" --worker-range 0-3 --zk-auth app:s3cret
wait_ready "$pa" || fail "a not ready"
w=$(status_of "$pa" .worker)
slot=$(app_base)/slots/$(printf %04d "$w")
owner=$(app_base)/owners/$(printf %04d "$w")
fetch_ids "$pa" 1000 "$T/ids.a"

want_id="app:$(printf %s 'app:s3cret' | openssl dgst -binary -sha1 | openssl base64)"
# (ZooKeeper shows digests only to clients with READ+ADMIN: read it as the app)
acl=$(ZK_TOOL_AUTH=app:s3cret zk_tool acl "$slot")
log "ACL of $slot: $acl"
echo "$acl" | jq -e --arg id "$want_id" 'map(select(.scheme == "digest" and .id == $id and .perms == 31)) | length == 1' >/dev/null ||
  fail "slot node lacks digest $want_id with ALL: $acl"
echo "$acl" | jq -e 'map(select(.scheme == "world" and .id == "anyone" and .perms == 1)) | length == 1' >/dev/null ||
  fail "slot node lacks world:anyone READ: $acl"

# Reading works for anyone; changing does not.
[ "$(slot_json "$w" | jq -r .owner.identity)" = a ] || fail "cannot read the slot without credentials"
for who in none other; do
  if [ $who = other ]; then export ZK_TOOL_AUTH=intruder:x; else unset ZK_TOOL_AUTH; fi
  r=$(zk_tool delete "$owner"); [ "$r" = noauth ] || fail "$who: deleting the owner node: $r"
  r=$(zk_tool delete "$slot"); [ "$r" = noauth ] || [ "$r" = notempty ] || fail "$who: deleting the slot node: $r"
  r=$(zk_tool set "$slot" "record_ms=0"); [ "$r" = noauth ] || fail "$who: overwriting the slot node: $r"
  r=$(zk_tool set "$owner" "x"); [ "$r" = noauth ] || fail "$who: overwriting the owner node: $r"
  for d in slots owners identities; do
    r=$(zk_tool delete "$(app_base)/$d"); [ "$r" = noauth ] || [ "$r" = notempty ] ||
      fail "$who: deleting the $d node: $r"
  done
  r=$(zk_tool delete "$(app_base)/identities/a"); [ "$r" = noauth ] || fail "$who: deleting a's identity node: $r"
done
unset ZK_TOOL_AUTH
# Even once the owner is gone (a stops), nobody else may delete the slot node: it
# keeps the time record.
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not exit 0"
r=$(zk_tool delete "$slot"); [ "$r" = noauth ] || fail "deleting the free slot node without credentials: $r"
ZK_TOOL_AUTH=intruder:x r=$(zk_tool delete "$slot"); [ "$r" = noauth ] || fail "deleting it with other credentials: $r"
[ "$(slot_json "$w" | jq -r .record_ms)" -gt 0 ] || fail "the record is gone"
pass "without the app's credentials nobody deletes or changes slot $w"

# A server with other credentials cannot use the app's slots.
pb=$(zk_free_port)
set +e
"$IK_BIN" serve --http 127.0.0.1:"$pb" --identity b --coord "$(zk_uri "$ZK_CHROOT")" \
  --zk-session-timeout "$ZK_SESSION_MS" --worker-range 0-3 --zk-auth app:wrong >"$T/b.log" 2>&1
rc=$?
set -e
[ $rc -ne 0 ] || fail "a server with other credentials started"
grep -qi 'auth' "$T/b.log" || fail "its refusal does not say why: $(cat "$T/b.log")"
pass "a server with other credentials is refused (exit $rc): $(tail -n 1 "$T/b.log")"

# The right credentials take the slot back, with its record.
zk_serve a "$pa" --worker-range 0-3 --zk-auth app:s3cret
wait_ready "$pa" || fail "a not ready again"
[ "$(status_of "$pa" .worker)" = "$w" ] || fail "a did not get slot $w back"
fetch_ids "$pa" 1000 "$T/ids.a"
assert_unique "$T/ids.a"
