# lock_cases.sh: the CLI cases of `idkeeper lock` and `idkeeper elect` (docs/guarantees.md promise 22), on
# any backend (sourced by the conformance groups locks.sh and elect.sh, after lib.sh
# and conf.sh). The caller sets COORD (the --coord URI, from conf_coord); every
# idkeeper gets the backend's CONF_SERVE_ARGS, and NODES_LEFT PATH (the contender
# nodes or tickets left at a lock) is conf.sh's conf_lock_waiters.
#
#   case_counter N ROUNDS [SECONDS]
#                              N processes, each doing up to ROUNDS rounds of
#                              read-add-write under the lock, stopping early after
#                              SECONDS (default 60) so that a slow machine (ASan, a
#                              loaded CI) does fewer rounds instead of timing out: the
#                              file ends at the number of rounds done, one fence per
#                              round, fences strictly increase, and every process did
#                              at least 5 rounds (so they contended)
#   case_timeout               --timeout gives up with 124, leaves nothing of ours
#   case_exit_codes            CMD's code passes through; 127/126; signals forwarded
#   case_idkeeper_killed       idkeeper killed -9: CMD dies with it, the lock is free
#   case_grace                 a --grace too long for the grant's term is refused
#                              (exit 2, nothing taken) naming the option that sets
#                              the term on this store; with a term 4 times as long it
#                              runs (local: no term, any grace runs)
#   case_signal_wait           SIGTERM while waiting: exit 143 at once, CMD never ran,
#                              nothing of ours left
#   case_elect_one_leader N    N candidates: exactly one CMD runs at a time; the
#                              leader's idkeeper killed -9 -> another leads within
#                              KILL_TAKEOVER_MS; a leader whose CMD exits -> another
#                              leads within RESIGN_TAKEOVER_MS
KILL_TAKEOVER_MS=${KILL_TAKEOVER_MS:-1000}
RESIGN_TAKEOVER_MS=${RESIGN_TAKEOVER_MS:-50}

