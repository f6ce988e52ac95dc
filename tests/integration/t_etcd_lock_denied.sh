#!/usr/bin/env bash
# labels: etcd recipes
# timeout: 120
# The store's own words reach the user (docs/recipes.md, "etcd"): with auth on, a
# user whose role may only read the lock's prefix. `idkeeper lock` exits 1 at once
# saying etcd's "permission denied" (before: "coordination store unreachable or
# failed", nothing of etcd's); `idkeeper elect` says so within 5 s and keeps
# campaigning (before: nothing for 8 s and more, while it retried silently). Then a
# wrong password: lock fails at once, at the open, with etcd's refusal of the login
# and not "trying again" (IK_EDENIED), though it was given --timeout.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"

etcd_own d
ETCD_PORT=${ETCD_PORT_OF[d]}
R=(--user root:root-Pw)
ectl user add root:root-Pw >/dev/null || fail "etcd: user add root"
ectl user grant-role root root >/dev/null || fail "etcd: grant-role root"
ectl auth enable >/dev/null || fail "etcd: auth enable"
ectl "${R[@]}" user add ro:ro-Pw >/dev/null || fail "etcd: user add ro"
ectl "${R[@]}" role add ro >/dev/null || fail "etcd: role add ro"
ectl "${R[@]}" role grant-permission ro read "locks/" --prefix >/dev/null || fail "etcd: grant-permission"
ectl "${R[@]}" user grant-role ro ro >/dev/null || fail "etcd: grant-role ro"
echo ro-Pw >"$T/ro.pw"
echo wrong-Pw >"$T/bad.pw"
URI="etcd://127.0.0.1:$ETCD_PORT/locks?user=ro"
A=(--coord "$URI" --lease-ttl 4000 --allow-unsafe-store)

rc=0
mono_ms t0
"$IK_BIN" lock "${A[@]}" --password-file "$T/ro.pw" /x -- touch "$T/lock.ran" 2>"$T/lock.err" || rc=$?
took=$(($(mono_ms) - t0))
[ "$rc" = 1 ] || fail "lock by a read-only user exited $rc, not 1: $(cat "$T/lock.err")"
[ ! -e "$T/lock.ran" ] || fail "CMD ran without the lock"
grepq 'permission denied' "$T/lock.err" || fail "lock does not give etcd's words: $(cat "$T/lock.err")"
((took < 15000)) || fail "lock took $took ms to fail on a refusal for good"
pass "lock by a read-only user: exit 1 after $took ms, in etcd's words: $(grep -m 1 'permission denied' "$T/lock.err")"

"$IK_BIN" elect "${A[@]}" --password-file "$T/ro.pw" /e -- touch "$T/elect.ran" 2>"$T/elect.err" &
e=$!
IK_PIDS+=($e)
wait_grep 'permission denied' "$T/elect.err" 5 || fail "elect did not give etcd's words within 5 s: $(cat "$T/elect.err")"
alive $e || fail "elect gave up (it campaigns until stopped): $(cat "$T/elect.err")"
kill -TERM $e
wait $e || true
[ ! -e "$T/elect.ran" ] || fail "elect's CMD ran without leading"
pass "elect by a read-only user: says etcd's words at once ($(grep -m 1 'permission denied' "$T/elect.err" | cut -c1-160))"

rc=0
mono_ms t0
"$IK_BIN" lock "${A[@]}" --password-file "$T/bad.pw" --timeout 30000 /x -- touch "$T/lock.ran" 2>"$T/bad.err" || rc=$?
took=$(($(mono_ms) - t0))
[ "$rc" = 1 ] || fail "lock with a wrong password exited $rc, not 1: $(cat "$T/bad.err")"
grepq 'wrong user name or password' "$T/bad.err" || fail "no word of the refused login: $(cat "$T/bad.err")"
# an open that got no answer is tried again (a loaded machine: etcd silent for the
# 5 s of a request), a refused login never: no retry names the refusal, and the
# exit comes well before the 30 s a retried refusal would take
! grep 'trying again' "$T/bad.err" | grepq 'wrong user name or password\|authentication failed' ||
  fail "a refused login was tried again: $(cat "$T/bad.err")"
((took < 20000)) || fail "lock with a wrong password took $took ms to fail: $(cat "$T/bad.err")"
pass "lock with a wrong password: exit 1 after $took ms, at the open, not tried again"
