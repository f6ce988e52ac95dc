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
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
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
