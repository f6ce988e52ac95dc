#!/usr/bin/env bash
# labels: zk release
# timeout: 180
# ZooKeeper dies under a Meituan Leaf fleet (docs/zookeeper.md, "A Leaf fleet"): the
# idkeeper server, unlike Leaf, stops issuing within its safe window (2/3 of the
# session timeout from its last answered heartbeat, docs/guarantees.md promise 10),
# while the Leaf server (tests/interop/leaf_helper.py) only logs its failed
# heartbeats and keeps issuing, as Leaf does. ZooKeeper back: the idkeeper server
# takes its own number again at once (its node is idkeeper's: no heartbeat to wait
# out) and serves. Leaf servers started while ZooKeeper is down start, as Leaf does,
# on their cached number without a heartbeat (a host that ran one before), or not at
# all (a host without a cache file). No two issuers on one number at once.
# Its own ZooKeeper: this test kills it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
source "$(dirname "$0")/leaf.sh"
ZK_SESSION_MS=3000 # safe window 2000 ms
WIN=2000

leaf_start l fleet 10.3.0.1:8080
wl=$(leaf_worker l) || fail "l did not start: $(cat "$T/l.log")"
((wl == 0)) || fail "l's first start on a missing forever path took $wl, not 0 as Leaf does"
leaf_start lh fleet 10.3.0.2:8080 H # host H runs Leaf once: its cache holds wh
wh=$(leaf_worker lh) || fail "lh did not start: $(cat "$T/lh.log")"
wait_grep '^beat' "$T/lh.log" 10 || fail "lh wrote no heartbeat"
kill -TERM "${LEAF_PID[lh]}"
wait "${LEAF_PID[lh]}" || true
mv "$T/lh.ids" "$T/lh1.ids"
p=$(zk_free_port)
leaf_serve s "$p" fleet "127.0.0.1:$p" --slot-wait 60000
wait_held "$p" 30 || fail "s not ready: $(tail -n 3 "$T/s.log")"
ws=$(status_of "$p" .lease.worker)
fetch_loop "$p" "$T/s.ids"
wait_until 30 fetched "$T/s.ids" 10 || fail "s serves no IDs"

zk_stop 1
now_ms t_stop
l_before=$(wc -l <"$T/l.ids")
sleep $(((WIN + 2500) / 1000)).5 # let time pass: past s's safe window, the Leaf server issuing on
now_ms t_end
st_check "$T/s.ids.st" "$((t_stop + WIN + 200))" "$t_end" down
l_after=$(wc -l <"$T/l.ids")
((l_after > l_before + 1000)) || fail "the Leaf helper stopped issuing too ($l_before -> $l_after IDs)"
pass "ZooKeeper down: s (number $ws) stopped issuing within its ${WIN} ms window; the Leaf server (number $wl) issued $((l_after - l_before)) more IDs without a heartbeat"

# Leaf servers started while ZooKeeper is down: Curator's first call fails after
# its 10 s connection timeout, and the catch reads the cache
mv "$T/lh.log" "$T/lh1.log"
leaf_start lh fleet 10.3.0.2:8080 H
leaf_start ln fleet 10.3.0.3:8080 N
decided() { grepq -E '^(worker|refused)' "$T/$1.log"; }
wait_until 40 decided lh || fail "lh never started nor refused: $(cat "$T/lh.log")"
wait_until 40 decided ln || fail "ln never started nor refused: $(cat "$T/ln.log")"
[ "$(leaf_worker lh)" = "$wh" ] && leaf_from_cache lh || fail "lh did not start on its cached $wh: $(cat "$T/lh.log")"
grepq '^refused' "$T/ln.log" || fail "ln (no cache) started: $(cat "$T/ln.log")"
pass "ZooKeeper down: a Leaf server with a cache started on it ($wh), one without did not: $(grep -m1 '^refused' "$T/ln.log" | cut -c1-100)"

zk_start 1
zk_wait_serving 1
now_ms t_up
wait_held "$p" 40 || fail "s does not serve again after ZooKeeper came back: $(tail -n 2 "$T/s.log")"
now_ms t_held
[ "$(status_of "$p" .lease.worker)" = "$ws" ] || fail "s took number $(status_of "$p" .lease.worker), not its own $ws"
grepq 'may still be alive' "$T/s.log" && fail "s waited for a heartbeat to age on its own node: $(grep -m1 'may still be alive' "$T/s.log")"
wait_until 30 fetched "$T/s.ids" 10 "$t_held" || fail "s serves no IDs once it holds again"
fetch_stop
kill -TERM "${LEAF_PID[l]}" "${LEAF_PID[lh]}"
wait "${LEAF_PID[l]}" || true
wait "${LEAF_PID[lh]}" || true
grepq '^beat' "$T/lh.log" && fail "lh wrote a heartbeat from its cache"
[ "$(ids_workers "$T/s.ids")" = "$ws" ] || fail "s's IDs carry workers $(ids_workers "$T/s.ids" | tr '\n' ' ')"
ids_apart "$T/s.ids" "$T/l.ids" "$T/lh1.ids" "$T/lh.ids"
pass "ZooKeeper back: s serves its number $ws again $((t_held - t_up)) ms later, without waiting for a heartbeat to age; $(cat "$T"/{s,l,lh1,lh}.ids | wc -l) IDs, no two issuers on one number at once"
