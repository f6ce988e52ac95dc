#!/usr/bin/env bash
# labels: etcd hazards
# timeout: 240
# The store hazards of etcd:// (docs/hazards.md, etcd) and its bad input (docs/guarantees.md
# promises 15 and 23), on clusters of this test's own:
#   1. a 3-member cluster with auth on and a user whose role may write only the
#      prefix: `idkeeper check` exits 0, every row ok; a server on it is ready and
#      serves; a wrong password is one line that names the user and not the password;
#   2. a learner: `idkeeper check` on its address refuses it by name (etcd 3.4's
#      gateway answers nothing there: the open says so; 3.5+: row members), and
#      `serve` does not start there;
#   3. a one-member cluster without auth: members and auth are risks, check exits 5,
#      serve serves and logs both;
#   4. bad input, each a one-line error: a malformed URI, a password in the URI, an
#      endpoint nobody listens on, an HTTP server that is not etcd, and a tag key of
#      the wrong shape under the prefix (503, the key named in the log; the other
#      tags and snowflake IDs still served).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"

# ---- 1. a cluster as a fleet should run it ------------------------------------------
etcd_cluster3 c
etcd_learner learner c # (section 2; added before auth is on: member add is root's)
EP=127.0.0.1:${ETCD_PORT_OF[c0]},127.0.0.1:${ETCD_PORT_OF[c1]},127.0.0.1:${ETCD_PORT_OF[c2]}
ectl user add root:root-Pw >/dev/null || fail "user add root"
ectl user grant-role root root >/dev/null || fail "grant root"
ectl auth enable >/dev/null || fail "auth enable"
R=(--user root:root-Pw)
ectl "${R[@]}" user add idk:s3cret-Idk >/dev/null || fail "user add idk"
ectl "${R[@]}" role add idk >/dev/null || fail "role add"
ectl "${R[@]}" role grant-permission idk readwrite fleet/ --prefix >/dev/null || fail "grant"
ectl "${R[@]}" user grant-role idk idk >/dev/null || fail "grant-role"
echo 's3cret-Idk' >"$T/pw"
echo 'wr0ng-Pass' >"$T/bad"
URI="etcd://$EP/fleet?user=idk"
"$IK_BIN" check --coord "$URI" --password-file "$T/pw" >"$T/check.out" 2>"$T/check.err" ||
  fail "check on 3 members with auth exited $?: $(cat "$T/check.out" "$T/check.err")"
for row in 'members +3 voting members' 'auth +on' 'fsync +yes' 'cluster +[0-9a-f]+'; do
  grep -Eq "^$row.* ok " "$T/check.out" || fail "no ok row /$row/: $(cat "$T/check.out")"
