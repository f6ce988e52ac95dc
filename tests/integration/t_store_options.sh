#!/usr/bin/env bash
# labels: redis
# timeout: 150
# fixtures: redis
# needs: zk
# Store options (docs/configuration.md, "Store options"): a backend's own settings,
# given as --FAMILY-NAME, as IDKEEPER_FAMILY_NAME, as a config key or in the URI's
# query, reach the backend alike; an unknown one is one line naming those that exist,
# and changes nothing.
#
#   alike     on the shared Redis (no replica): wait-replicas=1 given by the flag,
#             the variable, the config file or the URI each makes a sequence request
#             answer 503 with its range logged "WAIT counted 0 of 1 replicas"; without
#             it the same request answers 200
#   unknown   ?wait-replica=1 on redis://, ?session-timout= on zk://: exit 2, one line
#             naming the options (and the URI's own keys), no tag made, no server up
#   secret    ?auth=USER:PASSWORD on zk:// is never shown, in an error or a refusal
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_start
URI=$(redis_uri data)
"$IK_BIN" tags add q --kind sequence --start 1 --coord "$URI" >"$T/add.out" 2>&1 || fail "tags add: $(cat "$T/add.out")"

# ---- unknown -------------------------------------------------------------------------
"$IK_BIN" tags add r --kind sequence --coord "$URI&wait-replica=1" >"$T/u1.out" 2>&1 && fail "an unknown option in the URI was taken"
want="the redis backend has no option 'wait-replica' (its options: wait-replicas; its URI's own keys: db, prefix, user)"
grep -qF "$want" "$T/u1.out" || fail "unknown option in a redis URI: $(cat "$T/u1.out")"
[ "$(wc -l <"$T/u1.out")" = 1 ] || fail "not one line: $(cat "$T/u1.out")"
[ "$(rcli EXISTS "${REDIS_PREFIX}data/r")" = 0 ] || fail "the tag r was made by a refused command"
p=$(free_port)
rc=0
timeout 20 "$IK_BIN" serve --coord "zk://127.0.0.1:$p/app?session-timout=3000" --http 127.0.0.1:"$(free_port)" >"$T/u2.out" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "serve with an unknown zk option exited $rc, not 2: $(cat "$T/u2.out")"
grep -qF "the zk backend has no option 'session-timout' (its options: session-timeout, auth)" "$T/u2.out" ||
  fail "unknown option in a zk URI: $(cat "$T/u2.out")"
[ "$(wc -l <"$T/u2.out")" = 1 ] || fail "not one line: $(cat "$T/u2.out")"
pass "unknown: one line naming the options that exist; nothing made"

# ---- secret --------------------------------------------------------------------------
timeout 20 "$IK_BIN" check --coord "zk://127.0.0.1:$p/app?auth=idk:s3cret-Horse&bogus=1" >"$T/s1.out" 2>&1 && fail "a bad zk URI was taken"
timeout 20 "$IK_BIN" check --coord "zk://127.0.0.1:$p/app?auth=:s3cret-Horse" >"$T/s2.out" 2>&1 && fail "auth without a user was taken"
grep -q "auth in the zk URI: must be USER:PASSWORD" "$T/s2.out" || fail "auth without a user: $(cat "$T/s2.out")"
IDKEEPER_ZK_AUTH=":s3cret-Horse" timeout 20 "$IK_BIN" check --coord "zk://127.0.0.1:$p/app" >"$T/s3.out" 2>&1 && fail "IDKEEPER_ZK_AUTH without a user was taken"
grep -q "IDKEEPER_ZK_AUTH: must be USER:PASSWORD" "$T/s3.out" || fail "IDKEEPER_ZK_AUTH without a user: $(cat "$T/s3.out")"
grep -l "s3cret" "$T"/s*.out && fail "a password was shown: $(cat "$T"/s*.out)"
pass "secret: auth in the URI or the environment never shown"

# ---- alike ---------------------------------------------------------------------------
# one server at a time: each asks for one sequence ID and is stopped
ask() { # NAME: the answer's status, the server's log in $T/NAME.log
  local name=$1 code
  shift
  serve_on "$name" "$@" --lease-ttl 3000 --threads 1 || fail "$name did not start: $(cat "$T/$name.log")"
  code=$(curl -s -o "$T/$name.body" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/sequence/q?count=1&format=text")
  kill -TERM "${SERVER_PID[$name]}"
  wait "${SERVER_PID[$name]}" || fail "$name: exit after SIGTERM"
  echo "$code"
}
waited() { grep -q "why=not_replicated (app default, sequence: recorded, but WAIT counted 0 of 1 replicas" "$T/$1.log"; }
printf 'coord = %s\nredis-wait-replicas = 1\n' "$URI" >"$T/conf.ini"
[ "$(ask none --coord "$URI")" = 200 ] || fail "without wait-replicas: $(cat "$T/none.body")"
waited none && fail "without wait-replicas, a write waited for a replica"
[ "$(ask flag --coord "$URI" --redis-wait-replicas 1)" = 503 ] || fail "--redis-wait-replicas 1: $(cat "$T/flag.body")"
[ "$(ask query --coord "$URI&wait-replicas=1")" = 503 ] || fail "?wait-replicas=1: $(cat "$T/query.body")"
[ "$(IDKEEPER_REDIS_WAIT_REPLICAS=1 ask env --coord "$URI")" = 503 ] || fail "IDKEEPER_REDIS_WAIT_REPLICAS=1: $(cat "$T/env.body")"
[ "$(ask file --config "$T/conf.ini")" = 503 ] || fail "redis-wait-replicas = 1 in the config file: $(cat "$T/file.body")"
for s in flag query env file; do
  waited "$s" || fail "$s: no gap line of an unreplicated write: $(grep 'tag gap' "$T/$s.log")"
done
grep -q "backend redis://127.0.0.1:[0-9]*/0?prefix=$REDIS_PREFIX" "$T/query.log" || fail "query: no start line: $(head -n 3 "$T/query.log")"
grep "backend redis://" "$T/query.log" | grep -q "wait-replicas" && fail "the URI shown still holds the store option (the backend got it)"
pass "alike: wait-replicas by flag, variable, config key and URI: each write waited for a replica"
