#!/usr/bin/env bash
# labels: recipes local
# timeout: 300
# idkeeper lock on local: between processes of one host: 8 processes x up to 200
# locked increments (fewer if 60 s pass first) end at the number of rounds done,
# with strictly increasing fences; --timeout exits 124 and leaves no ticket; CMD's
# exit code passes through; idkeeper killed -9 takes its CMD with it and frees the
# lock.
source "$(dirname "$0")/lib.sh"
COORD=local:$T/data
# Tickets queued or held at a lock PATH.
NODES_LEFT() { find "$T/data/locks$1.lock.q" -name '[0-9]*' 2>/dev/null | wc -l; }

source "$(dirname "$0")/lock_cases.sh"
case_exit_codes
case_timeout
case_signal_wait
case_idkeeper_killed
case_counter 8 200
