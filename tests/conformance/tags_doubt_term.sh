#!/usr/bin/env bash
# labels: counters
# timeout: 240
# A doubt, then SIGTERM (docs/sequence.md, "A doubt at a stop"): a sequence write
# whose outcome the server cannot know is settled, or logged and counted as a gap,
# before the process exits; never dropped, never handed out.
#
# The store is reached through a fault proxy (tests/interop/fault_proxy.py, raw), so
# only this test's connections suffer; conf_counter_raw reads the store around it.
#   A. the write lands and its answer is lost (conf_fault_answer_lost); then down:
#      every connection through the proxy closes and new ones are refused until
#      the request fails (503: the backend could not settle it within the call);
#      up again; SIGTERM: the stop settles the doubt with the store reachable (its
#      range a gap, logged and counted).
#   B. the write lands, and from then on nothing the store says comes back, on old
#      or new connections (conf_fault_freeze_after_write: a store frozen right
#      after it); SIGTERM while the write is still in flight: the gap is logged and
#      counted as why=maybe_recorded before the process exits.
# At the end (tests/tools/idcheck.py gaps): every ID from 1 to the store's max_id
# was answered once or lies in a logged gap, and each server's metrics at exit
# ("at exit: ik_sequence_gap_ids_total{...}") count exactly the gaps it logged; a
# new server continues above everything.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
source "$(dirname "$0")/doubt_cases.sh"
doubt_setup
get() { doubt_get "$@"; }
stored() { doubt_stored "$@"; }
serve() { doubt_serve "$1"; }

# term NAME: SIGTERM; it exits 0 (a slot release the store cannot confirm or be sent
# is logged and still exits 0: docs/http.md, "Shutdown"), with a gap logged; the gap
# lines in $T/NAME.gap.
term() {
  local rc=0 t0
  mono_ms t0
  kill -TERM "${SERVER_PID[$1]}"
  wait "${SERVER_PID[$1]}" || rc=$?
  log "$1 exited $rc, $(($(mono_ms) - t0)) ms after SIGTERM: $(grep -E 'release of worker|released worker|was lost before' "$T/$1.log")"
  ((rc == 0)) || fail "$1 exited $rc after SIGTERM: $(tail -n 8 "$T/$1.log")"
  grep -qE 'runtime error|Sanitizer' "$T/$1.log" && fail "$1: sanitizer report: $(cat "$T/$1.log")"
  grep 'tag gap tag=orders' "$T/$1.log" >"$T/$1.gap" || fail "$1: no gap logged for the write in doubt: $(grep 'tag \|SIGTERM\|bye' "$T/$1.log")"
}

# A: the doubt opens (the answer held past the backend's wait), the store is back, SIGTERM
serve s1
conf_fault_answer_lost
get s1 10 &
g=$!
wait_until 60 stored 16 || fail "A: the write whose answer is lost never reached the store: max_id $(conf_counter_raw "$DATA" orders)"
proxy down # and no new connection settles it within the call: the request fails
wait $g && fail "A: s1 answered 10 IDs whose answer the store never sent"
log "A: the request failed; its write is in the store (max_id 16)"
proxy up
term s1
a=$(cat "$T/s1.gap")
pass "A: $a"

# B: SIGTERM while the write is in flight, the store silent on every connection
serve s2
conf_fault_freeze_after_write
get s2 10 &
g=$!
wait_until 60 stored 31 || fail "B: the write never reached the store: max_id $(conf_counter_raw "$DATA" orders)"
term s2
b=$(cat "$T/s2.gap")
wait $g && fail "B: s2 answered 10 IDs whose answer the store never sent"
proxy unmute
[[ $b == *"why=maybe_recorded"* ]] || fail "B: with the store silent the gap cannot be placed, yet: $b"
pass "B: $b"

end=$(conf_counter_raw "$DATA" orders)
"${IDCHECK[@]}" gaps 1 "$end" orders "$T/ids" "$T/s1.log" "$T/s2.log" >"$T/check" || fail "the IDs and the logged gaps disagree"
pass "$(cat "$T/check")"

PORT[s3]=$(free_port)
start_server s3 "${PORT[s3]}" --coord "$DATA" --threads 1 --quiet "${SERVE_ARGS[@]}"
wait_ready "${PORT[s3]}" || fail "s3 not ready: $(tail -n 5 "$T/s3.log")"
next=$(curl -fsS "$(url s3)/v1/sequence/orders?format=text")
[ "$next" = "$end" ] || fail "a new server answered $next, want $end (above every ID of the run)"
stop_clean s3
pass "a new server continues at $end"
