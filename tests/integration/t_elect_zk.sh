#!/usr/bin/env bash
# labels: recipes zk
# timeout: 180
# fixtures: zk
# idkeeper elect on zk://: one leader at a time among 3 candidates; the leader
# killed -9 -> another leads within the session timeout + 1 s; a leader whose CMD
# ends (it resigns) -> another leads within 50 ms.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
COORD=$(zk_uri t)
SESSION_MS=2000
EXTRA="--zk-session-timeout $SESSION_MS"
KILL_TAKEOVER_MS=$((SESSION_MS + 1000))
RESIGN_TAKEOVER_MS=50
source "$(dirname "$0")/lock_cases.sh"
case_elect_one_leader 3
