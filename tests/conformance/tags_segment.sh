#!/usr/bin/env bash
# labels: counters
# timeout.local: 240
# timeout.zk: 300
# fixtures.zk: zk
# Segment IDs across 4 servers on one store (docs/guarantees.md promise 3), local: (one data
# directory) or zk:// (one ZooKeeper), from IK_STORE: 4 daemons serve one segment
# tag concurrently, over 2,000,000 IDs in all: no duplicate, and each server's IDs
# increase. Each server is asked by one `idkeeper next` stream (500,000 IDs in
# batches, in order: must increase) and, at the same time, by hammer on the Leaf
# route (/api/segment/get/TAG) from 8 connections; every ID of every client goes
# into the uniqueness check. A small step makes the servers take many blocks from
# the store while they race (on zk://, version-checked setData on one node, retried
# on ZBADVERSION); an independent client reads the store's max_id (conf.sh).
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_counters
source "$IK_SRC/tests/tools/counters.sh"

declare -A NEXT_PID
fleet 4
add_tag s1 clicks segment ',"start":1,"step":500'

for s in s1 s2 s3 s4; do
  hammer "h$s" "$(url $s)/api/segment/get/clicks" 8 6
  "$IK_BIN" next --server "$(url $s)" --count 500000 --batch 2000 segment clicks >"$T/n$s.ids" 2>"$T/n$s.err" &
  NEXT_PID[$s]=$!
  IK_PIDS+=($!)
done
for s in s1 s2 s3 s4; do
  wait "${NEXT_PID[$s]}" || fail "next from $s failed: $(cat "$T/n$s.err")"
done
for s in s1 s2 s3 s4; do
  hammer_wait "h$s"
  [ "$(hammer_field "h$s" errors)" = 0 ] || fail "$s: hammer errors: $(cat "$T/h$s.hammer")"
done

total=$(cat "$T"/ns?.ids "$T"/hs?.ids | wc -l)
[ "$total" -ge 2000000 ] || fail "only $total IDs"
"${IDCHECK[@]}" unique "$T"/ns?.ids "$T"/hs?.ids >&2 || fail "duplicate segment IDs"
"${IDCHECK[@]}" increasing "$T"/ns?.ids >&2 || fail "a server's IDs do not increase"
pass "$total segment IDs from 4 servers: no duplicate; each server's next stream increases"

# each hammer connection saw increasing IDs too: hammer writes answers in arrival
# order, so check the Leaf answers of a one-connection run
hammer one "$(url s3)/api/segment/get/clicks" 1 1
hammer_wait one
"${IDCHECK[@]}" increasing "$T/one.ids" >&2 || fail "one connection's Leaf IDs do not increase"
pass "Leaf route on one connection: $(wc -l <"$T/one.ids") increasing IDs"

# the store is above everything handed out; /v1/status shows the tag's blocks; the
# store, read without idkeeper (conf_counter_raw), says the same as the tags API
max_id=$(tag_field s1 clicks max_id)
raw=$(conf_counter_raw "$DATA" clicks)
[ "$raw" = "$max_id" ] || fail "the store says $raw (read without idkeeper), the tags API says $max_id"
top=$(cat "$T"/ns?.ids "$T"/hs?.ids "$T/one.ids" | awk '$1 + 0 > m { m = $1 + 0 } END { printf "%d", m }')
[ "$top" -lt "$max_id" ] || fail "ID $top handed out, store max_id only $max_id"
st=$(curl -fsS "$(url s2)/v1/status")
jq -e '.tags | map(select(.tag == "clicks" and .kind == "segment")) | length == 1' <<<"$st" >/dev/null ||
  fail "status lacks the tag: $(jq -c .tags <<<"$st")"
jq -e '.tags[0].step > 500' <<<"$st" >/dev/null || fail "block size did not grow: $(jq -c .tags <<<"$st")"
pass "max_id $max_id (the store says the same) above every ID ($top); status: $(jq -c '.tags[0]' <<<"$st")"
m=$(curl -fsS "$(url s2)/metrics" | awk '$1=="ik_segment_ids_total"{print $2}')
[ "$m" -ge 500000 ] || fail "s2 ik_segment_ids_total $m"

for s in s1 s2 s3 s4; do stop_clean $s; done
pass "clean exits"
