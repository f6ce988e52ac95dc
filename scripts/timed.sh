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
read -r _ _ cu cs < <(times | tail -n 1 | tr 'ms' '  ' | awk '{ print 0, 0, $1 * 60 + $2, $3 * 60 + $4 }')
printf 'make test: %s took %ds (CPU: user %.0fs, sys %.0fs)%s\n' "$name" $((SECONDS - t0)) "$cu" "$cs" \
  "$([ $rc -eq 0 ] || echo ", failed: $rc")" >&2
exit $rc
