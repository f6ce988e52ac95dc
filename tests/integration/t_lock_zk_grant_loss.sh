#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 420
# A loss notice that comes right after a grant, before the holder has heard of the
# grant (docs/recipes.md, "A lost grant's node"). The test-only hook IDKEEPER_TEST_GRANT_DELAY_MS pauses
# the holder for DELAY ms right after its lock or latch is granted (docs/recipes.md,
# "Test hooks"); its connection (through the fault proxy) goes down inside that
# window, so the lock's monitor says "in doubt" and then "lost" before the command
# hears "granted", while the session expires and B, on a direct connection, takes
# over. Whatever the order of the notices:
#  0. a blip inside the window (the same session answers again): CMD still runs
#     (lock, elect)
#  1. idkeeper lock:        A never starts CMD; exit 125, "lost the lock"
#  2. idkeeper elect --once: A never starts CMD; exit 125, "lost leadership"
#  3. idkeeper elect:        A says "lost leadership", campaigns again and starts
#                            CMD only after B's CMD has ended
# and never two CMDs at once (each CMD logs its start and end in a runs file).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
zk_proxy_start
VIA=zk://127.0.0.1:$PP/t # through the proxy
DIRECT=$(zk_uri t)
S=3000     # session timeout: A's LOST within 2/3 of it, B holds after it
DELAY=6000 # the window after A's grant: longer than S

# cmd.sh RUNS NAME SECS: a CMD that logs "NAME start|end|term UNIX_NS" in RUNS and
# runs SECS seconds (SIGTERM ends it, logged).
cat >"$T/cmd.sh" <<'EOF'
#!/bin/sh
runs=$1 name=$2
echo "$name start $(date +%s%N)" >>"$runs"
trap 'echo "$name term $(date +%s%N)" >>"$runs"; exit 0' TERM
sleep "$3" &
wait $!
echo "$name end $(date +%s%N)" >>"$runs"
EOF

