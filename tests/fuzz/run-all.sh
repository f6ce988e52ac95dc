#!/usr/bin/env bash
# run-all.sh BUILD_DIR SECONDS: runs every libFuzzer driver for SECONDS each, on a
# working copy of its corpus (new inputs are merged back into tests/fuzz/corpus),
# and prints one line per driver with its executions. A crash stops with non-zero;
# copy the crash file into tests/fuzz/corpus/X/ so it replays in every build.
set -euo pipefail
build=${1:?build dir}; secs=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
work=$here/corpus-work
mkdir -p "$work"
for bin in "$build"/tests/fuzz/fuzz_*; do
  [ -x "$bin" ] || continue
  name=$(basename "$bin"); short=${name#fuzz_}
  mkdir -p "$work/$short" "$here/corpus/$short"
  dict=(); [ -f "$here/$short.dict" ] && dict=(-dict="$here/$short.dict")
  log=$work/$short.log
  "$bin" "${dict[@]}" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/$short-" "$work/$short" "$here/corpus/$short" >"$log" 2>&1 || {
      echo "fuzz $short: FAILED, see $log"; tail -n 30 "$log"; exit 1; }
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "fuzz $short: ${secs}s clean, $execs executions, corpus $(ls "$work/$short" | wc -l) inputs"
done
