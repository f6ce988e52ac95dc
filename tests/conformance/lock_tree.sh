#!/usr/bin/env bash
# labels: recipes
# timeout: 300
# The process tree of CMD under `idkeeper lock` and `idkeeper elect` (docs/recipes.md,
# "CMD's process tree"; case_tree in lock_cases.sh): idkeeper killed -9, or given
# SIGTERM, or CMD exiting by itself with its worker left running in the background,
# while CMD = bash -c 'WORKER; true' runs a worker that is a grandchild
# finishing gracefully over 3 s, a worker that left the group with setsid, a
# worker that ignores SIGTERM, or a worker double-forked out of the group as a
# daemon (orphaned: reparented to the guardian, a subreaper): no heartbeat of the old holder's tree lands after the
# next holder's CMD started, and none of its processes is left.
# Before the guardian (PR_SET_PDEATHSIG on CMD alone, the release as soon as CMD
# itself exited), every worker kept writing beside the next holder.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
COORD=$(conf_coord tree)
source "$(dirname "$0")/lock_cases.sh"

for tool in lock elect; do
  for how in kill9 term exit; do
    for shape in grandchild setsid deaf daemon; do
      case_tree $tool $how $shape
    done
  done
done
