#!/usr/bin/env bash
# labels: resp counters local
# timeout: 180
# A RESP client that pipelines sequence commands and never reads, then resets the
# connection: the ranges committed for it whose answers were still in the server's
# output (not yet written whole to the socket) are gaps, and a live server logs and
# counts every one (docs/guarantees.md promise 4). Before the fix, answers moved into the output buffer
# were freed unlogged: the run showed ranges committed, none delivered past the
# kernel's buffers, and no 'tag gap' line.
#
# The test runs in a network namespace of its own whose TCP buffers are 4 KiB, so
# that what the kernel can hold for the client is known and small: every committed
# ID beyond it must be in a logged gap.
if [ -z "${IK_IN_NETNS:-}" ]; then
  ns=ikt-unread-$$
  ip netns add "$ns" || { echo "FAIL: cannot create a network namespace (ip netns add)" >&2; exit 1; }
  rc=0
  ip netns exec "$ns" env IK_IN_NETNS="$ns" bash "$0" "$@" || rc=$?
  ip netns del "$ns"
  exit $rc
fi
ip link set lo up
sysctl -qw net.ipv4.tcp_wmem="4096 4096 4096" net.ipv4.tcp_rmem="4096 4096 4096"
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add q --kind sequence "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" --threads 1 || fail "server did not start"
[ "$(rcli INCR q)" = 1 ] || fail "first INCR q"

# 600 commands of 1,000 IDs each (about 5 MB of answers, far past what the server
# buffers before it stops parsing), never read; then an abortive close (RST).
/usr/bin/python3 - "$RPORT" <<'PY'
import socket, struct, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.connect(("127.0.0.1", int(sys.argv[1])))
cmd = b"*4\r\n$12\r\nIDK.SEQUENCE\r\n$1\r\nq\r\n$5\r\nCOUNT\r\n$4\r\n1000\r\n"
s.setblocking(False)
sent, data = 0, cmd * 600
end = time.time() + 5
while sent < len(data) and time.time() < end:
    try:
        sent += s.send(data[sent:])
    except BlockingIOError:
        time.sleep(0.01)
time.sleep(2)  # the server commits what it parsed and backs up on its output
s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
PY
# the reset connection closed, and nothing of it in flight any more: its gaps logged
settled() { [ "$(metric_of "$PORT" ik_http_connections)" = 1 ] && [ "$(metric_of "$PORT" ik_pending_requests)" = 0 ]; }
wait_until 20 settled || fail "the client's connection or its requests stay: $(curl -sS "http://127.0.0.1:$PORT/metrics" | grep -E 'connections |pending')"
max=$(curl -fsS "http://127.0.0.1:$PORT/v1/tags/q" | jq -r .max_id)
committed=$((max - 2)) # IDs after the first INCR's 1 (max_id is the next ID: 2 + issued)
gaps=$(grep -o 'tag gap tag=q first=[0-9]* count=[0-9]* why=client gone' "$T/a.log" |
  sed 's/.*count=\([0-9]*\).*/\1/' | awk '{s += $1} END {print s + 0}')
metric=$(curl -fsS "http://127.0.0.1:$PORT/metrics" |
  awk '/^ik_sequence_gap_ids_total\{tag="q",why="client_gone"\}/ {print $2}')
log "committed $committed IDs for the client, logged gaps $gaps, metric ${metric:-none}"
[ "$committed" -gt 0 ] || fail "nothing was committed: the test did not reach the server"
[ "$gaps" -gt 0 ] || fail "ranges were committed for a client that read nothing, and no gap was logged"
[ "${metric:-0}" = "$gaps" ] || fail "gap metric ${metric:-none} is not the logged $gaps"
# What was not logged as a gap was written whole to the socket: at most what the
# kernel's 4 KiB buffers hold, generously 64 KiB (an ID is at least 9 bytes of answer).
[ $(( (committed - gaps) * 9 )) -le $((64 * 1024)) ] ||
  fail "$((committed - gaps)) committed IDs are neither in a logged gap nor could have been written"
# The server still serves, with the next ID right after the last committed.
next=$(rcli INCR q)
[ "$next" = "$max" ] || fail "next INCR gave $next, not $max"
pass "unread RESP answers: $gaps of $committed committed IDs logged as gaps, the rest written"
