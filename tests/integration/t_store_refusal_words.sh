#!/usr/bin/env bash
# labels: etcd redis counters hazards
# timeout: 180
# Every refusal names its cause in the store's words (docs/hazards.md, "How the checks
# run"): a store that answers, and refuses, is not "unreachable".
#   etcd, a NOSPACE alarm (activated through the maintenance API, as etcd raises it when
#   the backend quota is full): `idkeeper check`'s fsync row, whose probe write is
#   refused, says "database space exceeded" (before: "? (the probe write failed)" and
#   "see why the write failed", the why nowhere); a running server logs its slot's
#   failed record, and its lease's doubt, with etcd's words (before: only "store
#   unreachable") and answers a
#   sequence request 503 with them; after `etcdctl alarm disarm` it serves again.
#   Redis at maxmemory with noeviction: every write is refused with OOM; a sequence
#   request is answered 503 with Redis's "OOM command not allowed" (before: "the tag
#   store is unreachable or timed out"); with maxmemory lifted it serves again.
# A store of its own each (an alarm and maxmemory are the whole server's).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"
source "$(dirname "$0")/redis.sh"

# ---- etcd: NOSPACE ---------------------------------------------------------------------
etcd_own nospace
EP=127.0.0.1:${ETCD_PORT_OF[nospace]}
ETCD_PORT=${ETCD_PORT_OF[nospace]}
URI="etcd://$EP/words"
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q on etcd"
serve_on e --coord "$URI" --lease-ttl 3000 || fail "serve on etcd: $(tail -n 5 "$T/e.log")"
PE=$PORT
[ "$(ik_http "http://127.0.0.1:$PE/v1/sequence/q?format=text" "$T/e0")" = 200 ] || fail "no sequence ID on etcd"
member=$(curl -fsS -X POST -d '{}' "http://$EP/v3/maintenance/status" | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["member_id"])')
curl -fsS -X POST -d "{\"action\":\"ACTIVATE\",\"memberID\":\"$member\",\"alarm\":\"NOSPACE\"}" \
  "http://$EP/v3/maintenance/alarm" >"$T/alarm.out" || fail "could not raise the NOSPACE alarm"
ectl --endpoints="$EP" alarm list | grep -q NOSPACE || fail "no NOSPACE alarm: $(ectl --endpoints="$EP" alarm list)"
rc=0
"$IK_BIN" check --coord "$URI" >"$T/check.out" 2>&1 || rc=$?
grep -E '^fsync' "$T/check.out" | grep -q 'database space exceeded' ||
  fail "check's fsync row (exit $rc) does not carry etcd's words: $(grep -E '^fsync' "$T/check.out")"
pass "etcd NOSPACE: check exits $rc, $(grep -E '^fsync' "$T/check.out" | tr -s ' ' | cut -c1-160)"
code=$(ik_http "http://127.0.0.1:$PE/v1/sequence/q?format=text" "$T/e1")
[ "$code" = 503 ] || fail "a sequence request under NOSPACE answered $code: $(cat "$T/e1")"
grep -q 'database space exceeded' "$T/e1" || fail "the 503 does not carry etcd's words: $(cat "$T/e1")"
wait_grep 'etcd slot .*database space exceeded' "$T/e.log" 10 ||
  fail "the server's log does not carry etcd's words for its slot: $(grep -i 'lease\|slot' "$T/e.log" | tail -n 3)"
pass "etcd NOSPACE: 503 $(head -c 160 "$T/e1"); the log: $(grep 'etcd slot' "$T/e.log" | head -n 1 | cut -c1-160)"
# the lease's own line too (its state, as /v1/status and the log show it): before,
# "store unreachable: issuing within the safe window"
wait_grep 'lease in_doubt: .*database space exceeded' "$T/e.log" 10 ||
  fail "the lease's doubt does not carry etcd's words: $(grep 'lease ' "$T/e.log" | tail -n 2)"
pass "etcd NOSPACE: $(grep -o 'lease in_doubt: .*' "$T/e.log" | head -n 1 | cut -c1-200)"
ectl --endpoints="$EP" alarm disarm >/dev/null || fail "alarm disarm"
again() { [ "$(ik_http "http://127.0.0.1:$PE/v1/sequence/q?format=text" "$T/e2")" = 200 ]; }
wait_until 20 again || fail "not serving after the alarm was disarmed: $(cat "$T/e2")"
pass "etcd: served again once the alarm was disarmed"

# ---- Redis: OOM with noeviction ----------------------------------------------------------
redis_own oom
RP=${REDIS_PORT_OF[oom]}
REDIS_PREFIX=ik-$$/
RURI=$(redis_uri words "$RP")
"$IK_BIN" tags add q --kind sequence --coord "$RURI" >/dev/null || fail "tags add q on redis"
serve_on r --coord "$RURI" || fail "serve on redis: $(tail -n 5 "$T/r.log")"
PR=$PORT
[ "$(ik_http "http://127.0.0.1:$PR/v1/sequence/q?format=text" "$T/r0")" = 200 ] || fail "no sequence ID on redis"
rcli "$RP" CONFIG SET maxmemory-policy noeviction >/dev/null
rcli "$RP" CONFIG SET maxmemory 1 >/dev/null
code=$(ik_http "http://127.0.0.1:$PR/v1/sequence/q?format=text" "$T/r1")
[ "$code" = 503 ] || fail "a sequence request on a full Redis answered $code: $(cat "$T/r1")"
grep -q 'OOM' "$T/r1" || fail "the 503 does not carry Redis's words: $(cat "$T/r1")"
pass "Redis at maxmemory (noeviction): 503 $(head -c 200 "$T/r1")"
rcli "$RP" CONFIG SET maxmemory 0 >/dev/null
ragain() { [ "$(ik_http "http://127.0.0.1:$PR/v1/sequence/q?format=text" "$T/r2")" = 200 ]; }
wait_until 20 ragain || fail "not serving after maxmemory was lifted: $(cat "$T/r2")"
pass "Redis: served again once maxmemory was lifted"
