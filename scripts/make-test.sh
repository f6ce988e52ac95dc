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
#   4. once that install is done, promtool's check of the shipped alert rules (make
#      lint-rules: promtool is one of the test packages), then the plain stage and
#      the rest of the ASan stage.
# Why the overlap: on a fresh machine the test packages (ZooKeeper, MariaDB, Chromium,
# lintian, ...) take about 100 s to unpack and configure, most of it on one core
# (dpkg is serial), and the lint and the builds want both cores for about as long;
# none of them needs those packages (docs/testing.md has the figures).
# An install is always waited for, even after a failure: an apt-get cut short leaves
# dpkg half-way, and the next run to repair.
# IK_TEST_LOAD=N (make test-under-load: one per core): N busy processes run beside
# the whole run, from its first step to its end, so that a test that waits on time
# rather than on its condition fails here rather than on a busy CI machine
# (docs/testing.md, "A busy machine").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
make=("${MAKE:-make}" --no-print-directory)
work=$(mktemp -d -t idkeeper-make-test.XXXXXX) || exit 1
# the package lists are updated once a run, by its first install that needs them
export IK_APT_STAMP=$work/apt-updated
# where the test packages are downloaded to beside the check install (fetch_group)
debs=$work/debs

declare -A bg_pid=()
# bg NAME CMD...: CMD in the background, its output kept until bg_wait NAME
bg() {
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  bg_pid[$name]=$!
}
# bg_wait NAME: waits for bg NAME (if it runs), shows what it said; its exit status
bg_wait() {
  local rc=0
  [ -n "${bg_pid[$1]:-}" ] || return 0
  wait "${bg_pid[$1]}" || rc=$?
  unset "bg_pid[$1]"
  cat "$work/$1.log" >&2
  return "$rc"
}
# install_group GROUP [AFTER]: install-deps.sh GROUP, once the file AFTER exists if given
install_group() {
  if [ -n "${2:-}" ]; then
    while [ ! -e "$2" ]; do sleep 0.2; done
  fi
  scripts/timed.sh "install-deps $1" scripts/install-deps.sh "$1"
}
# wait_install: bg_wait install; says so if it failed
wait_install() {
  bg_wait install || { echo "make test: installing packages failed" >&2; return 1; }
}
fetched=$work/fetched
# fetch_group GROUP: once the check install in the background has updated the package
# lists (IK_APT_STAMP; or it ended), downloads what GROUP lacks into $debs, beside
# that install: on a new machine the test packages' download is 18 to 30 s of
# waiting on the network, which the test install then skips. Makes $fetched when
# done, whether it downloaded or not: a failed download is no failure, the install
# downloads what is not there.
fetch_group() {
  while [ ! -e "$IK_APT_STAMP" ] && kill -0 "${bg_pid[install]}" 2>/dev/null; do sleep 0.2; done
  IK_APT_ARCHIVES=$debs scripts/timed.sh "fetch $1" scripts/install-deps.sh fetch "$1" ||
    echo "make test: the download ahead of the install failed; the install downloads"
  touch "$fetched"
}
hogs=()
# stop_hogs: ends the busy processes of IK_TEST_LOAD (by their pids)
stop_hogs() {
  local p
  for p in "${hogs[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${hogs[@]}"; do wait "$p" 2>/dev/null; done
  hogs=()
}
trap 'bg_wait cppcheck; bg_wait fetch; bg_wait install; stop_hogs; rm -rf "$work"' EXIT
if [ "${IK_TEST_LOAD:-0}" -gt 0 ]; then
  for ((i = 0; i < IK_TEST_LOAD; i++)); do
    bash -c 'while :; do :; done' &
    hogs+=($!)
  done
  echo "make test: under load: ${#hogs[@]} busy processes beside the run (pids ${hogs[*]})" >&2
fi

step() {
  local name=$1
  shift
  scripts/timed.sh "$name" "${make[@]}" "$@"
}

scripts/install-deps.sh lint || exit
bg install install_group check
bg fetch fetch_group test
step format-check format-check || exit
bg cppcheck step cppcheck lint-cppcheck
wait_install || exit
# the install waits for the download, the builds do not
IK_APT_ARCHIVES=$debs bg install install_group test "$fetched"
step clang-tidy lint-tidy LINT_ANALYZER=no || exit
bg_wait cppcheck || exit
step build build-release || exit
step build-asan asan || exit
step build-tsan tsan-mt || exit
echo "make test: the unit tests while the test packages install" >&2
step test-unit test-asan-unit || exit
step test-tsan test-tsan || exit
echo "make test: waiting for the test packages' install" >&2
bg_wait fetch
wait_install || exit
# the alert rules' lint needs promtool, one of the test packages (prometheus)
step promtool lint-rules || exit
step test-release test-release || exit
step test-asan test-asan 'ASAN_EXCLUDE=^(nosan|release|unit)$$'
