#!/usr/bin/env bash
# check.sh [SRC]: checks the model of the hold rule (tests/model/hold.pml) with Spin,
# with the numbers the code uses, read from the code itself (so that the model cannot
# drift from it): the safe window from src/lib/backend.h (ik__proof_window_ms:
# "return term_ms * N / D;") and the grace bounds from src/cli/hold_run.h
# (IK_CLI_GRACE_MAX_DIV, IK_CLI_GRACE_DEFAULT_DIV). Spin must find no state where two
# CMDs run. Then the mutations hold.pml lists (a grace up to T/2, a window of 5/6 T,
# no guardian deadline, elect's old order): Spin must find each unsafe, or the model
# proves nothing. Exit 0 only if all of that holds. A test of make test (model/hold).
set -euo pipefail
SRC=${1:-${IK_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}}
command -v spin >/dev/null || { echo "FAIL: no spin (Debian's spin: scripts/install-deps.sh test)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/ik-model.XXXXXX")
trap 'rm -rf "$W"' EXIT

window=$(sed -n '/ik__proof_window_ms(int64_t term_ms)/,/^}/s/^ *return term_ms \* \([0-9]*\) \/ \([0-9]*\);$/\1 \2/p' \
  "$SRC/src/lib/backend.h")
gmax=$(sed -n 's/^#define IK_CLI_GRACE_MAX_DIV \([0-9]*\)$/\1/p' "$SRC/src/cli/hold_run.h")
gdef=$(sed -n 's/^#define IK_CLI_GRACE_DEFAULT_DIV \([0-9]*\)$/\1/p' "$SRC/src/cli/hold_run.h")
read -r wnum wden <<<"$window" || true
[ -n "${wnum:-}" ] && [ -n "${wden:-}" ] ||
  { echo "FAIL: cannot read the safe window from src/lib/backend.h (ik__proof_window_ms): the model must follow the code" >&2; exit 1; }
[ -n "$gmax" ] && [ -n "$gdef" ] ||
  { echo "FAIL: cannot read IK_CLI_GRACE_MAX_DIV and IK_CLI_GRACE_DEFAULT_DIV from src/cli/hold_run.h" >&2; exit 1; }
echo "the code's numbers: window $wnum/$wden of the term, grace at most 1/$gmax, by default 1/$gdef"

# run NAME DEFINES...: Spin's verdict on the model with these defines: "safe" (no
# error, every state searched), "unsafe" (an assertion violated), or it fails.
run() {
  local name=$1
  shift
  mkdir -p "$W/$name"
  cp "$SRC/tests/model/hold.pml" "$W/$name/"
  (cd "$W/$name" && spin -a "$@" hold.pml >spin.out 2>&1 &&
    cc -O2 -DSAFETY -o pan pan.c >cc.out 2>&1 && ./pan -m200000 >pan.out 2>&1) || true
  local out="$W/$name/pan.out"
  if grep -q 'assertion violated' "$out" 2>/dev/null; then
    echo unsafe
  elif grep -q 'errors: 0' "$out" 2>/dev/null && ! grep -q 'max search depth too small' "$out"; then
    echo safe
  else
    echo "FAIL: $name: no verdict" >&2
    cat "$W/$name"/*.out >&2
    exit 1
  fi
}

code=(-DWIN_NUM="$wnum" -DWIN_DEN="$wden" -DGRACE_MAX_DIV="$gmax" -DGRACE_DEFAULT_DIV="$gdef")
v=$(run code "${code[@]}")
grep -E 'states, stored|errors:' "$W/code/pan.out" | sed 's/^ */  /'
if [ "$v" != safe ]; then
  echo "FAIL: with the code's numbers Spin finds a state where two CMDs run:" >&2
  grep -A3 'assertion violated' "$W/code/pan.out" >&2
  echo "the trail (spin -t -p -g), its last steps:" >&2
  (cd "$W/code" && spin -t -p -g "${code[@]}" hold.pml | tail -n 40) >&2 || true
  exit 1
fi
echo "PASS: the code's numbers: no state where two CMDs run"

fails=0
mutant() {
  local name=$1
  shift
  local v
  v=$(run "$name" "$@")
  if [ "$v" = unsafe ]; then
    echo "PASS: $name: Spin finds two CMDs at once ($(grep -o 'at depth [0-9]*' "$W/$name/pan.out"))"
  else
    echo "FAIL: $name: Spin finds it safe; the model cannot tell an unsafe rule" >&2
    fails=1
  fi
}
mutant grace-half -DWIN_NUM="$wnum" -DWIN_DEN="$wden" -DGRACE_MAX_DIV=2 -DGRACE_DEFAULT_DIV="$gdef"
mutant window-5/6 -DWIN_NUM=5 -DWIN_DEN=6 -DGRACE_MAX_DIV="$gmax" -DGRACE_DEFAULT_DIV="$gdef"
mutant no-deadline "${code[@]}" -DNO_DEADLINE
mutant old-order "${code[@]}" -DOLD_ORDER
exit $fails
