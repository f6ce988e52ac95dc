#!/usr/bin/env bash
# labels: etcd counters
# timeout: 180
# A lane's writer key that is not a ring of write ids (docs/etcd.md, "Key layout":
# refused where idkeeper must read it): a sequence write lands and its answer is lost
# (the fault proxy holds it), then the lane's writer key, the one key that could say
# where the write landed, is overwritten with something else. The doubt must then be
# settled as unknown, a gap logged and counted (docs/sequence.md, "A doubt at a
# stop"), never as "not landed": that would leave the landed write's IDs neither
# answered nor in a logged gap. At the end (tests/tools/idcheck.py gaps) every ID
# from 1 to the store's max_id was answered once or lies in a logged gap.
IK_STORE=etcd
source "$(dirname "$0")/lib.sh"
source "$IK_SRC/tests/conformance/conf.sh"
conf_store_start
source "$IK_SRC/tests/conformance/doubt_cases.sh"
doubt_setup

doubt_serve s1
conf_fault_answer_lost
doubt_get s1 10 &
g=$!
wait_until 60 doubt_stored 16 || fail "the write whose answer is lost never reached the store: max_id $(conf_counter_raw "$DATA" orders)"
WK=$(_conf_etcd_prefix "$DATA")/idkeeper/default/tagw/orders/
n=0
for k in $(ectl get --prefix --keys-only "$WK" | grep .); do
  ectl put "$k" 'not a ring' >/dev/null
  n=$((n + 1))
done
((n > 0)) || fail "no writer key under $WK"
proxy down # no new connection settles it within the call: the request fails
wait $g && fail "s1 answered 10 IDs whose answer the store never sent"
proxy up
log "the write is in the store (max_id 16), its answer lost; $n writer keys now hold 'not a ring'"
rc=0
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || rc=$?
((rc == 0)) || fail "s1 exited $rc after SIGTERM: $(tail -n 8 "$T/s1.log")"
grep -qE 'runtime error|Sanitizer' "$T/s1.log" && fail "s1: sanitizer report: $(cat "$T/s1.log")"
grep 'tag gap tag=orders' "$T/s1.log" >"$T/s1.gap" ||
  fail "the landed write was settled with no gap logged, though its lane's writer key holds 'not a ring': $(grep -E 'tag orders|doubt|settled' "$T/s1.log" | tr '\n' '|')"
end=$(conf_counter_raw "$DATA" orders)
"${IDCHECK[@]}" gaps 1 "$end" orders "$T/ids" "$T/s1.log" >"$T/check" || fail "the IDs and the logged gaps disagree: $(cat "$T/check")"
pass "a writer key that is not a ring: the doubt logged as a gap ($(cat "$T/s1.gap")); $(cat "$T/check")"
