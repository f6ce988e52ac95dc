#!/usr/bin/env bash
# labels: counters hazards
# timeout: 180
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
# Then a setting changed after the write began: a server whose next advance is held
# after it began, before its commit point (conf_write_hold_var: SQL, between its two
# round trips; redis, between its gate and its script); conf_unsafe_on while it is
# held, then the write goes on: the request is answered 503 (the evidence read at
# the commit point refuses it, never the settings read before), and the IDs answered
# and the gaps logged of its tag are one run. Where a store has no setting to change
# while a write is under way (zk: forceSync is a start flag; etcd: none), the case
# says so and is not run.
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

# ---- a setting changed after the write began ---------------------------------------
if ! declare -F conf_write_hold_var >/dev/null; then
  log "a setting changed after the write began: not on $IK_STORE (no setting of it can change while a write is under way: its stores/$IK_STORE.sh has no conf_write_hold_var)"
  exit 0
fi
kill -TERM "${SERVER_PID[s]}" 2>/dev/null || true
wait "${SERVER_PID[s]}" 2>/dev/null || true
"$IK_BIN" tags add held --kind sequence --coord "$uri" "${CONF_SERVE_ARGS[@]}" >/dev/null ||
  fail "tags add held"
hold=$T/hold
env "$(conf_write_hold_var)=$hold" "$IK_BIN" serve --http "127.0.0.1:$(free_port)" --identity h \
  --coord "$uri" "${CONF_SERVE_ARGS[@]}" >"$T/h.log" 2>&1 &
SERVER_PID[h]=$!
IK_PIDS+=($!)
hport() { sed -n 's/.*serving HTTP on 127.0.0.1:\([0-9]*\).*/\1/p' "$T/h.log" | head -n 1; }
wait_until 30 eval '[ -n "$(hport)" ] && ready_probe "$(hport)"' || fail "h not ready: $(tail -n 5 "$T/h.log")"
hbase=http://127.0.0.1:$(hport)
: >"$T/held.ids"
for i in 1 2 3; do
  [ "$(ik_http "$hbase/v1/sequence/held?format=text" "+$T/held.ids")" = 200 ] || fail "h: no ID before the hold"
done
: >"$hold"
ik_http "$hbase/v1/sequence/held?count=3&format=text" "$T/held.body" 30 >"$T/held.code" &
req=$!
IK_PIDS+=("$req")
wait_until 20 grep -q held "$hold" || fail "h's advance never reached its hold: $(tail -n 5 "$T/h.log")"
setting=$(conf_unsafe_on "$uri") || fail "conf_unsafe_on failed"
rm -f "$hold"
wait "$req" || true
code=$(cat "$T/held.code")
conf_unsafe_off "$uri" || fail "conf_unsafe_off failed"
[ "$code" = 503 ] || fail "the write held while $setting turned unsafe was answered $code: $(cat "$T/held.body")"
again() { [ "$(ik_http "$hbase/v1/sequence/held?format=text" "$T/again.body")" = 200 ] && cat "$T/again.body" >>"$T/held.ids"; }
wait_until 30 again || fail "h not serving again after conf_unsafe_off: $(cat "$T/again.body")"
sed -n 's/.*tag gap tag=held first=\([0-9?]*\) count=\([0-9]*\) .*/\1 \2/p' "$T/h.log" >"$T/held.gaps"
grep -q '^?' "$T/held.gaps" && fail "a gap of unknown place: $(grep 'tag gap' "$T/h.log" | head -n 3)"
while read -r f c; do seq "$f" $((f + c - 1)); done <"$T/held.gaps" >"$T/held.gap.ids"
hmax=$(conf_counter_raw "$uri" held)
sort -n "$T/held.ids" "$T/held.gap.ids" | uniq -d | head -n 3 | grep -q . && fail "answered twice, or answered and logged as a gap: $(sort -n "$T/held.ids" "$T/held.gap.ids" | uniq -d | head -n 3)"
seq 1 $((hmax - 1)) | cmp -s - <(sort -n "$T/held.ids" "$T/held.gap.ids") ||
  fail "tag held: the IDs answered and the gaps logged are not one run 1..$((hmax - 1)): $(sort -n "$T/held.ids" "$T/held.gap.ids" | tr '\n' ' ')"
pass "$setting turned unsafe after the write began: answered 503; $(wc -l <"$T/held.ids") IDs answered and $(wc -l <"$T/held.gap.ids") in logged gaps are one run 1..$((hmax - 1))"
