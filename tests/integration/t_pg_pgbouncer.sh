#!/usr/bin/env bash
# labels: postgresql sql recipes
# timeout: 180
# PgBouncer between idkeeper and PostgreSQL (docs/hazards.md, "PostgreSQL", the
# pooler row), Debian's pgbouncer on a server of this test's own:
#   transaction  pool_mode = transaction, one server connection: every client's
#                transactions run in one server session, where a second
#                pg_advisory_lock of a key is granted at once (it is re-entrant). Two
#                `idkeeper lock /x` must never both run their CMD (before the proof
#                of session, both did): A's open proves the pooler's mode with a second
#                connection, which lands in A's server session (before that proof, A's
#                open passed and the proof that rode with the grant refused it); B's
#                open finds A's marks and is refused. Neither runs CMD. `idkeeper check` exits 5 naming the row
#                "server session";
#   fresh        pool_mode = transaction, one server connection nobody has used: the
#                first `idkeeper check` exits 5 naming the row "server session" (before,
#                it exited 0 calling it "kept by a pooler in session mode": a pid
#                that is not the server's was taken for session mode whenever no
#                other connection's mark was seen, which one connection cannot tell
#                from transaction mode; now a second connection proves the mode);
#   session      pool_mode = session: each client keeps one server session, so the
#                lock excludes as on a direct connection: a holder runs, a second
#                waiter times out (124), `idkeeper check` exits 0;
#   serve        refused through transaction mode, naming the row; through session
#                mode it serves sequence and snowflake IDs (each advance and renewal
#                carries the proof of session), with no hazard logged.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
command -v pgbouncer >/dev/null || fail "pgbouncer not installed (apt-get install pgbouncer)"

own_stop() {
  pgb_stop "$T/pgb-fresh"
  pgb_stop "$T/pgb-tx"
  pgb_stop "$T/pgb-s"
  pg_own_stop "$T/pg"
}
IK_CLEANUPS+=(own_stop)
pg_own_start "$T/pg" || fail "PostgreSQL did not start"
pg_new_db "$PG_PORT" bb >/dev/null
pgb_start "$T/pgb-tx" "$PG_PORT" transaction 1 || fail "pgbouncer (transaction mode) did not start"
TX=$PGB_PORT
pgb_start "$T/pgb-s" "$PG_PORT" session 20 || fail "pgbouncer (session mode) did not start"
SESS=$PGB_PORT
uri() { echo "postgresql://$PG_TEST_USER@127.0.0.1:$1/bb"; }

# a fresh transaction-mode pooler: the very first check must not pass
pgb_start "$T/pgb-fresh" "$PG_PORT" transaction 1 || fail "pgbouncer (fresh, transaction mode) did not start"
rc=0
"$IK_BIN" check --coord "$(uri "$PGB_PORT")" >"$T/check-fresh.out" 2>&1 || rc=$?
[ $rc -eq 5 ] || fail "the first idkeeper check through a fresh PgBouncer in transaction mode exited $rc, not 5: $(cat "$T/check-fresh.out")"
grep "server session" "$T/check-fresh.out" | grep -q refused ||
  fail "the first check does not refuse the row server session: $(cat "$T/check-fresh.out")"
pass "fresh transaction mode: the first idkeeper check exits 5: $(grep "server session" "$T/check-fresh.out")"
pgb_stop "$T/pgb-fresh"

# transaction mode: A takes /x, then B asks for it while A holds
rm -f "$T/a.held" "$T/b.held"
"$IK_BIN" lock --coord "$(uri "$TX")" /x -- sh -c 'touch "$0/a.held"; exec sleep 600' "$T" \
  >"$T/a.out" 2>"$T/a.err" &
a=$!
IK_PIDS+=($a)
wait_until 30 eval 'test -e "$T/a.held" || ! alive $a' || fail "A neither held /x nor exited within 30 s"
rc=0
"$IK_BIN" lock --coord "$(uri "$TX")" --timeout 4000 /x -- sh -c 'touch "$0/b.held"' "$T" \
  >"$T/b.out" 2>"$T/b.err" || rc=$?
if [ -e "$T/a.held" ] && [ -e "$T/b.held" ]; then
  fail "two holders of /x through PgBouncer in transaction mode: A ($(cat "$T/a.err")) and B (exit $rc: $(cat "$T/b.err"))"
