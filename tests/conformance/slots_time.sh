#!/usr/bin/env bash
# labels: slots notsan release
# timeout: 120
# The time guard (docs/guarantees.md promise 11) on the backend: a leaves slot 9 (SIGTERM: the slot's
# time record is persisted at release, and read here without idkeeper, conf.sh); b,
# whose clock is 10 s behind (libfaketime), takes the slot but issues nothing until
# its own clock has passed the record: 503 on the IDs and on /readyz until then,
# while holding slot 9; every ID it issues lies above the record, under worker 9, so
# none repeats a's.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start

# The guard's window is what is left of BEHIND_MS once b holds the slot: b's start
# (a JVM-free process, but ASan on a loaded machine takes seconds) must not eat it.
BEHIND_MS=10000
C=$(conf_coord guard)
S=(--coord "$C" --worker-range 9-9 --quiet "${CONF_SERVE_ARGS[@]}")
pa=$(free_port)
start_server a "$pa" "${S[@]}"
wait_ready "$pa" 60 || fail "a not ready: $(tail -n 3 "$T/a.log")"
fetch_ids "$pa" 20000 "$T/ids.a"
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not exit 0"
rec=$(conf_slot_record "$C" default 9)
amax=$(ids_time_max "$T/ids.a")
(( amax <= rec )) || fail "a's last ID ($amax) is above the record it left ($rec)"
log "a left slot 9 with record $rec (its last ID at $amax)"

# b: the same slot, a clock 10 s behind (libfaketime: faketime_bin, lib.sh)
faketime_bin "$T/ik-behind" "-$((BEHIND_MS / 1000))s"
pb=$(free_port)
t_start=$(date +%s%3N)
IK_BIN=$T/ik-behind start_server b "$pb" "${S[@]}"
refused=0 first_ok= ready_503=0
t_limit=$((SECONDS + BEHIND_MS / 1000 + 60))
while ((SECONDS < t_limit)); do
  kill -0 "${SERVER_PID[b]}" 2>/dev/null || fail "b exited: $(tail -n 5 "$T/b.log")"
  code=$(curl -s -m 2 -o "$T/b.body" -w '%{http_code}' "http://127.0.0.1:$pb/v1/snowflake?count=10&format=text") || code=000
  if [ "$code" = 200 ]; then first_ok=$(date +%s%3N); cat "$T/b.body" >>"$T/ids.b"; break; fi
  if [ "$code" = 503 ]; then
    refused=$((refused + 1))
    if [ $refused = 1 ]; then
      log "b refuses: $(cat "$T/b.body"); readyz: $(curl -s "http://127.0.0.1:$pb/readyz")"
      # b answers HTTP while it is still taking its slot (a loaded machine, a store
      # session set up first): wait for the take, then it must be slot 9
      b_took() { [ "$(status_of "$pb" .lease.state)" != acquiring ]; }
      wait_until 20 b_took || fail "b took no slot in 20 s: $(status_of "$pb" .lease)"
      [ "$(status_of "$pb" .worker)" = 9 ] || fail "b does not hold slot 9: $(status_of "$pb" .lease)"
    fi
    # /readyz fails too, saying why (counted: the guard may end between the two)
    curl -s -m 2 -o "$T/b.ready" -w '%{http_code}\n' "http://127.0.0.1:$pb/readyz" >"$T/b.ready.code" || true
    grep -qx 503 "$T/b.ready.code" && grep -q 'time guard' "$T/b.ready" && ready_503=$((ready_503 + 1))
  fi
  sleep 0.05
done
[ -n "$first_ok" ] || fail "b never issued: $(tail -n 3 "$T/b.log")"
(( refused > 0 )) || fail "b issued at once, with its clock 10 s behind the record"
(( ready_503 > 0 )) || fail "/readyz never failed with the time guard's reason while b refused IDs"
(( first_ok >= rec + BEHIND_MS - 50 )) ||
  fail "b issued at real time $first_ok, before its clock (10 s behind) passed the record $rec"
log "b refused $refused times, issued from real time $first_ok ($((first_ok - t_start)) ms after start, record + 10 s = $((rec + BEHIND_MS)))"
fetch_ids "$pb" 20000 "$T/ids.b"
ids_time_check "$T/ids.b" "$rec"
[ "$(ids_workers "$T/ids.b")" = 9 ] || fail "b issued under workers $(ids_workers "$T/ids.b"), not 9"
cat "$T/ids.a" "$T/ids.b" >"$T/all"
assert_unique "$T/all"
pass "a clock behind the record waits for it: $(wc -l <"$T/ids.b") IDs above the record, no duplicate"
