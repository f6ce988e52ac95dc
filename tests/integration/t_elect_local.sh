#!/usr/bin/env bash
# labels: recipes local
# timeout: 120
# idkeeper elect on local: between processes of one host: one leader at a time
# among 3 candidates; the leader killed -9 -> another leads within 1 s; a leader
# whose CMD ends -> another leads within 50 ms.
source "$(dirname "$0")/lib.sh"
COORD=local:$T/data
KILL_TAKEOVER_MS=1000
RESIGN_TAKEOVER_MS=50
source "$(dirname "$0")/lock_cases.sh"
case_elect_one_leader 3
