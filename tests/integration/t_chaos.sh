#!/usr/bin/env bash
# labels: chaos zk nosan
# timeout: 600
# processors: 1
# The 2-minute chaos run of `make test` (tests/chaos/chaos.sh; docs/RELIABILITY.md).
# A fresh seed each run, printed first, so a failure can be replayed with --seed.
# One processor: paced (below), it keeps about one core busy, and a test that asks
# for two waits in ctest's queue until two are free at once, which at -j6 beside
# single-processor tests came only after 4 minutes.
# Each client connection sends at most 20 requests a second: unpaced, the run takes
# both cores from the stage's other tests for two minutes (223 s of CPU in one
# plain stage; paced, 143 s alone, most of it ZooKeeper's); the faults are the same, and the
# 30-minute run (make chaos) is the one that loads the servers fully.
set -euo pipefail
exec bash "$(dirname "$0")/../chaos/chaos.sh" --duration 120 --rate 20 ${IK_CHAOS_ARGS:-}
