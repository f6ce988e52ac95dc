#!/usr/bin/env bash
# labels: hazards
# timeout: 180
# Store hazards on the backend, as an operator meets them (docs/hazards.md): the
# store is configured as a fleet should configure it (the stage's, or where it is
# not, one of the test's own: CONF_FLEET_STORE in conf.sh), so
#   - `idkeeper check` exits 0, its table names at least one check and every verdict
#     is ok; --json says the same (ok true, the same checks and values);
#   - a server on it is ready, and its /v1/status (store.safe, store.hazards), its
#     status page snapshot and its /metrics (ik_store_refused_checks 0, one
#     ik_store_hazard line per check) report the same checks as `idkeeper check`.
# Each backend's unsafe settings, at open and changed while serving, are tried by its
# own tests (docs/hazards.md names them): they change a server's settings, which the
# stage's shared store must keep.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
source "$(dirname "$0")/hazards_cases.sh"
# a store where the stage's is not configured as a fleet's (etcd: one member without
# auth), one of this test's own that is (conf.sh)
CONF_FLEET_STORE=1
conf_store_start
A=(--coord "$(conf_coord check)" "${CONF_SERVE_ARGS[@]}")

rc=0
"$IK_BIN" check "${A[@]}" >"$T/check.out" 2>"$T/check.err" || rc=$?
[ "$rc" = 0 ] || fail "check exited $rc on the store: $(cat "$T/check.out" "$T/check.err")"
head -n 1 "$T/check.out" | grepq -E '^CHECK +VALUE +VERDICT +WHAT TO CHANGE$' || fail "no table header: $(cat "$T/check.out")"
n=$(($(wc -l <"$T/check.out") - 1))
((n >= 1)) || fail "check ran no check on $IK_STORE"
bad=$(tail -n +2 "$T/check.out" | awk '$0 !~ / ok +-$/' | head -n 3)
[ -z "$bad" ] || fail "check exited 0 with a row that is not ok: $bad"
"$IK_BIN" check --json "${A[@]}" >"$T/check.json" || fail "check --json"
jq -e --argjson n "$n" '.ok == true and (.checks | length) == $n and all(.checks[]; .verdict == "ok")' \
  "$T/check.json" >/dev/null || fail "check --json: $(cat "$T/check.json")"
pass "check: $n checks on $IK_STORE, all ok, exit 0 (table and JSON agree)"

serve_on s1 "${A[@]}" --quiet || fail "server: $(tail -n 5 "$T/s1.log")"
hazards_views_agree "$n" "$T/check.json"
http_get "http://127.0.0.1:$PORT/api/snowflake/get/x" >/dev/null || fail "no ID"
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || fail "server did not exit 0"
pass "a server on it: ready, and /v1/status, the page and /metrics show the same $n ok checks"
