#!/usr/bin/env bash
# labels: zk
# timeout: 150
# processors: 2
# A 3-server ZooKeeper ensemble: its leader is killed (kill -9) while 4 idkeeper
# servers serve continuously. No duplicate ID, every server serves again after the
# election, and a second leader change (the old leader back, the new one killed)
# changes nothing either.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

ZK_SESSION_MS=4000
zk_start_ensemble 3
declare -A P
for n in a b c d; do
  P[$n]=$(zk_free_port)
  zk_serve "$n" "${P[$n]}" --worker-range 0-3
done
for n in a b c d; do wait_ready "${P[$n]}" 30 || fail "$n not ready"; done
for n in a b c d; do fetch_loop "${P[$n]}" "$T/ids.$n"; done
wait_until 30 fetched_all 10 || fail "the fetch loops get no IDs"

for round in 1 2; do
  leader=$(zk_leader) || fail "no leader"
  zk_stop "$leader"
  now_ms t_kill
  zk_wait_quorum 30
  now_ms t_elect
  log "round $round: leader $leader killed; server $(zk_leader) leads after $((t_elect - t_kill)) ms"
  for n in a b c d; do
    wait_held "${P[$n]}" 20 || fail "$n does not serve after the leader change"
  done
  now_ms t_ready
  wait_until 30 fetched_all 10 "$t_ready" || fail "round $round: the fetch loops get no IDs after the leader change"
  for n in a b c d; do
    # served again: every request since all were ready got IDs
    st_check "$T/ids.$n.st" "$t_ready" "$(now_ms)" ok
    bad=$(awk -v a="$t_kill" -v b="$t_ready" '$1 >= a && $1 <= b && $2 != 200' "$T/ids.$n.st" | wc -l)
    log "$n: $bad requests refused during the election; lease $(status_of "${P[$n]}" .lease.state), session $(status_of "${P[$n]}" .lease.session)"
  done
  pass "round $round: serving resumed $((t_ready - t_kill)) ms after the leader died"
  zk_start "$leader"
  zk_wait_quorum 30
done
fetch_stop

declare -A W=()
for n in a b c d; do
  w=$(status_of "${P[$n]}" .worker)
  [ -z "${W[$w]:-}" ] || fail "worker $w held by ${W[$w]} and $n"
  W[$w]=$n
  acq=$(status_of "${P[$n]}" .lease.acquisitions)
  ws=$(ids_workers "$T/ids.$n" | tr '\n' ' ')
  log "$n: worker $w, $acq acquisitions, IDs under workers $ws"
  [ "$acq" != 1 ] || [ "$ws" = "$w " ] || fail "$n issued under workers $ws, holding only $w"
  assert_increasing "$T/ids.$n"
done
cat "$T"/ids.a "$T"/ids.b "$T"/ids.c "$T"/ids.d >"$T/all"
assert_unique "$T/all"
pass "$(wc -l <"$T/all") IDs from 4 servers across two leader changes, no duplicate"
