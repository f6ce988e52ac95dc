#!/usr/bin/env bash
# labels: zk
# timeout: 90
# fixtures: zk
# A restarted server with the same identity gets its old slot back (SIGTERM, then
# start again), even with a random slot choice and other servers around; one with
# a new identity takes another free slot. IDs across both lives are unique.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
declare -A P W
for n in a b c d; do
  P[$n]=$(zk_free_port)
  zk_serve "$n" "${P[$n]}" --worker-range 0-63 --slot-choice random
done
for n in a b c d; do
  wait_ready "${P[$n]}" || fail "$n not ready"
  W[$n]=$(status_of "${P[$n]}" .worker)
  fetch_ids "${P[$n]}" 3000 "$T/ids.1.$n"
done
log "slots: a=${W[a]} b=${W[b]} c=${W[c]} d=${W[d]}"
for n in a b c d; do
  kill -TERM "${SERVER_PID[$n]}"
  wait "${SERVER_PID[$n]}" || fail "$n did not exit 0 on SIGTERM"
done
for n in a b c d; do
  [ "$(slot_json "${W[$n]}" | jq -r .owner)" = null ] || fail "slot ${W[$n]} still held after $n exited"
done
# Start them again in the reverse order, plus a newcomer.
for n in d c b a; do zk_serve "$n" "${P[$n]}" --worker-range 0-63 --slot-choice random; done
pe=$(zk_free_port)
zk_serve e "$pe" --worker-range 0-63 --slot-choice random
for n in a b c d; do
  wait_ready "${P[$n]}" || fail "$n not ready again"
  w=$(status_of "${P[$n]}" .worker)
  [ "$w" = "${W[$n]}" ] || fail "$n got slot $w, not its old ${W[$n]}"
  fetch_ids "${P[$n]}" 3000 "$T/ids.2.$n"
done
wait_ready "$pe" || fail "e not ready"
we=$(status_of "$pe" .worker)
for n in a b c d; do [ "$we" != "${W[$n]}" ] || fail "e took $n's slot $we"; done
fetch_ids "$pe" 3000 "$T/ids.2.e"
cat "$T"/ids.* >"$T/all"
assert_unique "$T/all"
pass "a, b, c, d got slots ${W[a]}, ${W[b]}, ${W[c]}, ${W[d]} back; e took $we; no duplicate"
