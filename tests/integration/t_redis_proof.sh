#!/usr/bin/env bash
# labels: redis
# timeout: 240
# Proof with every write on Redis (docs/hazards.md, Redis: "What rides with each
# write"). A check made around the writes (at open, then once a hazard interval) left
# a window in which a write was acknowledged under a setting that loses it. Here the
# interval is 10 s (--lease-ttl 30000), so only the evidence that rides with each
# write can stop these in time:
#   - a sequence request (HTTP, and INCR on the RESP door) sent right after CONFIG SET
#     appendonly no was acknowledged gets no ID: 503 store_unsafe / -TRYAGAIN naming
#     appendonly, and the range the refused write took is logged as a gap;
#   - the same right after CONFIG SET appendonly yes, while Redis's first rewrite of
#     its append-only file still runs (a crash then brings back the old file): row
#     aof-rewrite; served again once the rewrite ended;
#   - the same right after maxmemory-policy allkeys-lru (with maxmemory);
#   - a snowflake server stops issuing within a renewal (0.5 s) of CONFIG SET
#     maxmemory-policy allkeys-random, /readyz naming it;
#   - IDs answered and gaps logged form one run, none twice;
#   - a counter key with a TTL is refused: at `tags add` (adopting it) and at an
#     advance once an app gave it a TTL (it would expire and INCR would restart it);
#   - a slot take whose own evidence shows an eviction policy (the holder's key
#     evicted) is released at once and never granted;
#   - a Redis Cluster node is refused by `idkeeper check` and `serve` (row
#     cluster-enabled).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"
REDIS_PREFIX=ik-$$/

redis_own p
port=${REDIS_PORT_OF[p]}
uri=$(redis_uri r "$port")
"$IK_BIN" tags add q --kind sequence --coord "$uri" >/dev/null || fail "tags add q"
RPORT=$(free_port)
serve_on s --coord "$uri" --lease-ttl 30000 --resp "127.0.0.1:$RPORT" || fail "serve: $(cat "$T/s.log")"
base=http://127.0.0.1:$PORT
: >"$T/all.ids"

# seq_get: a sequence ID of tag q over HTTP; prints the status, the body in
# $T/seq.body; every ID answered goes to $T/all.ids
seq_get() {
  local code
  code=$(ik_http "$base/v1/sequence/q?format=text" "$T/seq.body")
  [ "$code" != 200 ] || cat "$T/seq.body" >>"$T/all.ids"
  echo "$code"
}
# resp_incr: INCR q on the RESP door; prints its answer, an ID goes to $T/all.ids
resp_incr() {
  local a
  a=$(redis-cli -p "$RPORT" INCR q 2>&1)
  [[ ! $a =~ ^[0-9]+$ ]] || echo "$a" >>"$T/all.ids"
  echo "$a"
}
seq_ok() { [ "$(seq_get)" = 200 ]; }

# refused_at_once WHAT ROW: the first HTTP request and the first INCR after the
# CONFIG SET got no ID, each naming ROW
refused_at_once() {
  local code a
  code=$(seq_get)
  [ "$code" = 503 ] || fail "$1: a sequence request right after it was acknowledged answered $code: $(cat "$T/seq.body")"
  grep -q '"store_unsafe"' "$T/seq.body" && grep -q "$2 is" "$T/seq.body" ||
    fail "$1: the 503 does not name $2: $(cat "$T/seq.body")"
  a=$(resp_incr)
  [[ $a == TRYAGAIN*"$2 is"* ]] || fail "$1: INCR on the RESP door answered: $a"
}

