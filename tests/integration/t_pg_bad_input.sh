#!/usr/bin/env bash
# labels: postgresql sql
# timeout: 180
# fixtures: postgres
# Bad input on postgresql:// (docs/guarantees.md promise 15): malformed URIs, a wrong password, an
# unreachable host, a missing database and a leaf_alloc with a wrong column each give
# a one-line error, and `serve` starts nothing it cannot keep (exits non-zero, no
# slot taken). No message shows a password, from the URI or the environment.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
P=$PG_SHARED_PORT
db=tbad_$$
URI=$(pg_new_db "$P" "$db")

n=0
for bad in "postgresql://" "postgresql://h" "postgresql://h/" "postgresql://u@/db" "postgresql://h:0/db" \
  "postgresql://h:65536/db" "postgresql://h:5x/db" "postgresql://h:1,/db" "postgresql://h_/db?x" \
  "postgresql://h/db?sslmode" "postgresql://h/db?nosuchparam=1" "postgresql://[::1/db" \
  "postgresql://h/d b" "postgresql:h/db" "postgresql://@h/db"; do
  set +e
  out=$("$IK_BIN" workers --coord "$bad" 2>&1)
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "'$bad' accepted"
  [ "$(echo "$out" | wc -l)" -eq 1 ] && [ -n "$out" ] || fail "'$bad': not one line: $out"
  n=$((n + 1))
done
pass "$n malformed postgresql URIs refused, each with a one-line reason"

# wrong password, given apart and in the URI: refused, and never shown
IDKEEPER_PASSWORD=not-the-password-xyz expect_fail 1 "password authentication failed" \
  "$IK_BIN" workers --coord "$URI"
grep -q 'not-the-password-xyz' "$T/err" && fail "the password shows in: $(cat "$T/err")"
expect_fail 1 "password authentication failed" \
  env -u IDKEEPER_PASSWORD "$IK_BIN" workers --coord "postgresql://$PG_USER:sekrit-in-uri@127.0.0.1:$P/$db"
grep -q 'sekrit-in-uri' "$T/err" && fail "the URI's password shows in: $(cat "$T/err")"
# the URI's password is used when none is given apart
env -u IDKEEPER_PASSWORD "$IK_BIN" workers --coord "postgresql://$PG_USER:$PG_PASSWORD@127.0.0.1:$P/$db" >/dev/null ||
  fail "the URI's own password was not used"
pass "wrong password refused in one line, the password never shown; a URI's password works"

port=$(free_port)
mono_ms t0
expect_fail 1 "cannot connect" "$IK_BIN" workers --coord "postgresql://$PG_USER@127.0.0.1:$port/$db"
pass "unreachable host refused in $(($(mono_ms) - t0)) ms: $(cat "$T/err")"

expect_fail 1 'does not exist' "$IK_BIN" workers --coord "postgresql://$PG_USER@127.0.0.1:$P/no_such_db_$$"
pass "missing database: $(cat "$T/err")"

# a leaf_alloc with a wrong column: refused by every command, serve included
wrong=$(pg_new_db "$P" "twrong_$$")
pg_psql "$P" "twrong_$$" "CREATE TABLE leaf_alloc (biz_tag varchar(128) PRIMARY KEY, maxid bigint NOT NULL,
  step int NOT NULL, description varchar(256), update_time timestamp NOT NULL DEFAULT now())"
expect_fail 1 'max_id' "$IK_BIN" tags list --coord "$wrong"
grep -q "not Leaf's table" "$T/err" || fail "the refusal does not say why: $(cat "$T/err")"
hp=$(free_port)
rc=0
"$IK_BIN" serve --coord "$wrong" --http 127.0.0.1:"$hp" --identity w >"$T/w.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "serve started on a wrong leaf_alloc"
grep -q 'max_id' "$T/w.log" || fail "serve's refusal does not name the column: $(cat "$T/w.log")"
[ "$(pg_psql "$P" "twrong_$$" "SELECT count(*) FROM idk_slots")" = 0 ] || fail "serve took a slot"
pass "a leaf_alloc without max_id refused (tags, serve): $(cat "$T/err")"

# serve with a wrong password exits at once, one line naming the cause
rc=0
IDKEEPER_PASSWORD=nope "$IK_BIN" serve --coord "$URI" --http 127.0.0.1:"$hp" --identity x >"$T/x.log" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "serve started with a wrong password"
grep -q 'password authentication failed' "$T/x.log" || fail "serve's refusal: $(cat "$T/x.log")"
pass "serve refuses a wrong password: exit $rc"
