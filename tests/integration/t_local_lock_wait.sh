#!/usr/bin/env bash
# labels: local recipes
# timeout: 240
# A local: waiter never sleeps only on an event the holder may not make
# (docs/recipes.md, "One host: local:DIR"): it tries the flock again after each
# inotify event and on a bounded timer.
# 1. A chain of 30 `idkeeper lock` contenders queued on one lock, each CMD a few ms:
#    every one runs, in turn. Before, a waiter that tried its predecessor's ticket
#    between the kernel's close event and the drop of the flock (the event comes
#    first) found it still locked and slept on for ever: the chain stopped after 7,
#    9 and 1 of 30 commands in three runs, the lock file free.
# 2. The same with `idkeeper elect --once` candidates: each leads in turn.
# 3. A flock(1) holder that runs `flock -u` and keeps its descriptor open makes no
#    close event at all: the waiting `idkeeper lock` takes the lock all the same.
#    Before, it had not taken the free lock 8 s later.
# The waits below are bounds for a loaded machine, not timings: the chain's 30
# commands take well under a second each on an idle one.
source "$(dirname "$0")/lib.sh"
COORD="local:$T/store"

# chain TOOL N: N contenders, each started once the one before queued (so the queue
# is a chain, not a herd); each CMD appends its number and sleeps 10 ms. All must have
# run within 60 s.
chain() {
  local tool=$1 n=$2 i pids=()
  : >"$T/$tool.ran"
  for ((i = 1; i <= n; i++)); do
    if [ "$tool" = lock ]; then
      "$IK_BIN" lock --coord "$COORD" /chain -- sh -c 'echo "$0" >>"$1"; sleep 0.01' "$i" "$T/$tool.ran" \
        2>>"$T/$tool.err" &
    else
      "$IK_BIN" elect --coord "$COORD" --once --id "c$i" /chain -- sh -c 'echo "$0" >>"$1"; sleep 0.01' "$i" \
        "$T/$tool.ran" 2>>"$T/$tool.err" &
    fi
    pids+=($!)
    IK_PIDS+=($!)
  done
  local done_n
  count_ran() { done_n=$(wc -l <"$T/$tool.ran"); [ "$done_n" = "$n" ]; }
  if ! wait_until 60 count_ran; then
    local free=free
    flock -n "$T/store/locks/chain.$( [ "$tool" = lock ] && echo lock || echo elect)" true || free=held
    fail "$tool: the chain stopped after $done_n of $n commands (the lock file is $free; $(tail -n 2 "$T/$tool.err"))"
  fi
  for p in "${pids[@]}"; do wait "$p" || fail "$tool: a contender exited $?: $(tail -n 3 "$T/$tool.err")"; done
  [ "$(sort -n "$T/$tool.ran" | uniq | wc -l)" = "$n" ] || fail "$tool: a command ran twice or not at all"
  pass "$tool: a chain of $n contenders, every one ran"
}

chain lock 30
chain elect 20

# 3. flock -u with the descriptor kept open
mkdir -p "$T/store/locks"
lockfile="$T/store/locks/fu.lock"
: >"$lockfile"
(
  exec 9>"$lockfile"
  flock 9
  touch "$T/fu.held"
  while [ ! -e "$T/fu.unlock" ]; do sleep 0.02; done
  flock -u 9
  touch "$T/fu.unlocked"
  sleep 60 # the descriptor stays open: no close event
) &
holder=$!
IK_PIDS+=($holder)
wait_until 10 test -e "$T/fu.held" || fail "flock(1) never took the lock file"
"$IK_BIN" lock --coord "$COORD" /fu -- touch "$T/fu.ran" 2>"$T/fu.err" &
waiter=$!
IK_PIDS+=($waiter)
# the waiter queued and waits on the lock file (the flock(1) holder is not queued)
wait_until 10 test -d "$T/store/locks/fu.lock.q" || fail "the waiter never queued"
[ ! -e "$T/fu.ran" ] || fail "CMD ran while flock(1) held the lock file"
touch "$T/fu.unlock"
wait_until 10 test -e "$T/fu.unlocked" || fail "flock -u never ran"
wait_until 15 test -e "$T/fu.ran" || fail "the waiter did not take the lock freed by flock -u (descriptor kept open) within 15 s"
wait $waiter || fail "the waiter exited $?: $(cat "$T/fu.err")"
kill $holder 2>/dev/null || true
pass "flock -u with the descriptor kept open: the waiting lock took it"
