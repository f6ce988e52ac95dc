#!/usr/bin/env bash
# labels: zk hazards
# timeout: 420
# Store hazards on one ZooKeeper server of the test's own (docs/hazards.md,
# "ZooKeeper"), restarted on its data with other settings:
# 1. forceSync=no: `idkeeper check` exits 5 with forceSync refused (table and JSON),
#    and serve refuses to start, naming it.
# 2. forceSync=yes: check exits 5 all the same, since a standalone server is a quorum
#    of one (a risk: serve starts and logs it); every other check is ok.
# 3. The server restarted with forceSync=no under a running server (its session
#    survives the restart): the reconnect re-checks, so within the hazard interval
#    + 2 s (slack for a loaded machine) /readyz is 503 naming forceSync, sequence
#    requests 503 store_unsafe, the log names it; restarted with forceSync=yes, both
#    recover, and every snowflake and sequence ID is unique and increasing.
# 4. skipACL=yes and a whitelist of srvr alone: skipACL a risk (a write the ACL
#    forbids went through), forceSync unverifiable (mntr closed), a risk: serve
#    starts, check exits 5.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

CHECK_SLACK=${CHECK_SLACK:-30} # the interval (10 s at most) + 2 s, with room for a loaded machine
SESSION_MS=40000               # the session outlives a restart of the server

# restart_zk FORCE_SYNC: server 1 again on its data, with forceSync FORCE_SYNC
restart_zk() {
  zk_stop 1
  ZK_FORCE_SYNC=$1 zk_start 1
  zk_wait_serving 1
}

check_rc() { # check_rc OUT ARGS...: runs check, prints its exit status
  local out=$1 rc=0
  shift
  "$IK_BIN" check "$@" >"$out" 2>"$out.err" || rc=$?
  echo "$rc"
}

# 1. forceSync=no
ZK_FORCE_SYNC=no zk_start_standalone
URI=$(zk_uri hz)
rc=$(check_rc "$T/no.out" --coord "$URI")
[ "$rc" = 5 ] || fail "check on forceSync=no exited $rc, not 5: $(cat "$T/no.out" "$T/no.out.err")"
grepq -E '^forceSync +no \(127\.0\.0\.1:[0-9]+: [0-9]+ log flushes, 0 fsyncs\) +refused +set forceSync=yes' "$T/no.out" ||
  fail "forceSync not refused: $(cat "$T/no.out")"
rc=$(check_rc "$T/no.json" --json --coord "$URI")
[ "$rc" = 5 ] || fail "check --json exited $rc"
jq -e '.ok == false and ([.checks[] | select(.check == "forceSync")][0].verdict == "refused")' "$T/no.json" >/dev/null ||
  fail "check --json: $(cat "$T/no.json")"
rc=0
"$IK_BIN" serve --coord "$URI" --http 127.0.0.1:"$(free_port)" >"$T/refused.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "serve started on forceSync=no"
grepq 'forceSync is no' "$T/refused.log" || fail "serve's refusal does not name forceSync: $(tail -n 3 "$T/refused.log")"
pass "forceSync=no: check exits 5 with forceSync refused (table and JSON); serve refuses, naming it"

# 2. forceSync=yes: a quorum of one is a risk, the rest ok
restart_zk yes
rc=$(check_rc "$T/yes.out" --coord "$URI")
[ "$rc" = 5 ] || fail "check on a standalone server exited $rc, not 5: $(cat "$T/yes.out")"
grepq -E '^forceSync +yes \(127\.0\.0\.1:[0-9]+: [0-9]+ fsyncs\) +ok +-$' "$T/yes.out" || fail "forceSync not ok: $(cat "$T/yes.out")"
grepq -E '^quorum +standalone \(127\.0\.0\.1:[0-9]+\) +risk +run an ensemble of 3 or 5' "$T/yes.out" ||
  fail "standalone not a risk: $(cat "$T/yes.out")"
for c in skipACL read-only 'session timeout'; do
  grepq -E "^$c +.* ok +-\$" "$T/yes.out" || fail "$c not ok: $(cat "$T/yes.out")"
done
grepq -E '^session timeout +10000 ms \(asked 10000; server allows 1000-120000\)' "$T/yes.out" ||
  fail "session timeout row: $(cat "$T/yes.out")"
pass "forceSync=yes, standalone: check exits 5 on the quorum of one alone (a risk); forceSync, skipACL, read-only, session timeout ok"

