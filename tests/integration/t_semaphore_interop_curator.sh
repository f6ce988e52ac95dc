#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 300
# fixtures: zk
# idkeeper's semaphore (Curator's layout, the default) and Apache Curator's
# InterProcessSemaphoreV2 (a JVM compiled here against Debian's jars) share one
# semaphore of max 3 for 60 s: three `idkeeper semaphore` loops and two Curator
# clients, never more than 3 holding at once, counted from each holder's heartbeats
# (sema_interop.sh; t_semaphore_interop_kazoo.sh is the same with kazoo's layout).
# The max idkeeper stored as the semaphore's data is 3.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_interop_start java
source "$(dirname "$0")/sema_interop.sh"
sema_interop_contend curator
[ "$(zk_tool get /t/interop/sema-curator)" = 3 ] ||
  fail "the semaphore's data is not idkeeper's max 3: $(zk_tool get /t/interop/sema-curator)"
pass "idkeeper and Curator's InterProcessSemaphoreV2 on one semaphore: $SEMA_RESULT"
