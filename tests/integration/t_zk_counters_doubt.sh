#!/usr/bin/env bash
# labels: zk counters
# timeout: 300
# Sequence writes whose answers are lost (docs/zookeeper.md, "Tags: a write whose
# answer is lost"), with faults injected by a TCP proxy between one server and
# ZooKeeper (tests/interop/fault_proxy.py), while a second server, connected
# directly, commits to the same tag all along (a request every 20 ms: enough to move
# the node's version on many times while s1 is cut off, few enough that s1, slowed
# by the proxy, does not lose most races for the node).
#
#   1. blackhole: s1's requests still reach ZooKeeper and are applied, but no answer
#      comes back. Its commit in flight lands; after the client's receive timeout
#      (2/3 of 4 s) the connection is declared lost and s1 reconnects through the
#      proxy. By then s2 has written the node many times, so the version alone
#      cannot tell whether s1's write landed: the writer table in the node (s1's
#      nonce and the count of that write) does. s1 finds its write there and hands
#      the range out: no 503, no gap ("tag doubt settled ... landed").
#   2. blackhole, then down for 10 s (longer than the session and than the call's
#      budget of twice the session timeout): s1's commit lands but cannot be settled
#      in the call, so its requests get 503 (IK_EINDOUBT) and the range is never
#      handed out. The next commit after the proxy is up (on a new session: the old
#      one expired meanwhile) reads the node, finds the write landed and logs the
#      range as a gap ("tag gap tag=T first=A count=K").
#
# At the end, the IDs answered by both servers plus the logged gaps are exactly one
# run from the tag's start: no duplicate, no unexplained hole.
source "$(dirname "$0")/lib.sh"
IK_STORE=zk
source "$IK_SRC/tests/tools/counters.sh"

zk_proxy_start

export IDKEEPER_LOG_SEQUENCE_COMMITS=1
PORT[s1]=$(free_port)
PORT[s2]=$(free_port)
start_server s1 "${PORT[s1]}" --coord "zk://127.0.0.1:$PP/$ZK_CHROOT" --threads 1 --quiet \
  --zk-session-timeout "$ZK_SESSION_MS"
start_server s2 "${PORT[s2]}" --coord "$DATA" --threads 1 --quiet --zk-session-timeout "$ZK_SESSION_MS"
for s in s1 s2; do wait_ready "${PORT[$s]}" || fail "$s not ready: $(tail -n 5 "$T/$s.log")"; done
add_tag s2 orders sequence ',"start":1'

# trickle NAME MS: a sequence request to s2 every MS ms until $T/NAME.stop; IDs to
# $T/NAME.t.ids, failures counted in $T/NAME.t.err
declare -A TRICKLE
trickle() {
  local pause
  pause=$(printf '0.%03d' "$2")
  (
    : >"$T/$1.t.ids"
    while [ ! -e "$T/$1.stop" ]; do
      curl -fsS -m 10 "$(url s2)/v1/sequence/orders?format=text" >>"$T/$1.t.ids" 2>/dev/null || echo x >>"$T/$1.t.err"
      echo >>"$T/$1.t.ids"
      sleep "$pause"
    done
  ) &
  TRICKLE[$1]=$!
}
trickle_stop() {
  touch "$T/$1.stop"
  wait "${TRICKLE[$1]}"
  sed -i '/^$/d' "$T/$1.t.ids"
  [ ! -s "$T/$1.t.err" ] || fail "s2 failed $(wc -l <"$T/$1.t.err") requests"
}

# round 1: blackhole only, s2 committing every 500 ms. The blackhole may catch a
# read of s1's instead of a write, or a write that lost its race to s2 (ZBADVERSION,
# answer lost too: it "did not land", settled just as well): try again, up to 5
# times, until it catches a write that landed.
# flowing MARK: s1 has answered 100 sequence IDs more than MARK
flowing() { metric_at_least "${PORT[s1]}" ik_sequence_ids_total $(($1 + 100)); }
landed=
for k in 1 2 3 4 5; do
  mark=$(metric_of "${PORT[s1]}" ik_sequence_ids_total)
  hammer "h1a$k" "$(url s1)/v1/sequence/orders?count=2&format=text" 16 6
  trickle "a$k" 500
  wait_until 30 flowing "${mark:-0}" || fail "round 1: s1 answers no traffic"
  proxy blackhole
  log "blackhole on s1's connection"
  hammer_wait "h1a$k"
  trickle_stop "a$k"
  [ "$(hammer_field "h1a$k" errors)" = 0 ] ||
    fail "s1 failed requests although every doubt could be settled: $(cat "$T/h1a$k.hammer")"
  ! grep -q "tag gap" "$T/s1.log" || fail "a gap in round 1: $(grep 'tag gap' "$T/s1.log")"
  landed=$(grep "tag doubt settled tag=orders .* landed: handed out" "$T/s1.log" | tail -n 1 || true)
  [ -n "$landed" ] && break
