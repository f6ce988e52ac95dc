#!/usr/bin/env bash
# run-all.sh BUILD_DIR: every benchmark, one after the other (they share 2 cores, so
# never in parallel). Compiled ones are build/bench/bench_*; scripted ones are
# bench/*.sh. Each prints its figure next to its peer's, measured in the same run.
# Copy the output into docs/BENCHMARKS.md with the date and machine.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
echo "# $(date -u +%FT%TZ) on $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
for b in "$build"/bench/bench_*; do
  [ -x "$b" ] || continue
  echo "## $(basename "$b")"
  "$b"
done
for s in "$here"/*.sh; do
  case $(basename "$s") in
    # these compare two builds a caller names (BIN_A BIN_B, OLD NEW), or are helpers
    run-all.sh | lib.sh | sql_lib.sh | proc.sh | test_libs.sh | compare.sh | *_ab.sh) continue ;;
  esac
  echo "## $(basename "$s")"
  IK_BIN="$build/idkeeper" bash "$s" "$build"
done
