#!/usr/bin/env bash
# sql_proof_ab.sh BASE_BIN [BUILD_DIR]: the cost of the proof of session on
# postgresql:// (docs/hazards.md, "PostgreSQL"), one binary against another in the
# same run: BASE_BIN (say, main's idkeeper) and BUILD_DIR's, each an `idkeeper serve`
# on one PostgreSQL of the benchmark's own (tests/fixtures/postgres.sh, durable), a
# sequence tag each, count=1 per request; tests/tools/hammer bursts of SECS (3)
# seconds alternate between the two, ROUNDS (5) each at every CLIENTS ("1 64"), so
# that a machine whose load drifts weighs on both alike. Prints one hammer line a
# burst. The round trips per batch are bench/sql_roundtrips.sh's (IK_BIN=...).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
base_bin=${1:?usage: sql_proof_ab.sh BASE_BIN [BUILD_DIR]}
build=$(cd "${2:-$here/../build}" && pwd)
export IK_BIN=$build/idkeeper
hammer=${IK_HAMMER:-$build/tests/tools/hammer}
source "$here/../tests/integration/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_start "$T/pg" >/dev/null || fail "PostgreSQL did not start"
URI=$(pg_new_db "$PG_PORT" ab)
declare -A P
mine=$IK_BIN
for who in base mine; do
  IK_BIN=$mine
  [ $who = base ] && IK_BIN=$base_bin
  "$IK_BIN" tags add "s$who" --kind sequence --coord "$URI" >/dev/null
  serve_on "$who" --coord "$URI" --quiet || fail "$who: $(tail -n 5 "$T/$who.log")"
  P[$who]=$PORT
done
for c in ${CLIENTS:-1 64}; do
  for r in $(seq 1 "${ROUNDS:-5}"); do
    for who in base mine; do
      url="http://127.0.0.1:${P[$who]}/v1/sequence/s$who?count=1&format=text"
      echo "clients=$c $who round=$r $("$hammer" --url "$url" --connections "$c" --duration "${SECS:-3}" 2>&1 | tail -n 1)"
    done
  done
done
