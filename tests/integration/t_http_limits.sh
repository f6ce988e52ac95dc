#!/usr/bin/env bash
# labels: http
# timeout: 120
# Connection limits of the daemon: a request that does not complete within
# --read-timeout (slowloris) gets 408 and is dropped; an idle keep-alive connection
# is closed after --idle-timeout; a peer that stops reading is dropped; beyond
# --max-connections a new connection is closed at once; a port in use is refused at
# start. The server keeps serving throughout.
source "$(dirname "$0")/lib.sh"

port=$(free_port)
URL=http://127.0.0.1:$port
start_server lim "$port" --coord "local:$T/data" --read-timeout 500 --idle-timeout 1500 \
  --max-connections 6 --threads 2 --quiet
wait_ready "$port" || fail "server not ready"

still_serving() {
  kill -0 "${SERVER_PID[lim]}" 2>/dev/null || fail "server died after $1"
  curl -fsS --max-time 5 "$URL/api/snowflake/get/x" | grepq -E '^[1-9][0-9]*$' || fail "no ID after $1"
}

# ---- slowloris: headers trickle in, one byte every 100 ms
python3 - "$port" >"$T/slow" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
t0 = time.time()
out, took = b"", None
for ch in b"GET /api/snowflake/get/x HTTP/1.1\r\nHost: slow\r\nX-Slow: " + b"a" * 100:
    try:
        s.send(bytes([ch]))
        out += s.recv(4096, socket.MSG_DONTWAIT)
    except BlockingIOError:
        pass
    except (BrokenPipeError, ConnectionResetError):
        break
    if out:
        took = time.time() - t0
        break
    time.sleep(0.1)
print("%.2f" % (took if took is not None else 99))
print(out.decode(errors="replace"))
EOF
took=$(head -n 1 "$T/slow")
grep -q '^HTTP/1.1 408 ' "$T/slow" || fail "slowloris not answered 408: $(cat "$T/slow")"
awk -v t="$took" 'BEGIN { exit !(t < 3) }' || fail "slowloris held the connection for $took s"
still_serving "slowloris"
pass "slowloris: 408 after $took s"

# ---- idle keep-alive connection closed after --idle-timeout (1.5 s)
python3 - "$port" >"$T/idle" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(10)
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
s.recv(4096)
t0 = time.time()
while s.recv(4096):
    pass
print("%.2f" % (time.time() - t0))
EOF
idle=$(cat "$T/idle")
awk -v t="$idle" 'BEGIN { exit !(t >= 1.2 && t < 4) }' || fail "idle connection closed after $idle s (want ~1.5)"
still_serving "idle timeout"
pass "idle keep-alive connection closed after $idle s"

# ---- a peer that sends requests but never reads is dropped (write stalls)
timeouts() { curl -fsS "$URL/metrics" | awk '$1=="ik_http_timeouts_total"{print $2}'; }
before=$(timeouts)
python3 - "$port" <<'EOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(0.5)
req = b"GET /v1/snowflake?count=10000 HTTP/1.1\r\nHost: t\r\n\r\n" * 50
try:
    s.sendall(req)
except Exception:
    pass
time.sleep(3)  # never read: the server's write must give up after the read timeout
s.close()
EOF
still_serving "a peer that does not read"
after=$(timeouts)
[ "$after" -gt "$before" ] || fail "the stalled writer was not timed out ($before -> $after)"
pass "a peer that does not read is dropped (timeouts $before -> $after)"

# ---- max-connections 6: 6 held open, the 7th is closed at once
python3 - "$port" >"$T/maxconn" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
held = []
for i in range(6):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(2)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
    assert s.recv(4096).startswith(b"HTTP/1.1 200"), i
    held.append(s)
extra = socket.create_connection(("127.0.0.1", port))
extra.settimeout(2)
try:
    extra.sendall(b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n")
    got = extra.recv(4096)
except ConnectionResetError:
    got = b""
print("extra:", "closed" if got == b"" else got[:40])
for s in held:
    s.close()
EOF
grep -q 'extra: closed' "$T/maxconn" || fail "7th connection beyond max-connections: $(cat "$T/maxconn")"
wait_until 3 curl -fsS -o /dev/null "$URL/healthz" 2>/dev/null || true
still_serving "max-connections"
rej=$(curl -fsS "$URL/metrics" | awk '$1=="ik_http_connections_rejected_total"{print $2}')
[ "$rej" -ge 1 ] || fail "rejections not counted: $rej"
pass "max-connections: the 7th connection closed at once; serving again after"

# ---- a port in use is refused at start, quickly, before taking a slot
t0=$(date +%s%N)
rc=0
timeout 10 "$IK_BIN" serve --coord "local:$T/data" --http "127.0.0.1:$port" --identity dup --quiet \
  >"$T/dup.log" 2>&1 || rc=$?
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "second server on a used port: exit $rc"
[ $took -lt 5000 ] || fail "second server took $took ms to give up"
grep -qi 'in use' "$T/dup.log" || fail "refusal does not say the address is in use: $(cat "$T/dup.log")"
[ "$(wc -l <"$T/dup.log")" -le 2 ] || fail "refusal is not a one-liner: $(cat "$T/dup.log")"
"$IK_BIN" workers --coord "local:$T/data" --json | jq -e '[.slots[] | select(.holder == "dup")] | length == 0' >/dev/null ||
  fail "the refused server holds a slot"
still_serving "a refused second server"
pass "port in use: exit $rc in $took ms: $(cat "$T/dup.log")"

kill -TERM "${SERVER_PID[lim]}"
rc=0; wait "${SERVER_PID[lim]}" || rc=$?
[ $rc -eq 0 ] || fail "exit code $rc after SIGTERM: $(tail -n 20 "$T/lim.log")"
grep -qE 'runtime error|Sanitizer' "$T/lim.log" && fail "sanitizer report: $(cat "$T/lim.log")"
pass "clean exit"
