#!/usr/bin/env bash
# labels: postgresql sql counters
# timeout: 120
# fixtures: postgres
# A batch's statements are named and parsed once a session on postgresql://
# (docs/sql.md, "Tags"). This tries to break that: every sequence advance runs
# DEALLOCATE ALL just before its COMMIT (IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT),
# so that the statements named after the COMMIT (the proof read at the commit point)
# and those the next advance names are gone from the session. A proof that fails for
# a lost name is read again under new names, after the COMMIT still; an advance whose
# own statements are gone fails whole (nothing committed, no ID handed out) and the
# one after it parses them again: of 40 requests one after another at least 15
# succeed, and the IDs answered are exactly one run from the tag's start, no gap and
# none twice. A server that never parsed again would answer nothing after the first;
# one that handed out a failed advance's range, or logged a committed one as a gap
# for its lost proof, would show a gap or a repeat.
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
((ok >= 15)) || fail "only $ok of 40 answered: the statements were not parsed again after they were gone"
sed '/^$/d' "$T/ids" >"$T/ids.clean"
seq 1 $((ok * 3)) | cmp -s - "$T/ids.clean" ||
  fail "the IDs answered are not exactly 1..$((ok * 3)) in order: $(paste -sd' ' "$T/ids.clean" | cut -c1-300)"
grep -q 'tag gap' "$T/s.log" && fail "a gap logged: $(grep 'tag gap' "$T/s.log" | head -n 3)"
pass "$ok of 40 answered, $failed failed whole; the IDs answered are 1..$((ok * 3)), in order, no gap"
