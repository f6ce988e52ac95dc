#!/usr/bin/env bash
# labels: http
# timeout: 300
# Bad input over HTTP (docs/guarantees.md promise 15): count=0, count=abc, count above the
# maximum, an unknown route, a wrong method, a 64 KiB header, a request line of
# random bytes, a client that disconnects mid-request, and more. Each gets the
# right status and a JSON error, and afterwards the server still issues an ID.
source "$(dirname "$0")/lib.sh"

# raw PORT [read|shut|drop] < REQUEST: sends REQUEST bytes on one connection and
# prints what comes back until the server closes (or RAW_WAIT seconds of silence).
# shut: half-close after sending; drop: close at once without reading.
cat >"$T/raw.py" <<'EOF'
import os, socket, sys
port, mode = int(sys.argv[1]), (sys.argv[2] if len(sys.argv) > 2 else "read")
data = sys.stdin.buffer.read()
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(float(os.environ.get("RAW_WAIT", "3")))
s.sendall(data)
if mode == "drop":
    s.close(); sys.exit(0)
if mode == "shut":
    s.shutdown(socket.SHUT_WR)
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
except socket.timeout:
    out += b"\n<TIMEOUT>"
except ConnectionResetError:
    out += b"\n<RESET>"
sys.stdout.buffer.write(out)
EOF
raw() { python3 "$T/raw.py" "$@"; }

port=$(free_port)
URL=http://127.0.0.1:$port
start_server bad "$port" --coord "local:$T/data" --max-batch 100 --quiet
wait_ready "$port" || fail "server not ready"

# still_serving WHAT: the process is alive and issues an ID.
still_serving() {
  kill -0 "${SERVER_PID[bad]}" 2>/dev/null || fail "server died after $1"
  local id
  id=$(curl -fsS --max-time 5 "$URL/api/snowflake/get/x") || fail "no ID after $1"
  [[ $id =~ ^[1-9][0-9]*$ ]] || fail "not an ID after $1: '$id'"
}

# expect_error CODE ERROR WHAT curl-args...: the answer has status CODE and a JSON
# body whose .error is ERROR and whose .message is not empty.
expect_error() {
  local want=$1 err=$2 what=$3; shift 3
  local got
  got=$(curl -s --max-time 10 -o "$T/body" -w '%{http_code}' "$@")
  [ "$got" = "$want" ] || fail "$what: HTTP $got, want $want: $(head -c 300 "$T/body")"
  [ "$(jq -r .error "$T/body")" = "$err" ] || fail "$what: error $(cat "$T/body"), want $err"
  [ -n "$(jq -r '.message // empty' "$T/body")" ] || fail "$what: no message: $(cat "$T/body")"
  still_serving "$what"
  pass "$what -> $want $err"
}

# raw_status WHAT CODE [mode] < REQUEST: the first status line of a raw exchange.
raw_status() {
  local what=$1 want=$2 mode=${3:-read} line
  raw "$port" "$mode" >"$T/raw.out"
  line=$(head -n 1 "$T/raw.out" | tr -d '\r')
  [[ $line == "HTTP/1.1 $want "* ]] || fail "$what: got '$line', want $want"
  grep -qi '^Connection: close' "$T/raw.out" || fail "$what: no 'Connection: close'"
  still_serving "$what"
  pass "$what -> $line"
}

# ---- query and path values
expect_error 400 bad_count "count=0" "$URL/v1/snowflake?count=0"
expect_error 400 bad_count "count=abc" "$URL/v1/snowflake?count=abc"
expect_error 400 bad_count "count above max-batch" "$URL/v1/snowflake?count=101"
expect_error 400 bad_count "count=-1" "$URL/v1/snowflake?count=-1"
expect_error 400 bad_count "count empty" "$URL/v1/snowflake?count="
expect_error 400 bad_count "count huge" "$URL/v1/snowflake?count=99999999999999999999999"
expect_error 400 bad_format "format=xml" "$URL/v1/snowflake?count=2&format=xml"
n=$(curl -fsS "$URL/v1/snowflake?count=100" | jq '.ids | length')
[ "$n" = 100 ] || fail "count=max-batch gave $n IDs"
pass "count=max-batch answers 100 IDs"
for bad in abc -1 0123 99999999999999999999 1.5 '%31'; do
  expect_error 400 bad_id "decode '$bad'" "$URL/v1/decode/$bad"
done

