#!/usr/bin/env bash
# labels: resp http local nosan
# timeout: 120
# Memory held for answers a client never reads stays bounded per connection
# (docs/resp.md and docs/http.md, "memory per connection"). Before, the output limit
# counted bytes written but unsent and held answers, not the ID arrays and rendered
# output of answers still pending: one 2.7 KB pipeline of 100 x IDK.SNOWFLAKE COUNT
# 10000 (whose IDs the generator hands out over several milliseconds, so each waits
# in the loop's retry queue) pinned about 19 MB per connection; HTTP likewise.
# Now each admitted request's expected answer is charged against the limit until it
# is written, and a connection over the limit is not read.
# nosan: it measures the release build's RSS (ASan's quarantine and redzones
# would be most of what it saw).
#   A. 4 RESP connections pipeline 100 x IDK.SNOWFLAKE COUNT 10000 and never read:
#      the server's RSS grows by less than 2 MiB a connection (the limit, 256 KiB,
#      plus one answer of 10,000 IDs charged, plus the allocator's slack; measured
#      +1.7 MiB for the 4 together, +76 MiB before).
#   B. 4 HTTP connections pipeline 100 x GET /v1/snowflake?count=10000: the same.
#   Each time the server still answers, and stops cleanly.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

# settled: the RSS did not change by more than 64 KiB over the last 0.5 s
settled() {
  local a b
  a=$(rss_kb "$pid")
  sleep 0.5 # let time pass: the RSS is compared across half a second
  b=$(rss_kb "$pid")
  [ $((b - a)) -lt 64 ] && [ $((a - b)) -lt 64 ]
}
# crowd DOOR: 4 connections that send 100 large requests each and never read,
# kept open until $T/done exists
crowd() {
  rm -f "$T/done" "$T/sent"
  /usr/bin/python3 - "$1" "$RPORT" "$PORT" "$T" <<'PY' &
import os, socket, sys, time
door, rport, hport, t = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if door == "resp":
    port, one = rport, b"*3\r\n$13\r\nIDK.SNOWFLAKE\r\n$5\r\nCOUNT\r\n$5\r\n10000\r\n"
else:
    port, one = hport, b"GET /v1/snowflake?count=10000 HTTP/1.1\r\nHost: x\r\n\r\n"
conns = []
for _ in range(4):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.setblocking(False)
    conns.append([s, one * 100])
end = time.monotonic() + 10
while any(c[1] for c in conns) and time.monotonic() < end:
    for c in conns:
        if c[1]:
            try:
                c[1] = c[1][c[0].send(c[1]):]
            except BlockingIOError:
                pass
    time.sleep(0.01)
open(t + "/sent", "w").write("%d\n" % sum(len(c[1]) for c in conns))
while not os.path.exists(t + "/done"):
    time.sleep(0.05)
PY
  CROWD=$!
}

for door in resp http; do # a fresh server each: freed memory is not always given back
  resp_serve "$door" --coord "local:$T/$door" --threads 1 || fail "server did not start: $(cat "$T/$door.log")"
  pid=${SERVER_PID[$door]}
  base=$(rss_kb "$pid")
  crowd "$door"
  wait_until 15 test -s "$T/sent" || fail "$door: the crowd did not send"
  wait_until 30 settled || log "$door: the RSS still moves after 30 s"
  rss=$(rss_kb "$pid")
  grown=$((rss - base))
  log "$door: RSS $base KiB before, $rss KiB with 4 unread connections: +$grown KiB"
  touch "$T/done"
  wait "$CROWD" || fail "$door: the crowd failed"
  [ "$grown" -lt $((4 * 2 * 1024)) ] ||
    fail "$door: 4 connections that never read grew the server by $grown KiB (want < 8 MiB: the answers pending for them were not charged against the output limit)"
  [ "$(rcli IDK.SNOWFLAKE COUNT 3 | wc -l)" = 3 ] || fail "$door: the server does not answer afterwards"
  pass "$door: +$grown KiB for 4 unread connections of 100 x 10,000 IDs; the server still answers"
  kill -TERM "$pid"
  wait "$pid" || fail "$door: the server exited $? after SIGTERM"
done
