#!/usr/bin/env bash
# labels: resp local
# timeout: 60
# Cross-protocol requests on the RESP port (docs/resp.md, "Errors"): a browser can be
# made to send an HTTP request to any port (a form posting text/plain), and the
# RESP parser reads each of its lines as an inline command. Without a token, the
# body's lines used to run: "IDK.SEQUENCE seqa COUNT 5" and "INCR seqa" took
# sequence IDs 1..6 from a form on a web page. As redis-server does, a command named
# POST or "Host:" is taken for an attack: logged, and the connection closed with
# nothing more read or run.
#   A. POST (curl, as a form sends it): no ID taken, no answer, the line logged.
#   B. GET with a Host: header, then commands: the GET line is an unknown command
#      (-ERR), then the Host: line closes the connection; nothing behind it runs.
#   C. The server still serves, and the next ID is the first.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add seqa --kind sequence "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" --threads 1 || fail "server did not start"

max_id() { curl -fsS "http://127.0.0.1:$PORT/v1/tags/seqa" | jq -r .max_id; }
max0=$(max_id)

# A
out=$(curl -s -m 10 --http0.9 -X POST -H 'Content-Type: text/plain' \
  --data-binary $'IDK.SEQUENCE seqa COUNT 5\r\nINCR seqa\r\n' "http://127.0.0.1:$RPORT/" 2>&1) || true
max=$(max_id)
[ "$max" = "$max0" ] || fail "A: an HTTP POST to the RESP port ran its body as commands: max_id of seqa went from $max0 to $max"
[ -z "$out" ] || fail "A: the POST got an answer: $(printf %q "$out")"
wait_grep 'Possible SECURITY ATTACK' "$T/a.log" 5 || fail "A: no log line for the POST"
pass "A: POST closed unanswered, nothing run: $(grep -m1 'SECURITY ATTACK' "$T/a.log")"

# B
got=$(/usr/bin/python3 - "$RPORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: */*\r\n\r\nINCR seqa\r\nPING\r\n")
s.settimeout(10)
data = b""
while True:
    b = s.recv(4096)
    if not b:
        break
    data += b
print(repr(data))
PY
) || fail "B: the client failed"
[[ $got == "b\"-ERR unknown command 'GET'"* ]] || fail "B: want one -ERR for the GET line, then the close; got $got"
[[ $got != *PONG* && $got != *":"[0-9]* ]] || fail "B: commands behind the Host: line ran: $got"
max=$(max_id)
[ "$max" = "$max0" ] || fail "B: the INCR behind the Host: line ran: max_id went from $max0 to $max"
pass "B: GET answered -ERR, closed at Host:"

# C
[ "$(rcli INCR seqa)" = 1 ] || fail "C: the next INCR is not 1"
pass "C: the server serves, and the first ID is 1"