# ---- routes and methods
expect_error 404 not_found "unknown route" "$URL/nope"
expect_error 404 not_found "unknown route under /v1" "$URL/v1/snowflakes"
expect_error 404 not_found "trailing slash" "$URL/healthz/"
expect_error 404 unknown_tag "segment tag (Leaf)" "$URL/api/segment/get/orders"
expect_error 404 unknown_tag "segment tag" "$URL/v1/segment/orders?count=3"
expect_error 404 unknown_tag "sequence tag" "$URL/v1/sequence/orders"
expect_error 405 method_not_allowed "POST /v1/snowflake" -X POST "$URL/v1/snowflake"
expect_error 405 method_not_allowed "DELETE Leaf route" -X DELETE "$URL/api/snowflake/get/x"
expect_error 405 method_not_allowed "PUT /v1/status" -X PUT "$URL/v1/status"
expect_error 405 method_not_allowed "POST with a small body" --data-binary '{"a":1}' "$URL/v1/status"
expect_error 413 body_too_large "PUT with a body (bodies only on POST)" -X PUT --data-binary hello "$URL/v1/status"
allow=$(curl -s -D - -o /dev/null -X POST "$URL/v1/snowflake" | tr -d '\r' | awk -F': ' 'tolower($1)=="allow"{print $2}')
[ "$allow" = GET ] || fail "405 Allow header is '$allow', want GET"
pass "405 says Allow: GET"

# ---- sizes
big=$(head -c 65536 /dev/zero | tr '\0' a)
expect_error 431 headers_too_large "64 KiB header (curl)" -H "X-Big: $big" "$URL/api/snowflake/get/x"
{ printf 'GET /api/snowflake/get/x HTTP/1.1\r\nHost: x\r\nX-Big: '; printf '%s' "$big"; printf '\r\n\r\n'; } |
  raw_status "64 KiB header (raw)" 431
{ printf 'GET /api/snowflake/get/x HTTP/1.1\r\nHost: x\r\n'
  for i in $(seq 2000); do printf 'X-H%d: v\r\n' "$i"; done; printf '\r\n'; } |
  raw_status "2000 small headers" 431
{ printf 'GET /'; head -c 20000 /dev/zero | tr '\0' a; printf ' HTTP/1.1\r\n\r\n'; } |
  raw_status "20 KB URL" 414
printf 'GET /healthz HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello' | raw_status "body on GET" 413
printf 'POST /v1/snowflake HTTP/1.1\r\nContent-Length: 70000\r\n\r\n' | raw_status "POST body of 70000 bytes" 413
printf 'GET /healthz HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n' |
  raw_status "chunked body on GET" 413

# ---- malformed requests
for i in $(seq 20); do
  { printf '\xff'; head -c 200 /dev/urandom; printf '\r\n\r\n'; } | raw_status "request line of random bytes #$i" 400
done
printf 'GARBAGE / HTTP/1.1\r\n\r\n' | raw_status "unknown method token" 400
printf 'GET /he\x01lthz HTTP/1.1\r\n\r\n' | raw_status "control byte in the URL" 400
printf 'GET /healthz HTTP/9.9\r\n\r\n' | raw_status "HTTP/9.9" 505
printf 'GET /healthz HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n' | raw_status "two Content-Length" 400
printf 'POST /v1/snowflake HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n' | raw_status "bad chunk size" 400
printf 'GET /healthz HTTP/1.1\r\nNo-colon-here\r\n\r\n' | raw_status "header line without a colon" 400

# ---- clients that go away
for part in 'GET /api/snowflake/get/x HTTP/1.1\r\nHost: x\r\n' 'GET /api/snow' \
            'POST /v1/snowflake HTTP/1.1\r\nContent-Length: 100\r\n\r\nabc' ''; do
  printf "$part" | raw "$port" drop
done
still_serving "clients that disconnect mid-request"
pass "clients that disconnect mid-request are cleaned up"
# a client that half-closes mid-request gets nothing and the server carries on
out=$(printf 'GET /api/snowflake/get/x HTTP/1.1\r\nHo' | raw "$port" shut)
[ -z "$out" ] || fail "half-closed mid-request client got: $out"
still_serving "a client that half-closes mid-request"
pass "a client that half-closes mid-request is cleaned up"

# every one of those connections is gone (only the one asking remains)
one_open() {
  open=$(curl -fsS "$URL/metrics" | awk '$1=="ik_http_connections"{print $2}')
  [ "$open" = 1 ]
}
wait_until 7 one_open || true
[ "$open" = 1 ] || fail "ik_http_connections is $open after the bad clients left"
pass "no connection leaked"

# the errors were counted by route and code
m=$(curl -fsS "$URL/metrics")
grep -q 'ik_http_requests_total{route="/v1/snowflake",code="400"}' <<<"$m" || fail "400s not counted"
grep -q 'ik_http_requests_total{route="other",code="404"}' <<<"$m" || fail "404s not counted"
grep -q 'ik_http_requests_total{route="other",code="431"}' <<<"$m" || fail "431s not counted"
pass "errors counted in ik_http_requests_total"

# a clean exit after all that (under ASan/UBSan this also checks for leaks and
# undefined behaviour on every path above)
kill -TERM "${SERVER_PID[bad]}"
rc=0; wait "${SERVER_PID[bad]}" || rc=$?
[ $rc -eq 0 ] || fail "exit code $rc after SIGTERM: $(tail -n 20 "$T/bad.log")"
grep -qE 'runtime error|Sanitizer' "$T/bad.log" && fail "sanitizer report: $(cat "$T/bad.log")"
pass "clean exit after the bad input"