# Not functions: "$!" of a background function is a subshell, not idkeeper.
IK_LOCK=("$IK_BIN" lock --coord "$COORD" "${CONF_SERVE_ARGS[@]}")
IK_ELECT=("$IK_BIN" elect --coord "$COORD" "${CONF_SERVE_ARGS[@]}")
IK_SEMA=("$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2)
NODES_LEFT() { conf_lock_waiters "$COORD" "$1"; }
# nodes_at_least PATH N, nodes_are PATH N: for wait_until (on zk:// a kazoo call,
# about 100 ms, so their deadlines allow 150 ms a look)
nodes_at_least() { [ "$(NODES_LEFT "$1")" -ge "$2" ]; }
nodes_are() { [ "$(NODES_LEFT "$1")" = "$2" ]; }

case_counter() {
  local n=$1 rounds=$2 secs=${3:-60} i pids=()
  echo 0 >"$T/counter"
  : >"$T/counter.fences"
  local t0=$SECONDS
  for ((i = 0; i < n; i++)); do
    (
      # each process says how many rounds it did; a round that was started is
      # finished (the stop is checked between rounds only)
      r=0
      # LeakSanitizer's exit-time scan doubles the cost of each run of an ASan build
      # (the leak checks are the single runs of the other cases); this loop is
      # about exclusion
      export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
      while ((r < rounds && SECONDS - t0 < secs)); do
        "${IK_LOCK[@]}" /counter -- sh -c 'n=$(cat "$0"); echo $((n + 1)) >"$0.tmp" && mv "$0.tmp" "$0"; echo "$IDKEEPER_FENCE" >>"$0.fences"' \
          "$T/counter" || { echo "a lock exited $?" >&2; exit 1; }
        r=$((r + 1))
      done
      echo "$r" >"$T/counter.done.$i"
    ) 2>>"$T/counter.log" &
    pids+=($!)
    IK_PIDS+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a locking process failed (see $T/counter.log)"; done
  local got total=0 least=$rounds d
  got=$(cat "$T/counter")
  for ((i = 0; i < n; i++)); do
    d=$(cat "$T/counter.done.$i")
    total=$((total + d))
    ((d < least)) && least=$d
  done
  ((least >= 5)) || fail "a process did only $least rounds in $secs s: too few to prove anything"
  [ "$got" = "$total" ] || fail "counter is $got after $total locked increments ($n processes)"
  [ "$(wc -l <"$T/counter.fences")" = "$total" ] || fail "not one fence per grant"
  awk 'NR > 1 && $1 <= prev { print "fence " $1 " after " prev; bad = 1; exit } { prev = $1 } END { exit bad }' \
    "$T/counter.fences" || fail "fences do not strictly increase"
  pass "$n processes, $total rounds (of $((n * rounds)); each at least $least): counter $got, fences strictly increasing ($((SECONDS - t0)) s)"
}

# A holder that itself reports "lost the lock" (its session expired: a store stalled
# past 2/3 of the session timeout, as a loaded machine's fsync can) voids a try: the
# lock was free and rightly granted. The try is run again, at most 3 times; a grant
# while the holder still held fails at once.
case_timeout() {
  local try
  for try in 1 2 3; do
    _timeout_try && return 0
    log "try $try: the holder lost its lock during the try ($(grep -m1 'lost the lock' "$T/holder.err")); again"
  done
  fail "the holder lost its lock in each of 3 tries: --timeout untested"
}

_timeout_try() { # 0 passed; 1 the holder lost its lock, the try is void; fails otherwise
  rm -f "$T/ran"
  "${IK_LOCK[@]}" /held -- sleep 30 2>"$T/holder.err" &
  local holder=$! i
  IK_PIDS+=($holder)
  wait_until 15 nodes_at_least /held 1 || true
  local t0 rc=0 took
  mono_ms t0
  "${IK_LOCK[@]}" --timeout 300 /held -- touch "$T/ran" 2>"$T/timeout.err" || rc=$?
  took=$(($(mono_ms) - t0))
  local rc0=0
  "${IK_LOCK[@]}" --timeout 0 /held -- touch "$T/ran" 2>/dev/null || rc0=$?
  if { [ $rc != 124 ] || [ $rc0 != 124 ]; } && grepq 'lost the lock' "$T/holder.err"; then
    kill -TERM $holder 2>/dev/null
    wait $holder || true
    wait_until 15 nodes_are /held 0 || fail "the holder's node is left after it exited"
    return 1
  fi
  [ $rc = 124 ] || fail "--timeout exited $rc, not 124: $(cat "$T/timeout.err")"
  [ $rc0 = 124 ] || fail "--timeout 0 exited $rc0"
  [ ! -e "$T/ran" ] || fail "CMD ran without the lock"
  ((took >= 290 && took < 5000)) || fail "--timeout 300 took $took ms"
  grep -q "timed out" "$T/timeout.err" || fail "no reason given: $(cat "$T/timeout.err")"
  local left
  left=$(NODES_LEFT /held)
  [ "$left" = 1 ] || fail "$left contenders at /held after the timeouts (only the holder's should be)"
  kill -TERM $holder
  wait $holder || true
  wait_until 15 nodes_are /held 0 || fail "the holder's node is left after it exited"
  pass "--timeout: exit 124 after $took ms, CMD not run, nothing of ours left behind"
}

case_exit_codes() {
  local rc=0
  "${IK_LOCK[@]}" /codes -- sh -c 'exit 42' || rc=$?
  [ $rc = 42 ] || fail "CMD's exit 42 became $rc"
  "${IK_LOCK[@]}" /codes -- true || fail "true failed"
  rc=0
  "${IK_LOCK[@]}" /codes -- sh -c 'kill -KILL $$' || rc=$?
  [ $rc = 137 ] || fail "CMD killed by SIGKILL gave $rc, not 137"
  rc=0
  "${IK_LOCK[@]}" /codes -- /nonexistent/cmd 2>/dev/null || rc=$?
  [ $rc = 127 ] || fail "a missing CMD gave $rc"
  rc=0
  "${IK_LOCK[@]}" /codes -- /etc/passwd 2>/dev/null || rc=$?
  [ $rc = 126 ] || fail "a CMD that is not executable gave $rc"
  rc=0
  "${IK_LOCK[@]}" /codes 2>/dev/null || rc=$?
  [ $rc = 2 ] || fail "no CMD gave $rc"
  # TERM to idkeeper reaches CMD (its own process group), whose exit code we get
  "${IK_LOCK[@]}" /codes -- sh -c 'trap "exit 9" TERM; touch "$0"; while :; do sleep 0.05; done' "$T/trap.ready" &
  local p=$! i
  IK_PIDS+=($p)
  wait_until 10 test -e "$T/trap.ready" || true
  kill -TERM $p
  rc=0
  wait $p || rc=$?
  [ $rc = 9 ] || fail "CMD's trap of a forwarded TERM gave $rc, not 9"
  # environment
  "${IK_LOCK[@]}" codes/env -- sh -c 'echo "$IDKEEPER_LOCK_PATH $IDKEEPER_FENCE"' >"$T/env.out"
  read -r path fence <"$T/env.out"
  [ "$path" = /codes/env ] || fail "IDKEEPER_LOCK_PATH is '$path'"
  [ "$fence" -ge 1 ] 2>/dev/null || fail "IDKEEPER_FENCE is '$fence'"
  pass "exit codes: CMD's own, 137, 127, 126, 2; TERM forwarded; environment"
}

case_grace() {
  local grace=$((CONF_SESSION_MS / 4 + 1000)) flag=--lease-ttl rc=0
  [ "$IK_STORE" = zk ] && flag=--zk-session-timeout
  if [ "$IK_STORE" = local ]; then
    "${IK_LOCK[@]}" --grace "$grace" /grace -- true || fail "--grace $grace refused on local:"
    pass "--grace $grace on local: (no term): it runs"
    return
  fi
  for tool in lock elect; do
    rc=0
    if [ $tool = lock ]; then
      "${IK_LOCK[@]}" --grace "$grace" /grace -- touch "$T/grace.ran" >"$T/grace.out" 2>"$T/grace.err" || rc=$?
    else
      "${IK_ELECT[@]}" --once --grace "$grace" /grace -- touch "$T/grace.ran" >"$T/grace.out" 2>"$T/grace.err" || rc=$?
    fi
    [ $rc = 2 ] || fail "$tool --grace $grace with a term of $CONF_SESSION_MS ms exited $rc, not 2: $(cat "$T/grace.err")"
    [ ! -e "$T/grace.ran" ] || fail "$tool: CMD ran though --grace was refused"
    [ "$(wc -l <"$T/grace.err")" = 1 ] || fail "$tool: not one line: $(cat "$T/grace.err")"
    grepq -- "raise $flag " "$T/grace.err" || fail "$tool: the refusal does not name $flag: $(cat "$T/grace.err")"
    [ "$flag" = --zk-session-timeout ] || ! grepq -i zookeeper "$T/grace.err" ||
      fail "$tool: the refusal speaks of ZooKeeper on $IK_STORE: $(cat "$T/grace.err")"
  done
  # the flag it names is the one that helps
  "${IK_LOCK[@]}" "$flag" $((CONF_SESSION_MS * 4)) --grace "$grace" /grace -- touch "$T/grace.ran" 2>"$T/grace.err" ||
    fail "--grace $grace with $flag $((CONF_SESSION_MS * 4)) failed: $(cat "$T/grace.err")"
  [ -e "$T/grace.ran" ] || fail "CMD did not run with the longer term"
  pass "--grace $grace refused with a term of $CONF_SESSION_MS ms, naming $flag; runs with $flag $((CONF_SESSION_MS * 4))"
}

case_idkeeper_killed() {
  "${IK_LOCK[@]}" /killed -- sh -c 'echo $$ >"$0"; exec sleep 30' "$T/killed.pid" &
  local p=$! i
  IK_PIDS+=($p)
  wait_until 10 test -s "$T/killed.pid" || true
  local cmd
  # CMD's pid out here (it may run in a PID namespace of its own, where it is 2)
  _killed_cmd() { cmd=$(host_pid $p "$(cat "$T/killed.pid")"); }
  wait_until 5 _killed_cmd || fail "CMD $(cat "$T/killed.pid") not found below idkeeper $p"
  kill -KILL $p
  wait $p 2>/dev/null || true
  wait_until 5 not alive "$cmd" || fail "CMD $cmd outlived idkeeper killed -9"
  local t0 took
  mono_ms t0
  "${IK_LOCK[@]}" /killed -- true || fail "the lock of a killed idkeeper is not free"
  took=$(($(mono_ms) - t0))
  pass "idkeeper killed -9: its CMD died with it; the lock was free again ($took ms to take it)"
}

case_signal_wait() {
  "${IK_LOCK[@]}" /sigwait -- sleep 30 &
  local holder=$! i
  IK_PIDS+=($holder)
  wait_until 15 nodes_at_least /sigwait 1 || true
  "${IK_LOCK[@]}" /sigwait -- touch "$T/sigwait.ran" &
  local w=$!
  IK_PIDS+=($w)
  wait_until 15 nodes_at_least /sigwait 2 || true
  [ "$(NODES_LEFT /sigwait)" = 2 ] || fail "the waiter does not wait"
  local t0 rc=0
  mono_ms t0
  kill -TERM $w
  wait $w || rc=$?
  [ $rc = 143 ] || fail "a waiter given SIGTERM exited $rc, not 143"
  # at once: well before the holder's 30 s; 10 s leaves room for a loaded machine
  # (ASan on 2 shared cores took 4.3 s once to close a ZooKeeper session)
  (($(mono_ms) - t0 < 10000)) || fail "the waiter took $(($(mono_ms) - t0)) ms to leave"
  [ ! -e "$T/sigwait.ran" ] || fail "CMD ran"
  # its own clean-up, not an expiry: polled for 2 s, less than the zk:// session
  local left t1
  mono_ms t1
  while left=$(NODES_LEFT /sigwait) && [ "$left" != 1 ] && (($(mono_ms) - t1 < 2000)); do sleep 0.05; done
  [ "$left" = 1 ] || fail "the waiter left its node or ticket behind ($left contenders)"
  kill -TERM $holder
  wait $holder 2>/dev/null || true
  pass "SIGTERM while waiting: exit 143 in $(($(mono_ms) - t0)) ms, nothing left behind"
}

# The CMD of candidate ID records its start (id, fence, Unix ns) in $T/starts, then
# its pid in $T/lead.ID.
elect_cmd='echo "$IDKEEPER_ELECT_ID $IDKEEPER_FENCE $(date +%s%N)" >>"$0/starts"; echo $$ >"$0/lead.$IDKEEPER_ELECT_ID"; exec sleep 300'

# Prints the ids whose CMD runs now (the pid it wrote is its own in its PID namespace,
# if it runs in one: looked up below its idkeeper, ELECT_PID[ID]).
running_leaders() {
  local f id
  for f in "$T"/lead.*; do
    [ -e "$f" ] || continue
    id=${f##*/lead.}
    host_pid "${ELECT_PID[$id]}" "$(cat "$f")" >/dev/null && echo "$id"
  done
  return 0
}

# wait_one_leader MS [OLD]: until exactly one CMD runs, not OLD's (at most MS);
# prints its id.
wait_one_leader() {
  local limit=$1 old=${2:-} t0 r
  mono_ms t0
  while (($(mono_ms) - t0 < limit)); do
    r=$(running_leaders)
    if [ -n "$r" ] && [ "$(echo "$r" | wc -l)" = 1 ] && [ "$r" != "$old" ]; then
      echo "$r"
      return 0
    fi
    sleep 0.01
  done
  return 1
}

# assert_one_leader_for MS: for MS, never more than one CMD at once.
assert_one_leader_for() {
  local t0 n
  mono_ms t0
  while (($(mono_ms) - t0 < $1)); do
    n=$(running_leaders | wc -l)
    ((n <= 1)) || fail "$n leaders' CMDs run at once: $(running_leaders | tr '\n' ' ')"
    sleep 0.02
  done
}

case_elect_one_leader() {
  local n=$1 i
  declare -gA ELECT_PID=()
  for ((i = 1; i <= n; i++)); do
    "${IK_ELECT[@]}" --id "c$i" --grace 500 /svc -- sh -c "$elect_cmd" "$T" 2>>"$T/elect.log" &
    ELECT_PID[c$i]=$!
    IK_PIDS+=($!)
  done
  local leader
  leader=$(wait_one_leader 20000) || fail "no single leader among $n candidates"
  assert_one_leader_for 1000
  log "leader: $leader"

  # kill -9 the leader's idkeeper: its CMD dies with it; another leads
  local t0 took next
  mono_ms t0
  kill -KILL "${ELECT_PID[$leader]}"
  next=$(wait_one_leader $((KILL_TAKEOVER_MS + 30000)) "$leader") || fail "no new leader after the leader was killed"
  took=$(($(mono_ms) - t0))
  [ "$next" != "$leader" ] || fail "the killed leader $leader still leads"
  # the goal is logged; only a take-over slower than any watch or expiry could
  # explain fails (rule 5: a slow machine must not fail a test)
  log "new leader $next after $took ms (goal $KILL_TAKEOVER_MS ms)"
  ((took <= KILL_TAKEOVER_MS + 20000)) || fail "new leader $next after $took ms (goal $KILL_TAKEOVER_MS)"
  log "leader $leader killed -9: $next leads after $took ms"
  assert_one_leader_for 500

  # the leader's CMD ends: that idkeeper exits with its code and resigns
  local pid t0ns
  pid=$(host_pid "${ELECT_PID[$next]}" "$(cat "$T/lead.$next")") || fail "$next's CMD not found"
  t0ns=$(date +%s%N)
  kill -TERM "$pid"
  local third
  third=$(wait_one_leader $((RESIGN_TAKEOVER_MS + 30000)) "$next") || fail "no new leader after $next resigned"
  # from the old CMD's end to the new CMD's start, as the new CMD recorded it
  took=$((($(tail -n 1 "$T/starts" | cut -d' ' -f3) - t0ns) / 1000000))
  local rc=0
  wait "${ELECT_PID[$next]}" || rc=$?
  [ $rc = 143 ] || fail "elect exited $rc after its CMD got SIGTERM (want 143)"
  log "new leader $third $took ms after $next resigned (goal $RESIGN_TAKEOVER_MS ms)"
  ((took <= RESIGN_TAKEOVER_MS + 20000)) || fail "new leader $third $took ms after $next resigned (goal $RESIGN_TAKEOVER_MS)"
  log "leader $next resigned (its CMD ended): $third leads after $took ms"
  assert_one_leader_for 300
  awk 'NR > 1 && $2 <= prev { print "fence " $2 " after " prev; bad = 1; exit } { prev = $2 } END { exit bad }' \
    "$T/starts" || fail "leaders' fences do not increase"
  pass "$n candidates: one leader at a time; kill -9 and resign hand over; fences increase"
  for ((i = 1; i <= n; i++)); do kill -TERM "${ELECT_PID[c$i]}" 2>/dev/null || true; done
  for ((i = 1; i <= n; i++)); do wait "${ELECT_PID[c$i]}" 2>/dev/null || true; done
}

# case_tree TOOL HOW SHAPE: the process tree of a holder's CMD ends before the next
# holder's CMD starts (docs/recipes.md, "CMD's process tree"). TOOL: lock, elect, or
# semaphore (--max 2, a third holder C holding the other lease throughout: A's lease
# is the one B can have).
# HOW: kill9 (idkeeper killed -9), term (SIGTERM to idkeeper), or exit (CMD =
# bash -c 'WORKER & sleep 0.3; exit 0': CMD exits by itself, its worker left
# running). SHAPE: the worker under CMD = bash -c 'WORKER; true' (bash stays, the
# worker is its child, so a signal to CMD alone misses it):
#   grandchild  the worker, which finishes gracefully over 3 s after a SIGTERM
#   setsid      the same worker started by setsid(1): it leaves CMD's process group
#   deaf        a worker that ignores SIGTERM
#   daemon      the graceful worker double-forked out of the group, as a daemon
#               starts: (setsid WORKER &) -- its parent exits at once, so it is
#               orphaned and reparented (to the guardian, a subreaper, not to init);
#               CMD is then bash -c '(setsid WORKER &); sleep 30'
# Every worker appends "A PID EPOCHREALTIME" to one file every 20 ms; the next
# holder's CMD (B, started right after the kill or the SIGTERM, waiting for the
# grant) appends "B PID EPOCHREALTIME" to the same file (O_APPEND: the file's order
# is the order of the writes), holds for 1 s and exits. No line of A may follow
# B's, and no process of A's may be left once B is done.
tree_worker() {
  cat >"$T/worker" <<'SH'
#!/usr/bin/env bash
# worker NAME MODE FILE: a heartbeat line every 20 ms. MODE graceful: after a
# SIGTERM, 3 s more; deaf: SIGTERM ignored.
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
name=$1 mode=$2 out=$3 stop=
case $mode in
  graceful) trap 'stop=$((SECONDS + 3))' TERM ;;
  deaf) trap '' TERM ;;
esac
while [ -z "$stop" ] || ((SECONDS < stop)); do
  echo "$name $$ $EPOCHREALTIME" >>"$out"
  sleep 0.02
done
SH
  chmod +x "$T/worker"
}

