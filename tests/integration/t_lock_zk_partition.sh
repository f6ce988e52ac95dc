#!/usr/bin/env bash
# labels: recipes zk
# needs: zk
# timeout: 300
# What proves a lock holder's session (docs/recipes.md, "What proves the session"):
# a 3-server ensemble in which server 1 reaches servers 2 and 3 only through fault
# proxies (its quorum and election links). Holder a is connected to server 1 only;
# waiter b to server 2. The proxies then partition server 1 from the others
# (nothing passes, nothing is closed). Server 1, a follower, keeps answering reads
# until it notices the leader is gone (syncLimit ticks, 5 s here), while the leader
# expires a's session one session timeout (6 s) after the last touch it heard and
# b takes the lock. Before the fix a's monitor counted those reads as proof and said
# LOST too late: a's CMD still ran when b's started. Now a probe's sync must reach
# the leader: a's CMD stops before b's starts, and the fences increase.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

_zk_not_shared "t_lock_zk_partition"
ZK_N=3
declare -A CP QP EP PQ PE
for i in 1 2 3; do
  CP[$i]=$(_zk_port)
  QP[$i]=$(_zk_port)
  EP[$i]=$(_zk_port)
  PQ[$i]=$(_zk_port)
  PE[$i]=$(_zk_port)
  ZK_CPORT[$i]=${CP[$i]}
done
# the proxies of every link of server 1: its links to 2 and 3, theirs to it (all
# on one control file: "proxy partition" cuts them all at once)
for i in 1 2 3; do
  fault_proxy_start "${PQ[$i]}" "${QP[$i]}" raw || fail "proxy: $(cat "$T/proxy.log")"
  fault_proxy_start "${PE[$i]}" "${EP[$i]}" raw || fail "proxy: $(cat "$T/proxy.log")"
done
line() { echo "server.$1=127.0.0.1:$2:$3"; }
_zk_write_cfg 1 "${CP[1]}" "$(line 1 "${QP[1]}" "${EP[1]}")" "$(line 2 "${PQ[2]}" "${PE[2]}")" "$(line 3 "${PQ[3]}" "${PE[3]}")"
for i in 2 3; do
  _zk_write_cfg "$i" "${CP[$i]}" "$(line 1 "${PQ[1]}" "${PE[1]}")" "$(line 2 "${QP[2]}" "${EP[2]}")" "$(line 3 "${QP[3]}" "${EP[3]}")"
done
for i in 1 2 3; do
  echo "$i" >"$T/zk$i/data/myid"
  zk_start "$i"
done
zk_wait_quorum
leader=$(zk_leader)
log "ensemble serving, leader $leader"
[ "$leader" != 1 ] || fail "server 1 leads (the highest id should): this test needs it a follower"

S=6000
A="zk://127.0.0.1:${CP[1]}/t"
B="zk://127.0.0.1:${CP[2]}/t"
"$IK_BIN" lock --coord "$A" --zk-session-timeout $S /part -- \
  sh -c 'trap "date +%s%N >$0/a.end; exit 0" TERM; echo "$IDKEEPER_FENCE" >$0/a.fence; while :; do sleep 0.05; done' "$T" \
  2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 20 test -s "$T/a.fence" || fail "a never held the lock: $(cat "$T/a.err")"
"$IK_BIN" lock --coord "$B" --zk-session-timeout $S /part -- \
  sh -c 'date +%s%N >$0/b.start; echo "$IDKEEPER_FENCE" >$0/b.fence' "$T" 2>"$T/b.err" &
b=$!
IK_PIDS+=($b)
ZK_CONNECT=127.0.0.1:${CP[2]} wait_until 30 zk_contenders /t/part 2 || fail "b never queued: $(cat "$T/b.err")"
sleep 1.5 # let time pass: one more of a's probes (every S/4) proves its session afresh
proxy partition
mono_ms t0
log "server 1 partitioned from the others"
rc=0
wait $a || rc=$?
log "a exited $rc after $(($(mono_ms) - t0)) ms: $(grep -v ZOO_ "$T/a.err" | tail -n 2)"
wait $b || fail "b failed: $(cat "$T/b.err")"
log "b held after $(($(mono_ms) - t0)) ms at most"
[ -s "$T/a.end" ] || fail "a's CMD did not get SIGTERM"
gap=$((($(cat "$T/b.start") - $(cat "$T/a.end")) / 1000000))
((gap > 0)) || fail "b's CMD started $((-gap)) ms before a's stopped: a was still told it held the lock while partitioned"
(($(cat "$T/b.fence") > $(cat "$T/a.fence"))) || fail "fences do not increase"
[ "$rc" = 125 ] || fail "a exited $rc, not 125: $(cat "$T/a.err")"
pass "partitioned follower: a's CMD stopped $gap ms before b's started; fences $(cat "$T/a.fence") < $(cat "$T/b.fence")"
proxy heal
