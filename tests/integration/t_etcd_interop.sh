#!/usr/bin/env bash
# labels: etcd recipes
# timeout: 240
# fixtures: etcd
# etcdctl interop (docs/etcd.md, "etcdctl interop"; docs/guarantees.md promise 19):
# idkeeper's locks and elections on etcd follow etcd's own concurrency recipe, so
# that etcdctl and idkeeper exclude each other on one name:
#   1. `etcdctl lock NAME -- sleep 3` holds: `idkeeper lock --timeout 1000 NAME`
#      times out (124) while it does, and gets the lock once it is done;
#   2. the other way round: while `idkeeper lock NAME -- sleep 3` holds, `etcdctl
#      lock NAME` does not get it (killed after 1 s), and gets it after;
#   3. 30 s of contenders from both tools at once (two loops of each), each grant
#      writing its start and end: no two hold intervals overlap, and an
#      unprotected read-modify-write counter loses no increment;
#   4. `idkeeper elect NAME -- CMD` leads: `etcdctl elect NAME p1` waits; the
#      idkeeper leader stops: etcdctl leads; a new idkeeper candidate does not run
#      its CMD until etcdctl resigns (SIGINT), then it does.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"
etcd_start
# no URI prefix: etcdctl's NAME is then idkeeper's lock path NAME, key for key
URI=etcd://127.0.0.1:$ETCD_PORT
N=$ETCD_PREFIX-lock # a name of this test's own
E=(env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$ETCD_PORT" --dial-timeout=3s)
LOCK=("$IK_BIN" lock --coord "$URI" --lease-ttl 3000)

# ---- 1. etcdctl holds, idkeeper waits ---------------------------------------------
"${E[@]}" lock --ttl 5 "$N" -- sh -c "touch $T/e.held; sleep 3" >"$T/e1.log" 2>&1 &
e1=$!
IK_PIDS+=($e1)
wait_until 10 test -e "$T/e.held" || fail "etcdctl did not get the lock: $(cat "$T/e1.log")"
rc=0
"${LOCK[@]}" --timeout 1000 "$N" -- touch "$T/i.held" 2>"$T/i1.err" || rc=$?
[ $rc = 124 ] || fail "idkeeper lock exited $rc while etcdctl held the lock, not 124: $(cat "$T/i1.err")"
[ ! -e "$T/i.held" ] || fail "idkeeper ran its CMD while etcdctl held the lock"
pass "idkeeper lock --timeout 1000 timed out while etcdctl lock held $N"
"${LOCK[@]}" --timeout 10000 "$N" -- touch "$T/i.held" 2>"$T/i1b.err" || fail "idkeeper did not get the lock after etcdctl: $(cat "$T/i1b.err")"
wait $e1 || fail "etcdctl lock failed: $(cat "$T/e1.log")"
[ -e "$T/i.held" ] || fail "idkeeper's CMD did not run"
pass "idkeeper got $N once etcdctl let go"

# ---- 2. idkeeper holds, etcdctl waits ---------------------------------------------
rm -f "$T/i.held" "$T/e.held"
"${LOCK[@]}" "$N" -- sh -c "touch $T/i.held; sleep 3" 2>"$T/i2.err" &
i2=$!
IK_PIDS+=($i2)
wait_until 10 test -e "$T/i.held" || fail "idkeeper did not get the lock: $(cat "$T/i2.err")"
rc=0
timeout 1 "${E[@]}" lock --ttl 5 "$N" -- touch "$T/e.held" >"$T/e2.log" 2>&1 || rc=$?
[ $rc = 124 ] || fail "etcdctl lock exited $rc while idkeeper held the lock, not killed by timeout (124): $(cat "$T/e2.log")"
[ ! -e "$T/e.held" ] || fail "etcdctl ran its command while idkeeper held the lock"
pass "etcdctl lock waited while idkeeper lock held $N"
timeout 15 "${E[@]}" lock --ttl 5 "$N" -- touch "$T/e.held" >"$T/e2b.log" 2>&1 || fail "etcdctl did not get the lock after idkeeper: $(cat "$T/e2b.log")"
wait $i2 || fail "idkeeper lock failed: $(cat "$T/i2.err")"
pass "etcdctl got $N once idkeeper let go"

# ---- 3. both tools at once, 30 s --------------------------------------------------
echo 0 >"$T/counter"
: >"$T/holds"
# each grant: its start and end (ns, this host's clock) and one unprotected increment
cat >"$T/crit.sh" <<EOS
#!/bin/sh
echo "B \$(date +%s%N) \$1" >>"$T/holds"
v=\$(cat "$T/counter"); sleep 0.02; echo \$((v + 1)) >"$T/counter"
echo "E \$(date +%s%N) \$1" >>"$T/holds"
EOS
chmod +x "$T/crit.sh"
end=$((SECONDS + 30))
# each acquire ends within its --timeout and the hold's stop, or the test says where
# it hung (bounded, lib.sh); etcdctl's the same way, past the timeout that ends it
ik_loop() {
  while ((SECONDS < end)); do
    bounded 60 "$T/hung-$1" "${LOCK[@]}" --timeout 20000 "$N" -- "$T/crit.sh" "$1" 2>>"$T/loop-$1.err" ||
      echo "fail $?" >>"$T/loop-$1.err"
  done
}
ec_loop() {
  while ((SECONDS < end)); do
    bounded 60 "$T/hung-$1" timeout 25 "${E[@]}" lock --ttl 5 "$N" -- "$T/crit.sh" "$1" >>"$T/loop-$1.err" 2>&1 ||
      echo "fail $?" >>"$T/loop-$1.err"
  done
}
ik_loop ik1 &
p1=$!
ik_loop ik2 &
p2=$!
ec_loop ec1 &
p3=$!
ec_loop ec2 &
p4=$!
IK_PIDS+=($p1 $p2 $p3 $p4)
wait $p1 $p2 $p3 $p4
for h in "$T"/hung-*; do
  [ -e "$h" ] && fail "${h##*/hung-}'s acquire ran past its bound: $(cat "$h")"
done
grants=$(grep -c '^E ' "$T/holds")
for who in ik1 ik2 ec1 ec2; do
  grep -q " $who\$" "$T/holds" || fail "$who never held the lock in 30 s: $(tail -n 5 "$T/loop-$who.err")"
done
sort -n -k2 "$T/holds" | awk '
  $1 == "B" { if (open) { print "overlap: " $3 " began while " who " held"; bad = 1 } open = 1; who = $3 }
  $1 == "E" { if (!open || $3 != who) { print "overlap: " $3 " ended inside " who "'"'"'s hold"; bad = 1 } open = 0 }
  END { exit bad }' >"$T/overlaps" || fail "hold intervals overlap: $(head -n 5 "$T/overlaps")"
[ "$(cat "$T/counter")" = "$grants" ] || fail "the counter is $(cat "$T/counter") after $grants grants: an increment was lost"
grep -q '^fail' "$T"/loop-*.err && log "some acquires failed (timeouts under load): $(grep -h '^fail' "$T"/loop-*.err | sort | uniq -c | tr '\n' ' ')"
pass "30 s of idkeeper and etcdctl contenders: $grants grants ($(grep -c ' ik[12]$' "$T/holds") lines by idkeeper, $(grep -c ' ec[12]$' "$T/holds") by etcdctl), no overlap, no lost increment"

# ---- 4. elections ------------------------------------------------------------------
EL=$ETCD_PREFIX-elect
# candidates N: N keys campaign under the election's prefix (etcd's election recipe)
candidates() { (($("${E[@]}" get --prefix "$EL/" --keys-only 2>/dev/null | grep -c . || true) >= $1)); }
ELECT=("$IK_BIN" elect --coord "$URI" --lease-ttl 3000)
"${ELECT[@]}" --id ik-a "$EL" -- sh -c "echo \$\$ >$T/a.pid; exec sleep 300" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 10 test -s "$T/a.pid" || fail "idkeeper's candidate a did not lead: $(cat "$T/a.err")"
# CMD's pid out here (it may run in a PID namespace of its own: docs/recipes.md)
acmd=$(host_pid $a "$(cat "$T/a.pid")") || fail "a's CMD not found below idkeeper"
"${E[@]}" elect "$EL" p1 >"$T/p1.out" 2>&1 &
p1=$!
IK_PIDS+=($p1)
wait_until 10 candidates 2 || fail "etcdctl elect p1 never campaigned: $(cat "$T/p1.out")"
[ ! -s "$T/p1.out" ] || fail "etcdctl elect leads while idkeeper's candidate does: $(cat "$T/p1.out")"
pass "etcdctl elect $EL p1 waits while idkeeper elect leads"
kill -TERM $a
wait $a || true
wait_until 10 grep -q '^p1$' "$T/p1.out" || fail "etcdctl did not lead once idkeeper's leader stopped: $(cat "$T/p1.out")"
alive "$acmd" && fail "a's CMD still runs after a stopped"
pass "etcdctl elect leads once idkeeper's leader stopped"
"${ELECT[@]}" --id ik-b "$EL" -- sh -c "echo \$\$ >$T/b.pid; exec sleep 300" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
wait_until 10 candidates 2 || fail "idkeeper's candidate b never campaigned: $(cat "$T/b.err")"
[ ! -e "$T/b.pid" ] || fail "idkeeper's candidate b runs its CMD while etcdctl leads"
kill -INT $p1 # etcdctl resigns: its session's lease is revoked
wait $p1 || true
wait_until 10 test -s "$T/b.pid" || fail "idkeeper's candidate b did not lead once etcdctl resigned: $(cat "$T/b.err")"
pass "idkeeper elect waited while etcdctl led, and led once it resigned"
kill -TERM $b
wait $b || true
