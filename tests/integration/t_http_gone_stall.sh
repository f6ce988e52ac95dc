#!/usr/bin/env bash
# labels: http counters
# timeout: 120
# A sequence answer whose client has gone while the server stalled after the commit
# (docs/sequence.md, "Clients that give up"): a client sends, the range commits,
# the server is stopped (SIGSTOP) before it answers, the client closes its
# connection, the server is resumed. The EOF is then already waiting on the socket
# when the answer is ready; the answer must not be written and counted as delivered:
# the range is a gap, logged once ("why=client gone") and counted. The test-only
# hook IDKEEPER_TEST_DONE_DELAY_MS holds the loop after the commit, so that the
# answer comes back to it before it reads the EOF (as 3 runs in 9 of a chaos run with
# server stops did).
#   A. the client closes (FIN): one gap line, client_gone counted.
#   B. a refused answer (ids=number of IDs at or above 2^53, docs/http.md) whose
#      client resets the connection (RST) meanwhile: its gap is logged and counted
#      once, not once as ids_too_large and again as client gone.
#   C. A on the Redis-protocol door (IDK.SEQUENCE, --resp).
# Then the next ID follows both gaps: nothing was handed out twice.
source "$(dirname "$0")/lib.sh"

export IDKEEPER_LOG_SEQUENCE_COMMITS=1 IDKEEPER_TEST_DONE_DELAY_MS=3000
RPORT=$(free_port)
serve_on a --coord "local:$T/data" --threads 1 --quiet --resp "127.0.0.1:$RPORT" || fail "a not ready: $(cat "$T/a.log")"
for t in 't","kind":"sequence","start":1' 'big","kind":"sequence","start":9007199254740993'; do
  code=$(curl -s -o "$T/add.out" -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/v1/tags" -d "{\"tag\":\"$t}")
  [ "$code" = 201 ] || fail "POST /v1/tags $t: $code $(cat "$T/add.out")"
done

# gone_client PATH TAG fin|rst [resp]: sends GET PATH (resp: the RESP command PATH,
# its words, to the --resp port), waits for the server's commit line of TAG, stops
# the server, closes (FIN, or RST), resumes it
gone_client() {
  /usr/bin/python3 - "$PORT" "$1" "$T/a.log" "${SERVER_PID[a]}" "$2" "$3" "${4:-}" "$RPORT" <<'PY'
import os, signal, socket, struct, sys, time
port, path, logf, pid, tag, how, door, rport = sys.argv[1:]
pid = int(pid)
before = open(logf, errors="replace").read().count("sequence tag=%s first=" % tag)
if door == "resp":
    s = socket.create_connection(("127.0.0.1", int(rport)))
    words = path.split()
    s.sendall(b"*%d\r\n" % len(words) + b"".join(b"$%d\r\n%s\r\n" % (len(w), w.encode()) for w in words))
else:
    s = socket.create_connection(("127.0.0.1", int(port)))
    s.sendall(b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path.encode())
t0 = time.monotonic()
while open(logf, errors="replace").read().count("sequence tag=%s first=" % tag) == before:
    if time.monotonic() - t0 > 30:
        sys.exit("no commit line for %s in 30 s" % tag)
    time.sleep(0.01)
os.kill(pid, signal.SIGSTOP)
if how == "rst":
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
s.close()
time.sleep(0.2)
os.kill(pid, signal.SIGCONT)
PY
}
# gap_lines TAG: the gap lines of TAG so far
gap_lines() { grep -c "tag gap tag=$1 " "$T/a.log" || true; }
# counted TAG: the IDs ik_sequence_gap_ids_total counts for TAG, all causes
counted() {
  curl -fsS "http://127.0.0.1:$PORT/metrics" |
    awk -v t="tag=\"$1\"" 'index($0, "ik_sequence_gap_ids_total{") == 1 && index($0, t) { n += $2 } END { print n + 0 }'
}
# settled TAG N: the server logged N gap lines for TAG (and has done the rest of the
# answer: it waits out the hook once more)
settled() { [ "$(gap_lines "$1")" -ge "$2" ]; }
# past_completion: the one loop (--threads 1) answered a request after the completion
# that logged a gap line, so any other line of that completion is logged too
past_completion() { [ "$(ik_http "http://127.0.0.1:$PORT/healthz")" = 200 ] || fail "/healthz unanswered"; }

# A
first=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/t?format=text")
gone_client "/v1/sequence/t?count=5&format=text" t fin || fail "A: the client failed"
wait_until 20 settled t 1 || fail "A: a range committed for a client that closed while the server was stopped, and no gap line: the answer counted as delivered ($(grep 'sequence tag=t' "$T/a.log" | tail -n 1))"
past_completion # a second line, if any, would come from the same completion
line=$(grep "tag gap tag=t " "$T/a.log")
[ "$(gap_lines t)" = 1 ] || fail "A: more than one gap line: $line"
[[ $line == *"first=$((first + 1)) count=5 why=client gone"* ]] || fail "A: $line"
[ "$(counted t)" = 5 ] || fail "A: ik_sequence_gap_ids_total counts $(counted t) for t, want 5"
next=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/t?format=text")
[ "$next" = $((first + 6)) ] || fail "A: after the gap $((first + 1))..$((first + 5)) the next ID is $next"
pass "A: $line; counted; the next ID is $next"

# B
gone_client "/v1/sequence/big?count=3&ids=number" big rst || fail "B: the client failed"
wait_until 20 settled big 1 || fail "B: no gap line for the refused range"
past_completion
[ "$(gap_lines big)" = 1 ] || fail "B: one range, $(gap_lines big) gap lines: $(grep 'tag gap tag=big' "$T/a.log")"
[ "$(counted big)" = 3 ] || fail "B: ik_sequence_gap_ids_total counts $(counted big) for big, want 3"
nb=$(curl -fsS "http://127.0.0.1:$PORT/v1/sequence/big?format=text")
[ "$nb" = 9007199254740996 ] || fail "B: the next ID of big is $nb, want 9007199254740996"
pass "B: $(grep 'tag gap tag=big' "$T/a.log"); counted once"

# C
gone_client "IDK.SEQUENCE t COUNT 4" t fin resp || fail "C: the client failed"
wait_until 20 settled t 2 || fail "C: a range committed for a RESP client that closed while the server was stopped, and no gap line"
past_completion
line=$(grep "tag gap tag=t " "$T/a.log" | tail -n 1)
[ "$(gap_lines t)" = 2 ] || fail "C: $(gap_lines t) gap lines for t: $(grep 'tag gap tag=t' "$T/a.log")"
[[ $line == *"first=$((next + 1)) count=4 why=client gone"* ]] || fail "C: $line"
[ "$(counted t)" = 9 ] || fail "C: ik_sequence_gap_ids_total counts $(counted t) for t, want 5 + 4"
pass "C (RESP): $line; counted"

kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a exited $? after SIGTERM"
