#!/usr/bin/env bash
# labels: recipes release
# timeout: 300
# idkeeper lock on the backend (docs/guarantees.md promise 22; cases in lock_cases.sh): CMD's exit code
# passes through; a --grace too long for the store's term is refused naming the
# store's own option (before, etcd's and SQL's refusal said --zk-session-timeout);
# --timeout exits 124 and leaves no ticket or node of ours; SIGTERM
# while waiting exits 143 at once; idkeeper killed -9 takes its CMD with it and the
# lock is free again (on zk:// once the dead holder's session expires); 8 processes
# x 15 locked increments (fewer if 60 s pass first) end at the number of rounds
# done, with strictly increasing fences (local: the fence file's counter; zk://: the
# lock nodes' creation zxids). On the plain build (label release): under a
# sanitizer each round costs about 60 ms of CPU more, in the CLI's start and exit
# alone. 15 rounds a process, 120 contended grants: with 50, every backend stopped
# at the 60 s limit in make test's plain stage (164 to 288 rounds, at about a
# quarter of a core), so the limit, not the rounds, set what the group cost
# (docs/testing.md); the limit stays for a slow machine, as does the rule that each
# process did at least 5 rounds.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
COORD=$(conf_coord locks)
source "$(dirname "$0")/lock_cases.sh"

case_exit_codes
case_grace
case_timeout
case_signal_wait
case_idkeeper_killed
# The counter is about exclusion: on a backend with sessions, one long enough that a
# store starved by a loaded machine (seconds without an answer) does not cost a grant.
IK_LOCK=("$IK_BIN" lock --coord "$COORD" $(conf_patient_args))
case_counter 8 15
