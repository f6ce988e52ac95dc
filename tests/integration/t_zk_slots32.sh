#!/usr/bin/env bash
# labels: zk
# timeout: 180
# fixtures: zk
# 32 servers with --worker-range 0-31 started all at once hold 32 distinct slots (as
# each says, and as ZooKeeper says); a 33rd exits non-zero naming the range and the
# holders; the IDs of all 32 hold no duplicate and carry each server's own worker.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
N=32
declare -a PORT
for ((i = 1; i <= N; i++)); do
  PORT[$i]=$(zk_free_port)
  zk_serve "s$i" "${PORT[$i]}" --worker-range 0-31
done
for ((i = 1; i <= N; i++)); do
  wait_ready "${PORT[$i]}" 60 || fail "s$i not ready (see $T/s$i.log)"
done
log "all $N ready"

declare -A SEEN=()
for ((i = 1; i <= N; i++)); do
  w=$(status_of "${PORT[$i]}" .worker)
  [[ $w =~ ^[0-9]+$ ]] && ((w <= 31)) || fail "s$i reports worker '$w'"
  [ -z "${SEEN[$w]:-}" ] || fail "worker $w held by both ${SEEN[$w]} and s$i"
  SEEN[$w]=s$i
done
held=$(zk_tool held "$(app_base)" | wc -l)
[ "$held" -eq 32 ] || fail "ZooKeeper shows $held held slots, not 32"
pass "32 servers hold 32 distinct slots"

# The 33rd: refused, non-zero, naming the range and holders.
p=$(zk_free_port)
set +e
"$IK_BIN" serve --http 127.0.0.1:"$p" --identity s33 --coord "$(zk_uri t)" \
  --zk-session-timeout "$ZK_SESSION_MS" --worker-range 0-31 >"$T/s33.log" 2>&1 &
pid=$!
wait_until 15 not kill -0 $pid 2>/dev/null || { kill -KILL $pid; fail "the 33rd server still runs after 15 s"; }
wait $pid
rc=$?
set -e
[ $rc -ne 0 ] || fail "the 33rd server exited 0"
grep -q '0-31' "$T/s33.log" || fail "the refusal does not name the range: $(cat "$T/s33.log")"
grep -qE '[0-9]+ by s[0-9]+' "$T/s33.log" || fail "the refusal does not name holders: $(cat "$T/s33.log")"
pass "the 33rd exits $rc: $(head -c 300 "$T/s33.log")"

# IDs from all of them: unique, each with its server's worker.
FP=()
for ((i = 1; i <= N; i++)); do
  fetch_ids "${PORT[$i]}" 2000 "$T/ids.$i" &
  FP+=($!)
done
for p in "${FP[@]}"; do wait "$p" || fail "a fetch failed"; done
for ((i = 1; i <= N; i++)); do
  n=$(wc -l <"$T/ids.$i")
  [ "$n" -eq 2000 ] || fail "s$i gave $n IDs, not 2000"
  w=$(ids_workers "$T/ids.$i")
  [ "$w" = "$(status_of "${PORT[$i]}" .worker)" ] || fail "s$i issued under worker(s) $w"
  assert_increasing "$T/ids.$i"
done
cat "$T"/ids.* >"$T/all"
assert_unique "$T/all"
pass "$(wc -l <"$T/all") IDs from 32 servers, no duplicate"
