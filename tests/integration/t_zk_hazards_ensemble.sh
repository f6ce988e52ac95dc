#!/usr/bin/env bash
# labels: zk hazards
# timeout: 300
# processors: 2
# Store hazards on a 3-server ZooKeeper ensemble of the test's own (docs/hazards.md,
# "ZooKeeper"): the configuration a fleet should run, and one member that is not.
# 1. All three with forceSync=yes: `idkeeper check` exits 0, every row ok (table and
#    JSON), the quorum "3 voters, quorum 2"; a server on it shows the same checks in
#    /v1/status, on its status page and in /metrics (conformance/check's part, which
#    cannot run on the stage's standalone ZooKeeper).
# 2. Member 2 restarted with forceSync=no: check through member 2 alone exits 5
#    naming it; through members 1 and 3 it exits 0 (each check judges the server
#    its session is connected to).
# 3. A server connected to member 1 (member 2 down when it started, its URI naming
#    1 and 2) is moved to member 2 (forceSync=no) when member 1 is killed: the
#    reconnect to another member is re-checked, so /readyz names forceSync within
#    the hazard interval + slack, sequence requests 503 store_unsafe. Member 2 back
#    with forceSync=yes: it serves again, its IDs unique and increasing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$IK_SRC/tests/conformance/hazards_cases.sh"

CHECK_SLACK=${CHECK_SLACK:-40} # an election, the interval (10 s at most) + 2 s, a loaded machine

check_rc() { # check_rc OUT ARGS...: runs check, prints its exit status
  local out=$1 rc=0
  shift
  "$IK_BIN" check "$@" >"$out" 2>"$out.err" || rc=$?
  echo "$rc"
}

# 1. a correctly configured ensemble
zk_start_ensemble 3
URI=$(zk_uri hz)
rc=$(check_rc "$T/ok.out" --coord "$URI")
[ "$rc" = 0 ] || fail "check on a 3-server ensemble with forceSync=yes exited $rc: $(cat "$T/ok.out" "$T/ok.out.err")"
n=$(($(wc -l <"$T/ok.out") - 1))
((n >= 5)) || fail "check ran $n checks: $(cat "$T/ok.out")"
bad=$(tail -n +2 "$T/ok.out" | awk '$0 !~ / ok +-$/')
[ -z "$bad" ] || fail "check exited 0 with a row that is not ok: $bad"
grepq -E '^quorum +3 voters, quorum 2 +ok' "$T/ok.out" || fail "quorum row: $(cat "$T/ok.out")"
grepq -E '^forceSync +yes ' "$T/ok.out" || fail "forceSync row: $(cat "$T/ok.out")"
rc=$(check_rc "$T/ok.json" --json --coord "$URI")
[ "$rc" = 0 ] || fail "check --json exited $rc"
jq -e --argjson n "$n" '.ok == true and (.checks | length) == $n and all(.checks[]; .verdict == "ok")' "$T/ok.json" >/dev/null ||
  fail "check --json: $(cat "$T/ok.json")"
pass "3 servers with forceSync=yes: check exits 0, $n checks all ok (table and JSON)"
# what conformance/check does on the other backends' stage stores
serve_on s1 --coord "$URI" --quiet || fail "server: $(tail -n 5 "$T/s1.log")"
hazards_views_agree "$n" "$T/ok.json"
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || fail "server did not exit 0"
pass "a server on it: ready, and /v1/status, the page and /metrics show the same $n ok checks"

# 2. one member with forceSync=no
P1=$(zk_port 1) P2=$(zk_port 2) P3=$(zk_port 3)
zk_stop 2
ZK_FORCE_SYNC=no zk_start 2
zk_wait_quorum
rc=$(check_rc "$T/m2.out" --coord "zk://127.0.0.1:$P2/hz")
[ "$rc" = 5 ] || fail "check through member 2 (forceSync=no) exited $rc: $(cat "$T/m2.out")"
grepq -E "^forceSync +no \\(127\\.0\\.0\\.1:$P2: .* refused" "$T/m2.out" || fail "member 2 not refused: $(cat "$T/m2.out")"
rc=$(check_rc "$T/m13.out" --coord "zk://127.0.0.1:$P1,127.0.0.1:$P3/hz")
[ "$rc" = 0 ] || fail "check through members 1 and 3 exited $rc: $(cat "$T/m13.out")"
pass "member 2 with forceSync=no: check through it exits 5 naming it, through 1 and 3 exits 0"

# 3. a reconnect to another member
zk_stop 2
"$IK_BIN" tags add inv --kind sequence --coord "$URI" >/dev/null || fail "tags add"
serve_on live --coord "zk://127.0.0.1:$P1,127.0.0.1:$P2/hz" --zk-session-timeout 20000 --quiet ||
  fail "live server: $(tail -n 3 "$T/live.log")"
URL=http://127.0.0.1:$PORT
fetch_kind snowflake "$T/sf.ids" && fetch_kind sequence "$T/seq.ids" || fail "no IDs on member 1"
ZK_FORCE_SYNC=no zk_start 2
zk_wait_quorum
fetch_kind snowflake "$T/sf.ids" || fail "no IDs on member 1 with member 2 back"
zk_stop 1
t0=$SECONDS
refused_ready() { [ "$(ik_http "$URL/readyz" "$T/readyz.body")" = 503 ] && grepq "forceSync is no (127.0.0.1:$P2" "$T/readyz.body"; }
wait_until "$CHECK_SLACK" refused_ready ||
  fail "/readyz does not name member 2's forceSync ${CHECK_SLACK} s after member 1 died: $(cat "$T/readyz.body"; tail -n 5 "$T/live.log")"
log "/readyz names member 2's forceSync $((SECONDS - t0)) s after member 1 was killed"
code=$(ik_http "$URL/v1/sequence/inv?count=3" "$T/seq.refused")
[ "$code" = 503 ] && grepq '"error":"store_unsafe"' "$T/seq.refused" || fail "sequence while unsafe: $code $(cat "$T/seq.refused")"
pass "moved to member 2 (forceSync=no) when member 1 died: re-checked, /readyz names it, sequence 503 store_unsafe"

zk_stop 2
zk_start 1
zk_start 2 # forceSync=yes
zk_wait_quorum
wait_until "$CHECK_SLACK" ready_probe "$PORT" || fail "not ready again: $(tail -n 3 "$T/live.log")"
wait_until 10 fetch_kind sequence "$T/seq.ids" || fail "sequence not served again"
wait_until 10 fetch_kind snowflake "$T/sf.ids" || fail "snowflake not served again"
assert_unique "$T/sf.ids"
assert_increasing "$T/sf.ids"
assert_unique "$T/seq.ids"
assert_increasing "$T/seq.ids"
kill -TERM "${SERVER_PID[live]}"
wait "${SERVER_PID[live]}" || fail "live server did not exit 0"
pass "member 2 with forceSync=yes again: ready, IDs resume, unique and increasing"
