#!/usr/bin/env bash
# labels: redis
# timeout: 150
# Bad input on redis:// (docs/guarantees.md promise 15), each a clear one-line error and nothing issued
# that is not safe:
#   - no password, a wrong password (the password never shown);
#   - a server that is not Redis (idkeeper's own HTTP port);
#   - CONFIG disabled (rename-command CONFIG ""): refused, saying so and naming the
#     flag; with --allow-unsafe-store it serves, with a warning;
#   - keys of the wrong type where a tag should be: at tags add (a hash, a string
#     that is no integer), and a tag's counter replaced by a list while a server
#     serves it (503, the log names the key; IDs resume, above all before, once the
#     counter is put back);
#   - a malformed URI; lock and elect refuse, saying why and what to use.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

PW='c0rrect-Horse'
redis_own locked "requirepass $PW" 'rename-command CONFIG ""'
port=${REDIS_PORT_OF[locked]}
REDIS_PORT=$port
uri=redis://127.0.0.1:$port/0
echo "$PW" >"$T/pw"
echo 'wr0ng-Battery' >"$T/bad-pw"

# ---- passwords ------------------------------------------------------------------
"$IK_BIN" workers --coord "$uri" >"$T/out" 2>"$T/err" && fail "workers without a password worked"
grep -q "requires a password: give it with --password-file or IDKEEPER_PASSWORD" "$T/err" || fail "no password: $(cat "$T/err")"
"$IK_BIN" workers --coord "$uri" --password-file "$T/bad-pw" >"$T/out" 2>"$T/err" && fail "a wrong password worked"
grep -q "refused the password" "$T/err" || fail "wrong password: $(cat "$T/err")"
IDKEEPER_PASSWORD=wr0ng-Battery "$IK_BIN" tags list --coord "$uri" >"$T/out" 2>"$T/err2" && fail "a wrong IDKEEPER_PASSWORD worked"
"$IK_BIN" tags list --coord "redis://:wr0ng-Battery@127.0.0.1:$port/0" >"$T/out" 2>"$T/err3" && fail "a wrong URI password worked"
grep -q "redis://:\*\*\*@127.0.0.1" "$T/err3" || fail "the URI is not shown without its password: $(cat "$T/err3")"
grep -l "wr0ng-Battery\|$PW" "$T"/err* && fail "a password was shown"
[ "$(wc -l <"$T/err")" = 1 ] || fail "not one line: $(cat "$T/err")"
pass "no password, wrong password: one clear line each, no password shown"

# ---- CONFIG disabled ------------------------------------------------------------
p=$(free_port)
timeout 30 "$IK_BIN" serve --coord "$uri" --password-file "$T/pw" --http 127.0.0.1:"$p" >"$T/noconfig.log" 2>&1 &&
  fail "serve started where CONFIG is disabled"
grep -q "appendonly is unreadable (redis://127.0.0.1:$port/0): cannot be read (ERR unknown command 'CONFIG'.*no rename-command.*pass --allow-unsafe-store" "$T/noconfig.log" ||
  fail "CONFIG disabled: $(cat "$T/noconfig.log")"
[ "$(rcli -a "$PW" --no-auth-warning DBSIZE)" = 0 ] || fail "a refused start wrote keys"
A=(--coord "$uri" --password-file "$T/pw" --allow-unsafe-store)
"$IK_BIN" tags add q --kind sequence "${A[@]}" >/dev/null 2>"$T/add.err" || fail "tags add: $(cat "$T/add.err")"
"$IK_BIN" tags add g --kind segment "${A[@]}" >/dev/null 2>>"$T/add.err" || fail "tags add: $(cat "$T/add.err")"
serve_on s1 "${A[@]}" --lease-ttl 3000 || fail "serve with the flag: $(cat "$T/s1.log")"
grep -q "store hazard accepted by --allow-unsafe-store: redis://127.0.0.1:$port/0: appendonly is unreadable: cannot be read (ERR unknown command 'CONFIG'" "$T/s1.log" ||
  fail "no warning: $(cat "$T/s1.log")"
