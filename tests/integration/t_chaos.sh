#!/usr/bin/env bash
# labels: chaos zk nosan
# timeout: 600
# processors: 2
# The 2-minute chaos run of `make test` (tests/chaos/chaos.sh; docs/RELIABILITY.md).
# A fresh seed each run, printed first, so a failure can be replayed with --seed.
set -euo pipefail
exec bash "$(dirname "$0")/../chaos/chaos.sh" --duration 120 ${IK_CHAOS_ARGS:-}
