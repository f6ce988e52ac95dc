#!/usr/bin/env bash
# compare.sh OLD NEW [ROUNDS]: the benchmarks of docs/BENCHMARKS.md on two builds of
# idkeeper in one run, alternating old and new ROUNDS times (default 2), so that a
# refactor can show it is no slower with the machine's drift spread over both.
# OLD and NEW are each a build directory, or a git revision of this repository
# (built here, RelWithDebInfo, in a temporary worktree, removed on exit).
# Each benchmark still prints its own peer and ratio; the builds' lines are labelled.
# BENCHES picks a subset (names as below, space-separated). instructions.sh
# (callgrind's instructions per request) is the one figure a shared machine
# measures exactly: `BENCHES=instructions.sh bench/compare.sh main HEAD 1`.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rounds=${3:-2}
# shellcheck source-path=SCRIPTDIR
source "$here/lib.sh"
made=()
cleanup() {
  for w in "${made[@]}"; do git -C "$repo" worktree remove --force "$w" >/dev/null 2>&1 || rm -rf "$w"; done
  return 0
}
trap cleanup EXIT
# build_of ARG: sets built to a build directory for ARG (a directory, or a revision
# built here; not in a subshell, so that cleanup sees the worktree)
build_of() {
  if [ -d "$1" ]; then built=$(cd "$1" && pwd); return; fi
  local rev w
  rev=$(git -C "$repo" rev-parse --verify "$1^{commit}") || { echo "compare.sh: $1 is neither a directory nor a revision" >&2; exit 2; }
  w=$(mktemp -d "${TMPDIR:-/tmp}/ik-compare-${rev:0:8}.XXXXXX")
  rmdir "$w"
  git -C "$repo" worktree add --detach "$w" "$rev" >/dev/null 2>&1
  made+=("$w")
  echo "compare.sh: building $1 ($rev) in $w" >&2
  cmake -S "$w" -B "$w/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$w/cmake.log" 2>&1 &&
    nice -n 5 ninja -C "$w/build" >"$w/ninja.log" 2>&1 ||
    { echo "compare.sh: the build of $1 failed: $w/cmake.log, $w/ninja.log" >&2; tail -n 20 "$w/ninja.log" >&2; exit 1; }
  built=$w/build
}
build_of "$1"
old=$built
build_of "$2"
new=$built
benches=${BENCHES:-"instructions.sh bench_snowflake bench_segment http_wrk.sh zk_http.sh counters_segment_http.sh counters_sequence_http.sh resp_redis.sh"}
bench_stamp
echo "# old: $old  new: $new  rounds: $rounds"
run() { # BUILD BENCH
  local build=$1 b=$2
  case "$b" in
    bench_*) "$build/bench/$b" 2 ;;
    *.sh) IK_BIN="$build/idkeeper" bash "$here/$b" "$build" ;;
    *) echo "compare.sh: unknown benchmark $b" >&2; return 2 ;;
  esac
}
for b in $benches; do
  for ((r = 1; r <= rounds; r++)); do
    for side in old new; do
      build=$old
      [ "$side" = new ] && build=$new
      echo "## $b round $r $side"
      run "$build" "$b" 2>&1 | sed "s/^/$side| /"
    done
  done
done
