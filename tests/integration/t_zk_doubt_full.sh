#!/usr/bin/env bash
# labels: zk counters
# timeout: 420
# Writes in doubt at one version, as many as the doubt engine keeps of a lane
# (backend.h's IK__DOUBT_LANE_MAX, 16; docs/zookeeper.md, "A write whose answer is
# lost"), through a fault proxy between the server and ZooKeeper:
#   1. one request: 8 sends of its sequence write are lost before they reach
#      ZooKeeper (each a connection loss, the node still at its version), then the
#      answer of the next one (it lands). The call sends its one write again as it
#      was each time, and its read finds it landed: handed out. (Before the doubt
#      engine, the ninth write was sent and never recorded: a later advance settled
#      the doubt as "did not land", and its IDs were a gap nobody logged.)
#   2. 16 requests each fail in doubt (every send lost for the call's whole budget):
#      16 doubts kept at one version. Then the answer of the next send is lost: the
#      next request carries the 16, sends the newest again as it was (not a new
#      write), and its read finds that one landed: one gap (why=answer_lost), 15
#      "settled", and the request is answered.
# After each, the IDs answered plus the logged gaps are exactly one run from the
# tag's start to the store's max_id, and the server serves again.
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
# get [NAME]: one request for 10 IDs (to s1); 0 and the IDs appended to $T/ids, or 1
get() {
  local body
  body=$(curl -fsS -m 60 "$(url "${1:-s1}")/v1/sequence/orders?count=10&format=text" 2>/dev/null) || return 1
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

# one_run WHAT: the IDs answered plus the gaps logged are exactly 1..max_id-1
one_run() {
  local end
  end=$(counter_raw orders | cut -d' ' -f1)
  { grep -ho 'tag gap tag=orders first=[0-9]* count=[0-9]*' "$T"/s*.log || true; } |
    sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
  grep -h 'tag doubt\|tag gap' "$T"/s*.log >&2 || true
  "${IDCHECK[@]}" contiguous 1 "$end" "$T/ids" "$T/gap.ids" >&2 ||
    fail "$1: answered IDs ($(wc -l <"$T/ids")) and logged gaps ($(wc -l <"$T/gap.ids")) are not exactly 1..$((end - 1))"
  pass "$1: $(wc -l <"$T/ids") IDs answered and $(wc -l <"$T/gap.ids") in logged gaps are exactly 1..$((end - 1))"
}
one_run "8 lost requests and a lost answer in one call"

stop_clean s1

# 2. eight requests in doubt, each past its call's budget (3 to 6 s: a short session)
PORT[s2]=$(free_port)
start_server s2 "${PORT[s2]}" --coord "zk://127.0.0.1:$PP/$ZK_CHROOT" --threads 1 --quiet \
  --zk-session-timeout 3000
wait_ready "${PORT[s2]}" || fail "s2 not ready: $(tail -n 5 "$T/s2.log")"
get s2 || fail "s2: a request failed before any fault"
proxy request-lost 100000 since=
doubts=0
t0=$SECONDS
while ((doubts < 16)); do
  ((SECONDS - t0 < 240)) || fail "only $doubts requests failed in doubt in 240 s"
  code=$(curl -sS -m 60 -o "$T/body" -w '%{http_code}' "$(url s2)/v1/sequence/orders?count=10&format=text" 2>/dev/null) || true
  [[ $code == 200 ]] && fail "a request was answered while every write is lost: $(cat "$T/body")"
  if [[ $code == 503 ]] && grep -q 'may or may not have recorded' "$T/body"; then doubts=$((doubts + 1)); fi
done
grep -q 'tag gap\|tag doubt settled tag=orders ' "$T/s2.log" &&
  fail "a doubt was decided while every write was lost: $(grep 'tag ' "$T/s2.log" | tail -n 3)"
log "16 requests failed in doubt, all at one version"
proxy answer-lost 1 since=
get s2 || fail "the request carrying 16 doubts failed: $(grep 'tag ' "$T/s2.log" | tail -n 3)"
grep -q '^answer-lost' <(tail -n 1 "$T/proxy.log") || fail "no answer was lost: $(tail -n 3 "$T/proxy.log")"
gaps=$(grep -c 'tag gap tag=orders first=[0-9]* count=10 why=answer_lost' "$T/s2.log" || true)
settled=$(grep -c 'tag doubt settled tag=orders first=[0-9]* count=10 .*did not land' "$T/s2.log" || true)
((gaps == 1 && settled == 15)) ||
  fail "the 16 doubts at one version: $gaps gaps and $settled settled, not 1 and 15: $(grep 'tag ' "$T/s2.log")"
grep -q 'first=?' "$T/s2.log" && fail "a doubt was logged without its place: $(grep 'first=?' "$T/s2.log")"
for i in 1 2; do get s2 || fail "request $i after the faults failed"; done
one_run "16 requests in doubt, then a lost answer"
stop_clean s2
pass "clean exit"
