# shellcheck shell=bash
# sql_commit_point.sh: a durability setting turned unsafe between the two round trips
# of a sequence advance, then a crash of the database (bash, sourced by
# t_mysql_commit_point.sh and t_pg_commit_point.sh after lib.sh; docs/hazards.md,
# "Proof with every write": evidence counts only when it was read at or after the
# write's commit point). The caller sets
#   URI            a fresh database of a server of the test's own
#   UNSAFE_NAME    the setting as the hazard row names it ("synchronous_commit is off")
#   unsafe_set     a function that turns it unsafe, returning once the server applies
#                  it to every session
#   store_crash    one that crashes the database (no flush: kill -9)
#   store_restart  one that starts it again on its data and puts the setting back
#   max_id         one that prints leaf_alloc.max_id of tag q
# The advance is held between its first round trip (the locking read, the mark, the
# UPDATE, the proof of the settings as they were) and its COMMIT by the test hook
# IDKEEPER_TEST_SQL_COMMIT_HOLD (docs/testing.md); the setting turns unsafe there,
# the hook lets go, the COMMIT runs under it, and the database is crashed as soon as
# the request is answered. Before the evidence was read after the COMMIT, that
# request was answered with IDs the crash then took back, and the server answered
# them again after the restart. Now:
#   - the held request is answered 503, and its committed range is logged as a gap
#     at its exact place (why=store_unsafe);
#   - no ID is answered twice, across the crash;
#   - every ID of the store's run that was not answered is in a logged gap.
# IK_COMMIT_POINT_PARTS (default "advance fence") runs only the parts it names: to
# see one part fail on an older binary (docs/testing.md, "a new test on older code").
PARTS=" ${IK_COMMIT_POINT_PARTS:-advance fence} "
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
if [[ $PARTS == *" advance "* ]]; then
PA=$(free_port)
HOLD=$T/hold
IDKEEPER_TEST_SQL_COMMIT_HOLD=$HOLD start_server a "$PA" --coord "$URI" --lease-ttl 30000
wait_ready "$PA" 30 || fail "a not ready: $(tail -n 5 "$T/a.log")"
base=http://127.0.0.1:$PA
: >"$T/answered.ids"
seq_get() { # seq_get BODY: one request of 3 IDs; prints the status, keeps a 200's IDs
  local code
  code=$(ik_http "$base/v1/sequence/q?count=3&format=text" "$1" 20)
  [ "$code" != 200 ] || cat "$1" >>"$T/answered.ids"
  echo "$code"
}
for i in 1 2 3; do [ "$(seq_get "$T/pre.body")" = 200 ] || fail "no sequence IDs before the hold: $(cat "$T/pre.body")"; done

: >"$HOLD" # armed: the next advance holds before its COMMIT
seq_get "$T/held.body" >"$T/held.code" &
held=$!
IK_PIDS+=("$held")
wait_until 20 grep -q held "$HOLD" || fail "the advance never reached its COMMIT's hold: $(tail -n 5 "$T/a.log")"
unsafe_set
rm -f "$HOLD" # the COMMIT goes out under the unsafe setting
wait "$held" || true
store_crash
code=$(cat "$T/held.code")
log "the held request was answered $code: $(tr '\n' ' ' <"$T/held.body")"
store_restart

serving() { [ "$(seq_get "$T/post.body")" = 200 ]; }
wait_until 60 serving || fail "a does not serve again after the restart: $(tail -n 5 "$T/a.log")"
for i in 1 2 3; do [ "$(seq_get "$T/post.body")" = 200 ] || fail "a request after the restart: $(cat "$T/post.body")"; done

