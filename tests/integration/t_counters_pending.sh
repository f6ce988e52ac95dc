#!/usr/bin/env bash
# labels: counters local http
# timeout: 180
# Requests that wait for the store never stall the daemon (docs/http.md, "Answers that wait for the store").
# The SQLite store of local: is made to hang for real: another connection holds its
# write lock (BEGIN IMMEDIATE), so the server's writes wait up to SQLite's busy
# timeout (10 s) and then fail. (chmod 000 on idkeeper.db does nothing to a running
# server: it keeps the file open, and tests run as root anyway.) While writes wait:
# /healthz, snowflake, segment IDs from the blocks in memory, /v1/status and
# /metrics answer at once on the same single loop thread; sequence requests stay
# pending, pipelined answers behind them wait in order; when the lock goes they are
# all answered. A lock held past the busy timeout gives 503 store_unavailable, and
# the next request after it succeeds (recovery by itself). SIGTERM with requests
# pending answers them if the store comes back within --shutdown-timeout, and fails
# them with 503 shutting_down at the deadline if it does not.
source "$(dirname "$0")/lib.sh"
source "$IK_SRC/tests/tools/counters.sh"

# The first server answers what is pending at SIGTERM once the store is back: give
# it a long deadline, a commit on a busy disk can take seconds (rule 5).
fleet 1 --shutdown-timeout 30000
U=$(url s1)
add_tag s1 q sequence
add_tag s1 sg segment ',"step":1000'
curl -fsS "$U/v1/segment/sg?count=10" >/dev/null
curl -fsS "$U/v1/sequence/q" >/dev/null
DB=$T/data/idkeeper.db
[ -f "$DB" ] || fail "no $DB"

# lock SECONDS: holds the store's write lock until $T/release exists or SECONDS pass.
lock() { sqlite_lock "$DB" "$1"; }
unlock() { sqlite_unlock; }
pending() { metric_at_least "${PORT[s1]}" ik_pending_requests "$1"; }

# fast WHAT URL: answered 200 within 0.5 s.
fast() {
  local out
  out=$(curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "$2")
  [ "${out% *}" = 200 ] && awk -v t="${out#* }" 'BEGIN { exit !(t < 0.5) }' ||
    fail "$1 while the store hangs: $out (want 200 within 0.5 s)"
  log "$1: $out"
}

# ---- the store hangs for a while: pending sequence requests, the rest serves
# hang_phase: one run of it. Returns 2, having checked nothing, if the store stayed
# locked longer than BUSY_MARGIN s (on a loaded machine the steps below can take
# that long): the pending requests then rightly fail with SQLite's busy timeout, so
# the run proves nothing and is tried again (rule 5: a slow machine does not fail a
# test). Everything the phase needs is started before the lock is taken.
BUSY_MARGIN=8
hang_phase() {
  local i
  rm -f "$T"/p*.out "$T"/p*.code "$T/pipe.out" "$T/pipe.sent" "$T/go"
  python3 - "${PORT[s1]}" "$T" >"$T/pipe.out" 2>&1 <<'PY' &
import os, socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
T = sys.argv[2]
while not os.path.exists(T + "/go"):
    time.sleep(0.005)
s.sendall(b"GET /v1/sequence/q?count=2&format=text HTTP/1.1\r\nHost: t\r\n\r\n" * 5
          + b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
open(T + "/pipe.sent", "w").close()
# nothing may arrive while the store is locked: the first answer waits for it, and
# the healthz answer waits behind it; the test compares this time with its unlock
s.settimeout(30)
early = s.recv(65536)
print("FIRST %.6f" % time.time(), flush=True)
s.settimeout(30)
buf = early
while True:
    b = s.recv(65536)
    if not b: break
    buf += b
parts = buf.split(b"HTTP/1.1 ")[1:]
for p in parts:
    head, _, body = p.partition(b"\r\n\r\n")
    print(head.split(b"\r\n")[0].decode(), body.decode().replace("\n", " ").strip())
PY
  PIPE_PID=$!
  IK_PIDS+=($!)
  lock 30
  local t_lock=$SECONDS
  touch "$T/go"
  CURLS=()
  for i in $(seq 20); do
    curl -s -o "$T/p$i.out" -w '%{http_code}\n' --max-time 30 "$U/v1/sequence/q?format=text" >"$T/p$i.code" &
    IK_PIDS+=($!)
    CURLS+=($!)
  done
  wait_until 10 test -e "$T/pipe.sent" || fail "the pipelining client did not send"
  fast "/healthz" "$U/healthz"
  fast "snowflake" "$U/api/snowflake/get/x"
  fast "segment from the blocks" "$U/v1/segment/sg?count=5"
  fast "/v1/status" "$U/v1/status"
  fast "/metrics" "$U/metrics"
  for _ in $(seq 200); do
    pending=$(curl -fsS "$U/metrics" | awk '$1=="ik_pending_requests"{print $2}')
    [ "$pending" -ge 21 ] && break
    sleep 0.05
  done
  [ "$pending" -ge 21 ] || fail "ik_pending_requests is $pending, want >= 21"
  t_unlock=$(date +%s.%N)
  local held=$((SECONDS - t_lock))
  unlock
  wait "$PIPE_PID" || true
  wait "${CURLS[@]}" || true
  if ((held > BUSY_MARGIN)); then
    log "the store stayed locked $held s (a slow machine), past what SQLite's busy timeout waits for: trying again"
    return 2
  fi
  pass "while the store hangs: health, snowflake, segment, status and metrics answer at once; $pending requests pending"
  for i in $(seq 20); do
    [ "$(cat "$T/p$i.code")" = 200 ] || fail "pending request $i: $(cat "$T/p$i.code") $(cat "$T/p$i.out")"
  done
  first=$(awk '$1 == "FIRST" {print $2}' "$T/pipe.out")
  awk -v f="$first" -v u="$t_unlock" 'BEGIN { exit !(f != "" && f >= u) }' ||
    fail "an answer left before the store was unlocked ($first < $t_unlock): $(cat "$T/pipe.out")"
  [ "$(grep -c '^200 OK [0-9]* [0-9]*$' "$T/pipe.out")" = 5 ] && tail -n 1 "$T/pipe.out" | grepq '^200 OK {"status":"ok"}' ||
    fail "pipelined answers: $(cat "$T/pipe.out")"
  cat "$T"/p*.out "$T/before.ids" 2>/dev/null | sort -n | uniq -d | grepq . && fail "duplicate sequence IDs"
  pass "after the lock: all 20 pending requests answered 200; pipelined answers in order, healthz last"
}
for try in 1 2 3 4 5; do
  rc=0
  hang_phase || rc=$?
  [ $rc = 0 ] && break
  [ $rc = 2 ] || exit $rc
  [ $try = 5 ] && fail "the store stayed locked past ${BUSY_MARGIN} s in 5 tries: the machine is too slow to run this phase"
done

# ---- the store does not come back within SQLite's busy timeout: 503, then recovery
lock 60 # released as soon as the answer is in: SQLite's busy timeout counts the
        # sleeps it asks for, so on a loaded machine it lasts longer than 10 s
t0=$(date +%s%N)
code=$(curl -s -D "$T/h503" -o "$T/b503" -w '%{http_code}' --max-time 60 "$U/v1/sequence/q")
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ "$code" = 503 ] && [ "$(jq -r .error "$T/b503")" = store_unavailable ] ||
  fail "store timed out: HTTP $code $(cat "$T/b503")"
