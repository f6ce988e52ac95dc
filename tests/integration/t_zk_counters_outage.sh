#!/usr/bin/env bash
# labels: zk counters release
# timeout: 240
# ZooKeeper stopped (kill -9) and started again during a run (docs/zookeeper.md, "Tags"):
# segment IDs keep coming from the two blocks in memory without a single error;
# sequence requests get 503 while ZooKeeper is down and 200 again once it is back,
# without a restart of the daemon.
#
# Sequence IDs stay one run: a commit in flight when ZooKeeper died has an unknown
# outcome. The backend settles it by reading the node once connected again (in the
# same call if ZooKeeper is back within the session timeout, else at the next
# commit of the tag): if the write did land, its range is a gap that the daemon
# reports on stderr as "tag gap tag=T first=A count=K", never hands out, and never
# hands out twice. So: the IDs answered plus the logged gaps are exactly START..END-1.
source "$(dirname "$0")/lib.sh"
IK_STORE=zk
source "$IK_SRC/tests/tools/counters.sh"

fleet 1
U=$(url s1)
add_tag s1 seg segment ',"step":400000'
add_tag s1 seq sequence ',"start":1'

# warm up: the first block, then the preloaded second one (after 10% of the first)
"$IK_BIN" next --server "$U" --count 50000 --batch 1000 segment seg >"$T/warm.ids"
for _ in $(seq 50); do
  [ "$(status_of "${PORT[s1]}" '.tags[0].next_block')" != null ] && break
  sleep 0.1
done
[ "$(status_of "${PORT[s1]}" '.tags[0].next_block')" != null ] || fail "no preloaded block"
curl -fsS "$U/v1/sequence/seq?count=10&format=text" >"$T/seq.ids"

# the sequence probe: a request every 100 ms until $T/probe.stop; IDs to seq.ids,
# "sent_unix_ms status" lines to seq.st (lib.sh's poll)
poll "$T/seq.ids" "$T/seq.st" "$U/v1/sequence/seq?count=3&format=text" "$T/probe.stop" 0.1 15 now_ms &
probe=$!
hammer seg "$U/api/segment/get/seg" 1 20

flowing() { probe_answered seq 10 && metric_at_least "${PORT[s1]}" ik_segment_ids_total 51000; }
wait_until 30 flowing || fail "the probe and the hammer get no IDs"
now_ms down_ms
zk_stop 1
sleep 6 # let time pass: the outage outlasts the session (the preloaded block serves on)
now_ms up_ms
zk_start 1
zk_wait_serving 1
now_ms serving_ms
log "ZooKeeper down from $down_ms to $up_ms, serving again at $serving_ms"
hammer_wait seg
# the probe runs on until it has answers to judge past 5 s after ZooKeeper serves
# again (the "200 again" window below)
wait_until 60 probe_answered seq 10 $((serving_ms + 5000)) || fail "the probe got no IDs 5 s after ZooKeeper's return"
touch "$T/probe.stop"
wait $probe
now_ms end_ms

[ "$(hammer_field seg errors)" = 0 ] || fail "segment errors while ZooKeeper was away: $(cat "$T/seg.hammer")"
"${IDCHECK[@]}" unique "$T/warm.ids" "$T/seg.ids" >&2 || fail "duplicate segment IDs"
"${IDCHECK[@]}" increasing "$T/seg.ids" >&2 || fail "segment IDs do not increase"
pass "segment: $(hammer_field seg ok) requests through the outage, no error"

st_check "$T/seq.st" $((down_ms + 300)) $((up_ms - 100)) down
st_check "$T/seq.st" $((serving_ms + 5000)) $((end_ms - 200)) ok
pass "sequence: 503 while ZooKeeper was down, 200 again within 5 s of its return"

# the answered IDs and the gaps the daemon reported make one run
end=$(tag_field s1 seq max_id)
{ grep -ho 'tag gap tag=seq first=[0-9]* count=[0-9]*' "$T/s1.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
"${IDCHECK[@]}" contiguous 1 "$end" "$T/seq.ids" "$T/gap.ids" >&2 || fail "sequence IDs and reported gaps are not one run"
pass "sequence: $(wc -l <"$T/seq.ids") IDs answered and $(wc -l <"$T/gap.ids") in reported gaps are exactly 1..$((end - 1))"

stop_clean s1
pass "clean exit"
