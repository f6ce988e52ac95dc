#!/usr/bin/env bash
# compare.sh OLD_BUILD NEW_BUILD [ROUNDS]: the benchmarks of docs/BENCHMARKS.md on two
# builds of idkeeper in one run, alternating old and new ROUNDS times (default 2), so
# that a refactor can show it is no slower with the machine's drift spread over both.
# Each benchmark still prints its own peer and ratio; the builds' lines are labelled.
# BENCHES picks a subset (names as below, space-separated).
set -euo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-2}
here=$(cd "$(dirname "$0")" && pwd)
benches=${BENCHES:-"bench_snowflake bench_segment http_wrk.sh zk_http.sh counters_segment_http.sh counters_sequence_http.sh resp_redis.sh"}
echo "# $(date -u +%FT%TZ) on $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
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
