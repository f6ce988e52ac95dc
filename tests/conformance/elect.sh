#!/usr/bin/env bash
# labels: recipes
# timeout: 180
# idkeeper elect on the backend (docs/guarantees.md promise 22; case in lock_cases.sh): one leader at a
# time among 3 candidates; the leader killed -9 -> another leads within the
# backend's free time (conf_lock_free_ms: local: at once, zk://: the session
# timeout) + 1 s; a leader whose CMD ends (it resigns) -> another leads within 50
# ms; the leaders' fences increase.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
COORD=$(conf_coord elect)
KILL_TAKEOVER_MS=$(($(conf_lock_free_ms) + 1000))
RESIGN_TAKEOVER_MS=50
source "$(dirname "$0")/lock_cases.sh"
case_elect_one_leader 3
