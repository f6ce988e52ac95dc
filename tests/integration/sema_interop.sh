# sema_interop.sh: idkeeper and a peer's semaphore on one path of a real ZooKeeper
# (bash, sourced after lib.sh and zk.sh; the caller has run zk_interop_start).
#
#   sema_interop_contend PEER   PEER is curator (Apache Curator's
#                               InterProcessSemaphoreV2, the java helper, against
#                               idkeeper's default layout) or kazoo (kazoo's
#                               Semaphore, against --semaphore-layout kazoo). For
#                               SEMA_SECS (60) seconds, three loops of `idkeeper
#                               semaphore --max 3` and the peer's two clients take
#                               leases of /interop/sema-PEER, each holding it 50 to
#                               250 ms while it appends "NAME TIME_US" to one file
#                               every 20 ms (the peer's helper, tests/interop/);
#                               tests/tools/holds.py counts from those heartbeats:
#                               never more than 3 at once, 3 at once for a while,
#                               both sides held (>= 20 switches between them), and
#                               no node is left.
SEMA_SECS=${SEMA_SECS:-60}
SEMA_MAX=3

# the CMD of idkeeper's holders: "NAME TIME_US" every 20 ms for MS ms
cat >"$T/sema-hb" <<'SH'
#!/usr/bin/env bash
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
name=$1 out=$2 ms=$3
end=$((${EPOCHREALTIME/./} + ms * 1000))
while echo "$name ${EPOCHREALTIME/./}" >>"$out" && ((${EPOCHREALTIME/./} + 20000 < end)); do
  sleep 0.02
done
SH
chmod +x "$T/sema-hb"

# sema_loop I PATH OUT STOP ARGS...: `idkeeper semaphore` again and again until STOP
# exists, each holding 50 to 250 ms. Each run ends within SEMA_BOUND s (a wait behind
# four holders of at most 250 ms each, on a loaded machine) or the test says where it
# hung, in $T/hung-I (bounded, lib.sh), not a ctest timeout that shows nothing.
SEMA_BOUND=${SEMA_BOUND:-120}
sema_loop() {
  local i=$1 path=$2 out=$3 stop=$4 r=0
  shift 4
  while [ ! -e "$stop" ]; do
    bounded "$SEMA_BOUND" "$T/hung-$i" "$IK_BIN" semaphore --coord "$URI" "$@" --max "$SEMA_MAX" \
      "$path" -- "$T/sema-hb" "I$i.$r" "$out" $((50 + RANDOM % 200)) || return 1
    r=$((r + 1))
  done
}

sema_interop_contend() {
  local peer=$1 path=/interop/sema-$1 out=$T/sema.$1 stop=$T/sema.$1.stop args=() res
  local -a cmd loops=()
  case $peer in
    curator) cmd=("${CURATOR[@]}" sema) ;;
    kazoo) cmd=("${KAZOO[@]}" sema) args=(--semaphore-layout kazoo) ;;
    *) fail "sema_interop_contend: unknown peer $peer" ;;
  esac
  : >"$out"
  "${cmd[@]}" "$ZK_CONNECT" "/t$path" "$SEMA_MAX" 2 "$SEMA_SECS" "$out" >"$T/$peer.out" 2>"$T/$peer.log" &
  local other=$! i t0=$SECONDS
  IK_PIDS+=($other)
  for i in 1 2 3; do
    sema_loop "$i" "$path" "$out" "$stop" "${args[@]}" 2>>"$T/loop$i.log" &
    loops+=($!)
    IK_PIDS+=($!)
  done
  wait "$other" || fail "the $peer helper failed: $(tail -n 5 "$T/$peer.log")"
  touch "$stop"
  for i in 1 2 3; do
    wait "${loops[$((i - 1))]}" && continue
    [ -e "$T/hung-$i" ] && fail "idkeeper loop $i: a run went past $SEMA_BOUND s: $(cat "$T/hung-$i")"
    fail "idkeeper loop $i failed: $(tail -n 5 "$T/loop$i.log")"
  done
  res=$(/usr/bin/python3 "$IK_SRC/tests/tools/holds.py" "$SEMA_MAX" "$out") ||
    fail "more than $SEMA_MAX held at once: $res"
  log "$peer: $res ($(cat "$T/$peer.out"))"
  [[ $res == *"at most $SEMA_MAX at once"* ]] || fail "$SEMA_MAX never held at once, nobody waited: $res"
  local sw
  sw=$(sed -n 's/.* \([0-9]*\) switches.*/\1/p' <<<"$res")
  ((sw >= 20)) || fail "idkeeper and $peer hardly took turns ($sw switches): $res"
  local kind
  [ "$peer" = curator ] && kind=J || kind=P
  [[ $res == *"I="* && $res == *"$kind="* ]] || fail "a side never held: $res"
  local left
  if [ "$peer" = curator ]; then left=$(zk_tool ls "/t$path/leases"); else left=$(zk_tool ls "/t$path"); fi
  [ -z "$left" ] || fail "leases left at /t$path: $left"
  SEMA_RESULT="$res, over $((SECONDS - t0)) s"
}
