#!/usr/bin/env bash
# labels: redis counters
# timeout: 150
# fixtures: redis
# Sequence writes in doubt on redis:// (docs/redis.md, "A lost answer"): one server
# talks to Redis through tests/interop/fault_proxy.py, which loses, for the tag's
# advances only (their bytes hold the tag's writer key, /tagw/q/), either the answer
# (answer-lost: Redis ran the write, the server never hears of it) or the request
# itself (request-lost: Redis never sees it). Each is a 503 to its client and a
# doubt in the server; whether Redis recorded it is read from the counter key.
#
#   in a row     two, then three, advances of the tag in doubt one after the other,
#                in every mix of recorded and not: the next advance that runs
#                settles them all at once, and every recorded range is logged as
#                "tag gap tag=q first=A count=K" with its exact first ID, before
#                the next ID is answered. (It once settled only the newest doubt
#                against the last write's number: a recorded range behind it went
#                unlogged, as in t_redis_kill9 under ASan.)
#   too many     17 recorded advances in a row with their answers lost: the server
#                keeps 16 doubts of a tag, so the oldest is logged as
#                "tag gap tag=q first=? count=2" (its place is not known any more),
#                the 16 others with their exact first IDs.
# At the end the IDs answered, the logged gaps and the one unplaced range are
# exactly the tag's run from 1: no duplicate, no unlogged gap, no gap logged twice.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_start
DATA=$(redis_uri data)
redis_proxy_start "$REDIS_PORT"
VIA=$(redis_uri data "$PP")
COUNTER=${REDIS_PREFIX}data/q # the counter key of tag q in app default
"$IK_BIN" tags add q --kind sequence --start 1 --coord "$DATA" >/dev/null
serve_on s1 --coord "$VIA" --threads 1 --quiet || fail "s1 did not start: $(tail -n 5 "$T/s1.log")"
U=http://127.0.0.1:$PORT
: >"$T/answered.ids"
: >"$T/unplaced.ids"

# sid: one sequence ID, also kept in answered.ids.
sid() {
  local id
  id=$(curl -fsS --max-time 30 "$U/v1/sequence/q?format=text") ||
    fail "no sequence ID: $(tail -n 5 "$T/s1.log")"
  echo "$id" >>"$T/answered.ids"
  echo "$id"
}

counter() { rcli GET "$COUNTER"; }

# lose KIND K: a request for K IDs whose advance the proxy loses (KIND answer-lost
# or request-lost): it must answer 503, and Redis's counter must have moved by K
# (recorded) or not at all (not recorded).
LOST=0
lose() {
  local kind=$1 k=$2 c0 c1 code want
  c0=$(counter)
  proxy "$kind" 1 /tagw/q/
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 "$U/v1/sequence/q?count=$k&format=text" || true)
  LOST=$((LOST + 1))
  [ "$(grep -c -- '-lost$' "$T/proxy.log")" = "$LOST" ] || fail "the proxy did not catch the advance ($kind)"
  [ "$code" = 503 ] || fail "a request whose advance was lost ($kind) answered HTTP $code, not 503"
  c1=$(counter)
  want=$c0
  [ "$kind" = request-lost ] || want=$((c0 + k))
  [ "$c1" = "$want" ] || fail "$kind: Redis's counter went from $c0 to $c1, want $want"
}

# gaps_logged LINE...: every LINE ("tag gap tag=q first=A count=K") is in s1's log.
gaps_logged() {
  local l
  for l in "$@"; do grep -qF "$l why=answer_lost (app" "$T/s1.log" || return 1; done
}

