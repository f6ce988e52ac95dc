#!/usr/bin/env bash
# labels: recipes zk interop
# timeout: 180
# fixtures: zk
# What docs/recipes.md ("Semaphores") warns of, measured: a semaphore in one peer's
# layout and the other peer's on the same path do NOT share a limit. idkeeper in
# Curator's layout (its leases under PATH/leases) and kazoo's Semaphore (which counts
# PATH's children, leases or not) take leases of one max-3 semaphore: more than 3
# hold at once. This test expects the over-admission; it also shows that the count
# of the interop tests (tests/tools/holds.py) catches it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_interop_start
SEMA_SECS=${SEMA_SECS:-20}
source "$(dirname "$0")/sema_interop.sh"
path=/interop/sema-mixed out=$T/sema.mixed
: >"$out"
"${KAZOO[@]}" sema "$ZK_CONNECT" "/t$path" 3 3 "$SEMA_SECS" "$out" >"$T/kazoo.out" 2>"$T/kazoo.log" &
k=$!
IK_PIDS+=($k)
loops=()
for i in 1 2 3 4; do
  sema_loop "$i" "$path" "$out" "$T/stop" 2>>"$T/loop$i.log" &
  loops+=($!)
  IK_PIDS+=($!)
done
wait $k || fail "the kazoo helper failed: $(tail -n 5 "$T/kazoo.log")"
touch "$T/stop"
for p in "${loops[@]}"; do wait "$p" || fail "an idkeeper loop failed"; done
if res=$(/usr/bin/python3 "$IK_SRC/tests/tools/holds.py" 3 "$out"); then
  fail "idkeeper (Curator's layout) and kazoo never held more than 3 at once: $res (docs/recipes.md says they do not share a limit)"
fi
pass "Curator's layout and kazoo's on one path over-admit, as documented: $(head -n 1 <<<"$res")"
