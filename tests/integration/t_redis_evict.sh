#!/usr/bin/env bash
# labels: redis
# timeout: 120
# A Redis that evicts keys is refused (docs/hazards.md, Redis: maxmemory-policy).
# With maxmemory 2mb and allkeys-random, junk writes beside idkeeper made Redis
# evict a slot key and its time record: a second server on the same one-worker
# range (--worker-range 0-0) took worker 0 at floor 0 and issued at once while the
# first still issued in its safe window: the same IDs from both. So serve refuses to
# start on such a Redis, naming maxmemory-policy, and `idkeeper check` exits 5
# naming it; the same for allkeys-lru and for volatile-lru (the slot keys have a
# TTL, so every volatile-* policy evicts them). With noeviction the same maxmemory
# is safe: check exits 0 and serve starts. (Before the check, the first section
# reproduces the duplicates and fails with their count.)
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"
REDIS_PREFIX=ik-$$/

# junk PORT STOPFILE: 40 kB values under random keys, about 300 a second, until
# STOPFILE exists: with maxmemory 2mb each write evicts a key or so.
junk() {
  /usr/bin/python3 - "$1" "$2" <<'EOF' &
import os, random, sys, time
import redis
r = redis.Redis(port=int(sys.argv[1]))
v = b"x" * 40000
while not os.path.exists(sys.argv[2]):
    try:
        r.set(b"junk:%d" % random.randrange(1 << 30), v)
    except redis.RedisError:
        pass
    time.sleep(0.003)
EOF
  IK_PIDS+=($!)
}

# draw NAME PORT STOPFILE: snowflake IDs from a server into $T/NAME.ids, 10,000 a
# request, until STOPFILE exists (a 503 is waited out: a lease lost and taken again)
draw() {
  (
    while [ ! -e "$3" ]; do
      fetch_ids "$2" 10000 "$T/$1.ids" || sleep 0.02
    done
  ) &
  IK_PIDS+=($!)
  DRAWS+=($!)
}
DRAWS=()

redis_own allkeys-random "maxmemory 2mb" "maxmemory-policy allkeys-random"
port=${REDIS_PORT_OF[allkeys-random]}
uri=$(redis_uri a "$port")
if serve_on a --coord "$uri" --worker-range 0-0 --lease-ttl 3000; then
  # the defect: both servers issue under worker 0
  pa=$PORT
  junk "$port" "$T/junk.stop"
  serve_on b --coord "$uri" --worker-range 0-0 --lease-ttl 3000 --slot-wait 60000 ||
    fail "serve started on a Redis with maxmemory-policy allkeys-random; the second server did not: $(tail -n 3 "$T/b.log")"
  pb=$PORT
  : >"$T/a.ids"
  : >"$T/b.ids"
  draw a "$pa" "$T/draw.stop"
  draw b "$pb" "$T/draw.stop"
  sleep 8 # let time pass: both draw on worker 0 (the defect's evidence, duplicates)
  touch "$T/draw.stop" "$T/junk.stop"
  wait "${DRAWS[@]}"
  dups=$(sort "$T/a.ids" "$T/b.ids" | uniq -d | wc -l)
  fail "serve started on a Redis with maxmemory-policy allkeys-random (maxmemory 2mb): $(wc -l <"$T/a.ids") + $(wc -l <"$T/b.ids") IDs drawn from two servers on worker 0, $dups of them twice; evicted_keys $(rcli "$port" INFO stats | tr -d '\r' | sed -n 's/^evicted_keys://p')"
fi
grep -q "maxmemory-policy is allkeys-random (maxmemory 2097152)" "$T/a.log" ||
  fail "the refusal does not name maxmemory-policy: $(cat "$T/a.log")"
pass "allkeys-random with maxmemory 2mb: serve refused to start, naming maxmemory-policy"

# check_refuses NAME: idkeeper check on redis NAME exits 5 naming maxmemory-policy
check_refuses() {
  local rc=0 p=${REDIS_PORT_OF[$1]}
  "$IK_BIN" check --coord "redis://127.0.0.1:$p/0" >"$T/check-$1.out" 2>"$T/check-$1.err" || rc=$?
  [ "$rc" = 5 ] || fail "idkeeper check exited $rc on maxmemory-policy $1: $(cat "$T/check-$1.out" "$T/check-$1.err")"
  grep -Eq "^maxmemory-policy +$1 \(maxmemory 2097152\) +refused +set maxmemory-policy noeviction" "$T/check-$1.out" ||
    fail "idkeeper check does not name maxmemory-policy $1: $(cat "$T/check-$1.out")"
}
check_refuses allkeys-random
redis_own allkeys-lru "maxmemory 2mb" "maxmemory-policy allkeys-lru"
redis_own volatile-lru "maxmemory 2mb" "maxmemory-policy volatile-lru"
for pol in allkeys-lru volatile-lru; do
  p=${REDIS_PORT_OF[$pol]}
  serve_on "serve-$pol" --coord "redis://127.0.0.1:$p/0" && fail "serve started on a Redis with maxmemory-policy $pol"
  grep -q "maxmemory-policy is $pol (maxmemory 2097152)" "$T/serve-$pol.log" ||
    fail "serve's refusal does not name maxmemory-policy $pol: $(cat "$T/serve-$pol.log")"
  check_refuses "$pol"
  [ "$(rcli "$p" DBSIZE)" = 0 ] || fail "a refused start wrote keys: $(rcli "$p" KEYS '*')"
done
pass "allkeys-random, allkeys-lru, volatile-lru with maxmemory: serve refuses, idkeeper check exits 5 naming maxmemory-policy, nothing written"

redis_own noeviction "maxmemory 2mb" "maxmemory-policy noeviction"
p=${REDIS_PORT_OF[noeviction]}
"$IK_BIN" check --coord "redis://127.0.0.1:$p/0" >"$T/check-noeviction.out" 2>&1 ||
  fail "idkeeper check refused noeviction: $(cat "$T/check-noeviction.out")"
grep -Eq "^maxmemory-policy +noeviction \(maxmemory 2097152\) +ok" "$T/check-noeviction.out" ||
  fail "no ok row for noeviction: $(cat "$T/check-noeviction.out")"
serve_on ok --coord "redis://127.0.0.1:$p/0" --lease-ttl 3000 || fail "serve on noeviction: $(cat "$T/ok.log")"
[ "$(http_status "http://127.0.0.1:$PORT/v1/snowflake?count=5")" = 200 ] || fail "no snowflake ID on noeviction"
pass "noeviction with maxmemory 2mb: idkeeper check exits 0, serve serves"