# ---- appendonly no, then appendonly yes during the first rewrite ------------------
[ "$(seq_get)" = 200 ] || fail "no sequence ID at start"
[ "$(rcli "$port" CONFIG SET appendonly no)" = OK ] || fail "CONFIG SET appendonly no"
refused_at_once "appendonly no" appendonly
# the refused write's range is a gap; or, where the lease's renewal (its own proof,
# every 0.5 s) saw the setting before the request came (a loaded machine is slow to
# start curl), the gate refused it before any write, and no range was taken: the
# count at the end (answered and gaps make up 1..top) holds either way
if grep -q "tag gap tag=q first=[0-9]* count=1 why=store_unsafe" "$T/s.log"; then
  pass "appendonly no: the next HTTP request and INCR got no ID (503, -TRYAGAIN naming appendonly), the refused range logged as a gap"
else
  grep -q "store hazard: .*appendonly is no: refusing to write" "$T/s.log" ||
    fail "appendonly no: neither a gap for the refused write nor the hazard's line: $(grep -i 'gap\|hazard' "$T/s.log" | tail -n 3)"
  pass "appendonly no: the next HTTP request and INCR got no ID (503, -TRYAGAIN naming appendonly), refused before a write (the renewal saw it first)"
fi

# a first rewrite that lasts: 8 keys saved 0.5 s each by the rewrite's child
for i in 1 2 3 4 5 6 7 8; do rcli "$port" SET "junk$i" x >/dev/null; done
rcli "$port" CONFIG SET rdb-key-save-delay 500000 >/dev/null
[ "$(rcli "$port" CONFIG SET appendonly yes)" = OK ] || fail "CONFIG SET appendonly yes"
rcli "$port" INFO persistence | grep -q 'aof_rewrite_in_progress:1' || fail "no rewrite running after appendonly yes"
refused_at_once "appendonly yes during the first rewrite" aof-rewrite
rw() { rcli "$port" INFO persistence | grep -q 'aof_rewrite_in_progress:1'; }
rw || fail "the first rewrite ended before the check (too fast to test)"
rcli "$port" CONFIG SET rdb-key-save-delay 0 >/dev/null
wait_until 30 not rw || fail "the first rewrite did not end"
wait_until 3 seq_ok || fail "not serving within 3 s of the first rewrite's end: $(cat "$T/seq.body")"
grep -q "store hazard cleared: .*: aof-rewrite is" "$T/s.log" || fail "no line saying aof-rewrite cleared"
pass "appendonly yes during its first rewrite: no ID until the rewrite ended, then served"

# a later rewrite of an append-only file that exists is safe: writes go on
rcli "$port" CONFIG SET rdb-key-save-delay 300000 >/dev/null
rcli "$port" BGREWRITEAOF >/dev/null
rw || fail "BGREWRITEAOF did not start"
code=$(seq_get)
[ "$code" = 200 ] || fail "a sequence request during a routine rewrite answered $code: $(cat "$T/seq.body")"
rcli "$port" CONFIG SET rdb-key-save-delay 0 >/dev/null
wait_until 30 not rw || fail "the rewrite did not end"
pass "a routine rewrite (the append-only file exists): served"

# ---- maxmemory-policy allkeys-lru ---------------------------------------------------
[ "$(rcli "$port" CONFIG SET maxmemory 100mb maxmemory-policy allkeys-lru)" = OK ] || fail "CONFIG SET maxmemory-policy"
refused_at_once "maxmemory-policy allkeys-lru" maxmemory-policy
[ "$(rcli "$port" CONFIG SET maxmemory 0 maxmemory-policy noeviction)" = OK ] || fail "CONFIG SET noeviction"
wait_until 3 seq_ok || fail "not serving within 3 s of noeviction"
pass "maxmemory-policy allkeys-lru: the next HTTP request and INCR got no ID"

# ---- IDs answered and gaps logged: one run ------------------------------------------
sed -n 's/.*tag gap tag=q first=\([0-9]*\) count=\([0-9]*\) .*/\1 \2/p' "$T/s.log" |
  while read -r f c; do seq "$f" $((f + c - 1)); done >"$T/gaps.ids"
