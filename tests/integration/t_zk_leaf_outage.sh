#!/usr/bin/env bash
# labels: zk release
# timeout: 180
# ZooKeeper dies under a Meituan Leaf fleet (docs/zookeeper.md, "A Leaf fleet"): the
# idkeeper server, unlike Leaf, stops issuing within its safe window (2/3 of the
# session timeout from its last answered heartbeat, docs/guarantees.md promise 10),
# while the Leaf server (tests/interop/leaf_helper.py) only logs its failed
# heartbeats and keeps issuing, as Leaf does. ZooKeeper back: the idkeeper server
# takes its number again by the take-over rule and serves; no ID twice in all of it.
# Its own ZooKeeper: this test kills it.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
source "$(dirname "$0")/leaf.sh"
ZK_SESSION_MS=3000 # safe window 2000 ms
WIN=2000

leaf_start l fleet 10.3.0.1:8080
wl=$(leaf_worker l) || fail "l did not start: $(cat "$T/l.log")"
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

zk_start 1
zk_wait_serving 1
now_ms t_up
wait_held "$p" 40 || fail "s does not serve again after ZooKeeper came back: $(tail -n 2 "$T/s.log")"
now_ms t_held
[ "$(status_of "$p" .lease.worker)" = "$ws" ] || fail "s took number $(status_of "$p" .lease.worker), not its own $ws"
wait_until 30 fetched "$T/s.ids" 10 "$t_held" || fail "s serves no IDs once it holds again"
fetch_stop
kill -TERM "${LEAF_PID[l]}"
wait "${LEAF_PID[l]}" || true
[ "$(ids_workers "$T/s.ids")" = "$ws" ] || fail "s's IDs carry workers $(ids_workers "$T/s.ids" | tr '\n' ' ')"
cat "$T/s.ids" "$T/l.ids" >"$T/all.ids"
assert_unique "$T/all.ids"
pass "ZooKeeper back: s serves number $ws again $((t_held - t_up)) ms later; $(wc -l <"$T/all.ids") IDs, none twice"