grep -qi '^Retry-After: 1' "$T/h503" || fail "503 without Retry-After"
fast "segment while the store is down" "$U/api/segment/get/sg"
unlock
curl -fsS "$U/v1/sequence/q" >/dev/null || fail "sequence did not recover after the store came back"
m=$(curl -fsS "$U/metrics" | awk '$1=="ik_store_errors_total{op=\"sequence\"}"{print $2}')
[ "$m" -ge 1 ] || fail "ik_store_errors_total{op=sequence} is $m"
pass "store locked past the busy timeout: 503 store_unavailable after $took ms, segment served from its blocks, recovered by itself"

# ---- SIGTERM with requests pending, the store back in time: answered, then exit 0
lock 30
CURLS=()
for i in 1 2 3; do
  curl -s -D "$T/t$i.h" -o "$T/t$i.out" -w '%{http_code}' --max-time 30 "$U/v1/sequence/q" >"$T/t$i.code" &
  IK_PIDS+=($!)
  CURLS+=($!)
done
wait_until 10 pending 3 || fail "the 3 requests never waited on the store"
kill -TERM "${SERVER_PID[s1]}"
wait_grep 'SIGTERM: stopping' "$T/s1.log" 10 || fail "no stop logged" # then the store comes back
unlock
rc=0; wait "${SERVER_PID[s1]}" || rc=$?
[ $rc = 0 ] || fail "exit $rc after SIGTERM with requests pending"
wait "${CURLS[@]}" || true
for i in 1 2 3; do
  [ "$(cat "$T/t$i.code")" = 200 ] || fail "request pending at SIGTERM: $(cat "$T/t$i.code") $(cat "$T/t$i.out")"
  grep -qi '^Connection: close' "$T/t$i.h" || fail "answer at shutdown lacks Connection: close"
done
pass "SIGTERM with 3 requests pending: answered 200 (Connection: close) once the store came back, exit 0"

# ---- SIGTERM with requests pending and the store gone past the deadline: 503
start_server s1 "${PORT[s1]}" --coord "$DATA" --threads 1 --quiet --shutdown-timeout 1000
wait_ready "${PORT[s1]}" || fail "s1 not ready after restart"
lock 8
CURLS=()
for i in 1 2; do
  curl -s -o "$T/u$i.out" -w '%{http_code}' --max-time 30 "$U/v1/sequence/q" >"$T/u$i.code" &
  IK_PIDS+=($!)
  CURLS+=($!)
done
wait_until 10 pending 2 || fail "the 2 requests never waited on the store"
t0=$(date +%s%N)
kill -TERM "${SERVER_PID[s1]}"
wait "${CURLS[@]}" || true
took=$(( ($(date +%s%N) - t0) / 1000000 ))
for i in 1 2; do
  [ "$(cat "$T/u$i.code")" = 503 ] && [ "$(jq -r .error "$T/u$i.out")" = shutting_down ] ||
    fail "pending request at the shutdown deadline: $(cat "$T/u$i.code") $(cat "$T/u$i.out")"
done
rc=0; wait "${SERVER_PID[s1]}" || rc=$?
[ $rc = 0 ] || fail "exit $rc"
unlock
grep -qE 'runtime error|Sanitizer' "$T/s1.log" && fail "sanitizer report: $(cat "$T/s1.log")"
pass "SIGTERM with the store gone: pending requests got 503 shutting_down after $took ms (deadline 1000 ms); exit 0"