d=$(sort -n "$T/all.ids" "$T/gaps.ids" | uniq -d | head -n 5)
[ -z "$d" ] || fail "answered twice, or answered and logged as a gap: $d"
top=$(rcli "$port" GET "${REDIS_PREFIX}r/q")
n=$(cat "$T/all.ids" "$T/gaps.ids" | wc -l)
[ "$n" = "$top" ] || fail "$n IDs answered or logged as gaps, the counter is at $top: $(sort -n "$T/all.ids" "$T/gaps.ids" | tr '\n' ' ')"
pass "$(wc -l <"$T/all.ids") IDs answered and $(wc -l <"$T/gaps.ids") logged as gaps make up 1..$top"

# ---- snowflake: a renewal carries the evidence ---------------------------------------
wait_until 3 ready_probe "$PORT" || fail "not ready within 3 s before the eviction policy (the lease resumes at its next renewal)"
[ "$(ik_http "$base/v1/snowflake")" = 200 ] || fail "no snowflake ID before the eviction policy"
[ "$(rcli "$port" CONFIG SET maxmemory 100mb maxmemory-policy allkeys-random)" = OK ] || fail "CONFIG SET allkeys-random"
mono_ms t0
sf503() { [ "$(ik_http "$base/v1/snowflake" "$T/sf.body")" = 503 ]; }
wait_until 1.5 sf503 || fail "snowflake IDs still issued 1.5 s after CONFIG SET maxmemory-policy allkeys-random (the hazard interval is 10 s)"
el=$(($(mono_ms) - t0))
ik_http "$base/readyz" "$T/rz.body" >/dev/null
grep -q "store unsafe: maxmemory-policy is allkeys-random" "$T/rz.body" || fail "/readyz does not name it: $(cat "$T/rz.body")"
[ "$(rcli "$port" CONFIG SET maxmemory 0 maxmemory-policy noeviction)" = OK ] || fail "CONFIG SET noeviction"
wait_until 3 ready_probe "$PORT" || fail "not ready within 3 s of noeviction"
pass "maxmemory-policy allkeys-random: snowflake stopped after $el ms, /readyz naming it; ready again after noeviction"

