#!/usr/bin/env bash
# labels: postgresql sql release
# timeout: 240
# A cancelled synchronous-replication wait (docs/hazards.md, "PostgreSQL"): a primary
# with a synchronous standby (synchronous_standby_names = '*'); the standby stops, and
# a watchdog ends every session that waits on SyncRep, as a pooler's or an operator's
# timeout does. PostgreSQL answers a cancelled wait with COMMIT success and a WARNING
# that the transaction "has already committed locally, but might not have been
# replicated"; a terminated one with no answer at all, while the commit stays visible
# on the primary. Before, the notices were dropped: server A answered the IDs of
# cancelled commits (4 5 6), and read a terminated commit back from the primary as
# "did apply: handed out"; after the primary crashed and the standby was promoted,
# server B answered the same IDs again. Now the WARNING is part of the COMMIT's
# evidence (the write is untrusted: 503, a gap), and a commit read back is handed out
# only once the read's own commit is proven, which the missing standby never allows:
#   - phase cancel (pg_cancel_backend): A's requests are answered 503, their ranges
#     logged as gaps, and the log carries PostgreSQL's words;
#   - phase terminate (pg_terminate_backend): A's requests are answered 503;
#   - the primary killed, the standby started again and promoted: B on it answers
#     sequence IDs, and no ID is answered by both A and B.
# Servers of the test's own: a primary and a standby made by pg_basebackup.
source "$(dirname "$0")/lib.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD
BIN=$(pg_bin)
stop_all() { pg_own_stop "$T/s"; pg_own_stop "$T/p"; }
IK_CLEANUPS+=(stop_all)
pg_own_start "$T/p" || fail "the primary did not start"
PP=$PG_PORT
URI=$(pg_new_db "$PP" sync)
"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"

# the standby: a base backup of the primary, streaming from it (-R)
mkdir -p "$T/s"
chmod 755 "$T/s"
[ "$(id -u)" = 0 ] && chown postgres: "$T/s"
as_pg env PGPASSWORD="$PG_TEST_PASSWORD" "$BIN/pg_basebackup" -h 127.0.0.1 -p "$PP" -U "$PG_TEST_USER" \
  -D "$T/s/pgdata" -R -X stream --checkpoint=fast >"$T/basebackup.log" 2>&1 || fail "pg_basebackup failed: $(tail -n 5 "$T/basebackup.log")"
SP=$(free_port)
pg_own_up "$T/s" "$SP" 2>"$T/s.err" || fail "the standby did not start: $(cat "$T/s.err")"
pg_psql "$PP" postgres "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
pg_psql "$PP" postgres "SELECT pg_reload_conf()" >/dev/null
sync_up() { [ "$(pg_psql "$PP" postgres "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'")" = 1 ]; }
wait_until 30 sync_up || fail "the standby is not synchronous: $(pg_psql "$PP" postgres "SELECT application_name, state, sync_state FROM pg_stat_replication")"

serve_on a --coord "$URI" --lease-ttl 30000 || fail "a did not start: $(tail -n 5 "$T/a.log")"
PA=$PORT
: >"$T/a.ids"
for i in 1 2 3; do
  [ "$(ik_http "http://127.0.0.1:$PA/v1/sequence/q?format=text" "+$T/a.ids")" = 200 ] || fail "a: no sequence ID with the standby up"
done

pg_own_stop "$T/s"
log "the standby is stopped: every commit now waits on SyncRep"
# the watchdog: one psql session that ends, every 50 ms, the sessions waiting on
# SyncRep, by the function named in $T/mode (pg_cancel_backend or pg_terminate_backend)
echo pg_cancel_backend >"$T/mode"
(
  while [ ! -e "$T/watch.stop" ]; do
    echo "SELECT count($(cat "$T/mode")(pid)) FROM pg_stat_activity WHERE wait_event = 'SyncRep';"
    sleep 0.05
  done
) | PGPASSWORD=$PG_TEST_PASSWORD "$BIN/psql" -h 127.0.0.1 -p "$PP" -U "$PG_TEST_USER" -d postgres -Atq \
  >"$T/watch.out" 2>&1 &
IK_PIDS+=($!)
watchdog=$!

ask() { # ask PHASE: 3 requests to a; each must be 503
  local i code
  for i in 1 2 3; do
    code=$(ik_http "http://127.0.0.1:$PA/v1/sequence/q?format=text" "$T/$1.body" 30)
    [ "$code" = 200 ] && cat "$T/$1.body" >>"$T/a.ids"
    echo "$code" >>"$T/$1.codes"
  done
}
ask cancel
echo pg_terminate_backend >"$T/mode"
ask terminate
touch "$T/watch.stop"
wait "$watchdog" 2>/dev/null || true
kill -TERM "${SERVER_PID[a]}" 2>/dev/null || true
pg_own_kill "$T/p"
wait "${SERVER_PID[a]}" 2>/dev/null || true
log "a answered, cancel: $(tr '\n' ' ' <"$T/cancel.codes"); terminate: $(tr '\n' ' ' <"$T/terminate.codes"); IDs $(tr '\n' ' ' <"$T/a.ids")"

# the standby again, promoted: the primary's last commits that it lacks are gone
pg_own_up "$T/s" "$SP" 2>"$T/s.err" || fail "the standby did not start again: $(cat "$T/s.err")"
as_pg "$BIN/pg_ctl" -D "$T/s/pgdata" -w promote >>"$T/s/pg_ctl.log" 2>&1 || fail "promote failed: $(tail -n 3 "$T/s/pg_ctl.log")"
pg_psql "$SP" postgres "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
pg_psql "$SP" postgres "SELECT pg_reload_conf()" >/dev/null
serve_on b --coord "postgresql://$PG_TEST_USER@127.0.0.1:$SP/sync" --lease-ttl 30000 || fail "b did not start on the promoted standby: $(tail -n 5 "$T/b.log")"
: >"$T/b.ids"
for i in 1 2 3 4 5; do
  [ "$(ik_http "http://127.0.0.1:$PORT/v1/sequence/q?format=text" "+$T/b.ids")" = 200 ] || fail "b: no sequence ID on the promoted standby"
done
cat "$T/a.ids" "$T/b.ids" >"$T/all.ids"
assert_unique "$T/all.ids"
grep -qv 503 "$T/cancel.codes" && fail "a answered a request whose COMMIT's replication was cancelled: $(tr '\n' ' ' <"$T/cancel.codes")"
grep -qv 503 "$T/terminate.codes" && fail "a answered a request whose COMMIT's replication was terminated: $(tr '\n' ' ' <"$T/terminate.codes")"
grep -q 'might not have been replicated' "$T/a.log" ||
  fail "a's log does not carry PostgreSQL's words on the cancelled wait: $(grep -i 'tag gap\|replicat' "$T/a.log" | tail -n 3)"
pass "synchronous standby gone, waits cancelled then terminated: a refused all 6 requests; after the failover b answered $(tr '\n' ' ' <"$T/b.ids"), a had answered $(tr '\n' ' ' <"$T/a.ids"): none twice"