case_tree() {
  local tool=$1 how=$2 shape=$3
  local hb="$T/tree.$tool.$how.$shape" path="/tree-$tool-$how-$shape" inner a b c= rc
  [ -x "$T/worker" ] || tree_worker
  : >"$hb"
  if [ "$tool" = semaphore ]; then
    # C's term 20 s: a starved machine (ASan beside a lint) must not take its lease
    # away mid-case, which B could then have beside A
    # shellcheck disable=SC2046
    "$IK_BIN" semaphore --coord "$COORD" $(conf_elect_args 20000) --max 2 "$path" -- \
      bash -c 'echo C >"$0.c"; exec sleep 600' "$hb" 2>"$hb.c.err" &
    c=$!
    IK_PIDS+=($c)
    wait_until 20 test -s "$hb.c" || fail "$tool: C never held: $(tail -n 3 "$hb.c.err")"
  fi
  case $shape in
    grandchild) inner="$T/worker A graceful $hb" ;;
    setsid) inner="setsid $T/worker A graceful $hb" ;;
    deaf) inner="$T/worker A deaf $hb" ;;
    daemon) inner="(setsid $T/worker A graceful $hb &)" ;;
  esac
  local b_cmd='echo "B $$ $EPOCHREALTIME" >>"$0"; sleep 1' a_cmd="$inner; true"
  [ "$shape" = daemon ] && a_cmd="$inner; sleep 30"
  [ "$how" = exit ] && a_cmd="$inner & sleep 0.3; exit 0"
  if [ "$tool" = lock ]; then
    "${IK_LOCK[@]}" "$path" -- bash -c "$a_cmd" 2>"$hb.a.err" &
  elif [ "$tool" = semaphore ]; then
    "${IK_SEMA[@]}" "$path" -- bash -c "$a_cmd" 2>"$hb.a.err" &
  else
    "${IK_ELECT[@]}" --id A "$path" -- bash -c "$a_cmd" 2>"$hb.a.err" &
  fi
  a=$!
  IK_PIDS+=($a)
  wait_until 20 grepq '^A ' "$hb" || fail "$tool: A's worker never ran: $(tail -n 3 "$hb.a.err")"
  case $how in
    kill9) kill -KILL $a ;;
    term) kill -TERM $a ;;
  esac
  if [ "$tool" = lock ]; then
    "${IK_LOCK[@]}" "$path" -- bash -c "$b_cmd" "$hb" 2>>"$T/tree.err" &
  elif [ "$tool" = semaphore ]; then
    "${IK_SEMA[@]}" "$path" -- bash -c "$b_cmd" "$hb" 2>>"$T/tree.err" &
  else
    "${IK_ELECT[@]}" --once --id B "$path" -- bash -c "$b_cmd" "$hb" 2>>"$T/tree.err" &
  fi
  b=$!
  IK_PIDS+=($b)
  wait_until 60 not alive $b || fail "$tool: B did not end within 60 s"
  wait $b || fail "$tool: B exited $?: $(tail -n 3 "$T/tree.err")"
  rc=0
  wait $a || rc=$?
  if [ -n "$c" ]; then
    alive $c || fail "$tool, $how, $shape: C's idkeeper ended before the case did: $(tail -n 3 "$hb.c.err")"
    kill -TERM $c
    wait $c || true
  fi
  # A's processes: any left is a failure (below); killed here so none outlives the test.
  # By their command line, which names this case's file: the pids the workers wrote
  # are their own in CMD's PID namespace, where there is one.
  local p left=()
  for p in $(pgrep -f -- "$T/worker A [a-z]* $hb\$"); do
    left+=("$p")
    kill -KILL "$p" 2>/dev/null
  done
  local after
  after=$(awk '$1 == "B" { b = $3; next } b != "" && $1 == "A" { n++; last = $3 }
               END { if (n) printf "%d heartbeats of A after B started, the last %.0f ms after", n, (last - b) * 1000 }' "$hb")
  [ -z "$after" ] || fail "$tool, $how, $shape: $after (A's processes left: ${left[*]:-none})"
  ((${#left[@]} == 0)) || fail "$tool, $how, $shape: A's processes ${left[*]} still ran after B ended"
  grepq '^B ' "$hb" || fail "$tool, $how, $shape: B's CMD never ran"
  # each worker outlasts the grace after a SIGTERM (3 s, or for ever) or CMD's exit:
  # A says it killed what was left
  if [ "$how" != kill9 ]; then
    grepq -E 'did not end within the grace|still ran when the grace ended' "$hb.a.err" ||
      fail "$tool, $how, $shape: A did not say it killed its tree: $(cat "$hb.a.err")"
  fi
  pass "$tool, $how, $shape: A's tree gone before B's CMD started (A exited $rc)"
}
