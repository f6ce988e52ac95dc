#!/usr/bin/env bash
# labels: recipes
# not-on: redis: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# timeout: 120
# not-on: local: a lock is an flock(2) that a stopped process keeps: nobody can take it over, so there is no loss to see
# Loss of a lock (docs/guarantees.md promise 21): a holder frozen with SIGSTOP past its lease (on zk:// its
# session timeout): another process gets the lock meanwhile; when the first wakes,
# it learns it lost the lock, its CMD gets SIGTERM and `idkeeper lock` exits with
# the loss code (125); the two grants' fencing tokens strictly increase.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
LOCK=("$IK_BIN" lock --coord "$(conf_coord t)" "${CONF_SERVE_ARGS[@]}")

"${LOCK[@]}" /stop -- sh -c 'echo $$ >"$0/a.pid"; echo "$IDKEEPER_FENCE" >"$0/a.fence"; exec sleep 300' "$T" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 10 test -s "$T/a.fence" || fail "a did not get the lock"
"${LOCK[@]}" /stop -- sh -c 'echo "$IDKEEPER_FENCE" >"$0/b.fence"' "$T" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
sleep 0.5
[ ! -e "$T/b.fence" ] || fail "b got the lock while a holds it"

kill -STOP $a
t0=$SECONDS
log "a (fence $(cat "$T/a.fence")) frozen"
limit_s=$((($(conf_lock_free_ms) + 12000) / 1000))
wait_until $((SECONDS - t0 < limit_s ? limit_s - (SECONDS - t0) : 0)) test -s "$T/b.fence" || fail "b did not get the lock within $limit_s s of a's freeze"
log "b got the lock $((SECONDS - t0)) s after a froze (fence $(cat "$T/b.fence"))"
wait $b || fail "b failed: $(cat "$T/b.err")"
alive "$(cat "$T/a.pid")" || fail "a's CMD died while a was frozen"

kill -CONT $a
rc=0
wait $a || rc=$?
[ $rc = 125 ] || fail "a exited $rc after waking, not 125 (lost): $(cat "$T/a.err")"
grep -q "lost the lock" "$T/a.err" || fail "a did not say it lost the lock: $(cat "$T/a.err")"
wait_until 2 not alive "$(cat "$T/a.pid")" || fail "a's CMD still runs after a lost the lock"
(($(cat "$T/b.fence") > $(cat "$T/a.fence"))) || fail "fences do not increase: a $(cat "$T/a.fence"), b $(cat "$T/b.fence")"
log "a: $(head -n 1 "$T/a.err")"
pass "frozen holder: b took over, a's CMD was stopped and a exited 125; fences $(cat "$T/a.fence") < $(cat "$T/b.fence")"
