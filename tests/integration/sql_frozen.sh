# sql_frozen.sh: one frozen server must not stall a tag for the fleet (bash, sourced
# by t_mysql_frozen_tag.sh and t_pg_frozen_tag.sh after lib.sh, with URI set to a
# fresh database; docs/sql.md "Session settings", docs/hazards.md).
#
# A sequence advance holds leaf_alloc's row lock across several round trips. Server
# a is stopped (SIGSTOP) in the middle of one, with its row lock taken: the test
# hook IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS widens the window before the COMMIT
# (a's own environment only), so the stop lands inside it. Before the session
# limits, the lock stayed for as long as a was stopped, and server b answered 503
# to every request on the tag. Now the database ends a's idle transaction after
# 5 s (idle_in_transaction_session_timeout on PostgreSQL, idle_transaction_timeout
# on MariaDB), and b serves the tag again within FROZEN_BOUND_MS of the stop. After
# a resumes: a serves again, and no sequence ID was issued twice.
FROZEN_BOUND_MS=${FROZEN_BOUND_MS:-20000}

"$IK_BIN" tags add t --kind sequence --coord "$URI" >/dev/null || fail "tags add t failed"
PA=$(free_port)
IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS=3000 start_server a "$PA" --coord "$URI"
wait_ready "$PA" 30 || fail "a not ready: $(tail -n 5 "$T/a.log")"
serve_on b --coord "$URI" || fail "b not ready: $(tail -n 5 "$T/b.log")"
PB=$PORT
[ "$(ik_http "http://127.0.0.1:$PB/v1/sequence/t?count=2&format=text" "$T/b0.ids")" = 200 ] || fail "b serves no sequence IDs"

# a's request takes the row lock, then sleeps in the hook: stop a there (trx_open:
# the including test's, on its database's own view of its sessions)
ik_http "http://127.0.0.1:$PA/v1/sequence/t?count=2&format=text" "$T/a.ids" 120 >"$T/a.code" &
areq=$!
IK_PIDS+=("$areq")
wait_until 10 trx_open || fail "a's advance never held the row in a transaction"
a_cont() { kill -CONT "${SERVER_PID[a]}" 2>/dev/null || true; }
IK_CLEANUPS+=(a_cont) # a stopped process ignores the cleanup's SIGTERM
kill -STOP "${SERVER_PID[a]}"
mono_ms stopped
log "a stopped inside its advance (row lock held)"

probe b "http://127.0.0.1:$PB/v1/sequence/t?count=1&format=text" "$T/probe.stop" 0.2 &
IK_PIDS+=($!)
first=
while (($(mono_ms) - stopped < FROZEN_BOUND_MS + 10000)); do
  first=$(awk '$2 == 200 { print $1; exit }' "$T/b.st" 2>/dev/null || true)
  [ -n "$first" ] && break
  sleep 0.1
done
[ -n "$first" ] || fail "b served nothing on tag t in $((FROZEN_BOUND_MS + 10000)) ms while a was stopped: $(cut -d' ' -f2 "$T/b.st" | sort | uniq -c | tr '\n' ' ')"
took=$((first - stopped))
((took <= FROZEN_BOUND_MS)) || fail "b served tag t again only $took ms after a was stopped (bound $FROZEN_BOUND_MS ms)"
wait_until 20 probe_answered b 10 "$first" || fail "b serves tag t no more"
touch "$T/probe.stop"
served=$(awk '$2 == 200' "$T/b.st" | wc -l)
pass "a stopped mid-advance: b served tag t again $took ms later ($served answers), a's stalled transaction ended by the database"

kill -CONT "${SERVER_PID[a]}"
wait "$areq" || true
log "a's stalled request answered $(cat "$T/a.code")"
ok=0
for ((i = 0; i < 100; i++)); do
  [ "$(ik_http "http://127.0.0.1:$PA/v1/sequence/t?count=2&format=text" "$T/a.ids")" = 200 ] && { ok=1; break; }
  sleep 0.2
done
((ok)) || fail "a does not serve tag t after it resumed: $(tail -n 5 "$T/a.log")"
cat "$T/a.ids" "$T/b0.ids" "$T/b.ids" >"$T/all.ids"
assert_unique "$T/all.ids"
pass "a resumed and serves; $(wc -l <"$T/all.ids") sequence IDs, none twice"
