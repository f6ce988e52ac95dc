#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# fixtures: zk
# C holders (libidkeeper, two processes) and Apache Curator's InterProcessMutex (a
# JVM compiled here against Debian's jars) contend for one lock path: 300 rounds
# each side, every holder records its enter and exit on CLOCK_MONOTONIC, and no two
# intervals overlap (lock_interop.sh; t_lock_interop_kazoo.sh is the same with kazoo).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"
source "$(dirname "$0")/lock_interop.sh"

zk_interop_start c java
lock_interop_contend curator
