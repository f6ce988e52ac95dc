#!/usr/bin/env bash
# labels: redis
# timeout: 120
# A Redis replica is refused (docs/hazards.md, Redis: role). With replica-read-only
# no and the append-only settings right, a replica passed the durability check, and
# idkeeper wrote its counters there; those writes vanished at the replica's next
# full resync with its primary, and the same sequence IDs were served again. Now
# serve refuses to start on anything but a primary (ROLE), naming it, and
# `idkeeper check` exits 5 with the role row refused; nothing is written to the
# replica. (Before the check, the first section reproduces the duplicates: IDs
# served on the replica, a full resync forced by REPLICAOF NO ONE and back, the
# same IDs again.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"
REDIS_PREFIX=ik-$$/

redis_own primary
pp=${REDIS_PORT_OF[primary]}
redis_own replica "replicaof 127.0.0.1 $pp" "replica-read-only no"
rp=${REDIS_PORT_OF[replica]}

# synced PORT: the replica's link to its primary is up and no sync is running
synced() {
  local info
  info=$(rcli "$1" INFO replication | tr -d '\r')
  grep -q '^master_link_status:up' <<<"$info" && grep -q '^master_sync_in_progress:0' <<<"$info"
}
wait_synced() {
  wait_until 20 synced "$rp" || fail "the replica did not sync: $(rcli "$rp" INFO replication | tr -d '\r')"
}
wait_synced

# the tag is made on the primary, and reaches the replica
"$IK_BIN" tags add q --kind sequence --coord "$(redis_uri r "$pp")" >/dev/null
key=${REDIS_PREFIX}r/q
tag_replicated() { [ "$(rcli "$rp" GET "$key")" = 0 ]; }
wait_until 10 tag_replicated || fail "the tag did not reach the replica"
[ "$(rcli "$rp" ROLE | head -n 1)" = slave ] || fail "not a replica: $(rcli "$rp" ROLE)"

uri=$(redis_uri r "$rp")
if serve_on s --coord "$uri" --lease-ttl 3000; then
  # the defect: counters advanced on the replica vanish at its next full resync
  for i in 1 2 3; do http_get "http://127.0.0.1:$PORT/v1/sequence/q?format=text" >>"$T/ids"; done
  rcli "$rp" REPLICAOF NO ONE >/dev/null
  rcli "$rp" REPLICAOF 127.0.0.1 "$pp" >/dev/null
  wait_synced
  for i in 1 2 3; do http_get "http://127.0.0.1:$PORT/v1/sequence/q?format=text" >>"$T/ids" || true; done
  fail "serve started on a replica (ROLE $(rcli "$rp" ROLE | head -n 1)); sequence IDs served: $(tr '\n' ' ' <"$T/ids"), twice: $(sort "$T/ids" | uniq -d | tr '\n' ' ')"
fi
grep -q "role is replica of 127.0.0.1:$pp" "$T/s.log" || fail "the refusal does not name the role: $(cat "$T/s.log")"
rc=0
"$IK_BIN" check --coord "$uri" >"$T/check.out" 2>/dev/null || rc=$?
[ "$rc" = 5 ] || fail "idkeeper check exited $rc on a replica: $(cat "$T/check.out")"
grep -Eq "^role +replica of 127.0.0.1:$pp +refused +point idkeeper at the primary" "$T/check.out" ||
  fail "idkeeper check does not name the role: $(cat "$T/check.out")"
grep -Eq "^appendonly +yes +ok" "$T/check.out" || fail "the replica's AOF row: $(cat "$T/check.out")"
[ "$(rcli "$rp" GET "$key")" = 0 ] || fail "the counter on the replica moved: $(rcli "$rp" GET "$key")"
"$IK_BIN" check --coord "$(redis_uri r "$pp")" >"$T/check-primary.out" 2>&1 ||
  fail "idkeeper check on the primary: $(cat "$T/check-primary.out")"
pass "a writable replica with the AOF: serve refused (role), idkeeper check exits 5 naming it, nothing written; its primary passes"
