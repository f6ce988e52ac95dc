#!/usr/bin/env bash
# labels: zk counters
# timeout: 240
# More writes in doubt at one version than the doubt table holds
# (IK__ZK_DOUBT_WRITES, 8; docs/zookeeper.md, "A write whose answer is lost"). A
# fault proxy between the server and ZooKeeper loses 8 sequence writes in a row
# before they reach ZooKeeper (each a connection loss: each is in doubt, all at one
# version), then the answer of the next one (it lands). Before the fix the ninth
# write was sent and never recorded: a later advance settled the doubt as "did
# not land", and its IDs were a gap nobody logged (IDs 1-30, a 503, then 41-70).
# Now a write is recorded before it is sent, and one that does not fit is not
# sent. At the end, the IDs answered plus the logged gaps are exactly one run from
# the tag's start to the store's max_id, and the server serves again.
source "$(dirname "$0")/lib.sh"
IK_STORE=zk
source "$IK_SRC/tests/tools/counters.sh"

zk_proxy_start
PORT[s1]=$(free_port)
start_server s1 "${PORT[s1]}" --coord "zk://127.0.0.1:$PP/$ZK_CHROOT" --threads 1 --quiet \
  --zk-session-timeout 10000
wait_ready "${PORT[s1]}" || fail "s1 not ready: $(tail -n 5 "$T/s1.log")"
add_tag s1 orders sequence ',"start":1'

: >"$T/ids"
# get: one request for 10 IDs; 0 and the IDs appended to $T/ids, or 1
get() {
  local body
  body=$(curl -fsS -m 60 "$(url s1)/v1/sequence/orders?count=10&format=text" 2>/dev/null) || return 1
  echo "$body" | tr -s ' ,\n' '\n' | sed '/^$/d' >>"$T/ids"
}
for i in 1 2 3; do get || fail "request $i failed before any fault"; done

proxy request-lost 8 since= then answer-lost 1
t0=$SECONDS
fails=0
while ! grep -q '^answer-lost' "$T/proxy.log"; do
  ((SECONDS - t0 < 120)) || fail "the proxy lost $(grep -c request-lost "$T/proxy.log") requests and no answer in 120 s"
  get || fails=$((fails + 1))
done
log "8 requests lost, then an answer: $fails requests failed meanwhile"
ok=0
t0=$SECONDS
while ((ok < 3)); do
  ((SECONDS - t0 < 60)) || fail "s1 does not serve again 60 s after the faults: $(grep 'tag ' "$T/s1.log" | tail -n 3)"
  if get; then ok=$((ok + 1)); else sleep 0.2; fi
done

end=$(counter_raw orders | cut -d' ' -f1)
{ grep -ho 'tag gap tag=orders first=[0-9]* count=[0-9]*' "$T/s1.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
grep -h 'tag doubt\|tag gap' "$T/s1.log" >&2 || true
"${IDCHECK[@]}" contiguous 1 "$end" "$T/ids" "$T/gap.ids" >&2 ||
  fail "answered IDs ($(wc -l <"$T/ids")) and logged gaps ($(wc -l <"$T/gap.ids")) are not exactly 1..$((end - 1))"
pass "$(wc -l <"$T/ids") IDs answered and $(wc -l <"$T/gap.ids") in logged gaps are exactly 1..$((end - 1)) after 8 lost requests and a lost answer"
stop_clean s1
pass "clean exit"
