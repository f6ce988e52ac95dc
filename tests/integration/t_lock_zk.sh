#!/usr/bin/env bash
# labels: recipes zk
# timeout: 300
# fixtures: zk
# idkeeper lock on zk://, the same cases as on local: (lock_cases.sh): 8 processes x
# up to 200 locked increments (fewer if 60 s pass first) end at the number done, with
# strictly increasing fences (the lock nodes' creation zxids); --timeout exits 124
# and leaves no node of ours; CMD's exit code passes through; idkeeper killed -9
# takes its CMD with it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
COORD=$(zk_uri t)
EXTRA="--zk-session-timeout 4000"
# Contender nodes under a lock PATH (kazoo's view).
NODES_LEFT() { zk_tool ls "/t$1" 2>/dev/null | grep -c -- '-lock-' || true; }
source "$(dirname "$0")/lock_cases.sh"

case_exit_codes
case_timeout
case_signal_wait
# kill -9: ZooKeeper keeps the dead holder's session (and its node) until the
# session timeout, so the next holder waits that long at most.
case_idkeeper_killed
# The counter is about exclusion: a session long enough that a ZooKeeper starved by a
# loaded machine (seconds without an answer) does not cost a grant.
IK_LOCK=("$IK_BIN" lock --coord "$COORD" --zk-session-timeout 10000)
case_counter 8 200
