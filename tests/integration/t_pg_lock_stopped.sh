#!/usr/bin/env bash
# labels: postgresql sql recipes
# timeout: 180
# `idkeeper lock --timeout` while the PostgreSQL postmaster does not answer
# (docs/sql.md, "Locks and elections"), on a server of this test's own: a waiter
# queued behind a holder must give up at its deadline even though the cancel
# request (a new connection to the postmaster) gets no answer. The postmaster is
# stopped (SIGSTOP) while the waiter waits; the sessions' own processes still run,
# so the queue and the holder are unchanged. The waiter exits 124 within
# --timeout plus the cancel's own bound (1 s) plus slack, not never.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD

PM= # the stopped postmaster: continued on every exit, so that the server can stop
own_stop() {
  [ -z "$PM" ] || kill -CONT "$PM" 2>/dev/null || true
  pg_own_stop "$T/pg"
}
IK_CLEANUPS+=(own_stop)
pg_own_start "$T/pg" || fail "PostgreSQL did not start"
URI=$(pg_new_db "$PG_PORT" lk)
waiting() { # the waiter's session waits for the advisory lock
  [ "$(pg_psql "$PG_PORT" lk "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")" = 1 ]
}

"$IK_BIN" lock --coord "$URI" /x -- sh -c 'touch "$0/held"; exec sleep 600' "$T" >"$T/holder.out" 2>"$T/holder.err" &
IK_PIDS+=($!)
wait_until 60 test -e "$T/held" || fail "the holder did not get /x: $(cat "$T/holder.err")"

TIMEOUT=3000 ts=0
for try in 1 2 3; do
  mono_ms t0
  "$IK_BIN" lock --coord "$URI" --timeout "$TIMEOUT" /x -- true 2>"$T/waiter.err" &
  w=$!
  IK_PIDS+=("$w")
  wait_until 60 waiting || fail "the waiter never queued for /x: $(cat "$T/waiter.err")"
  PM=$(head -n 1 "$T/pg/pgdata/postmaster.pid")
  kill -STOP "$PM"
  mono_ms ts
  if ((ts - t0 < TIMEOUT - 500)); then break; fi
  # the waiter reached the queue too late to see its deadline pass with the postmaster stopped
  kill -CONT "$PM"
  PM=
  wait $w || true
  log "try $try: the waiter queued only $((ts - t0)) ms after its start; again"
  ((try < 3)) || fail "the waiter never queued well before its deadline (machine too slow)"
done
log "postmaster $PM stopped $((ts - t0)) ms after the waiter started"
# the deadline passes with the postmaster stopped; the waiter must be gone by
# --timeout + 1 s (the cancel's bound) + 6 s of slack for a loaded machine
limit=$((TIMEOUT + 7000))
until ! alive "$w"; do
  if (($(mono_ms) - t0 > limit)); then
    fail "idkeeper lock --timeout $TIMEOUT still waits $(($(mono_ms) - t0)) ms after its start, the postmaster stopped"
  fi
  sleep 0.05
done
rc=0
wait $w || rc=$?
took=$(($(mono_ms) - t0))
((rc == 124)) || fail "the waiter exited $rc, not 124 (timed out): $(cat "$T/waiter.err")"
pass "the waiter exited 124 $took ms after its start (--timeout $TIMEOUT), the postmaster stopped: $(cat "$T/waiter.err")"
kill -CONT "$PM"
PM=
# the server serves again, and the abandoned wait holds nothing: the holder still holds /x
"$IK_BIN" lock --coord "$URI" --timeout 1000 /x -- true 2>"$T/again.err" && fail "a waiter got /x while the holder holds it"
grep -q 'timed out' "$T/again.err" || fail "a third waiter did not time out: $(cat "$T/again.err")"
pass "after the postmaster resumed, /x is still the holder's alone"
