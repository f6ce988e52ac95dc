#!/usr/bin/env bash
# labels: http
# timeout: 120
# The routes of docs/http.md on a real daemon: keep-alive and pipelining, /v1/snowflake?count=N
# (N unique strictly increasing IDs, JSON or text), decode round-trip, status,
# health, readiness, metrics, and the optional bearer token on /v1.
source "$(dirname "$0")/lib.sh"

port=$(free_port)
URL=http://127.0.0.1:$port
start_server api "$port" --coord "local:$T/data" --quiet
wait_ready "$port" || fail "server not ready"

# ---- keep-alive: curl reuses one connection for several requests
conns=$(curl -fsS -w '%{num_connects}\n' -o /dev/null "$URL/api/snowflake/get/a" \
          -o /dev/null "$URL/api/snowflake/get/b" -o /dev/null "$URL/v1/snowflake?count=2" \
          -o /dev/null "$URL/healthz" | tr '\n' ' ')
[ "$conns" = "1 0 0 0 " ] || fail "keep-alive: connects per request: $conns"
pass "four requests on one keep-alive connection"

# ---- pipelining: many requests in one write, answered in order on one connection
python3 - "$port" >"$T/pipelined" <<'EOF'
import socket, sys
port = int(sys.argv[1])
n = 200
reqs = b"".join(b"GET /api/snowflake/get/k%d HTTP/1.1\r\nHost: t\r\n\r\n" % i for i in range(n - 1))
reqs += b"GET /api/snowflake/get/last HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
s.sendall(reqs)
buf = b""
while True:
    b = s.recv(65536)
    if not b: break
    buf += b
