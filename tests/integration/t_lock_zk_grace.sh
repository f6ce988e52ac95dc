#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 300
# The grace after a loss (docs/recipes.md, "The commands"): with the default --grace, a CMD that
# ignores SIGTERM is dead (SIGKILL) before another process can hold the lock or
# lead. The loss is told at most 2/3 of the session timeout after the last proof
# of the session; the next holder can hold from one session timeout on; so the
# default grace is a sixth of the session timeout, and at most a quarter is allowed.
#  1. idkeeper lock: A (through the fault proxy) holds; its CMD ignores SIGTERM and
#     writes a heartbeat every 20 ms; the proxy goes down; B (direct) waits for the
#     lock. A's CMD's last heartbeat comes before B's CMD starts; A exits 125.
#  2. the same for idkeeper elect --once.
#  3. an explicit --grace above a quarter of the session timeout is refused on
#     zk:// (exit 2, nothing run); on local: (a grant is never lost there) any
#     --grace is accepted.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
zk_proxy_start
VIA=zk://127.0.0.1:$PP/t # through the proxy
DIRECT=$(zk_uri t)
S=6000 # loss told within 4 s of the last proof; default grace 1 s; B holds from 6 s

# a CMD that ignores SIGTERM (and so do its children) and beats into $1
HB='trap "" TERM; while :; do date +%s%N >>"$0"; sleep 0.02; done'

# case_grace KIND PATH N [A's options]: A holds PATH with `idkeeper KIND` through
# the proxy, B waits on a direct connection; the proxy goes down; checks that A's
# CMD died before B's CMD started and that A exited 125.
case_grace() {
  local kind=$1 path=$2 n=$3 i
  shift 3
  "$IK_BIN" "$kind" --coord "$VIA" --zk-session-timeout $S "$@" "$path" -- sh -c "$HB" "$T/$n.hb" \
    2>"$T/${n}a.err" &
  local a=$!
  IK_PIDS+=($a)
  wait_until 30 test -s "$T/$n.hb" || fail "$n: A's CMD did not start: $(cat "$T/${n}a.err")"
  "$IK_BIN" "$kind" --coord "$DIRECT" --zk-session-timeout $S "$path" -- \
    sh -c 'date +%s%N >"$0"' "$T/$n.bstart" 2>"$T/${n}b.err" &
  local b=$!
  IK_PIDS+=($b)
  wait_until 30 zk_contenders "/t$path" 2 || fail "$n: B never queued behind A: $(cat "$T/${n}b.err")"
  proxy down
  local t0
  t0=$(date +%s%N)
  rc=0
  wait $b || rc=$?
  [ $rc = 0 ] || fail "$n: B exited $rc: $(cat "$T/${n}b.err")"
  rc=0
  wait $a || rc=$? # it waits for its CMD to be gone
  local bstart last
  bstart=$(cat "$T/$n.bstart")
  last=$(tail -n 1 "$T/$n.hb")
  log "$n: B's CMD started $(((bstart - t0) / 1000000)) ms after the proxy went down; A's CMD's last beat at $(((last - t0) / 1000000)) ms"
  ((last < bstart)) || fail "$n: A's CMD (ignoring SIGTERM) still ran $(((last - bstart) / 1000000)) ms after B's CMD started"
  [ $rc = 125 ] || fail "$n: A exited $rc, not 125: $(cat "$T/${n}a.err")"
  pass "$n: $kind: A's CMD ignored SIGTERM and was killed $(((bstart - last) / 1000000)) ms before B's CMD started; A exited 125"
  proxy up
}

case_grace lock /grace/lock 1
case_grace elect /grace/elect 2 --once

# ---- 3: an explicit --grace that cannot end in time -------------------------------
expect_fail 2 "--grace 2000" "$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout $S --grace 2000 /grace/x -- touch "$T/ran"
grep -q "at most 1500 ms" "$T/err" || fail "3: the refusal does not name the longest grace: $(cat "$T/err")"
expect_fail 2 "--grace 2000" "$IK_BIN" elect --coord "$DIRECT" --zk-session-timeout $S --grace 2000 /grace/y -- touch "$T/ran"
[ ! -e "$T/ran" ] || fail "3: CMD ran with a refused --grace"
"$IK_BIN" lock --coord "$DIRECT" --zk-session-timeout $S --grace 1500 /grace/x -- touch "$T/ran" ||
  fail "3: --grace 1500 (a quarter of the session timeout) refused"
"$IK_BIN" lock --coord "local:$T/data" --grace 3600000 /grace/x -- true ||
  fail "3: --grace refused on local:"
pass "3: --grace above a quarter of the session timeout refused on zk:// (lock, elect); accepted up to it, and on local:"
