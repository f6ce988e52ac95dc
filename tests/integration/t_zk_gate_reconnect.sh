#!/usr/bin/env bash
# labels: zk hazards
# timeout: 180
# A counter advance whose connection changes between its check and its send
# (docs/zookeeper.md, "Store hazards"): the ZooKeeper client sends a request queued
# while it reconnects on the new connection, so the gate's verdict on the old one
# proves nothing of the server that answers. Here the server is restarted on its
# data with forceSync=no while an advance waits between its gate and its send
# (IDKEEPER_TEST_ZK_GATE_PAUSE_MS): the advance lands on the unsafe server, and its
# range is not handed out: 503 store_unsafe, and a gap at its exact range
# (why=store_unsafe). Before the check after the write, the request got its ID
# from a server that acknowledges writes it has not fsynced.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

# the pauses' bound; each ends once the test has ZooKeeper back (IDKEEPER_TEST_ZK_PAUSE_END):
# a JVM's restart on a loaded machine took longer than the 10 s they were
PAUSE_MS=60000
zk_start_standalone
URI=$(zk_uri gate)
"$IK_BIN" tags add seq --kind sequence --coord "$URI" >/dev/null || fail "tags add"
IDKEEPER_TEST_ZK_GATE_PAUSE_MS=$PAUSE_MS IDKEEPER_TEST_ZK_PAUSE_END=$T/back.s serve_on s --coord "$URI" --zk-session-timeout 12000 \
  --quiet || fail "serve: $(tail -n 5 "$T/s.log")"
URL=http://127.0.0.1:$PORT/v1/sequence/seq?count=3

# the advance: its gate judges the connection (safe), then it waits PAUSE_MS
code_of() { ik_http "$URL" "$T/body" 90 >"$T/code"; }
code_of &
req=$!
wait_grep 'test hook: pausing' "$T/s.log" 30 || fail "the advance never reached its pause: $(tail -n 3 "$T/s.log")"
zk_stop 1
ZK_FORCE_SYNC=no zk_start 1
zk_wait_serving 1
# the advance goes on once s's client has connected again: a multi is sent only on a
# connected handle (docs/zookeeper.md, ZS4), and one that waits past its bound for
# the reconnect is answered store_unavailable, which proves nothing here (a loaded
# machine: the client's reconnect can take seconds). Connected means a session on the
# server (zk_session_of): a TCP connection to a server still loading its data is
# accepted, then closed, and the client's next try can come after the take's bound.
wait_until 60 zk_session_of 1 "${SERVER_PID[s]}" || fail "s never connected to the restarted ZooKeeper"
touch "$T/back.s"
wait "$req" || true
code=$(cat "$T/code")
[ "$code" != 200 ] || fail "the advance sent after ZooKeeper came back with forceSync=no was handed out: $(cat "$T/body")"
[ "$code" = 503 ] && grepq '"error":"store_unsafe"' "$T/body" || fail "answered $code, not 503 store_unsafe: $(cat "$T/body")"
wait_grep 'tag gap tag=seq first=1 count=3 why=store_unsafe' "$T/s.log" 10 ||
  fail "no gap at the advance's range: $(grep 'tag \|hazard' "$T/s.log" | tail -n 5)"
pass "503 store_unsafe; $(grep 'tag gap tag=seq' "$T/s.log" | head -n 1)"

# A slot take the same way (IDKEEPER_TEST_ZK_ACQUIRE_PAUSE_MS): its gate judges the
# connection safe at the server's start, ZooKeeper comes back with forceSync=no
# before the take is sent, and the take is judged again: refused, the server does
# not start on that slot. Before, it started on it (and stayed up, not ready, its
# renewals refused).
zk_stop 1
ZK_FORCE_SYNC=yes zk_start 1
zk_wait_serving 1
P2=$(free_port)
IDKEEPER_TEST_ZK_ACQUIRE_PAUSE_MS=$PAUSE_MS IDKEEPER_TEST_ZK_PAUSE_END=$T/back.s2 start_server s2 "$P2" --coord "$URI" \
  --zk-session-timeout 12000 --quiet
wait_grep 'test hook: pausing' "$T/s2.log" 30 || fail "s2's take never reached its pause: $(tail -n 5 "$T/s2.log")"
zk_stop 1
ZK_FORCE_SYNC=no zk_start 1
zk_wait_serving 1
# the take goes on once s2's client has connected again: a multi is sent only on a
# connected handle (docs/zookeeper.md, ZS4)
wait_until 60 zk_session_of 1 "${SERVER_PID[s2]}" || fail "s2 never connected to the restarted ZooKeeper"
touch "$T/back.s2"
wait_until 40 not alive "${SERVER_PID[s2]}" ||
  fail "s2 still runs 40 s after its slot was taken through a forceSync=no server (ready: $(ik_http "http://127.0.0.1:$P2/readyz"))"
rc=0
wait "${SERVER_PID[s2]}" || rc=$?
((rc != 0)) || fail "s2 exited 0"
grepq 'taken on a connection made after its check: .*forceSync is no' "$T/s2.log" ||
  fail "s2's refusal does not say why: $(tail -n 3 "$T/s2.log")"
pass "the slot take refused (exit $rc): $(grep -o 'the slot was taken on a connection.*' "$T/s2.log" | head -n 1 | cut -c1-160)"
