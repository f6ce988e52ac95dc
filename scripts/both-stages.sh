#!/usr/bin/env bash
# both-stages.sh: make test's plain and ASan+UBSan stages at the same time (both
# builds must exist). On two cores each stage alone leaves CPU idle at its tail,
# where one long test runs by itself (t_packaging in the plain stage); side by side,
# each fills the other's. Each stage's lines go to stdout as they come, prefixed
# "[plain] " or "[asan] "; its whole output is also in build*/stage.log. Exits 0 if
# both passed, else 1, naming the stage that failed.
#   PLAIN_JOBS, ASAN_JOBS: each stage's ctest -j (default: 2 per core, and one more
#   for the longer ASan stage; a test that says "# processors: 2" takes two)
set -uo pipefail
make=${MAKE:-make}
n=$(nproc)
plain_jobs=${PLAIN_JOBS:-$((n * 2))}
asan_jobs=${ASAN_JOBS:-$((n * 2 + 1))}

stage() { # stage NAME BUILD_DIR TARGET JOBS
  "$make" --no-print-directory "$3" TEST_JOBS="$4" 2>&1 | tee "$2/stage.log" | sed -u "s/^/[$1] /"
}
stage plain build test-release "$plain_jobs" &
plain=$!
stage asan build-asan test-asan "$asan_jobs" &
asan=$!
rc=0
wait $plain || { echo "both-stages: the plain stage failed (build/stage.log)"; rc=1; }
wait $asan || { echo "both-stages: the ASan+UBSan stage failed (build-asan/stage.log)"; rc=1; }
exit $rc
