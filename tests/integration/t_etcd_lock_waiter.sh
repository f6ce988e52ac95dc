#!/usr/bin/env bash
# labels: etcd recipes
# timeout: 240
# An etcd waiter rides out what a holder rides out (docs/recipes.md, "etcd"): on a
# 3-member cluster whose URI lists the leader first, a holder (`idkeeper lock`, no
# --timeout) and a waiter queue at one path; the leader member is killed -9. The
# holder's CMD runs on, and the waiter must not give up: once a new leader leads and
# the holder's CMD ends, the waiter runs its CMD and exits 0 (before: it exited 1,
# "coordination store unreachable or failed", at the kill, in 3 runs of 3: its
# re-read of the contenders failed during the election and ended the acquire).
# Then a waiter whose lease lapses while it waits: the cluster loses its quorum
# (two members down) past the lease TTL while a holder holds and a waiter waits;
# once the quorum is back, both leases have lapsed in etcd: the waiter queues again
# with a new lease and runs its CMD (before: it exited 1, "the lock's etcd lease
# expired while it waited"), and the old holder, told LOST, stopped its CMD (125).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"

etcd_cluster3 w
TTL=10000 # the holder rides out the election: its window (2/3 of it) outlasts it under ASan
leader=$(etcd_leader) || fail "no leader"
eps="127.0.0.1:${ETCD_PORT_OF[$leader]}"
for n in w0 w1 w2; do [ "$n" = "$leader" ] || eps="$eps,127.0.0.1:${ETCD_PORT_OF[$n]}"; done
URI="etcd://$eps/$ETCD_PREFIX/waiter"
L=("$IK_BIN" lock --coord "$URI" --lease-ttl "$TTL" --allow-unsafe-store)
keys() { ectl get --prefix --keys-only "$ETCD_PREFIX/waiter$1/" | grep -c . || true; }
queued() { [ "$(keys "$1")" -ge 2 ]; }

# ---- 1. the leader killed while a waiter waits ---------------------------------
"${L[@]}" /x -- sh -c 'touch "$0/h.ran"; while [ ! -e "$0/h.go" ]; do sleep 0.05; done' "$T" 2>"$T/h.err" &
h=$!
IK_PIDS+=($h)
wait_until 30 test -e "$T/h.ran" || fail "the holder never ran: $(cat "$T/h.err")"
"${L[@]}" /x -- touch "$T/w.ran" 2>"$T/w.err" &
w=$!
IK_PIDS+=($w)
wait_until 30 queued /x || fail "the waiter never queued: $(cat "$T/w.err")"
etcd_kill "$leader"
log "leader $leader killed -9 (first in the URI)"
wait_until 30 etcd_leader >/dev/null || fail "no new leader within 30 s"
alive $w || fail "the waiter gave up when the leader died: $(cat "$T/w.err")"
alive $h || fail "the holder gave up when the leader died: $(cat "$T/h.err")"
[ ! -e "$T/w.ran" ] || fail "the waiter ran while the holder held"
touch "$T/h.go"
wait_until 60 not alive $w || fail "the waiter did not run within 60 s of the holder's end: $(cat "$T/w.err")"
rc=0
wait $w || rc=$?
[ "$rc" = 0 ] || fail "the waiter exited $rc: $(cat "$T/w.err")"
[ -e "$T/w.ran" ] || fail "the waiter exited 0 without running its CMD"
wait $h || fail "the holder exited $?: $(cat "$T/h.err")"
pass "the leader killed while a waiter waited: the holder held on, the waiter held once it ended"
etcd_restart "$leader" >/dev/null
wait_until 30 etcd_leader >/dev/null || fail "no leader after $leader's restart"

# ---- 2. a waiter's lease lapses while it waits ----------------------------------
TTL=4000
L=("$IK_BIN" lock --coord "$URI" --lease-ttl "$TTL" --allow-unsafe-store)
"${L[@]}" /y -- sh -c 'touch "$0/h2.ran"; exec sleep 600' "$T" 2>"$T/h2.err" &
h=$!
IK_PIDS+=($h)
wait_until 30 test -e "$T/h2.ran" || fail "the second holder never ran: $(cat "$T/h2.err")"
"${L[@]}" /y -- touch "$T/w2.ran" 2>"$T/w2.err" &
w=$!
IK_PIDS+=($w)
wait_until 30 queued /y || fail "the second waiter never queued: $(cat "$T/w2.err")"
leader=$(etcd_leader) || fail "no leader"
down=()
for n in w0 w1 w2; do
  [ "$n" = "$leader" ] || { [ ${#down[@]} -lt 1 ] && down+=("$n"); }
done
down+=("$leader")
for n in "${down[@]}"; do etcd_kill "$n"; done
mono_ms t0
log "quorum lost (${down[*]} killed -9)"
while (($(mono_ms) - t0 < TTL + 2000)); do sleep 0.05; done
for n in "${down[@]}"; do etcd_restart "$n" >/dev/null; done
wait_until 30 etcd_leader >/dev/null || fail "no leader after the quorum came back"
log "quorum back after $(($(mono_ms) - t0)) ms"
wait_until 60 not alive $h || fail "the old holder did not stop within 60 s of the quorum's return: $(cat "$T/h2.err")"
rc=0
wait $h || rc=$?
[ "$rc" = 125 ] || fail "the old holder exited $rc, not 125: $(cat "$T/h2.err")"
wait_until 60 not alive $w || fail "the waiter did not run within 60 s of the quorum's return: $(cat "$T/w2.err")"
rc=0
wait $w || rc=$?
[ "$rc" = 0 ] || fail "the waiter whose lease lapsed exited $rc: $(cat "$T/w2.err")"
[ -e "$T/w2.ran" ] || fail "the waiter exited 0 without running its CMD"
pass "a waiter's lease lapsed with the quorum lost past the TTL: it queued again and held"
