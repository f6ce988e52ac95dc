#!/usr/bin/env bash
# labels: http resp counters
# timeout: 120
# A sequence answer that came back while its client was still there, but waits in
# the answer queue behind an earlier pending answer, and whose client closes before
# that earlier one comes back (docs/sequence.md, "Clients that give up"): when the
# answers are finally written, the client has gone. Written, the range would count
# as delivered; it must be a gap, logged ("why=client gone") and counted.
#
#   A. HTTP: the client pipelines two requests of cold segment tags (their blocks
#      load one after the other on the segment loader: twice the test-only store
#      write delay, IDKEEPER_TEST_WRITE_DELAY_MS), a sequence request (one delay),
#      and enough cheap requests behind them to fill the connection's answer queue,
#      so that the server stops reading it (back-pressure) and the hang-up is not
#      read as an EOF either. Once the sequence range is committed and rendered,
#      the client reads what it was sent and closes (a FIN); then the second
#      segment block comes back and the queue is written.
#   B. The same on the Redis-protocol door: there the server stops reading because
#      a fourth command's answer of 9,000 IDs, charged while it waits, fills the
#      connection's output limit.
source "$(dirname "$0")/lib.sh"

export IDKEEPER_LOG_SEQUENCE_COMMITS=1 IDKEEPER_TEST_WRITE_DELAY_MS=2500
RPORT=$(free_port)
serve_on a --coord "local:$T/data" --threads 1 --quiet --resp "127.0.0.1:$RPORT" || fail "a not ready: $(cat "$T/a.log")"
for t in 't","kind":"sequence","start":1' s1 s2 r1 r2 r3; do
  [[ $t == *kind* ]] || t="$t\",\"kind\":\"segment\""
  code=$(curl -s -o "$T/add.out" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/v1/tags" -d "{\"tag\":\"$t}")
  [ "$code" = 201 ] || fail "POST /v1/tags $t: $code $(cat "$T/add.out")"
done
first=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/t?format=text")
[ "$first" = 1 ] || fail "first sequence ID $first"

# held_then_close http|resp: pipelines the requests above on one connection, waits
# until the sequence range is committed and rendered, reads what it was sent, closes
held_then_close() {
  /usr/bin/python3 - "$1" "$PORT" "$RPORT" "$T/a.log" <<'PY' || fail "$1: the client failed"
import socket, sys, time
door, port, rport, logf = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def commits():
    return open(logf, errors="replace").read().count("sequence tag=t first=")
before = commits()
if door == "http":
    req = lambda p: b"GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % p
    data = (req(b"/v1/segment/s1") + req(b"/v1/segment/s2") +
            req(b"/v1/sequence/t?count=5&format=text") + req(b"/healthz") * 100)
else:
    # r3's answer of 9,000 IDs, charged against the output limit while it waits,
    # fills it: the server stops reading
    data = (b"IDK.SEGMENT r1\r\nIDK.SEGMENT r2\r\nIDK.SEQUENCE t COUNT 4\r\n"
            b"IDK.SEGMENT r3 COUNT 9000\r\n" + b"PING\r\n" * 100)
s = socket.create_connection(("127.0.0.1", rport if door == "resp" else port))
s.sendall(data)
t0 = time.monotonic()
while commits() == before:
    if time.monotonic() - t0 > 30:
        sys.exit("no commit line for t in 30 s")
    time.sleep(0.01)
time.sleep(0.8)  # the range comes back to the loop and is rendered, held behind s2 / r2
s.setblocking(False)
try:
    while s.recv(65536):  # what was written (s1's answer): a close with unread data is a reset
        pass
except BlockingIOError:
    pass
s.close()
PY
}
# gap_line FIRST COUNT: the gap line of that range is in the log
gap_line() { grep -q "tag gap tag=t first=$1 count=$2 why=client gone" "$T/a.log"; }
# counted: the IDs of t that ik_sequence_gap_ids_total counts as client_gone
counted() {
  curl -fsS "http://127.0.0.1:$PORT/metrics" |
    awk '/^ik_sequence_gap_ids_total\{tag="t",why="client_gone"\}/ {print $2}'
}

# A (HTTP); the server writes the queue when s2's block is in (about 5 s after the
# requests)
held_then_close http
wait_until 20 gap_line 2 5 ||
  fail "A: a sequence range (2..6) held behind a pending answer was written to a client that had closed, and no gap was logged: $(grep -E 'sequence tag=t|tag gap' "$T/a.log" | tail -n 3)"
[ "$(counted)" = 5 ] || fail "A: ik_sequence_gap_ids_total counts $(counted) for t, want 5"
next=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/t?format=text")
[ "$next" = 7 ] || fail "A: after the gap 2..6 the next ID is $next, want 7"
pass "A: the held range 2..6 is a logged gap ($(grep 'tag gap tag=t' "$T/a.log")); counted; next ID 7"

# B (RESP): the same through the Redis-protocol door
held_then_close resp
wait_until 20 gap_line 8 4 ||
  fail "B (RESP): a sequence range (8..11) held behind a pending answer was written to a client that had closed, and no gap was logged: $(grep -E 'sequence tag=t|tag gap' "$T/a.log" | tail -n 3)"
[ "$(counted)" = 9 ] || fail "B: ik_sequence_gap_ids_total counts $(counted) for t, want 5 + 4"
pass "B (RESP): the held range 8..11 is a logged gap; counted"

kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a exited $? after SIGTERM"
