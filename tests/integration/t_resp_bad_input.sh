#!/usr/bin/env bash
# labels: resp
# timeout: 300
# RESP bad input (docs/guarantees.md promise 15): a bulk length of 2^40, a negative array
# count, 1 MiB of garbage, a pipeline of 100,000 PINGs written without reading the
# answers, a client that disconnects mid-command, an inline line past the limit,
# too many arguments. Each gets an error or a closed connection; the server goes on
# serving others, a half-sent INCR issues nothing, and memory stays bounded (RSS
# before and after).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"
# idle_conns: no connection open but the /metrics request asking
idle_conns() { [ "$(metric_of "$PORT" ik_http_connections)" = 1 ]; }

coord=(--coord "local:$T/data")
"$IK_BIN" tags add seq --kind sequence "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" --threads 2 || fail "server did not start"
pid=${SERVER_PID[a]}

# raw PORT [read|drop|pings N] < BYTES: sends BYTES on one connection and prints
# what comes back until the server closes (or RAW_WAIT seconds of silence); drop:
# close without reading; pings N: a thread writes N PINGs while nothing is read,
# then everything is read and the +PONGs are counted.
cat >"$T/raw.py" <<'PY'
import os, socket, sys, threading, time
port, mode = int(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "read")
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(float(os.environ.get("RAW_WAIT", "5")))
if mode == "pings":
    n = int(sys.argv[3])
    data = b"PING\r\n" * n
    t = threading.Thread(target=s.sendall, args=(data,))
    t.start()
    time.sleep(1)          # the writer runs ahead; nothing is read meanwhile
    want = b"+PONG\r\n" * n
    got = bytearray()
    while len(got) < len(want):
        b = s.recv(1 << 20)
        if not b: break
        got += b
    t.join()
    print("pongs", got.count(b"+PONG\r\n"), "exact", bytes(got) == want)
    sys.exit(0)
data = sys.stdin.buffer.read()
try:
    s.sendall(data)
except OSError:
    pass  # the server closed while we were still sending: that is an answer too
if mode == "drop":
    s.close(); sys.exit(0)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
    out += b"<closed>"
except socket.timeout:
    out += b"<open>"
except OSError:
    out += b"<reset>"
sys.stdout.buffer.write(out)
PY
raw() { /usr/bin/python3 "$T/raw.py" "$RPORT" "$@"; }

# each other client still gets served
still_serves() {
  [ "$(rcli PING)" = PONG ] || fail "after $1: PING not answered"
}

# warm up, then the baseline RSS
redis-benchmark -p "$RPORT" -n 20000 -c 10 -q PING >/dev/null 2>&1
raw pings 1000 >/dev/null
rss0=$(rss_kb "$pid")
log "RSS after warm-up: $rss0 KiB"

out=$(printf '*1\r\n$1099511627776\r\n' | raw)
[[ "$out" == "-ERR Protocol error: invalid bulk length"*"<closed>" ]] || fail "bulk length 2^40: $out"
still_serves "a bulk length of 2^40"
pass "a bulk length of 2^40: -ERR Protocol error, closed"

out=$(printf '*-5\r\n' | raw)
[[ "$out" == "-ERR Protocol error: invalid multibulk length"*"<closed>" ]] || fail "*-5: $out"
out=$(printf '*-1\r\n*0\r\nPING\r\n' | RAW_WAIT=2 raw)
[[ "$out" == "+PONG"* ]] || fail "*-1 and *0 are skipped, as Redis does: $out"
out=$(printf '*2147483648\r\n' | raw)
[[ "$out" == "-ERR Protocol error: invalid multibulk length"*"<closed>" ]] || fail "*2^31: $out"
still_serves "a negative array count"
pass "a negative array count: -ERR Protocol error, closed (*-1 and *0 skipped as in Redis)"

head -c 1048576 /dev/urandom >"$T/garbage"
raw <"$T/garbage" >"$T/garbage.out"
head -c 1 "$T/garbage.out" | grepq -- - || [ "$(head -c 8 "$T/garbage.out")" = "<closed>" ] ||
  fail "1 MiB of garbage: the answer does not start with an error: $(head -c 200 "$T/garbage.out")"
! grep -qaE '^[+:$*]' "$T/garbage.out" || fail "1 MiB of garbage got a non-error answer"
grep -qa '<closed>\|<reset>' "$T/garbage.out" || fail "1 MiB of garbage: the connection stayed open"
still_serves "1 MiB of garbage"
pass "1 MiB of garbage: errors, then closed ($(grep -ac '^-' "$T/garbage.out") error lines)"

printf 'PING %s\r\n' "$(head -c 10000 /dev/zero | tr '\0' a)" | raw >"$T/long.out"
grep -qa 'too big inline request' "$T/long.out" || fail "a 10 KB inline line: $(head -c 200 "$T/long.out")"
{ printf '*300\r\n'; for i in $(seq 300); do printf '$1\r\nx\r\n'; done; } | raw >"$T/args.out"
grep -qa 'invalid multibulk length' "$T/args.out" || fail "300 arguments: $(head -c 200 "$T/args.out")"
still_serves "limits"
pass "an inline line above max-header-bytes and a command of 300 arguments: -ERR, closed"

out=$(raw pings 100000)
[ "$out" = "pongs 100000 exact True" ] || fail "100,000 PINGs written without reading: $out"
still_serves "100,000 PINGs"
pass "100,000 PINGs written without reading: all 100,000 answered, in order"

before=$(rcli INCR seq)
printf '*2\r\n$4\r\nINCR\r\n$3\r\nse' | raw drop
printf '*2\r\n$4\r\nINCR\r\n$3\r\nseq\r' | raw drop
# both closes handled (an INCR completed by its close would be issued before the next)
wait_until 10 idle_conns || fail "the dropped connections stay open: $(metric_of "$PORT" ik_http_connections)"
after=$(rcli INCR seq)
[ "$after" = $((before + 1)) ] || fail "a half-sent INCR issued an ID: $before then $after"
still_serves "a client gone mid-command"
pass "a client that disconnects mid-command: closed, nothing issued (INCR $before then $after)"

# 20 clients at once with garbage, and 20 writing pipelines: memory stays bounded
for i in $(seq 20); do raw <"$T/garbage" >/dev/null & done
for i in $(seq 20); do raw pings 20000 >"$T/p.$i" & done
wait $(jobs -p | grep -v "$pid") 2>/dev/null || true
for i in $(seq 20); do [ "$(cat "$T/p.$i")" = "pongs 20000 exact True" ] || fail "client $i: $(cat "$T/p.$i")"; done
wait_until 10 idle_conns || fail "the crowd's connections stay open: $(metric_of "$PORT" ik_http_connections)"
rss1=$(rss_kb "$pid")
log "RSS after: $rss1 KiB (before: $rss0 KiB)"
# ASan keeps freed memory in quarantine (256 MiB by default): a wider bound there
limit=$((64 * 1024)); grep -q __asan_init "$IK_BIN" 2>/dev/null && limit=$((512 * 1024))
[ $((rss1 - rss0)) -lt "$limit" ] || fail "RSS grew from $rss0 to $rss1 KiB"
still_serves "the crowd"
curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null || fail "HTTP no longer answers"
pass "RSS $rss0 KiB before, $rss1 KiB after 20 garbage clients and 20 x 20,000 PINGs; HTTP and RESP still serve"