done
[ -n "$landed" ] || fail "5 blackholes caught no write of s1 that landed: $(grep -h 'tag ' "$T/s1.log")"
log "s1: $landed"
[[ $landed =~ ^20[0-9-]+T[0-9:.]+Z\ idkeeper\[[0-9]+\]:\ tag\ doubt ]] ||
  fail "the library's line is not in the daemon's log format (ik_set_log): $landed"
v=$(sed 's/.*written at version \([0-9]*\), now \([0-9]*\).*/\1 \2/' <<<"$landed")
read -r made now <<<"$v"
((now > made + 1)) || fail "s2 did not write while s1 was cut off (version $made, now $now)"
pass "round 1: s1's write at version $made landed with its answer lost; at version $now the writer table said it was s1's: handed out, no 503, no gap"

# round 2: blackhole, then down past the session and the call's budget; again up to
# 4 times, until the write caught is one that landed (then reported as a gap)
gap=
for k in 1 2 3 4; do
  mark=$(metric_of "${PORT[s1]}" ik_sequence_ids_total)
  hammer "h1b$k" "$(url s1)/v1/sequence/orders?count=2&format=text" 16 16
  trickle "b$k" 500
  wait_until 30 flowing "${mark:-0}" || fail "round 2: s1 answers no traffic"
  proxy blackhole
  wait_until 10 metric_at_least "${PORT[s1]}" ik_pending_requests 1 || fail "round 2: no write of s1 waits in the blackhole"
  proxy down
  log "s1 cut off from ZooKeeper"
  sleep 10 # let time pass: cut off past the session and the call's budget
  proxy up
  log "proxy up again"
  hammer_wait "h1b$k"
  trickle_stop "b$k"
  [ "$(hammer_field "h1b$k" errors)" -gt 0 ] || fail "s1 answered everything while cut off for 10 s"
  # back within 30 s of the proxy's return: a new session, the slot, the tag's doubt
  # settled (under ASan on a loaded machine that took longer than the hammer's tail)
  for ((i = 0; i < 300; i++)); do
    curl -fsS -m 5 "$(url s1)/v1/sequence/orders?format=text" >>"$T/s1.after" 2>/dev/null && break
    sleep 0.1
  done
  ((i < 300)) || fail "s1 does not serve 30 s after the proxy came back"
  echo >>"$T/s1.after"
  gap=$(grep "tag gap tag=orders" "$T/s1.log" | tail -n 1 || true)
  [ -n "$gap" ] && break
done
sed -i '/^$/d' "$T/s1.after"
[ -n "$gap" ] || fail "4 cuts caught no write of s1 that landed: $(grep -h 'tag ' "$T/s1.log")"
log "s1: $gap"
pass "round 2: s1 answered 503 while cut off, serves again, and reported the write that landed as a gap"

end=$(tag_field s2 orders max_id)
{ grep -ho 'tag gap tag=orders first=[0-9]* count=[0-9]*' "$T/s1.log" || true; } |
  sed 's/.*first=\([0-9]*\) count=\([0-9]*\)/\1 \2/' | while read -r a n; do seq "$a" $((a + n - 1)); done >"$T/gap.ids"
"${IDCHECK[@]}" contiguous 1 "$end" "$T"/h*.ids "$T"/*.t.ids "$T/s1.after" "$T/gap.ids" >&2 ||
  fail "answered IDs and reported gaps are not one run"
pass "$(cat "$T"/h*.ids "$T"/*.t.ids "$T/s1.after" | wc -l) IDs answered and $(wc -l <"$T/gap.ids") in reported gaps are exactly 1..$((end - 1))"

for s in s1 s2; do stop_clean $s; done
pass "clean exits"
