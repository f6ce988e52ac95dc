#!/usr/bin/env bash
# make-test.sh: the steps of `make test` (the Makefile's test target runs it), each
# timed by scripts/timed.sh, the first failure ending the run:
#   1. the format check's and the lint's packages (install-deps.sh lint);
#   2. in the background the packages the builds need (install-deps.sh check), while
#      the format check runs, and cppcheck (neither needs a build directory; cppcheck
#      in the background too, until clang-tidy is done: its last files keep one core
#      busy); beside that install, once it has updated the package lists, the
#      download of the test suite's packages (install-deps.sh fetch test: no lock);
#   3. in the background the rest of the test suite's (install-deps.sh test), from
#      those downloads once they are done, while clang-tidy and the three builds run
#      (plain, ASan+UBSan, the TSan unit tests), then the tests that need none of
#      those packages: the unit tests and fuzz replays under ASan, and under TSan;
#   4. once that install is done, the plain stage and the rest of the ASan stage.
# Why the overlap: on a fresh machine the test packages (ZooKeeper, MariaDB, Chromium,
# lintian, ...) take about 100 s to unpack and configure, most of it on one core
# (dpkg is serial), and the lint and the builds want both cores for about as long;
# none of them needs those packages (docs/testing.md has the figures).
# An install is always waited for, even after a failure: an apt-get cut short leaves
# dpkg half-way, and the next run to repair.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
make=("${MAKE:-make}" --no-print-directory)
work=$(mktemp -d -t idkeeper-make-test.XXXXXX) || exit 1
# the package lists are updated once a run, by its first install that needs them
export IK_APT_STAMP=$work/apt-updated
# where the test packages are downloaded to beside the check install (fetch_bg)
debs=$work/debs

deps=''
deps_log=''
# install_bg GROUP [AFTER]: install-deps.sh GROUP in the background, its output
# kept; once the file AFTER exists, if given
install_bg() {
  local after=${2:-}
  deps_log=$work/install-$1.log
  (
    if [ -n "$after" ]; then
      while [ ! -e "$after" ]; do sleep 0.2; done
    fi
    exec scripts/timed.sh "install-deps $1" scripts/install-deps.sh "$1"
  ) >"$deps_log" 2>&1 &
  deps=$!
}
# wait_deps: waits for the install in the background, shows what it said; fails if
# it did
wait_deps() {
  local rc=0
  [ -n "$deps" ] || return 0
  wait "$deps" || rc=$?
  deps=
  cat "$deps_log" >&2
  [ "$rc" -eq 0 ] || echo "make test: installing packages failed ($rc)" >&2
  return "$rc"
}
fetch=''
fetched=$work/fetched
# fetch_bg GROUP: once the check install in the background has updated the package
# lists (IK_APT_STAMP; or it ended), downloads what GROUP lacks into $debs, beside
# that install: on a new machine the test packages' download is 18 to 30 s of
# waiting on the network, which the test install then skips. Makes $fetched when
# done, whether it downloaded or not.
fetch_bg() {
  (
    while [ ! -e "$IK_APT_STAMP" ] && kill -0 "$deps" 2>/dev/null; do sleep 0.2; done
    IK_APT_ARCHIVES=$debs scripts/timed.sh "fetch $1" scripts/install-deps.sh fetch "$1" ||
      echo "make test: the download ahead of the install failed; the install downloads"
    touch "$fetched"
  ) >"$work/fetch-$1.log" 2>&1 &
  fetch=$!
}
# wait_fetch: waits for fetch_bg, shows what it said (a failed download is no
# failure: the install downloads what is not there)
wait_fetch() {
  [ -n "$fetch" ] || return 0
  wait "$fetch"
  fetch=
  cat "$work"/fetch-*.log >&2
}
cppcheck=''
# wait_cppcheck: waits for the cppcheck in the background, shows what it said; fails
# if it did
wait_cppcheck() {
  local rc=0
  [ -n "$cppcheck" ] || return 0
  wait "$cppcheck" || rc=$?
  cppcheck=
  cat "$work/cppcheck.log"
  return "$rc"
}
trap 'wait_cppcheck; wait_fetch; wait_deps; rm -rf "$work"' EXIT

step() {
  local name=$1
  shift
  scripts/timed.sh "$name" "${make[@]}" "$@"
}

scripts/install-deps.sh lint || exit
install_bg check
fetch_bg test
step format-check format-check || exit
step cppcheck lint-cppcheck >"$work/cppcheck.log" 2>&1 &
cppcheck=$!
wait_deps || exit
# the install waits for the download, the builds do not
IK_APT_ARCHIVES=$debs install_bg test "$fetched"
step clang-tidy lint-tidy LINT_ANALYZER=no || exit
wait_cppcheck || exit
step build build-release || exit
step build-asan asan || exit
step build-tsan tsan-mt || exit
echo "make test: the unit tests while the test packages install" >&2
step test-unit test-asan-unit || exit
step test-tsan test-tsan || exit
echo "make test: waiting for the test packages' install" >&2
wait_fetch
wait_deps || exit
step test-release test-release || exit
step test-asan test-asan 'ASAN_EXCLUDE=^(nosan|release|unit)$$'
