#!/usr/bin/env bash
# timed.sh NAME CMD...: runs CMD, then prints "make test: NAME took Ns (CPU: user Us,
# sys Ss)" on stderr, with the CPU of CMD and everything it waited for; exits with
# CMD's status. `make test` runs each of its steps through it.
set -uo pipefail
name=$1
shift
t0=$SECONDS
"$@"
rc=$?
# `times` in this shell, not in a pipeline's subshell, whose children are not these
tf=$(mktemp)
times >"$tf"
read -r cu cs < <(tail -n 1 "$tf" | tr 'ms' '  ' | awk '{ print $1 * 60 + $2, $3 * 60 + $4 }')
rm -f "$tf"
printf 'make test: %s took %ds (CPU: user %.0fs, sys %.0fs)%s\n' "$name" $((SECONDS - t0)) "$cu" "$cs" \
  "$([ $rc -eq 0 ] || echo ", failed: $rc")" >&2
exit $rc
