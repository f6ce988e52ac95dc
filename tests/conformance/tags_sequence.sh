#!/usr/bin/env bash
# labels: counters
# timeout.local: 180
# timeout.zk: 240
# fixtures.zk: zk
# Sequence IDs across 4 servers on one store (docs/guarantees.md promise 4), local: (one data
# directory) or zk:// (one ZooKeeper), from IK_STORE: 4 daemons, 32 keep-alive
# connections each (hammer) for 10 s, one tag. The union of all IDs is exactly one
# contiguous run from the tag's start to the store's max_id: no duplicate, no gap.
# On zk:// the four group-commit writers race on one version-checked node, so most
# commits meet ZBADVERSION at least once on the way, and the node's first 8 bytes
# are max_id as Curator's DistributedAtomicLong encodes it. Every range a server
# logged (log_sequence_commits) was answered.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_counters
source "$IK_SRC/tests/tools/counters.sh"

export IDKEEPER_LOG_SEQUENCE_COMMITS=1
fleet 4
add_tag s1 orders sequence ',"start":1000'
[ "$(tag_field s3 orders start)" = 1000 ] || fail "start not 1000"

for s in s1 s2 s3 s4; do
  hammer "h$s" "$(url $s)/v1/sequence/orders?count=1&format=text" 32 10
done
for s in s1 s2 s3 s4; do hammer_wait "h$s"; done
for s in s1 s2 s3 s4; do
  [ "$(hammer_field "h$s" errors)" = 0 ] || fail "$s: errors: $(cat "$T/h$s.hammer")"
  [ "$(hammer_field "h$s" ok)" -gt 100 ] || fail "$s answered too little: $(cat "$T/h$s.hammer")"
done

end=$(tag_field s2 orders max_id)
"${IDCHECK[@]}" contiguous 1000 "$end" "$T"/hs?.ids >&2 || fail "sequence IDs are not one contiguous run"
total=$(cat "$T"/hs?.ids | wc -l)
pass "$total sequence IDs from 4 servers x 32 connections: exactly 1000..$((end - 1))"

# every range handed out was logged first, and logged ranges are what was answered
for s in s1 s2 s3 s4; do
  logged=$(awk '/sequence tag=orders /{for(i=1;i<=NF;i++) if ($i ~ /^count=/) {sub("count=","",$i); n+=$i}} END{print n+0}' "$T/$s.log")
  got=$(wc -l <"$T/h$s.ids")
  [ "$logged" = "$got" ] || fail "$s logged $logged IDs, its clients got $got"
  m=$(curl -fsS "$(url $s)/metrics" | awk '$1=="ik_sequence_ids_total"{print $2}')
  [ "$m" = "$got" ] || fail "$s: ik_sequence_ids_total $m, clients got $got"
done
pass "each server's commit log and ik_sequence_ids_total match what its clients received"

# an independent client reads the store (on zk:// the node's first 8 bytes, big-endian)
raw=$(conf_counter_raw "$DATA" orders)
[ "$raw" = "$end" ] || fail "the store says $raw (read without idkeeper), the tag's max_id is $end"
pass "the store, read without idkeeper: max_id $raw"

# a sequence request of count=N answers N consecutive IDs
ids=$(curl -fsS "$(url s3)/v1/sequence/orders?count=500" | jq -r '.ids[]')
first=$(head -n 1 <<<"$ids"); last=$(tail -n 1 <<<"$ids")
[ "$(wc -l <<<"$ids")" = 500 ] && [ $((last - first)) = 499 ] && [ "$first" = "$end" ] ||
  fail "count=500 after the run: $first..$last, want $end..$((end + 499))"
pass "count=500 answers $first..$last, right after the run"

for s in s1 s2 s3 s4; do stop_clean $s; done
pass "clean exits"
