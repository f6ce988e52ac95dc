#!/usr/bin/env bash
# make-test.sh: the steps of `make test` (the Makefile's test target runs it), each
# timed by scripts/timed.sh, the first failure ending the run:
#   1. the packages that the builds need (install-deps.sh check), then, in the
#      background, the rest of the test suite's (install-deps.sh test);
#   2. meanwhile the format check, the lint and the three builds (plain, ASan+UBSan,
#      the TSan unit tests);
#   3. once that install is done, the three test stages, one after the other.
# Why the overlap: on a fresh machine the test packages (ZooKeeper, MariaDB, Chromium,
# lintian, ...) take about 100 s to unpack and configure, most of it on one core
# (dpkg is serial), while the builds and the lint want both cores for about as long
# (docs/testing.md has the figures). None of the builds needs those packages.
# The install is always waited for, even after a failure: an apt-get cut short leaves
# dpkg half-way, and the next run to repair.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
make=("${MAKE:-make}" --no-print-directory)

scripts/install-deps.sh check || exit

deps_log=$(mktemp -t idkeeper-install-deps.XXXXXX)
scripts/timed.sh install-deps scripts/install-deps.sh test >"$deps_log" 2>&1 &
deps=$!
# wait_deps: waits for the install, shows what it said; fails if it did
wait_deps() {
  local rc=0
  wait "$deps" || rc=$?
  deps=
  cat "$deps_log" >&2
  rm -f "$deps_log"
  [ "$rc" -eq 0 ] || echo "make test: installing the test packages failed ($rc)" >&2
  return "$rc"
}
trap '[ -z "$deps" ] || wait_deps' EXIT

step() {
  local name=$1
  shift
  scripts/timed.sh "$name" "${make[@]}" "$@"
}

step format-check format-check || exit
step lint lint LINT_ANALYZER=no || exit
step build build || exit
step build-asan asan || exit
step build-tsan tsan-mt || exit
echo "make test: waiting for the test packages' install" >&2
wait_deps || exit
step test-release test-release || exit
step test-asan test-asan || exit
step test-tsan test-tsan