# ---- a slot take carries the evidence: taken under it, released -------------------------
# a holds the one worker of app sl; b waits for it (retrying every 0.5 s). One
# transaction turns an eviction policy on and deletes a's slot key (as an eviction
# would): b's next take finds the slot free, and its own evidence shows the policy
SL=(--coord "$uri" --app sl --worker-range 0-0 --lease-ttl 30000)
serve_on a "${SL[@]}" || fail "serve a: $(cat "$T/a.log")"
pa=$PORT
pb=$(free_port)
start_server b "$pb" "${SL[@]}" --slot-wait 60000
b_waits() { [ "$(ik_http "http://127.0.0.1:$pb/readyz" "$T/b.readyz")" = 503 ] && grep -q "free slot" "$T/b.readyz"; }
wait_until 20 b_waits || fail "b does not wait for worker 0: $(tail -n 3 "$T/b.log")"
alive "${SERVER_PID[b]}" || fail "b exited while waiting: $(tail -n 3 "$T/b.log")"
slot_key=${REDIS_PREFIX}r/idkeeper/sl/slot/0
[ "$(rcli "$port" EXISTS "$slot_key")" = 1 ] || fail "a holds no slot key $slot_key"
printf 'MULTI\nCONFIG SET maxmemory 100mb maxmemory-policy allkeys-random\nDEL %s\nEXEC\n' "$slot_key" |
  rcli "$port" >/dev/null
if ! wait_until 5 not alive "${SERVER_PID[b]}"; then
  ready_probe "$pb" && fail "b took worker 0 while maxmemory-policy was allkeys-random (a's slot key evicted): $(tail -n 3 "$T/b.log")"
  fail "b neither exited nor became ready: $(tail -n 3 "$T/b.log")"
fi
grep -q "worker slot 0 of app sl was taken under an unsafe store setting: released, never granted" "$T/b.log" ||
  fail "b's take was not released as taken under unsafe evidence: $(tail -n 4 "$T/b.log")"
grep -q "maxmemory-policy is allkeys-random" "$T/b.log" || fail "b's exit does not name the setting: $(tail -n 3 "$T/b.log")"
[ "$(rcli "$port" EXISTS "$slot_key")" = 0 ] || fail "the slot key is held after b's release: $(rcli "$port" GET "$slot_key")"
a503() { [ "$(ik_http "http://127.0.0.1:$pa/v1/snowflake")" = 503 ]; }
wait_until 2 a503 || fail "a still issues 2 s after its slot key was deleted under allkeys-random (it renews every 0.5 s)"
[ "$(rcli "$port" CONFIG SET maxmemory 0 maxmemory-policy noeviction)" = OK ] || fail "CONFIG SET noeviction"
pass "a slot take under allkeys-random (the holder's key evicted): released at once and never granted; the old holder stopped"

# ---- a counter key with a TTL ---------------------------------------------------------
rcli "$port" SET "${REDIS_PREFIX}t/ttlk" 100 EX 60 >/dev/null
rc=0
"$IK_BIN" tags add ttlk --kind sequence --coord "$(redis_uri t "$port")" >"$T/ttl.out" 2>&1 || rc=$?
[ "$rc" != 0 ] || fail "tags add adopted a counter key with a TTL (after it expires, INCR restarts it at 1 and IDs repeat)"
grep -q "TTL" "$T/ttl.out" || fail "the refusal does not name the TTL: $(cat "$T/ttl.out")"
[ "$(rcli "$port" EXISTS "${REDIS_PREFIX}t/idkeeper/default/tag/ttlk")" = 0 ] || fail "a refused tag was made"
rcli "$port" EXPIRE "${REDIS_PREFIX}r/q" 60 >/dev/null
before=$(rcli "$port" GET "${REDIS_PREFIX}r/q")
code=$(seq_get)
[ "$code" = 503 ] || fail "an advance on a counter key with a TTL answered $code: $(cat "$T/seq.body")"
grep -q "tag q: its counter key ${REDIS_PREFIX}r/q has a TTL" "$T/s.log" || fail "no log line names the TTL: $(tail -n 3 "$T/s.log")"
[ "$(rcli "$port" GET "${REDIS_PREFIX}r/q")" = "$before" ] || fail "the counter moved"
rcli "$port" PERSIST "${REDIS_PREFIX}r/q" >/dev/null
[ "$(seq_get)" = 200 ] || fail "not served after PERSIST: $(cat "$T/seq.body")"
pass "a counter key with a TTL: tags add refused, an advance 503 naming it (counter unmoved), served after PERSIST"

# ---- a Redis Cluster node ---------------------------------------------------------------
redis_own cl "cluster-enabled yes" "cluster-config-file $T/redis-cl/nodes.conf"
cport=${REDIS_PORT_OF[cl]}
rc=0
"$IK_BIN" check --coord "redis://127.0.0.1:$cport/0" >"$T/check-cl.out" 2>&1 || rc=$?
[ "$rc" = 5 ] || fail "idkeeper check exited $rc on a cluster node: $(cat "$T/check-cl.out")"
grep -Eq "^cluster-enabled +yes +refused" "$T/check-cl.out" || fail "idkeeper check does not name cluster-enabled: $(cat "$T/check-cl.out")"
serve_on cl --coord "redis://127.0.0.1:$cport/0" && fail "serve started on a cluster node"
grep -q "cluster-enabled is yes" "$T/cl.log" || fail "the refusal does not name cluster-enabled: $(cat "$T/cl.log")"
pass "a Redis Cluster node: idkeeper check exits 5 and serve refuses, naming cluster-enabled"

d=$(sort -n "$T/all.ids" | uniq -d | head -n 5)
[ -z "$d" ] || fail "sequence IDs served twice: $d"
