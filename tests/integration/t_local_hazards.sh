#!/usr/bin/env bash
# labels: local hazards
# timeout: 180
# Store hazards on local: (docs/hazards.md): a DIR on a memory filesystem loses every
# counter and time record at a reboot, so a sequence would start again at its start.
# - `idkeeper check` exits 0 on a local disk, 5 on tmpfs (naming the filesystem; the
#   same in --json), and serve, tags add refuse to open a tmpfs DIR; with
#   --allow-unsafe-store the server serves, the verdict a risk in /v1/status.
# - While serving, a tmpfs mounted over DIR (the filesystem changed under a running
#   server) stops it within the hazard interval (10 s on local:) + 2 s: /readyz 503
#   naming the filesystem, sequence requests 503 store_unsafe, /v1/status safe=false,
#   ik_store_refused_checks 1; once unmounted both recover (the refusal and its
#   clearing are the status page's events, /v1/events), and every snowflake and
#   sequence ID before and after is unique and increasing.
# The mounts live in a mount namespace of this test's own (unshare -m): a test that
# dies leaves none behind.
if [ -z "${IK_IN_MOUNT_NS:-}" ]; then
  IK_IN_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"

CHECK_SLACK=${CHECK_SLACK:-20} # the 10 s interval + 2 s, with room for a loaded machine

# 1. check: ok on a local disk, refused on tmpfs
"$IK_BIN" check --coord "local:$T/ok" >"$T/ok.out" 2>&1 || fail "check on a local disk: $(cat "$T/ok.out")"
grepq -E '^filesystem +.* +ok +-$' "$T/ok.out" || fail "check's table lacks filesystem ok: $(cat "$T/ok.out")"
head -n 1 "$T/ok.out" | grepq -E '^CHECK +VALUE +VERDICT +WHAT TO CHANGE$' || fail "no table header"
mkdir -p "$T/shm"
mount -t tmpfs ik-test "$T/shm" || fail "cannot mount a tmpfs (the test runs as root)"
rc=0
"$IK_BIN" check --coord "local:$T/shm/d" >"$T/shm.out" 2>&1 || rc=$?
[ "$rc" = 5 ] || fail "check on tmpfs exited $rc, not 5: $(cat "$T/shm.out")"
grepq -E '^filesystem +tmpfs +refused +lost at a reboot' "$T/shm.out" || fail "tmpfs not refused: $(cat "$T/shm.out")"
rc=0
"$IK_BIN" check --json --coord "local:$T/shm/d" >"$T/shm.json" 2>/dev/null || rc=$?
[ "$rc" = 5 ] || fail "check --json on tmpfs exited $rc"
jq -e '.ok == false and .checks[0].check == "filesystem" and .checks[0].verdict == "refused"' \
  "$T/shm.json" >/dev/null || fail "check --json: $(cat "$T/shm.json")"
pass "check: ok on a local disk (exit 0), refused on tmpfs (exit 5, table and JSON)"

rc=0
"$IK_BIN" serve --coord "local:$T/shm/d" --http 127.0.0.1:"$(free_port)" >"$T/refused.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "serve started on a tmpfs DIR"
grepq 'filesystem is tmpfs' "$T/refused.log" || fail "serve's refusal does not name the filesystem: $(tail -n 3 "$T/refused.log")"
rc=0
"$IK_BIN" tags add t --kind sequence --coord "local:$T/shm/d" >"$T/tags.out" 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "tags add on tmpfs exited $rc"
grepq 'filesystem is tmpfs' "$T/tags.out" || fail "tags add: $(cat "$T/tags.out")"
[ ! -e "$T/shm/d/idkeeper.db" ] || fail "tags add wrote a database on tmpfs"
pass "serve and tags add refuse a tmpfs DIR, naming it, and write nothing"

serve_on risky --coord "local:$T/shm/r" --allow-unsafe-store --quiet || fail "serve --allow-unsafe-store: $(tail -n 3 "$T/risky.log")"
http_get "http://127.0.0.1:$PORT/v1/status" >"$T/risky.status" || fail "status"
jq -e '.store.safe == true and (.store.hazards[] | select(.check == "filesystem") | .verdict) == "risk"' \
  "$T/risky.status" >/dev/null || fail "status of a risky store: $(jq -c .store "$T/risky.status")"