# 3. the setting changes under a running server
"$IK_BIN" tags add inv --kind sequence --coord "$URI" >/dev/null || fail "tags add"
serve_on live --coord "$URI" --zk-session-timeout "$SESSION_MS" --quiet || fail "live server: $(tail -n 3 "$T/live.log")"
URL=http://127.0.0.1:$PORT
grepq 'store hazard, a risk .*quorum is standalone' "$T/live.log" || fail "the quorum risk is not logged: $(cat "$T/live.log")"
fetch_kind snowflake "$T/sf.ids" && fetch_kind sequence "$T/seq.ids" || fail "no IDs before the restart"
session=$(http_get "$URL/v1/status" | jq -r '.. | .session? // empty' | head -n 1)
restart_zk no
t0=$SECONDS
# not ready for that reason (while ZooKeeper was down, it was not ready for another)
refused_ready() { [ "$(ik_http "$URL/readyz" "$T/readyz.body")" = 503 ] && grepq 'forceSync is no' "$T/readyz.body"; }
wait_until "$CHECK_SLACK" refused_ready ||
  fail "/readyz does not name forceSync ${CHECK_SLACK} s after ZooKeeper came back with forceSync=no: $(cat "$T/readyz.body"; tail -n 5 "$T/live.log")"
log "/readyz names forceSync $((SECONDS - t0)) s after ZooKeeper serves again with forceSync=no"
code=$(ik_http "$URL/v1/sequence/inv?count=3" "$T/seq.refused")
[ "$code" = 503 ] && grepq '"error":"store_unsafe"' "$T/seq.refused" && grepq 'forceSync is no' "$T/seq.refused" ||
  fail "sequence while unsafe: $code $(cat "$T/seq.refused")"
code=$(ik_http "$URL/v1/snowflake?count=1" "$T/sf.refused")
[ "$code" = 503 ] || fail "snowflake while unsafe: $code"
grepq 'store hazard: .*forceSync is no .*refusing to write' "$T/live.log" || fail "no log line naming forceSync"
now=$(http_get "$URL/v1/status" | jq -r '.. | .session? // empty' | head -n 1)
log "session before the restart: ${session:-?}, after: ${now:-?}"
pass "forceSync=no after a restart under a running server: not ready, sequence 503 store_unsafe, snowflake 503, logged"

restart_zk yes
wait_until "$CHECK_SLACK" ready_probe "$PORT" || fail "not ready again after forceSync=yes: $(tail -n 3 "$T/live.log")"
wait_until 10 fetch_kind sequence "$T/seq.ids" || fail "sequence not served again"
wait_until 10 fetch_kind snowflake "$T/sf.ids" || fail "snowflake not served again"
grepq 'store hazard cleared: .*forceSync' "$T/live.log" || fail "the cleared hazard is not logged"
assert_unique "$T/sf.ids"
assert_increasing "$T/sf.ids"
assert_unique "$T/seq.ids"
assert_increasing "$T/seq.ids"
kill -TERM "${SERVER_PID[live]}"
wait "${SERVER_PID[live]}" || fail "live server did not exit 0"
pass "forceSync=yes again: ready, IDs resume; snowflake and sequence IDs unique and increasing"

# 4. skipACL=yes, and four-letter words closed but srvr
zk_stop 1
sed -i 's/^4lw\.commands\.whitelist=.*/4lw.commands.whitelist=srvr/' "$T/zk1/zoo.cfg"
echo "skipACL=yes" >>"$T/zk1/zoo.cfg"
ZK_FORCE_SYNC=yes zk_start 1
zk_wait_serving 1
rc=$(check_rc "$T/acl.out" --coord "$URI")
[ "$rc" = 5 ] || fail "check with skipACL=yes exited $rc: $(cat "$T/acl.out")"
grepq -E '^skipACL +yes \(a write the ACL forbids went through\) +risk +remove skipACL=yes' "$T/acl.out" ||
  fail "skipACL not a risk: $(cat "$T/acl.out")"
grepq -E '^forceSync +\? \(127\.0\.0\.1:[0-9]+: mntr not in 4lw\.commands\.whitelist\) +risk +add mntr to 4lw' "$T/acl.out" ||
  fail "forceSync with mntr closed: $(cat "$T/acl.out")"
grepq -E '^quorum +standalone .* risk' "$T/acl.out" || fail "quorum with conf closed: $(cat "$T/acl.out")"
serve_on risky --coord "$URI" --quiet || fail "serve with risks only: $(tail -n 3 "$T/risky.log")"
http_get "http://127.0.0.1:$PORT/api/snowflake/get/x" >/dev/null || fail "no ID with risks only"
grepq 'store hazard, a risk .*skipACL is yes' "$T/risky.log" || fail "the skipACL risk is not logged"
kill -TERM "${SERVER_PID[risky]}"
wait "${SERVER_PID[risky]}" || fail "risky server did not exit 0"
pass "skipACL=yes and 4lw closed: risks (check exits 5, serve serves and logs them)"
