#!/usr/bin/env bash
# labels: counters
# timeout: 180
# Two sequences on one coord (include/idkeeper.h allows any number of ik_sequence
# on an ik_coord): tests/tools/twoseq draws one tag through two ik_sequence of one
# ik_coord, and no ID may come out twice, nor go missing without a logged gap.
#   load  X and Y, two threads each, 600 requests of 1..5 IDs together;
#   lost  (SQL stores: the write that settles a lost COMMIT answer by its mark)
#         X's write is paused before its COMMIT (IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS)
#         while Y's write queues on the tag's row lock; X's COMMIT is lost on the
#         way (the fault proxy closes X's connection instead: it never applies);
#         then Y's write commits. X must not take Y's commit for its own.
#         (redis://: X's script runs and its answer is held, so X's call ends in
#         doubt while Y's write runs on a writer of its own; X's next write
#         settles X's doubt: a gap logged at its exact place.)
# Each part ends with tests/tools/idcheck.py gaps: every ID of 1..max_id-1 (the
# store's, read around idkeeper) answered once or in a gap the library logged,
# and the gap hook's counts equal to the logged gaps.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_counters # conf_counter_raw's helpers
TWOSEQ=$IK_BUILD/tests/tools/twoseq
[ -x "$TWOSEQ" ] || fail "no twoseq at $TWOSEQ (built by tests/tools)"
IDCHECK=(python3 "$IK_SRC/tests/tools/idcheck.py")

# check NAME URI: twoseq's output $T/NAME.out against the store's max_id of tag t
# check NAME URI [TAG]: twoseq NAME's IDs and logged gaps make up TAG's run (t)
check() {
  local tag=${3:-t}
  grep -q '^done$' "$T/$1.out" || fail "$1: twoseq did not finish: $(tail -n 5 "$T/$1.out")"
  grep -qE 'runtime error|Sanitizer' "$T/$1.out" && fail "$1: sanitizer report: $(cat "$T/$1.out")"
  awk '$1 == "ids" { for (i = 3; i <= NF; i++) print $i }' "$T/$1.out" >"$T/$1.ids"
  local end
  end=$(conf_counter_raw "$2" "$tag")
  "${IDCHECK[@]}" gaps 1 "$end" "$tag" "$T/$1.ids" "$T/$1.out" >"$T/$1.check" ||
    fail "$1: the IDs and the logged gaps disagree ($(grep -c . "$T/$1.ids") IDs, max_id $end): $(grep -E '^(err|ids [XY] [0-9]+ )|tag gap|doubt' "$T/$1.out" | head -n 20)"
  pass "$1: $(cat "$T/$1.check")"
}

U=$(conf_coord load)
"$IK_BIN" tags add t --kind sequence --start 1 --coord "$U" "${CONF_SERVE_ARGS[@]}" >"$T/add.out" 2>&1 || fail "tags add failed: $(cat "$T/add.out")"
timeout 120 "$TWOSEQ" "$U" t load >"$T/load.out" 2>&1 || fail "twoseq load exited $?: $(tail -n 5 "$T/load.out")"
check load "$U"
# Every request succeeds, on every backend: each advance in progress writes as a
# writer of its own (docs/redis.md, "Counters"; docs/sql.md, "Tags"). Before that,
# on redis:// both sequences numbered their writes as one writer, and its script
# refused a number not above the last one run: "load: 134 of 600 requests failed
# without a fault: 87 err X -10010" (IK_ESTORE, a 503), none repeating an ID.
errs=$(grep -c '^err' "$T/load.out" || true)
((errs == 0)) || fail "load: $errs of 600 requests failed without a fault: $(grep '^err' "$T/load.out" | sort | uniq -c)"

if ! declare -F conf_fault_race_lost >/dev/null; then
  log "lost: not on $IK_STORE (its store file has no conf_fault_race_lost: the lost answer settled by a record of the writer's writes is the SQL and Redis backends')"
  exit 0
fi
conf_proxy_start || fail "no proxy in front of $IK_STORE"
conf_coord lost >/dev/null
VIA=$(conf_proxy_coord lost)
# a tag name no other byte of the protocol holds: the SQL proxy finds X's write by it
"$IK_BIN" tags add twolost --kind sequence --start 1 --coord "$(conf_coord lost)" "${CONF_SERVE_ARGS[@]}" >"$T/add.out" 2>&1 || fail "tags add failed: $(cat "$T/add.out")"
IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS=1500 timeout 120 "$TWOSEQ" "$VIA" twolost lost "$T/go" >"$T/lost.out" 2>&1 &
tw=$!
IK_PIDS+=("$tw")
wait_until 60 grep -q '^warm$' "$T/lost.out" || fail "lost: twoseq did not warm up: $(tail -n 5 "$T/lost.out")"
conf_fault_race_lost twolost
touch "$T/go"
wait $tw || fail "twoseq lost exited non-zero: $(tail -n 5 "$T/lost.out")"
grep -qE 'request-lost|hold-after' "$T/proxy.log" || fail "lost: the proxy never lost a COMMIT nor held an answer"
check lost "$(conf_coord lost)" twolost
