#!/usr/bin/env bash
# labels: postgresql sql counters
# timeout: 120
# fixtures: postgres
# A batch's statements are named and parsed once a session on postgresql://
# (docs/sql.md, "Tags"). This tries to break that: every sequence advance runs
# DEALLOCATE ALL just before its COMMIT (IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT),
# so that the statements the next advance on that connection names are gone from
# the session. That advance must fail whole (nothing committed, no ID handed out)
# and the one after it parse them again: of 40 requests one after another about
# half succeed, and the IDs answered are exactly one run from the tag's start, no
# gap and none twice (a failed advance commits nothing). A server that never parsed
# again would answer nothing after the first; one that handed out a failed
# advance's range would show a gap or a repeat.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
URI=$(pg_new_db "$PG_SHARED_PORT" "tprep_$$")
"$IK_BIN" tags add seq --kind sequence --coord "$URI" >/dev/null || fail "tags add seq failed"
IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT="DEALLOCATE ALL" serve_on s --coord "$URI" --threads 1 ||
  fail "s not ready: $(tail -n 5 "$T/s.log")"
ok=0 failed=0
: >"$T/ids"
for ((i = 0; i < 40; i++)); do
  code=$(ik_http "http://127.0.0.1:$PORT/v1/sequence/seq?count=3&format=text" "$T/one")
  if [ "$code" = 200 ]; then
    cat "$T/one" >>"$T/ids"
    ok=$((ok + 1))
  else
    failed=$((failed + 1))
  fi
done
log "40 requests: $ok answered, $failed failed"
((failed > 0)) || fail "no advance failed: the statements were not named (or DEALLOCATE ALL did not reach the session)"
((ok >= 15)) || fail "only $ok of 40 answered: the statements were not parsed again after they were gone"
sed '/^$/d' "$T/ids" >"$T/ids.clean"
seq 1 $((ok * 3)) | cmp -s - "$T/ids.clean" ||
  fail "the IDs answered are not exactly 1..$((ok * 3)) in order: $(paste -sd' ' "$T/ids.clean" | cut -c1-300)"
pass "$ok of 40 answered, $failed failed whole; the IDs answered are 1..$((ok * 3)), in order"