grep -q "$PW" "$T/s1.log" && fail "the password is in the log"
curl -fsS "http://127.0.0.1:$PORT/v1/status" | grep -q "$PW" && fail "the password is in /v1/status"
pass "CONFIG disabled: refused, saying so; with --allow-unsafe-store: serves, with a warning"

# ---- not a Redis server -------------------------------------------------------------
"$IK_BIN" workers --coord "redis://127.0.0.1:$PORT/0" >"$T/out" 2>"$T/err" && fail "an HTTP server passed for Redis"
grep -q "127.0.0.1:$PORT does not speak the Redis protocol" "$T/err" || fail "not Redis: $(cat "$T/err")"
pass "a server that is not Redis: $(cat "$T/err")"

# ---- keys of the wrong type -------------------------------------------------------
R=(rcli -a "$PW" --no-auth-warning)
"${R[@]}" HSET h a b >/dev/null
"$IK_BIN" tags add h --kind segment "${A[@]}" >"$T/out" 2>"$T/err" && fail "a tag was made on a hash"
grep -q "tag h: the key h holds a hash, not an integer counter" "$T/err" || fail "hash key: $(cat "$T/err")"
"${R[@]}" SET s hello >/dev/null
"$IK_BIN" tags add s --kind segment "${A[@]}" >"$T/out" 2>"$T/err" && fail "a tag was made on a string"
grep -q "tag s: the key s holds a string that is not an integer" "$T/err" || fail "string key: $(cat "$T/err")"
[ "$("${R[@]}" HGET h a)" = b ] && [ "$("${R[@]}" GET s)" = hello ] || fail "a refused tag changed the key"
# the tag's hash of ours replaced by a string: the tag reads as broken, not as absent
"$IK_BIN" tags add m --kind segment "${A[@]}" >/dev/null
"${R[@]}" SET idkeeper/default/tag/m oops >/dev/null
[ "$(http_status "http://127.0.0.1:$PORT/v1/segment/m")" = 503 ] || fail "a broken tag hash was served"
# a served tag's counter replaced by a list: 503 (nothing issued), the log names the key
ids=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/q?count=5&format=text")
last=$(echo "$ids" | tail -n 1)
saved=$("${R[@]}" GET q)
"${R[@]}" DEL q >/dev/null
"${R[@]}" RPUSH q x >/dev/null
[ "$(http_status "http://127.0.0.1:$PORT/v1/sequence/q")" = 503 ] || fail "a list counter was served"
wait_grep "its counter key q holds list, not an integer: not issuing" "$T/s1.log" 10 || fail "no log line: $(tail -n 5 "$T/s1.log")"
"${R[@]}" DEL q >/dev/null
[ "$(http_status "http://127.0.0.1:$PORT/v1/sequence/q")" = 503 ] || fail "a deleted counter was served from 0"
wait_grep "its counter key q is gone" "$T/s1.log" 10 || fail "no log line for the missing key: $(tail -n 5 "$T/s1.log")"
"${R[@]}" SET q "$saved" >/dev/null
next=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/q?format=text")
((next > last)) || fail "after the counter came back: $next, not above $last"
pass "wrong-type keys: refused at tags add, 503 while serving, the log names the key; resumes above $last"

# ---- malformed URIs, locks ----------------------------------------------------------
for bad in "redis://" "redis://h:0" "redis://h/abc" "redis://h?prefix=a b" "redis+unix://rel/path" "redis://h?nope=1"; do
  "$IK_BIN" workers --coord "$bad" >"$T/out" 2>"$T/err" && fail "$bad was accepted"
  [ "$(wc -l <"$T/err")" = 1 ] || fail "$bad: not one line: $(cat "$T/err")"
done
for cmd in lock elect; do
  "$IK_BIN" $cmd --coord "$uri" --password-file "$T/pw" --allow-unsafe-store /p -- true >"$T/out" 2>"$T/err" &&
    fail "$cmd on redis:// ran its command"
  grep -q "no locks or elections here: it cannot fence them (a failover to a replica.*use zk:// (ZooKeeper), postgresql:// or mysql://" "$T/err" ||
    fail "$cmd: $(cat "$T/err")"
done
pass "malformed URIs refused in one line; lock and elect say why not and what to use"
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || fail "exit after SIGTERM"