http_get "http://127.0.0.1:$PORT/api/snowflake/get/x" >/dev/null || fail "no ID with --allow-unsafe-store"
grepq 'accepted by --allow-unsafe-store' "$T/risky.log" || fail "the accepted risk is not logged"
kill -TERM "${SERVER_PID[risky]}"
wait "${SERVER_PID[risky]}" || fail "risky server did not exit 0"
umount "$T/shm"
pass "--allow-unsafe-store: serves, the verdict a logged risk in /v1/status"

# 2. the filesystem changes under a running server
DIR=$T/live
"$IK_BIN" tags add inv --kind sequence --coord "local:$DIR" >/dev/null || fail "tags add"
serve_on live --coord "local:$DIR" --quiet || fail "live server: $(tail -n 3 "$T/live.log")"
URL=http://127.0.0.1:$PORT
fetch_kind snowflake "$T/sf.ids" && fetch_kind sequence "$T/seq.ids" || fail "no IDs before the mount"
mount -t tmpfs ik-test "$DIR" || fail "cannot mount a tmpfs over DIR"
t0=$SECONDS
not_ready() { ! ready_probe "$PORT"; }
wait_until "$CHECK_SLACK" not_ready || fail "still ready ${CHECK_SLACK} s after DIR became tmpfs"
log "not ready $((SECONDS - t0)) s after the mount"
code=$(ik_http "$URL/readyz" "$T/readyz.body")
[ "$code" = 503 ] && grepq 'filesystem is tmpfs' "$T/readyz.body" || fail "/readyz $code: $(cat "$T/readyz.body")"
code=$(ik_http "$URL/v1/sequence/inv?count=3" "$T/seq.refused")
[ "$code" = 503 ] && grepq '"error":"store_unsafe"' "$T/seq.refused" && grepq 'filesystem is tmpfs' "$T/seq.refused" ||
  fail "sequence while unsafe: $code $(cat "$T/seq.refused")"
code=$(ik_http "$URL/v1/snowflake?count=1" "$T/sf.refused")
[ "$code" = 503 ] || fail "snowflake while unsafe: $code"
http_get "$URL/v1/status" >"$T/unsafe.status" || fail "status"
jq -e '.store.safe == false and (.store.why | test("filesystem is tmpfs"))' "$T/unsafe.status" >/dev/null ||
  fail "status while unsafe: $(jq -c .store "$T/unsafe.status")"
http_get "$URL/metrics" | grepq '^ik_store_refused_checks 1$' || fail "ik_store_refused_checks is not 1"
grepq 'store hazard: .*filesystem is tmpfs: refusing to write' "$T/live.log" || fail "no log line naming the hazard"
pass "a tmpfs over DIR: not ready, sequence 503 store_unsafe and snowflake 503, status and metrics say so"

umount "$DIR" || fail "umount"
wait_until "$CHECK_SLACK" ready_probe "$PORT" || fail "not ready again after the umount: $(tail -n 3 "$T/live.log")"
wait_until 10 fetch_kind sequence "$T/seq.ids" || fail "sequence not served again"
fetch_kind snowflake "$T/sf.ids" || fail "snowflake not served again"
grepq 'store hazard cleared: .*filesystem' "$T/live.log" || fail "the cleared hazard is not logged"
# the status page's events (GET /v1/events, newest first): the refusal, then the clearing
http_get "$URL/v1/events" >"$T/events.json" || fail "GET /v1/events"
jq -e '[.events[] | select(.kind == "hazard") | .text] | length == 2
       and (.[0] | test("^store hazard cleared: .*filesystem"))
       and (.[1] | test("^store hazard: .*filesystem is tmpfs: refusing to write"))' "$T/events.json" >/dev/null ||
  fail "the events lack the hazard and its clearing: $(cat "$T/events.json")"
http_get "$URL/metrics" | grepq '^ik_store_refused_checks 0$' || fail "ik_store_refused_checks is not 0"
assert_unique "$T/sf.ids"
assert_increasing "$T/sf.ids"
assert_unique "$T/seq.ids"
assert_increasing "$T/seq.ids"
[ "$(sort -n "$T/seq.ids" | head -n 1)" = 1 ] && [ "$(wc -l <"$T/seq.ids")" = "$(sort -n "$T/seq.ids" | tail -n 1)" ] ||
  fail "sequence IDs are not one run from 1: $(tr '\n' ' ' <"$T/seq.ids")"
kill -TERM "${SERVER_PID[live]}"
wait "${SERVER_PID[live]}" || fail "live server did not exit 0"
pass "umounted: ready again, IDs resume; snowflake and sequence IDs unique and increasing, the sequence one run"