ids, i = [], 0
while i < len(buf):
    head_end = buf.index(b"\r\n\r\n", i)
    head = buf[i:head_end].decode()
    assert head.startswith("HTTP/1.1 200 "), head
    length = int([l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length:")][0])
    ids.append(buf[head_end + 4: head_end + 4 + length].decode())
    i = head_end + 4 + length
print("\n".join(ids))
EOF
[ "$(wc -l <"$T/pipelined")" = 200 ] || fail "pipelining: $(wc -l <"$T/pipelined") answers to 200 requests"
assert_increasing "$T/pipelined"
pass "200 pipelined requests answered in order with increasing IDs"

# ---- pipelining with large answers: back-pressure, nothing lost
python3 - "$port" >"$T/flood" <<'EOF'
import json, socket, sys, time
port = int(sys.argv[1])
n = 300
reqs = b"GET /v1/snowflake?count=1000 HTTP/1.1\r\nHost: t\r\n\r\n" * (n - 1)
reqs += b"GET /v1/snowflake?count=1000 HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(20)
s.sendall(reqs)
time.sleep(0.5)  # a slow reader: the server must wait, not buffer without bound
buf = b""
while True:
    b = s.recv(1 << 20)
    if not b: break
    buf += b
i, got = 0, 0
while i < len(buf):
    head_end = buf.index(b"\r\n\r\n", i)
    head = buf[i:head_end].decode()
    assert head.startswith("HTTP/1.1 200 "), head
    length = int([l.split(":")[1] for l in head.split("\r\n") if l.lower().startswith("content-length:")][0])
    for x in json.loads(buf[head_end + 4: head_end + 4 + length])["ids"]:
        print(x)
    i = head_end + 4 + length
    got += 1
assert got == n, got
EOF
[ "$(wc -l <"$T/flood")" = 300000 ] || fail "pipelined batches: $(wc -l <"$T/flood") IDs, want 300000"
assert_increasing "$T/flood"
pass "300 pipelined count=1000 requests: 300000 increasing IDs"

# ---- /v1/snowflake?count=N: N unique strictly increasing IDs
curl -fsS "$URL/v1/snowflake?count=10000" | jq -r '.ids[]' >"$T/batch"
[ "$(wc -l <"$T/batch")" = 10000 ] || fail "count=10000 gave $(wc -l <"$T/batch") IDs"
assert_increasing "$T/batch"
assert_unique "$T/batch"
ctype=$(curl -fsS -o /dev/null -w '%{content_type}' "$URL/v1/snowflake?count=3")
[[ $ctype == application/json* ]] || fail "JSON answer typed $ctype"
jq -e '.ids | all(type == "string")' <(curl -fsS "$URL/v1/snowflake?count=3") >/dev/null ||
  fail "IDs are not JSON strings"
pass "count=10000: 10000 unique increasing IDs as JSON strings"

# ---- text format: ?format=text, Accept: text/plain
curl -fsS "$URL/v1/snowflake?count=5&format=text" >"$T/text"
[ "$(wc -l <"$T/text")" = 5 ] || fail "format=text: $(cat "$T/text")"
grep -qvE '^[1-9][0-9]*$' "$T/text" && fail "format=text lines: $(cat "$T/text")"
assert_increasing "$T/text"
curl -fsS -H 'Accept: text/plain' "$URL/v1/snowflake?count=4" >"$T/text2"
[ "$(wc -l <"$T/text2")" = 4 ] || fail "Accept: text/plain: $(cat "$T/text2")"
curl -fsS -H 'Accept: application/json' "$URL/v1/snowflake?count=2" | jq -e '.ids | length == 2' >/dev/null ||
  fail "Accept: application/json did not answer JSON"
one=$(curl -fsS "$URL/v1/snowflake")
[ "$(jq '.ids | length' <<<"$one")" = 1 ] || fail "no count: $one"
pass "format=text and Accept: text/plain answer one ID a line; no count means 1"

# ---- the Leaf route: one decimal ID, text/plain, no newline
curl -fsS -D "$T/leaf.h" -o "$T/leaf" "$URL/api/snowflake/get/anything"
grep -qi '^Content-Type: text/plain' "$T/leaf.h" || fail "Leaf route type: $(cat "$T/leaf.h")"
grep -qE '^[1-9][0-9]{0,18}$' "$T/leaf" || fail "Leaf route body: $(cat "$T/leaf")"
[ "$(wc -c <"$T/leaf")" = "$(tr -d '\n' <"$T/leaf" | wc -c)" ] || fail "Leaf body has a newline"
pass "Leaf route: $(cat "$T/leaf")"

# ---- decode round-trip
status=$(curl -fsS "$URL/v1/status")
worker=$(jq -r .worker <<<"$status")
id=$(curl -fsS "$URL/api/snowflake/get/x")
now=$(( $(date +%s%N) / 1000000 ))
d=$(curl -fsS "$URL/v1/decode/$id")
[ "$(jq -r .id <<<"$d")" = "$id" ] || fail "decode id: $d"
[ "$(jq -r .worker <<<"$d")" = "$worker" ] || fail "decode worker $(jq .worker <<<"$d") != status worker $worker"
t=$(jq -r .time_ms <<<"$d")
diff=$(( now - t )); diff=${diff#-}
[ "$diff" -lt 1000 ] || fail "decoded time $t is $diff ms from now $now"
[[ $(jq -r .time <<<"$d") =~ ^20[0-9]{2}-[01][0-9]-[0-3][0-9]T[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3}Z$ ]] ||
  fail "decoded time not ISO 8601 with ms: $d"
cli=$("$IK_BIN" decode --json "$id")
[ "$(jq -r .time_ms <<<"$cli")" = "$t" ] && [ "$(jq -r .sequence <<<"$cli")" = "$(jq -r .sequence <<<"$d")" ] ||
  fail "server decode $d differs from CLI decode $cli"
pass "decode round-trip: $d"

# ---- status, health, readiness, metrics
jq -e '.app == "default" and (.backend | startswith("local:")) and (.layout | contains("bits=41/10/12"))
       and .lease.state == "held" and .lease.worker == .worker and (.clock | has("backward_refusals"))
       and .generator.granted == true and .ready == true' <<<"$status" >/dev/null ||
  fail "status: $status"
pass "status: worker $worker, lease $(jq -c .lease <<<"$status")"
[ "$(http_status "$URL/healthz")" = 200 ] || fail "/healthz"
[ "$(curl -fsS "$URL/readyz" | jq -r .status)" = ready ] || fail "/readyz"
m=$(curl -fsS "$URL/metrics")
for name in ik_ids_issued_total ik_http_requests_total ik_lease_state ik_lease_acquisitions_total \
            ik_clock_tick_waits_total ik_clock_backward_waits_total ik_clock_backward_refusals_total \
            ik_http_connections; do
  grep -q "^$name" <<<"$m" || fail "metric $name missing"
done
issued=$(awk '$1=="ik_ids_issued_total"{print $2}' <<<"$m")
[ "$issued" -ge 310000 ] || fail "ik_ids_issued_total is $issued"
[ "$(awk '$1=="ik_lease_state"{print $2}' <<<"$m")" = 1 ] || fail "ik_lease_state not 1 (held)"
grep -q 'ik_http_requests_total{route="/api/snowflake/get/{key}",code="200"}' <<<"$m" ||
  fail "Leaf route not counted"
pass "healthz, readyz, metrics ($issued IDs issued)"
curl -fsS "$URL/v1/routes" | grepq '/v1/snowflake' || fail "GET /v1/routes does not list the routes"
# the recent past: 600 seconds by default, ?seconds=N, 400 outside 1..600
curl -fsS "$URL/v1/history" | jq -e '.seconds == 600 and (.series | length) >= 3
  and ([.series[] | .ids | length] | all(. == 600)) and .memory_bytes > 0' >/dev/null ||
  fail "GET /v1/history: $(curl -sS "$URL/v1/history" | head -c 300)"
curl -fsS "$URL/v1/history?seconds=5" | jq -e '[.series[] | .ids | length] | all(. == 5)' >/dev/null ||
  fail "GET /v1/history?seconds=5 is not 5 a series"
for bad in 0 601 x 5x ''; do
  [ "$(http_status "$URL/v1/history?seconds=$bad")" = 400 ] || fail "/v1/history?seconds=$bad is not 400"
done
curl -fsS "$URL/v1/events" | jq -e '.kept == 20 and any(.events[]; .kind == "slot")' >/dev/null ||
  fail "GET /v1/events lacks the slot taken: $(curl -sS "$URL/v1/events")"
page=$(curl -fsS "$URL/") || fail "GET / failed"
grep -q '<section id="workers">' <<<"$page" || fail "GET / is not the status page"

# ---- bearer token on /v1
printf 'sesame-42\n' >"$T/token"
port2=$(free_port)
URL2=http://127.0.0.1:$port2
start_server tok "$port2" --coord "local:$T/data" --http-token-file "$T/token" --quiet
wait_ready "$port2" || fail "token server not ready"
[ "$(http_status "$URL2/v1/snowflake")" = 401 ] || fail "/v1 without a token"
curl -s -D - -o /dev/null "$URL2/v1/status" | grepq -i '^WWW-Authenticate: Bearer' || fail "401 without WWW-Authenticate"
[ "$(http_status -H 'Authorization: Bearer wrong' "$URL2/v1/snowflake")" = 401 ] || fail "/v1 with a wrong token"
[ "$(http_status -H 'Authorization: Basic c2VzYW1lLTQy' "$URL2/v1/snowflake")" = 401 ] || fail "/v1 with Basic"
[ "$(http_status -H 'Authorization: Bearer sesame-42' "$URL2/v1/snowflake")" = 200 ] || fail "/v1 with the token"
[ "$(http_status -H 'Accept;' -H 'authorization: bearer sesame-42' "$URL2/v1/decode/$id")" = 200 ] ||
  fail "/v1 with a lower-case header after an empty one"
[ "$(http_status "$URL2/readyz")" = 200 ] || fail "/readyz needs no token"
[ "$(http_status "$URL2/healthz")" = 200 ] || fail "/healthz needs no token"
curl -fsS -X POST -H 'Authorization: Bearer sesame-42' "$URL2/v1/tags" \
  -d '{"tag":"tk","kind":"segment","start":1}' >/dev/null || fail "tag create with the token"
# Every route that issues IDs or shows state: 401 without the token, 200 with it
# (Bearer, or Basic with the token as the password, for browsers).
guarded=(/api/snowflake/get/x /api/segment/get/tk /v1/snowflake /v1/segment/tk "/v1/decode/$id"
         /v1/status /v1/tags /v1/tags/tk /v1/workers /v1/history /v1/events /v1/routes /metrics /)
for r in "${guarded[@]}"; do
  [ "$(http_status "$URL2$r")" = 401 ] || fail "$r without the token is not 401"
  [ "$(http_status -H 'Authorization: Bearer sesame-42' "$URL2$r")" = 200 ] || fail "$r with the token is not 200"
  [ "$(http_status -u "x:sesame-42" "$URL2$r")" = 200 ] || fail "$r with Basic x:token is not 200"
  [ "$(http_status -u "x:sesame-4" "$URL2$r")" = 401 ] || fail "$r with a wrong Basic password is not 401"
done
pass "bearer token: 401 without or wrong, 200 with, on every ID and state route; probes open"
[ "$("$IK_BIN" next --server "$URL2" --http-token-file "$T/token" --count 3 | wc -l)" = 3 ] ||
  fail "idkeeper next --http-token-file"
expect_fail 1 "401" "$IK_BIN" next --server "$URL2" --count 3
pass "idkeeper next sends the token from --http-token-file, fails clearly without it"

# --open-leaf-routes and --open-metrics exempt what they name, and nothing else.
port3=$(free_port)
URL3=http://127.0.0.1:$port3
start_server open "$port3" --coord "local:$T/data" --http-token-file "$T/token" --open-leaf-routes \
  --open-metrics --quiet
wait_ready "$port3" || fail "open server not ready"
for r in /api/snowflake/get/x /api/segment/get/tk /metrics; do
  [ "$(http_status "$URL3$r")" = 200 ] || fail "$r with --open-* is not 200 without the token"
done
for r in /v1/snowflake /v1/status /; do
  [ "$(http_status "$URL3$r")" = 401 ] || fail "$r with --open-* is not 401 without the token"
done
pass "--open-leaf-routes and --open-metrics open the Leaf routes and /metrics only"

# clean exits (under ASan/UBSan: no leak, no undefined behaviour on these paths)
for name in api tok open; do
  kill -TERM "${SERVER_PID[$name]}"
  rc=0; wait "${SERVER_PID[$name]}" || rc=$?
  [ $rc -eq 0 ] || fail "$name: exit code $rc after SIGTERM: $(tail -n 20 "$T/$name.log")"
  grep -qE 'runtime error|Sanitizer' "$T/$name.log" && fail "sanitizer report: $(cat "$T/$name.log")"
done
pass "clean exits"
