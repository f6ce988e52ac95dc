#!/usr/bin/env bash
# labels: resp local
# timeout: 90
# RESP connections that never authenticate (a token set) must not starve the HTTP
# API and its health checks (docs/resp.md, "Limits, timeouts, shutdown"). Before,
# --max-connections was one counter for both listeners and an unauthenticated
# connection lived the whole idle timeout: 60 idle RESP connections that never sent
# AUTH, against --max-connections 50, made /readyz unreachable for 60 s.
#   A. 60 such connections: /readyz and an HTTP ID request still answer while
#      they are open (unauthenticated RESP connections get at most half of
#      --max-connections; the others hear "-ERR max number of clients reached").
#   B. The admitted ones are closed by the server within the authentication
#      deadline (5 s), well before the 60 s idle timeout.
#   C. A client that authenticates in time is served, and kept past the deadline.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

echo -n s3cret >"$T/token"
coord=(--coord "local:$T/data")
resp_serve a "${coord[@]}" --threads 1 --http-token-file "$T/token" --max-connections 50 \
  --idle-timeout 60000 || fail "server did not start: $(cat "$T/a.log")"

# The crowd: 60 connections that send nothing; writes "open" to $T/crowd.state once
# they are all connected, then for each the seconds until the server closed it
# ("never" after 20 s) and the first bytes it sent, to $T/crowd.out.
/usr/bin/python3 - "$RPORT" "$T/crowd" <<'PY' &
import select, socket, sys, time
port, out = int(sys.argv[1]), sys.argv[2]
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(60)]
t0 = time.monotonic()
open(out + ".state", "w").write("open\n")
closed, first = {}, {}
while len(closed) < len(conns) and time.monotonic() - t0 < 20:
    live = [s for s in conns if s not in closed]
    r, _, _ = select.select(live, [], [], 0.1)
    for s in r:
        try:
            b = s.recv(4096)
        except ConnectionResetError:
            b = b""
        if b:
            first.setdefault(s, b)
        else:
            closed[s] = time.monotonic() - t0
with open(out + ".out", "w") as f:
    for s in conns:
        f.write("%s %r\n" % ("%.1f" % closed[s] if s in closed else "never", first.get(s, b"")))
PY
crowd=$!
wait_until 10 test -s "$T/crowd.state" || fail "the crowd did not connect"

# A
code=$(curl -s -m 3 -o "$T/ready" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz") || true
[ "$code" = 200 ] || fail "A: /readyz answered '$code' with 60 unauthenticated RESP connections open against --max-connections 50"
code=$(curl -s -m 3 -o "$T/id" -w '%{http_code}' -H 'Authorization: Bearer s3cret' "http://127.0.0.1:$PORT/v1/snowflake") || true
[ "$code" = 200 ] || fail "A: GET /v1/snowflake with the token answered '$code' beside the crowd"
pass "A: /readyz 200 and the HTTP API served beside 60 unauthenticated RESP connections"

# B
wait "$crowd" || fail "the crowd failed"
refused=$(grep -c "max number of clients" "$T/crowd.out" || true)
never=$(grep -c '^never' "$T/crowd.out" || true)
late=$(awk '$1 != "never" && $1 + 0 > 8 {n++} END {print n + 0}' "$T/crowd.out")
log "refused at once: $refused; closed later than 8 s: $late; never closed: $never"
[ "$refused" -ge 1 ] || fail "B: no unauthenticated connection was refused: $(sort "$T/crowd.out" | uniq -c)"
[ "$never" = 0 ] && [ "$late" = 0 ] || fail "B: unauthenticated connections outlived the deadline: $(sort "$T/crowd.out" | uniq -c)"
pass "B: $refused refused, the rest closed within the deadline"

# C
/usr/bin/python3 - "$RPORT" <<'PY' || fail "C: an authenticated connection was not kept"
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"AUTH s3cret\r\n")
assert s.recv(100) == b"+OK\r\n"
time.sleep(7)
s.sendall(b"PING\r\n")
s.settimeout(5)
got = s.recv(100)
assert got == b"+PONG\r\n", got
PY
pass "C: an authenticated connection outlives the deadline"