# no_overlap RUNS: no two CMDs of different names ran at once (a CMD with no end
# runs until now).
no_overlap() {
  /usr/bin/python3 - "$1" "$(date +%s%N)" <<'PY' || fail "two CMDs ran at once: $(cat "$1")"
import sys
now = int(sys.argv[2])
iv = {}
for line in open(sys.argv[1]):
    name, what, t = line.split()
    if what == "start":
        iv.setdefault(name, []).append([int(t), now])
    else:
        iv[name][-1][1] = int(t)
flat = sorted((s, e, n) for n, v in iv.items() for s, e in v)
for (s1, e1, n1), (s2, e2, n2) in zip(flat, flat[1:]):
    if n1 != n2 and s2 < e1:
        print("%s's CMD started %d ms into %s's, which %s" % (n2, (s2 - s1) // 1000000, n1,
              "ran %d ms more" % ((e1 - s2) // 1000000) if e1 != now else "still runs"), file=sys.stderr)
        sys.exit(1)
PY
}

# started RUNS NAME: NAME's CMD has started at least once.
started() { grep -q "^$2 start" "$1" 2>/dev/null; }

A_ENV=(env IDKEEPER_TEST_GRANT_DELAY_MS=$DELAY)

# ---- 0: a blip inside the window ------------------------------------------------
for kind in lock elect; do
  R=$T/runs0$kind
  : >"$R"
  "${A_ENV[@]}" "$IK_BIN" $kind --coord "$VIA" --zk-session-timeout 6000 /grant/blip -- sh "$T/cmd.sh" "$R" A 1 \
    2>"$T/0a$kind.err" &
  a=$!
  IK_PIDS+=($a)
  wait_grep "grant delay" "$T/0a$kind.err" 60 || fail "0: A was not granted /grant/blip: $(cat "$T/0a$kind.err")"
  proxy down
  sleep 0.3 # let time pass: the blip's length
  proxy up
  rc=0
  wait $a || rc=$?
  [ $rc = 0 ] || fail "0: $kind: A exited $rc after a blip inside the window: $(cat "$T/0a$kind.err")"
  started "$R" A || fail "0: $kind: A's CMD never ran"
  pass "0: $kind: a blip right after the grant: CMD ran once the same session answered"
done

# case_one KIND PATH: A (via the proxy, paused after its grant) and B (direct) on
# PATH with `idkeeper KIND`; the proxy goes down inside A's window; ON_B (if set)
# is run once B's CMD has started. Leaves A's pid in $a, B's in $b, and the runs
# in $R.
case_one() {
  local kind=$1 path=$2 n=$3
  shift 3
  R=$T/runs$n
  : >"$R"
  "${A_ENV[@]}" "$IK_BIN" "$kind" --coord "$VIA" --zk-session-timeout $S "$@" "$path" -- \
    sh "$T/cmd.sh" "$R" A 20 2>"$T/${n}a.err" &
  a=$!
  IK_PIDS+=($a)
  wait_grep "grant delay" "$T/${n}a.err" 60 || fail "$n: A was not granted $path: $(cat "$T/${n}a.err")"
  "$IK_BIN" "$kind" --coord "$DIRECT" --zk-session-timeout $S "$path" -- sh "$T/cmd.sh" "$R" B 10 \
    2>"$T/${n}b.err" &
  b=$!
  IK_PIDS+=($b)
  wait_until 30 zk_contenders "/t$path" 2 || fail "$n: B never queued on $path: $(cat "$T/${n}b.err")"
  proxy down
  log "$n: A's connection down inside its window"
  # B holds once A's session expires (S), and runs 10 s: A's window (DELAY) ends
  # meanwhile. Wait for B's CMD to start, then for B to end: no_overlap then sees
  # every overlap there was, since the log only grows and a CMD that never logged
  # its end counts as running until the check (checked every 50 ms while B ran, it
  # cost a python3 a check, 8 CPU-seconds a run under ASan, to fail a few seconds
  # sooner).
  wait_until 30 started "$R" B || fail "$n: B never got $path: $(cat "$T/${n}b.err")"
  eval "${ON_B:-}"
  rc=0
  wait $b || rc=$?
  [ $rc = 0 ] || fail "$n: B exited $rc: $(cat "$T/${n}b.err")"
  no_overlap "$R"
}

# ---- 1: idkeeper lock -----------------------------------------------------------
case_one lock /grant/lock 1
wait_until 10 not alive $a || fail "1: A still runs after B's CMD ended: $(cat "$T/1a.err"); runs: $(cat "$R")"
rc=0
wait $a || rc=$?
! started "$R" A || fail "1: A started CMD on a lost lock: $(cat "$R")"
[ $rc = 125 ] || fail "1: A exited $rc, not 125: $(cat "$T/1a.err")"
grep -q "lost the lock" "$T/1a.err" || fail "1: A did not say it lost the lock: $(cat "$T/1a.err")"
pass "1: lock lost inside the grant window: A never ran CMD, exit 125: $(grep "lost the lock" "$T/1a.err")"
proxy up

# ---- 2: idkeeper elect --once -----------------------------------------------------
case_one elect /grant/elect1 2 --once
wait_until 10 not alive $a || fail "2: A still runs after B's CMD ended: $(cat "$T/2a.err"); runs: $(cat "$R")"
rc=0
wait $a || rc=$?
! started "$R" A || fail "2: A started CMD on a lost leadership: $(cat "$R")"
[ $rc = 125 ] || fail "2: A exited $rc, not 125: $(cat "$T/2a.err")"
grep -q "lost leadership" "$T/2a.err" || fail "2: A did not say it lost leadership: $(cat "$T/2a.err")"
pass "2: leadership lost inside the grant window: A never ran CMD, exit 125: $(grep "lost leadership" "$T/2a.err")"
proxy up

# ---- 3: idkeeper elect, campaigning again -----------------------------------------
# A's proxy comes back while B leads: A gets a new session, queues behind B, and
# leads (CMD started) only once B's CMD has ended.
ON_B='sleep 1; proxy up'
case_one elect /grant/elect3 3
wait_until 30 started "$R" A || fail "3: A did not lead after B: $(cat "$T/3a.err")"
no_overlap "$R"
grep -q "lost leadership" "$T/3a.err" || fail "3: A did not say it lost leadership: $(cat "$T/3a.err")"
kill -TERM $a
rc=0
wait $a || rc=$?
[ $rc = 0 ] || fail "3: A exited $rc after TERM (its CMD's trap exits 0): $(cat "$T/3a.err")"
no_overlap "$R"
pass "3: leadership lost inside the grant window: A said so, campaigned again, led after B; never two CMDs at once"
