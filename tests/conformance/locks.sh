#!/usr/bin/env bash
# labels: recipes release
# not-on: redis: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# timeout: 300
# idkeeper lock on the backend (SPEC 6; cases in lock_cases.sh): CMD's exit code
# passes through; --timeout exits 124 and leaves no ticket or node of ours; SIGTERM
# while waiting exits 143 at once; idkeeper killed -9 takes its CMD with it and the
# lock is free again (on zk:// once the dead holder's session expires); 8 processes
# x up to 50 locked increments (fewer if 60 s pass first) end at the number of
# rounds done, with strictly increasing fences (local: the fence file's counter;
# zk://: the lock nodes' creation zxids). The 50 rounds run on the plain build (label
# release); under a sanitizer, 15: there each round costs about 60 ms of CPU in the
# CLI's start and exit alone, and those rounds are for the memory checks of the
# contended path, not for the stress.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
COORD=$(conf_coord locks)
source "$(dirname "$0")/lock_cases.sh"

case_exit_codes
case_timeout
case_signal_wait
case_idkeeper_killed
# The counter is about exclusion: on a backend with sessions, one long enough that a
# store starved by a loaded machine (seconds without an answer) does not cost a grant.
IK_LOCK=("$IK_BIN" lock --coord "$COORD" $(conf_patient_args))
case_counter 8 "$([ -n "${IK_SANITIZE:-}" ] && echo 15 || echo 50)"