assert_unique "$T/answered.ids"
[ "$code" = 503 ] || fail "the request whose COMMIT ran after $UNSAFE_NAME was answered $code ($(tr '\n' ' ' <"$T/held.body")), not 503"
grep -q "$UNSAFE_NAME" "$T/held.body" || grep -q "$UNSAFE_NAME" "$T/a.log" || fail "nothing names $UNSAFE_NAME: $(cat "$T/held.body")"
gap=$(grep -o 'tag gap tag=q first=[0-9]* count=3 why=store_unsafe' "$T/a.log" | head -n 1)
[ -n "$gap" ] || fail "the held write's range is not logged as a gap: $(grep 'tag gap' "$T/a.log" | head -n 3)"
sed -n 's/.*tag gap tag=q first=\([0-9?]*\) count=\([0-9]*\) .*/\1 \2/p' "$T/a.log" >"$T/gaps"
grep -q '^?' "$T/gaps" && fail "a gap of unknown place: $(grep 'tag gap' "$T/a.log" | head -n 3)"
while read -r f c; do seq "$f" $((f + c - 1)); done <"$T/gaps" >"$T/gaps.ids"
max=$(max_id)
missing=$(seq 1 $((max - 1)) | sort | comm -23 - <(sort -u "$T/answered.ids" "$T/gaps.ids") | sort -n | head -n 5)
[ -z "$missing" ] || fail "IDs of the store's run 1..$((max - 1)) neither answered nor in a logged gap: $missing"
pass "$UNSAFE_NAME between an advance's round trips, then a crash: the request 503, its range logged ($gap), $(wc -l <"$T/answered.ids") IDs answered across the crash, none twice, the rest of 1..$((max - 1)) in logged gaps"
kill -TERM "${SERVER_PID[a]}" 2>/dev/null || true
wait "${SERVER_PID[a]}" 2>/dev/null || true
fi
[[ $PARTS == *" fence "* ]] || exit 0

# ---- a lock's fence: a write like any other ------------------------------------------
# H holds lock /f (fence 1); A waits for it; the setting turns unsafe during A's wait;
# H lets go, and A's grant advances the fence in a transaction whose COMMIT runs under
# the unsafe setting; the database is crashed as soon as A is done. Before, the fence
# was committed with no hazard gate and no proof: A was granted fence 2, the crash
# took it back, and C was granted fence 2 as well. Now A's fence is not trusted: A is
# not granted (it exits 1 naming the setting), and every fence granted is above the
# ones before. The caller sets lock_waiters (prints how many wait for /f).
LOCK=(lock --coord "$URI" --lease-ttl 30000)
"$IK_BIN" "${LOCK[@]}" /f -- bash -c "echo \$IDKEEPER_FENCE >'$T/h.fence'; while [ ! -e '$T/h.go' ]; do sleep 0.05; done" \
  >"$T/h.out" 2>&1 &
hpid=$!
IK_PIDS+=("$hpid")
wait_until 30 test -s "$T/h.fence" || fail "H was not granted /f: $(cat "$T/h.out")"
"$IK_BIN" "${LOCK[@]}" /f -- bash -c "echo \$IDKEEPER_FENCE >'$T/a.fence'" >"$T/a.out" 2>&1 &
apid=$!
IK_PIDS+=("$apid")
waiting() { [ "$(lock_waiters)" -ge 1 ]; }
wait_until 30 waiting || fail "A never waited for /f: $(cat "$T/a.out")"
unsafe_set
touch "$T/h.go"
arc=0
wait "$apid" || arc=$?
store_crash
wait "$hpid" || true
log "A exited $arc, fence $(cat "$T/a.fence" 2>/dev/null || echo none): $(tail -n 2 "$T/a.out" | tr '\n' ' ')"
store_restart
"$IK_BIN" "${LOCK[@]}" /f -- bash -c "echo \$IDKEEPER_FENCE >'$T/c.fence'" >"$T/c.out" 2>&1 || fail "C was not granted /f: $(cat "$T/c.out")"
h=$(cat "$T/h.fence") c=$(cat "$T/c.fence")
if [ -s "$T/a.fence" ]; then
  a=$(cat "$T/a.fence")
  ((a > h && c > a)) || fail "fences granted out of order across the crash: H $h, A $a, C $c"
  fail "A was granted fence $a, committed under $UNSAFE_NAME (C then got $c)"
fi
((arc != 0)) || fail "A exited 0 without its command's fence file"
grep -q "$UNSAFE_NAME" "$T/a.out" || fail "A's refusal does not name $UNSAFE_NAME: $(cat "$T/a.out")"
((c > h)) || fail "C's fence $c is not above H's $h"
pass "$UNSAFE_NAME during a lock wait, then a crash: A not granted (exit $arc, naming it), fences H $h, C $c"