done
pass "check exits 0 on 3 voting members with auth: $(awk 'NR>1{print $1}' "$T/check.out" | tr '\n' ' ')"
port=$(free_port)
start_server s1 "$port" --coord "$URI" --password-file "$T/pw" --lease-ttl 3000
wait_ready "$port" 20 || fail "a server on the cluster with auth is not ready: $(tail -n 5 "$T/s1.log")"
[ "$(http_get "http://127.0.0.1:$port/v1/snowflake?count=3" | jq '.ids | length')" = 3 ] || fail "no IDs from s1"
"$IK_BIN" tags add --coord "$URI" --password-file "$T/pw" orders --kind sequence >/dev/null || fail "tags add with auth"
grep -q 's3cret' "$T"/*.log "$T"/*.out "$T"/*.err && fail "the password shows in a log"
pass "a server on it serves snowflake IDs; tags add works"
rc=0
"$IK_BIN" check --coord "$URI" --password-file "$T/bad" >"$T/bad.out" 2>"$T/bad.err" || rc=$?
[ $rc != 0 ] || fail "a wrong password was accepted"
[ "$(wc -l <"$T/bad.err")" = 1 ] || fail "a wrong password's error is not one line: $(cat "$T/bad.err")"
grep -q 'refused the login of user idk' "$T/bad.err" || fail "a wrong password: $(cat "$T/bad.err")"
grep -q 'wr0ng' "$T/bad.err" && fail "the error shows the password"
pass "a wrong password: $(cat "$T/bad.err")"

# ---- 2. a learner ---------------------------------------------------------------------
rc=0
"$IK_BIN" check --coord "etcd://127.0.0.1:${ETCD_PORT_OF[learner]}/fleet?user=idk" --password-file "$T/pw" \
  >"$T/learner.out" 2>"$T/learner.err" || rc=$?
[ $rc != 0 ] || fail "check on a learner exited 0: $(cat "$T/learner.out")"
# etcd 3.4's gateway answers no call on a learner, its status included: the open
# refuses it by name; on 3.5+, where it answers, the members row does
grep -Eq '^members .*is a learner .*refused|is a learner .*point the URI at voting members' "$T/learner.out" "$T/learner.err" ||
  fail "the learner is not refused by name: $(cat "$T/learner.out" "$T/learner.err")"
pass "check refuses the learner (exit $rc): $(cat "$T/learner.err" "$T/learner.out" | head -n 2)"
rc=0
timeout 20 "$IK_BIN" serve --coord "etcd://127.0.0.1:${ETCD_PORT_OF[learner]}/fleet?user=idk" --password-file "$T/pw" \
  --http "127.0.0.1:$(free_port)" >"$T/learner-serve.log" 2>&1 || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "serve on a learner did not refuse to start (exit $rc): $(tail -n 3 "$T/learner-serve.log")"
grep -q 'learner' "$T/learner-serve.log" || fail "serve's refusal does not name the learner: $(tail -n 3 "$T/learner-serve.log")"
pass "serve refuses to start on the learner"

# ---- 3. one member, no auth -------------------------------------------------------------
etcd_own solo
SOLO=etcd://127.0.0.1:${ETCD_PORT_OF[solo]}/solo
rc=0
"$IK_BIN" check --coord "$SOLO" >"$T/solo.out" 2>&1 || rc=$?
[ $rc = 5 ] || fail "check on one member without auth exited $rc, not 5: $(cat "$T/solo.out")"
grep -Eq '^members +1 voting member +risk' "$T/solo.out" || fail "no members risk: $(cat "$T/solo.out")"
grep -Eq '^auth +off +risk' "$T/solo.out" || fail "no auth risk: $(cat "$T/solo.out")"
port=$(free_port)
start_server s2 "$port" --coord "$SOLO" --lease-ttl 3000
wait_ready "$port" 20 || fail "a server on one member is not ready: $(tail -n 5 "$T/s2.log")"
grep -q 'members is 1 voting member' "$T/s2.log" || fail "the server did not log the members risk"
grep -q 'auth is off' "$T/s2.log" || fail "the server did not log the auth risk"
pass "one member without auth: two risks, check exits 5, serve serves and logs both"

# ---- 4. bad input -------------------------------------------------------------------------
one_line() { # one_line NAME EXPECTED CMD...: CMD fails with one line holding EXPECTED
  local name=$1 want=$2 rc=0
  shift 2
  timeout 30 "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  [ $rc != 0 ] || fail "$name: exited 0"
  [ "$(wc -l <"$T/$name.err")" = 1 ] || fail "$name: not one line: $(cat "$T/$name.err")"
  grep -q -- "$want" "$T/$name.err" || fail "$name: $(cat "$T/$name.err")"
  pass "$name: $(cat "$T/$name.err")"
}
one_line malformed 'port must be 1-65535' "$IK_BIN" workers --coord 'etcd://127.0.0.1:99999/x'
one_line empty-host 'names no host' "$IK_BIN" workers --coord 'etcd:///x'
one_line pw-in-uri 'no password in an etcd URI' "$IK_BIN" workers --coord 'etcd://127.0.0.1:2379/x?password=s3cret'
dead=$(free_port)
one_line unreachable "127.0.0.1:$dead" "$IK_BIN" workers --coord "etcd://127.0.0.1:$dead/x"
one_line not-etcd "not as etcd's v3 JSON gateway" "$IK_BIN" workers --coord "etcd://127.0.0.1:$port/x"
ectl --endpoints="127.0.0.1:${ETCD_PORT_OF[solo]}" put solo/idkeeper/default/tag/broken 'hello world' >/dev/null
"$IK_BIN" tags add --coord "$SOLO" fine --kind sequence >/dev/null || fail "tags add fine"
st=$(http_status "http://127.0.0.1:$port/v1/sequence/broken")
[ "$st" = 503 ] || fail "a tag key of the wrong shape answered $st, not 503"
wait_until 5 grep -q 'solo/idkeeper/default/tag/broken holds "hello world", not a tag' "$T/s2.log" ||
  fail "the log does not name the key of the wrong shape: $(tail -n 3 "$T/s2.log")"
[ "$(http_get "http://127.0.0.1:$port/v1/sequence/fine?count=2" | jq '.ids | length')" = 2 ] || fail "the other tag is not served"
[ "$(http_get "http://127.0.0.1:$port/v1/snowflake?count=2" | jq '.ids | length')" = 2 ] || fail "snowflake IDs are not served"
pass "a tag key of the wrong shape: 503 and a log line naming it; the rest served"
