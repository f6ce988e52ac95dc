#!/usr/bin/env bash
# labels: zk notsan
# timeout: 90
# fixtures: zk
# A server whose clock is behind a slot's record (libfaketime, 4 s behind) takes the
# slot but issues nothing until its own clock has passed the record: 503 until then,
# and every ID it issues lies above the record, so none repeats the previous
# holder's.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

BEHIND_MS=4000
zk_start_standalone
pa=$(zk_free_port)
zk_serve a "$pa" --worker-range 9-9
wait_ready "$pa" || fail "a not ready"
fetch_ids "$pa" 20000 "$T/ids.a"
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not exit 0"
rec=$(slot_json 9 | jq -r .record_ms)
amax=$(ids_time_max "$T/ids.a")
(( amax <= rec )) || fail "a's last ID ($amax) is above the record it left ($rec)"
log "a left slot 9 with record $rec (its last ID at $amax)"

# b: the same slot, a clock 4 s behind: libfaketime preloaded straight into the
# daemon (the faketime wrapper would fork, and the test would lose the daemon's
# pid). Monotonic is shifted too: libfaketime 0.9.10 with
# FAKETIME_DONT_FAKE_MONOTONIC=1 makes timed waits on CLOCK_MONOTONIC condition
# variables return at once; a constant shift of both clocks is harmless. An ASan
# build must tolerate the preload ahead of its runtime.
LIBFAKETIME=
for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
  [ -f "$f" ] && { LIBFAKETIME=$f; break; }
done
[ -n "$LIBFAKETIME" ] || fail "libfaketime.so.1 not found (apt-get install libfaketime)"
cat >"$T/ik-behind" <<SH
#!/bin/sh
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0"
export LD_PRELOAD="$LIBFAKETIME" FAKETIME="-$((BEHIND_MS / 1000))s"
exec "$IK_BIN" "\$@"
SH
chmod +x "$T/ik-behind"
# How far behind: 4 s behind the record at b's start, however long the steps since
# a's stop took (a loaded machine), so that b must refuse for about 4 s.
t_start=$(now_ms)
BEHIND_S=$(( (t_start - rec + 999) / 1000 + BEHIND_MS / 1000 ))
(( BEHIND_S >= BEHIND_MS / 1000 )) || BEHIND_S=$((BEHIND_MS / 1000))
BEHIND_MS=$((BEHIND_S * 1000))
sed -i "s/FAKETIME=\"-[0-9]*s\"/FAKETIME=\"-${BEHIND_S}s\"/" "$T/ik-behind"
log "b's clock runs ${BEHIND_S} s behind ($((t_start - rec)) ms since the record)"
pb=$(zk_free_port)
IK_BIN=$T/ik-behind zk_serve b "$pb" --worker-range 9-9
refused=0 first_ok=
for ((k = 0; k < 400; k++)); do
  kill -0 "${SERVER_PID[b]}" 2>/dev/null || fail "b exited: $(tail -n 5 "$T/b.log")"
  code=$(curl -s -m 2 -o "$T/b.body" -w '%{http_code}' "http://127.0.0.1:$pb/v1/snowflake?count=10&format=text") || code=000
  if [ "$code" = 200 ]; then first_ok=$(now_ms); cat "$T/b.body" >>"$T/ids.b"; break; fi
  if [ "$code" = 503 ]; then
    refused=$((refused + 1))
    if [ $refused = 1 ]; then
      log "b refuses: $(cat "$T/b.body"); readyz: $(curl -s "http://127.0.0.1:$pb/readyz")"
      [ "$(status_of "$pb" .worker)" = 9 ] || fail "b does not hold slot 9: $(status_of "$pb" .lease)"
    fi
  fi
  sleep 0.05
done
[ -n "$first_ok" ] || fail "b never issued"
(( first_ok >= rec + BEHIND_MS - 50 )) ||
  fail "b issued at real time $first_ok, before its clock (${BEHIND_S} s behind) passed the record $rec"
# (a b that issued at once would fail the line above: its clock was behind the record
# when it started; refusals show the wait itself, unless b was that slow to answer)
(( refused > 0 )) ||
  log "b never had to refuse: its first answer came $((first_ok - t_start)) ms after its start, when its clock had passed the record (a slow machine)"
log "b refused $refused times, issued from real time $first_ok ($((first_ok - t_start)) ms after start, record + ${BEHIND_S} s = $((rec + BEHIND_MS)))"
fetch_ids "$pb" 20000 "$T/ids.b"
ids_time_check "$T/ids.b" "$rec"
cat "$T/ids.a" "$T/ids.b" >"$T/all"
assert_unique "$T/all"
pass "a clock behind the record waits for it: $(wc -l <"$T/ids.b") IDs above the record, no duplicate"
