#!/usr/bin/env bash
# labels: sql counters
# timeout: 180
# variants: postgresql mysql
# fixtures.postgresql: postgres
# fixtures.mysql: mariadb
# A segment block whose COMMIT answer is lost (docs/sql.md, "Tags"): every SQL write
# carries its commit mark, segment blocks too, so the doubt engine settles a segment
# block in doubt as it settles a sequence batch: the block is never handed out, and
# since it did apply, it is logged as a gap at its exact range ("tag gap tag=clicks
# first=A count=K why=answer_lost"), by the tag's next block or at the stop.
#
# A server through the fault proxy (tests/interop/fault_proxy.py) serves a segment
# tag of small blocks; the COMMIT of its next block is applied and its answer held,
# then every connection is refused until the block is given up as in doubt; then the
# proxy lets connections through again and the server is asked for more IDs and
# stopped. Checks: the store moved by the held block, no ID answered lies in it, and
# the log names it, once, at its exact range.
# Before every write carried a mark, a segment block in doubt was dropped without a
# line: the IDs of a block that did apply vanished from the tag unlogged.
source "$(dirname "$0")/lib.sh"
source "$IK_SRC/tests/conformance/conf.sh"
conf_store_start
source "$IK_SRC/tests/conformance/doubt_cases.sh"
doubt_setup clicks segment ',"start":1,"step":100'

get() { # get COUNT: COUNT segment IDs from s1, appended to $T/ids
  local body
  body=$(curl -fsS -m 60 "$(url s1)/v1/segment/clicks?count=$1&format=text" 2>/dev/null) || return 1
  echo "$body" | sed '/^$/d' >>"$T/ids"
}
PORT[s1]=$(free_port)
# shellcheck disable=SC2046 # the options' words
start_server s1 "${PORT[s1]}" --coord "$VIA" --threads 1 "${SERVE_ARGS[@]}" $(conf_patient_args)
wait_ready "${PORT[s1]}" 60 || fail "s1 not ready: $(tail -n 5 "$T/s1.log")"
get 10 || fail "s1: no segment IDs before any fault"

stored() { conf_counter_raw "$DATA" clicks; }
moved_from() { [ "$(stored)" -gt "$1" ]; }
load_failed() { [ -n "$(status_of "${PORT[s1]}" '.tags[] | select(.tag == "clicks") | .last_error')" ]; }
asking() { while get 20; do :; done; }

# the next block: its COMMIT (after its UPDATE of leaf_alloc) applied, the answer held
m0=$(stored)
proxy hold-after 1 COMMIT clicks # the tag is in every block's statements (postgresql:// names them: their text goes once a session)
asking &
a=$!
IK_PIDS+=("$a")
wait_until 30 moved_from "$m0" || fail "no block was written after max_id $m0: $(stored)"
m1=$(stored)
proxy down # the held answer's connection closes, and no new one settles it in the call
kill "$a" 2>/dev/null || true
wait "$a" 2>/dev/null || true
wait_until 30 load_failed || fail "s1 never gave the block up: $(status_of "${PORT[s1]}" .tags)"
proxy up
log "block [$m0, $m1) applied, its answer lost; the proxy is up again"
for ((i = 0; i < 50; i++)); do get 20 || fail "s1: a segment request failed after the proxy came back"; done
stop_clean s1
grep -qE 'runtime error|Sanitizer' "$T/s1.log" && fail "sanitizer report: $(cat "$T/s1.log")"

grep 'tag gap tag=clicks\|tag doubt settled tag=clicks' "$T/s1.log" >"$T/lines" || true
[ -s "$T/lines" ] || fail "the block [$m0, $m1) in doubt ended without a line: $(grep 'tag ' "$T/s1.log")"
want="tag gap tag=clicks first=$m0 count=$((m1 - m0)) why=answer_lost (app default, segment"
grep -qF "$want" "$T/lines" || fail "not logged as the gap [$m0, $m1): $(cat "$T/lines")"
[ "$(wc -l <"$T/lines")" = 1 ] || fail "more than one line for one block in doubt: $(cat "$T/lines")"
inside=$(awk -v a="$m0" -v b="$m1" '$1 >= a && $1 < b' "$T/ids" | head -n 3)
[ -z "$inside" ] || fail "IDs of the block in doubt were handed out: $inside"
[ "$(sort -n "$T/ids" | uniq -d | head -n 1)" = "" ] || fail "an ID was answered twice"
pass "$(wc -l <"$T/ids") IDs answered, none in [$m0, $m1); $(cat "$T/lines")"