fi
[ -e "$T/b.held" ] && alive $a && fail "B ran CMD while A still runs: $(cat "$T/a.err")"
grep -q "server session" "$T/b.err" || fail "B (exit $rc) does not name the shared server session: $(cat "$T/b.err")"
pass "transaction mode: B refused (exit $rc): $(tail -n 1 "$T/b.err")"
# A: refused at its open (its second connection met its first's server session) or
# at the grant (its lock's connection found its first connection's mark)
rc=0
wait_until 10 not alive $a || fail "A still runs: $(cat "$T/a.err")"
wait $a || rc=$?
[ -e "$T/a.held" ] && fail "A ran CMD in a server session it shares (exit $rc): $(cat "$T/a.err")"
grep -q "server session" "$T/a.err" ||
  fail "A (exit $rc) was not refused naming the shared server session: $(cat "$T/a.err")"
pass "transaction mode: A refused (exit $rc): $(tail -n 1 "$T/a.err")"
kill $a 2>/dev/null || true
wait $a 2>/dev/null || true
rc=0
"$IK_BIN" check --coord "$(uri "$TX")" >"$T/check-tx.out" 2>&1 || rc=$?
[ $rc -eq 5 ] || fail "idkeeper check through PgBouncer in transaction mode exited $rc, not 5: $(cat "$T/check-tx.out")"
grep "server session" "$T/check-tx.out" | grep -q refused ||
  fail "idkeeper check does not refuse the row server session: $(cat "$T/check-tx.out")"
pass "transaction mode: idkeeper check exits 5: $(grep "server session" "$T/check-tx.out")"

# session mode: the lock excludes, check passes
rm -f "$T/a.held" "$T/b.held"
"$IK_BIN" lock --coord "$(uri "$SESS")" /y -- sh -c 'touch "$0/a.held"; exec sleep 600' "$T" \
  >"$T/sa.out" 2>"$T/sa.err" &
a=$!
IK_PIDS+=($a)
wait_until 30 test -e "$T/a.held" || fail "session mode: A did not get /y: $(cat "$T/sa.err")"
expect_fail 124 "timed out" "$IK_BIN" lock --coord "$(uri "$SESS")" --timeout 2000 /y -- touch "$T/b.held"
[ -e "$T/b.held" ] && fail "session mode: B ran CMD while A held /y"
alive $a || fail "session mode: A lost /y: $(cat "$T/sa.err")"
rc=0
"$IK_BIN" check --coord "$(uri "$SESS")" >"$T/check-s.out" 2>&1 || rc=$?
[ $rc -eq 0 ] || fail "idkeeper check through PgBouncer in session mode exited $rc, not 0: $(cat "$T/check-s.out")"
grep "server session" "$T/check-s.out" | grep -q 'session mode (proven' ||
  fail "check does not say session mode was proven: $(grep "server session" "$T/check-s.out")"
pass "session mode: A holds /y, B timed out, idkeeper check exits 0: $(grep "server session" "$T/check-s.out")"
kill $a 2>/dev/null || true
wait $a 2>/dev/null || true

# serve: refused through transaction mode; through session mode its writes (slot
# renewals, sequence advances) carry the proof and pass
rc=0
"$IK_BIN" serve --coord "$(uri "$TX")" --http "127.0.0.1:$(free_port)" >"$T/serve-tx.out" 2>&1 || rc=$?
((rc != 0)) || fail "serve started through PgBouncer in transaction mode"
grep -q "server session" "$T/serve-tx.out" || fail "serve (exit $rc) does not name the server session: $(tail -n 3 "$T/serve-tx.out")"
"$IK_BIN" tags add inv --kind sequence --coord "$(uri "$SESS")" >/dev/null 2>"$T/add.err" || fail "tags add: $(cat "$T/add.err")"
serve_on s --coord "$(uri "$SESS")" --lease-ttl 3000 || fail "serve through session mode not ready: $(tail -n 5 "$T/s.log")"
curl -fsS "http://127.0.0.1:$PORT/v1/sequence/inv?count=5&format=text" >"$T/seq1" || fail "no sequence IDs through session mode: $(tail -n 3 "$T/s.log")"
sleep 2 # let time pass: renewals (every 0.5 s) and a hazard interval (1 s) pass
curl -fsS "http://127.0.0.1:$PORT/v1/sequence/inv?count=5&format=text" >"$T/seq2" || fail "no sequence IDs after 2 s: $(tail -n 3 "$T/s.log")"
curl -fsS "http://127.0.0.1:$PORT/v1/snowflake?count=3&format=text" >/dev/null || fail "no snowflake IDs through session mode: $(tail -n 3 "$T/s.log")"
[ "$(cat "$T/seq1" "$T/seq2" | sort -u | wc -l)" = 10 ] || fail "sequence IDs not distinct: $(cat "$T/seq1" "$T/seq2" | tr '\n' ' ')"
grep -q "store hazard" "$T/s.log" && fail "a store hazard through session mode: $(grep "store hazard" "$T/s.log")"
pass "serve: refused through transaction mode (exit $rc); through session mode 10 sequence and 3 snowflake IDs, no hazard"
