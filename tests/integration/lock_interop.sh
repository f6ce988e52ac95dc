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
#                               sides contended (>= 50 switches), each C holder's
#                               fences increase, and no node is left.
ROUNDS=${ROUNDS:-300}
HOLD_US=${HOLD_US:-200}

lock_interop_contend() {
  local peer=$1 name tag path i t0 res sw c
  local -a cmd
  case $peer in
    curator) name=Curator tag=j cmd=("${CURATOR[@]}" mutex) ;;
    kazoo) name=kazoo tag=p cmd=("${KAZOO[@]}" lock) ;;
    *) fail "lock_interop_contend: unknown peer $peer" ;;
  esac
  path=/interop/$peer

  "${IK_INTEROP[@]}" lock "$URI" "$path" $((ROUNDS / 2)) "$T/c1.iv" "$HOLD_US" "$T/go" 2>"$T/c1.log" &
  local c1=$!
  "${IK_INTEROP[@]}" lock "$URI" "$path" $((ROUNDS - ROUNDS / 2)) "$T/c2.iv" "$HOLD_US" "$T/go" 2>"$T/c2.log" &
  local c2=$!
  "${cmd[@]}" "$ZK_CONNECT" "/t$path" "$ROUNDS" "$T/$tag.iv" "$HOLD_US" "$T/go" 2>"$T/$tag.log" &
  local other=$!
  IK_PIDS+=("$c1" "$c2" "$other")
  for ((i = 0; i < 600; i++)); do
    [ -e "$T/c1.iv" ] && [ -e "$T/c2.iv" ] && [ -e "$T/$tag.iv" ] && break
    sleep 0.05
  done
  [ -e "$T/$tag.iv" ] || fail "the $name helper did not connect (see $T/$tag.log)"
  t0=$SECONDS
  touch "$T/go"
  wait "$c1" || fail "C holder 1 failed (see $T/c1.log)"
  wait "$c2" || fail "C holder 2 failed (see $T/c2.log)"
  wait "$other" || fail "the $name holder failed (see $T/$tag.log)"
  [ "$(cat "$T/c1.iv" "$T/c2.iv" | wc -l)" = "$ROUNDS" ] || fail "C rounds missing"
  [ "$(wc -l <"$T/$tag.iv")" = "$ROUNDS" ] || fail "$name rounds missing"
  res=$(interop_check_intervals "$T/c1.iv" "$T/c2.iv" "$T/$tag.iv") || fail "C and $name holders overlap: $res"
  log "$res"
  sw=$(echo "$res" | sed -n 's/.* \([0-9]*\) switches.*/\1/p')
  ((sw >= 50)) || fail "C and $name hardly contended ($sw switches): the test proves nothing"
  for c in 1 2; do
    awk '{ if (NR > 1 && $4 <= prev) { print "fence " $4 " after " prev; exit 1 } prev = $4 }' "$T/c$c.iv" ||
      fail "C holder $c's fences do not increase"
  done
  [ -z "$(zk_tool ls "/t$path")" ] || fail "nodes left: $(zk_tool ls "/t$path")"
  pass "C and $name on one path: $res, in $((SECONDS - t0)) s"
}
