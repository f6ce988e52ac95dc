# lock_interop.sh: C holders and a foreign lock recipe contend for one lock path
# (bash, sourced after lib.sh and zk.sh; the caller has run zk_interop_start).
#
#   lock_interop_contend PEER   PEER is curator (Apache Curator's InterProcessMutex,
#                               needs the java helper) or kazoo (kazoo's Lock with
#                               extra_lock_patterns=["-lock-"]). Two C holders
#                               (libidkeeper, ROUNDS/2 rounds each) and the peer
#                               (ROUNDS rounds) on /t/interop/PEER, each holding
#                               HOLD_US per round and recording its enter and exit
#                               on CLOCK_MONOTONIC: no two intervals overlap, the
#                               sides contended (>= 50 switches; a contest that did
#                               not is run again, up to three), each C holder's
#                               fences increase, and no node is left.
ROUNDS=${ROUNDS:-300}
HOLD_US=${HOLD_US:-200}

# One contest: the three holders on the path, started together by $T/go.$2; sets
# CONTEST to the interval checker's line. Fails on any overlap, missing round or bad fence.
lock_interop_once() {
  local peer=$1 n=$2 name tag path i res c
  local -a cmd
  case $peer in
    curator) name=Curator tag=j cmd=("${CURATOR[@]}" mutex) ;;
    kazoo) name=kazoo tag=p cmd=("${KAZOO[@]}" lock) ;;
    *) fail "lock_interop_contend: unknown peer $peer" ;;
  esac
  path=/interop/$peer
  local c1f=$T/c1.$n.iv c2f=$T/c2.$n.iv pf=$T/$tag.$n.iv go=$T/go.$n

  "${IK_INTEROP[@]}" lock "$URI" "$path" $((ROUNDS / 2)) "$c1f" "$HOLD_US" "$go" 2>"$T/c1.log" &
  local c1=$!
  "${IK_INTEROP[@]}" lock "$URI" "$path" $((ROUNDS - ROUNDS / 2)) "$c2f" "$HOLD_US" "$go" 2>"$T/c2.log" &
  local c2=$!
  "${cmd[@]}" "$ZK_CONNECT" "/t$path" "$ROUNDS" "$pf" "$HOLD_US" "$go" 2>"$T/$tag.log" &
  local other=$!
  IK_PIDS+=("$c1" "$c2" "$other")
  wait_until 60 test -e "$c1f" -a -e "$c2f" -a -e "$pf" || true
  [ -e "$pf" ] || fail "the $name helper did not connect (see $T/$tag.log)"
  touch "$go"
  wait "$c1" || fail "C holder 1 failed (see $T/c1.log)"
  wait "$c2" || fail "C holder 2 failed (see $T/c2.log)"
  wait "$other" || fail "the $name holder failed (see $T/$tag.log)"
  [ "$(cat "$c1f" "$c2f" | wc -l)" = "$ROUNDS" ] || fail "C rounds missing"
  [ "$(wc -l <"$pf")" = "$ROUNDS" ] || fail "$name rounds missing"
  res=$(interop_check_intervals "$c1f" "$c2f" "$pf") || fail "C and $name holders overlap: $res"
  for c in "$c1f" "$c2f"; do
    awk '{ if (NR > 1 && $4 <= prev) { print "fence " $4 " after " prev; exit 1 } prev = $4 }' "$c" ||
      fail "C holder's fences do not increase in $c"
  done
  [ -z "$(zk_tool ls "/t$path")" ] || fail "nodes left: $(zk_tool ls "/t$path")"
  CONTEST=$res
}

# Up to three contests: every one must be free of overlaps, and one of them must
# have contended (>= 50 switches between the kinds) for the run to prove anything.
# A busy machine can let one side run ahead (it is scheduling, not a defect), so a
# contest with few switches is run again rather than counted as a pass or a fail.
lock_interop_contend() {
  local peer=$1 n res sw t0=$SECONDS
  for n in 1 2 3; do
    lock_interop_once "$peer" "$n"
    res=$CONTEST
    log "contest $n: $res"
    sw=$(echo "$res" | sed -n 's/.* \([0-9]*\) switches.*/\1/p')
    if ((sw >= 50)); then
      pass "C and $peer on one path: $res, in $((SECONDS - t0)) s"
      return
    fi
  done
  fail "C and $peer hardly contended in 3 contests (last: $sw switches): the test proves nothing"
}
