#!/usr/bin/env bash
# labels: redis
# timeout: 120
# Durability, checked, not hoped (docs/redis.md, docs/hazards.md): a Redis that can
# lose an acknowledged write (appendonly no; appendonly yes with appendfsync
# everysec) is refused at start, by serve and by the CLI, with a message naming the
# setting, its value and what to change; nothing is written to it. With
# --allow-unsafe-store the server serves every kind of ID and logs that it accepts
# the setting. A Redis restarted without its append-only file under a running server
# (its keys gone) is refused on the server's next connection: no counter restarts
# from 0, no slot is taken on it.
# (The unix socket form, redis+unix:///PATH, reaches the same Redis.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_own noaof "appendonly no"
redis_own everysec "appendfsync everysec"
for name in noaof everysec; do
  port=${REDIS_PORT_OF[$name]}
  uri=redis://127.0.0.1:$port/0
  case $name in
    noaof) want="appendonly is no" fix="set appendonly yes" ;;
    everysec) want="appendfsync is everysec" fix="set appendfsync always" ;;
  esac
  p=$(free_port)
  timeout 30 "$IK_BIN" serve --coord "$uri" --http 127.0.0.1:"$p" >"$T/refused-$name.log" 2>&1 &&
    fail "serve started on a Redis with $want"
  grep -q "$want (redis://127.0.0.1:$port/0): $fix" "$T/refused-$name.log" ||
    fail "the refusal does not name the settings: $(cat "$T/refused-$name.log")"
  grep -q -- "--allow-unsafe-store" "$T/refused-$name.log" || fail "the refusal does not name the flag"
  "$IK_BIN" tags add t --kind sequence --coord "$uri" >"$T/out" 2>"$T/err" && fail "tags add worked on $want"
  grep -q "$want" "$T/err" || fail "tags add: $(cat "$T/err")"
  [ "$(rcli "$port" DBSIZE)" = 0 ] || fail "a refused start wrote keys: $(rcli "$port" KEYS '*')"
  pass "$want: refused, naming the settings, nothing written"
done

# With the flag: serves, and says so in its log.
uri=redis://127.0.0.1:${REDIS_PORT_OF[noaof]}/0
"$IK_BIN" tags add q --kind sequence --allow-unsafe-store --coord "$uri" >/dev/null 2>"$T/add.err"
"$IK_BIN" tags add g --kind segment --allow-unsafe-store --coord "$uri" >/dev/null 2>>"$T/add.err"
serve_on unsafe --coord "$uri" --allow-unsafe-store --lease-ttl 3000 || fail "serve with the flag: $(cat "$T/unsafe.log")"
grep -q "store hazard accepted by --allow-unsafe-store: redis://127.0.0.1:${REDIS_PORT_OF[noaof]}/0: appendonly is no: set appendonly yes" "$T/unsafe.log" ||
  fail "no warning in the log: $(cat "$T/unsafe.log")"
for k in snowflake segment/g sequence/q; do
  [ "$(http_status "http://127.0.0.1:$PORT/v1/$k?count=3")" = 200 ] || fail "$k not served with the flag"
done
pass "--allow-unsafe-store: serves every kind, with a warning naming the settings"
kill -TERM "${SERVER_PID[unsafe]}"
wait "${SERVER_PID[unsafe]}" || fail "exit after SIGTERM"

# ---- restarted without the AOF under a running server -------------------------------
redis_own good "unixsocket $T/redis-good/redis.sock" "unixsocketperm 700"
uri=redis://127.0.0.1:${REDIS_PORT_OF[good]}/0
"$IK_BIN" tags add q --kind sequence --coord "$uri" >/dev/null
# the unix socket form reaches the same keys
"$IK_BIN" tags show q --json --coord "redis+unix://$T/redis-good/redis.sock?db=0" | jq -e '.kind == "sequence"' >/dev/null ||
  fail "redis+unix:// does not see the tag"
serve_on s2 --coord "$uri" --lease-ttl 3000 || fail "s2: $(cat "$T/s2.log")"
last=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/q?count=10&format=text" | tail -n 1)
redis_kill good
echo "appendonly no" >>"$T/redis-good/redis.conf" # its keys are gone on the restart
redis_restart good
[ "$(rcli "${REDIS_PORT_OF[good]}" DBSIZE)" = 0 ] || fail "the restarted Redis kept its keys"
for i in 1 2 3; do
  code=$(http_status "http://127.0.0.1:$PORT/v1/sequence/q?format=text")
  [ "$code" = 503 ] || fail "a sequence ID from a Redis restarted without its AOF: $code"
done
wait_grep "store hazard: redis://127.0.0.1:${REDIS_PORT_OF[good]}/0: appendonly is no: refusing to write" "$T/s2.log" 10 ||
  fail "the refusal is not in the log: $(tail -n 5 "$T/s2.log")"
mono_ms t0
refused() { [ "$(http_status "http://127.0.0.1:$PORT/v1/snowflake")" = 503 ]; }
wait_until 5 refused || fail "snowflake IDs still served 5 s after the restart without the AOF"
[ "$(rcli "${REDIS_PORT_OF[good]}" DBSIZE)" = 0 ] || fail "the server wrote to the unsafe Redis: $(rcli "${REDIS_PORT_OF[good]}" KEYS '*')"
pass "Redis restarted without its AOF: refused on the next connection (503, logged), nothing written; last ID before: $last"
