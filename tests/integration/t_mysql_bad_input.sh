#!/usr/bin/env bash
# labels: mysql
# timeout: 180
# fixtures: mariadb
# mysql:// bad input (docs/guarantees.md promise 15): malformed URIs, a wrong password, an unreachable
# host, a missing database and a leaf_alloc with a wrong column each give one line
# that says what is wrong (never the password), and `serve` starts nothing it cannot
# keep: it exits non-zero, listens on nothing and takes no slot.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start
PW=$IDKEEPER_PASSWORD

# refused CMD...: exits non-zero, one line on stderr matching WHAT, nothing of the
# password in it
refused() {
  local what=$1 rc=0
  shift
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -ne 0 ] || fail "$* was accepted"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$*: $(wc -l <"$T/err") lines: $(cat "$T/err")"
  grep -qE -- "$what" "$T/err" || fail "$*: '$what' not in: $(cat "$T/err")"
  ! grep -qF -- "$PW" "$T/err" "$T/out" || fail "$*: the password shows: $(cat "$T/err")"
  ! grep -qF -- "s3cr3t" "$T/err" "$T/out" || fail "$*: the URI's password shows: $(cat "$T/err")"
}

n=0
for bad in "mysql://" "mysql://h/d" "mysql://u@h" "mysql://u@h/" "mysql://u@h:0/d" \
  "mysql://u@h:65536/d" "mysql://u@h:3x/d" "mysql://u@h_1/d" "mysql://u@[::1/d" "mysql:u@h/d" \
  "mysql://u@h/d?ssl=1" "mysql://u@h/a/b" "mysql://@h/d" "mysql://u:s3cr3t@h/d"; do
  refused "mysql URI|mysql://" "$IK_BIN" tags list --coord "$bad"
  n=$((n + 1))
done
refused "carries no password" "$IK_BIN" workers --coord "mysql://ik:s3cr3t@127.0.0.1:$MY_PORT/x"
pass "$n malformed mysql URIs refused, each in one line; a password in one never shown"

DB=$(my_db bad)
GOOD=mysql://$MDB_USER@127.0.0.1:$MY_PORT/$DB
IDKEEPER_PASSWORD=not-the-password refused "refused user $MDB_USER.*password" "$IK_BIN" tags list --coord "$GOOD"
pw=$T/pw
printf 'also-wrong\n' >"$pw"
refused "refused user $MDB_USER" "$IK_BIN" tags list --coord "$GOOD" --password-file "$pw"
pass "a wrong password (environment, file): refused in one line, the password not shown"

dead=$(free_port)
mono_ms t0
refused "cannot reach MySQL at 127.0.0.1:$dead" "$IK_BIN" tags list --coord "mysql://ik@127.0.0.1:$dead/x"
pass "an unreachable host: refused after $(($(mono_ms) - t0)) ms"

refused "no database nope_$$" "$IK_BIN" tags list --coord "mysql://ik@127.0.0.1:$MY_PORT/nope_$$"
pass "a missing database: named"

# a leaf_alloc made by hand with a wrong column (maxid for max_id)
WRONG=$(my_db wrongcol)
my_sql -D "$WRONG" -e "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '',
  maxid bigint NOT NULL DEFAULT 1, step int NOT NULL, description varchar(256) DEFAULT NULL,
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag)) ENGINE=InnoDB"
refused "not Leaf's table.*max_id" "$IK_BIN" tags list --coord "mysql://ik@127.0.0.1:$MY_PORT/$WRONG"
pass "a leaf_alloc with a wrong column: refused, naming the column"

# serve on each: exits non-zero in one line, listens on nothing, takes no slot
for c in "wrong password|$GOOD|x" "missing database|mysql://ik@127.0.0.1:$MY_PORT/nope_$$|$PW" \
  "wrong column|mysql://ik@127.0.0.1:$MY_PORT/$WRONG|$PW" "unreachable|mysql://ik@127.0.0.1:$dead/x|$PW"; do
  IFS='|' read -r what uri pass_ <<<"$c"
  port=$(free_port)
  rc=0
  IDKEEPER_PASSWORD=$pass_ timeout 60 "$IK_BIN" serve --coord "$uri" --http 127.0.0.1:"$port" \
    --identity bad >"$T/serve.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "serve ($what) exited $rc"
  [ "$(grep -c . "$T/serve.log")" -eq 1 ] || fail "serve ($what) said: $(cat "$T/serve.log")"
  ! grep -qF -- "$PW" "$T/serve.log" || fail "serve ($what) shows the password"
  log "serve ($what): exit $rc: $(cat "$T/serve.log")"
done
[ -z "$(my_sql -D "$WRONG" -e "SHOW TABLES LIKE 'idk_slots'")" ] ||
  [ "$(my_sql -D "$WRONG" -e "SELECT COUNT(*) FROM idk_slots")" = 0 ] || fail "a refused serve took a slot"
pass "serve refuses each in one line and takes no slot"
