#!/usr/bin/env bash
# labels: counters hazards
# timeout: 180
# not-on: local: the store is a directory of this host: no setting of it that loses a write can be turned unsafe at run time (a filesystem's type is fixed while it is mounted); the local checks (statfs of DIR at open and every interval) are tried by their own tests
# Proof with every write (docs/hazards.md, "How the checks run"): the round trip of
# a counter advance carries the evidence that the store keeps it, so a setting
# turned unsafe between two writes stops the very next one. A server on a sequence
# tag (a 30 s lease TTL: its hazard interval is 10 s, so only the proof can stop
# the next write in time), a client drawing IDs
# in a loop; conf_unsafe_on turns one durability setting of the store unsafe and
# returns once the store applies it, printing its name. From that moment:
#   - zero sequence IDs answered (every request 503), until conf_unsafe_off;
#   - a log line names the setting;
#   - the IDs answered and the gaps logged (tag gap ... first=A count=K) are one run,
#     1 .. the store's max_id - 1, nothing twice;
#   - after conf_unsafe_off the server serves again.
# The group runs on a store server of its own (CONF_OWN_STORE): the shared one must
# never turn unsafe under the other tests.
source "$(dirname "$0")/../integration/lib.sh"
# shellcheck disable=SC2034 # read by conf.sh
CONF_SESSION_MS=30000
source "$(dirname "$0")/conf.sh"
CONF_OWN_STORE=1
conf_store_start
conf_counters_store # what conf_counter_raw needs of the store (zk: counter_raw)
uri=$(conf_coord proof)
"$IK_BIN" tags add q --kind sequence --coord "$uri" "${CONF_SERVE_ARGS[@]}" >/dev/null ||
  fail "tags add q"
serve_on s --coord "$uri" "${CONF_SERVE_ARGS[@]}" || fail "serve: $(cat "$T/s.log")"
base=http://127.0.0.1:$PORT

# the client: one request at a time until $T/stop; a line "START_MS CODE ID END_MS"
# each (START_MS: mono_ms before the request was sent, END_MS once its answer was
# read; ID "-" unless 200). A request counts as made while the store was unsafe if
# it was sent after conf_unsafe_on returned and answered before conf_unsafe_off was
# called: a refusal can take a while (zk: the full check the refused store is due
# for, about 450 ms), and one sent before the put-back may be answered by the store
# made safe again, rightly.
: >"$T/draws"
(
  while [ ! -e "$T/stop" ]; do
    mono_ms t
    code=$(ik_http "$base/v1/sequence/q?format=text" "$T/draw.body")
    id=-
    [ "$code" = 200 ] && id=$(cat "$T/draw.body")
    mono_ms t_end
    echo "$t $code $id $t_end" >>"$T/draws"
    sleep 0.01
  done
) &
IK_PIDS+=($!)
served() { [ "$(awk '$2 == 200' "$T/draws" | wc -l)" -ge "$1" ]; }
wait_until 20 served 20 || fail "the client got no 20 IDs: $(tail -n 3 "$T/draws")"

setting=$(conf_unsafe_on "$uri") || fail "conf_unsafe_on failed"
mono_ms t_on
[ -n "$setting" ] || fail "conf_unsafe_on printed no setting"
n_before=$(wc -l <"$T/draws")
refused() { [ "$(awk -v t="$t_on" '$1 >= t && $2 == 503' "$T/draws" | wc -l)" -ge "$1" ]; }
wait_until 30 refused 20 || fail "fewer than 20 requests answered 503 in 30 s after $setting turned unsafe: $(tail -n 3 "$T/draws")"
mono_ms t_off
conf_unsafe_off "$uri" || fail "conf_unsafe_off failed"
wait_grep "store hazard: .*$setting" "$T/s.log" 5 || fail "no log line names $setting: $(grep -i hazard "$T/s.log" | tail -n 3)"

# after: served again
again() { [ "$(awk -v t="$t_off" '$1 > t && $2 == 200' "$T/draws" | wc -l)" -ge 5 ]; }
wait_until 30 again || fail "not serving again within 30 s of conf_unsafe_off: $(tail -n 3 "$T/draws")"
touch "$T/stop"
wait_until 10 not alive "${IK_PIDS[-1]}" || true

bad=$(awk -v a="$t_on" -v b="$t_off" '$1 >= a && $4 < b && $2 == 200' "$T/draws")
[ -z "$bad" ] || fail "IDs answered to requests sent after $setting turned unsafe (and before it was put back): $(echo "$bad" | head -n 5 | tr '\n' ';')"
others=$(awk -v a="$t_on" -v b="$t_off" '$1 >= a && $4 < b && $2 != 503' "$T/draws" | head -n 3)
[ -z "$others" ] || fail "requests while unsafe answered other than 503: $others"
n_unsafe=$(awk -v a="$t_on" -v b="$t_off" '$1 >= a && $4 < b' "$T/draws" | wc -l)
pass "$setting unsafe: $n_unsafe requests sent meanwhile, every one 503 (the $n_before before it: IDs); a log line names it"

awk '$2 == 200 {print $3}' "$T/draws" >"$T/answered.ids"
sed -n 's/.*tag gap tag=q first=\([0-9?]*\) count=\([0-9]*\) .*/\1 \2/p' "$T/s.log" >"$T/gaps"
grep -q '^?' "$T/gaps" && fail "a gap of unknown place: $(grep 'tag gap' "$T/s.log" | head -n 3)"
while read -r f c; do seq "$f" $((f + c - 1)); done <"$T/gaps" >"$T/gaps.ids"
d=$(sort -n "$T/answered.ids" "$T/gaps.ids" | uniq -d | head -n 5)
[ -z "$d" ] || fail "answered twice, or answered and logged as a gap: $d"
max=$(conf_counter_raw "$uri" q)
sort -n "$T/answered.ids" "$T/gaps.ids" >"$T/run.ids"
seq 1 $((max - 1)) | cmp -s - "$T/run.ids" ||
  fail "the IDs answered and the gaps logged are not one run 1..$((max - 1)): $(diff <(seq 1 $((max - 1))) "$T/run.ids" | head -n 5 | tr '\n' ' ')"
pass "$(wc -l <"$T/answered.ids") IDs answered and $(wc -l <"$T/gaps.ids") logged as gaps are one run 1..$((max - 1)); served again after conf_unsafe_off"
