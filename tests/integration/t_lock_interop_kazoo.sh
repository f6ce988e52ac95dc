#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# fixtures: zk
# C holders (libidkeeper, two processes) and kazoo's Lock (python3-kazoo, with
# extra_lock_patterns=["-lock-"]) contend for one lock path: 300 rounds each side,
# every holder records its enter and exit on CLOCK_MONOTONIC, and no two intervals
# overlap (lock_interop.sh; t_lock_interop_curator.sh is the same with Curator).
# Curator and kazoo are never mixed on one path: they do not exclude each other, see
# docs/recipes.md and t_lock_interop_mixed.sh.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$(dirname "$0")/lock_interop.sh"

zk_interop_start c
lock_interop_contend kazoo