# in_a_row KIND:K...: the advances of KIND (answer-lost, request-lost) for K IDs, one
# after the other; then the next ID must follow the last recorded range, and every
# recorded range must be logged as a gap by then.
in_a_row() {
  local n0 next step kind k id l want=() settled0 settled1 lost_req=0
  n0=$(sid)
  next=$((n0 + 1))
  settled0=$(grep -c 'tag doubt settled tag=q ' "$T/s1.log" || true)
  for step in "$@"; do
    kind=${step%:*}
    k=${step#*:}
    lose "$kind" "$k"
    if [ "$kind" = answer-lost ]; then
      want+=("tag gap tag=q first=$next count=$k")
      next=$((next + k))
    else
      lost_req=$((lost_req + 1))
    fi
  done
  id=$(sid)
  [ "$id" = "$next" ] || fail "$*: after $n0 the next ID is $id, want $next"
  if ! gaps_logged "${want[@]}"; then
    id=$(sid) # was it only late?
    gaps_logged "${want[@]}" &&
      fail "$*: the recorded ranges were logged only one advance later, not by the advance that settled the doubts: $(grep -h 'tag gap\|tag doubt' "$T/s1.log" | tail -n 4)"
    for l in "${want[@]}"; do
      grep -qF "$l why=answer_lost (app" "$T/s1.log" ||
        fail "$*: $l: a write whose answer was lost recorded these IDs, they were never answered, and no log line names them (after $n0 the next IDs were $next and $id); the log says: $(grep -h 'tag gap\|tag doubt' "$T/s1.log" | tail -n 4)"
    done
  fi
  settled1=$(grep -c 'tag doubt settled tag=q ' "$T/s1.log" || true)
  [ $((settled1 - settled0)) = "$lost_req" ] ||
    fail "$*: $((settled1 - settled0)) doubts settled as not recorded, want $lost_req: $(grep -h 'tag doubt' "$T/s1.log" | tail -n 4)"
  pass "$*: settled together; recorded ranges logged at their first IDs, the next ID $id"
}

in_a_row answer-lost:5 request-lost:3
in_a_row answer-lost:5 answer-lost:3
in_a_row request-lost:5 answer-lost:3
in_a_row request-lost:5 request-lost:3
in_a_row answer-lost:4 request-lost:2 answer-lost:3

# too many doubts: 17 recorded advances of 2 IDs in a row, answers lost
n0=$(sid)
for i in $(seq 1 17); do lose answer-lost 2; done
grep -qF "tag gap tag=q first=? count=2 " "$T/s1.log" ||
  fail "17 doubts in a row: no 'first=?' line for the oldest: $(grep -h 'tag gap' "$T/s1.log" | tail -n 3)"
echo $((n0 + 1)) >>"$T/unplaced.ids"
echo $((n0 + 2)) >>"$T/unplaced.ids"
id=$(sid)
[ "$id" = $((n0 + 35)) ] || fail "after $n0 and 17 recorded advances of 2, the next ID is $id"
for i in $(seq 2 17); do
  grep -qF "tag gap tag=q first=$((n0 + 2 * i - 1)) count=2 why=answer_lost (app" "$T/s1.log" ||
    fail "17 doubts in a row: the range of the advance $i ($((n0 + 2 * i - 1))..) is not logged"
done
pass "17 doubts in a row: the oldest logged as first=? count=2, the 16 others at their first IDs"

end=$(rcli GET "$COUNTER")
{ grep -ho 'tag gap tag=q first=[0-9]* count=[0-9]*' "$T/s1.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' |
  while read -r a k; do seq "$a" $((a + k - 1)); done >"$T/gaps.ids"
python3 "$IK_SRC/tests/tools/idcheck.py" contiguous 1 $((end + 1)) "$T/answered.ids" "$T/gaps.ids" "$T/unplaced.ids" >&2 ||
  fail "the IDs answered, the logged gaps and the unplaced range are not the tag's run 1..$end"
pass "$(wc -l <"$T/answered.ids") IDs answered, $(wc -l <"$T/gaps.ids") in logged gaps, 2 unplaced: exactly 1..$end"
# docs/guarantees.md promise 4: every gap logged is counted in /metrics, by its cause
metric() { curl -s -m 5 "$U/metrics" | awk -v k="ik_sequence_gap_ids_total{tag=\"q\",why=\"$1\"}" '$1 == k {print $2}'; }
[ "$(metric answer_lost)" = "$(wc -l <"$T/gaps.ids")" ] ||
  fail "ik_sequence_gap_ids_total answer_lost is '$(metric answer_lost)', the log's exact gaps hold $(wc -l <"$T/gaps.ids") IDs"
[ "$(metric maybe_recorded)" = 2 ] || fail "ik_sequence_gap_ids_total maybe_recorded is '$(metric maybe_recorded)', not the 2 unplaced IDs"
pass "/metrics counts the gaps as logged: answer_lost $(metric answer_lost), maybe_recorded 2"
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || fail "s1 did not exit 0 on SIGTERM"
