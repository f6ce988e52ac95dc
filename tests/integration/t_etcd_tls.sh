#!/usr/bin/env bash
# labels: etcd
# timeout: 120
# etcds:// (docs/etcd.md, "URI and options"): an etcd of the test's own serving its
# client URL over TLS only (https on loopback; --cert-file, --key-file and
# --trusted-ca-file, with which etcd requires a client certificate signed by that
# CA), with a CA, a server and a client certificate made here by openssl:
#   1. ?cacert=&cert=&key=, the CA that signed etcd's certificate and a client
#      certificate it signed: `idkeeper workers` lists, `serve` takes a slot and
#      answers snowflake IDs, and exits 0 on SIGTERM, its slot released;
#   2. ?cacert= another CA: refused in one line that names the certificate
#      problem, exit 1, serve never ready;
#   3. no client certificate: refused in one line, exit 1;
#   4. etcd:// (no TLS) on that https port: refused in one line, exit 1.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"

# a CA, a server certificate for 127.0.0.1 signed by it, and another CA
mkca() {
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj "/CN=$2" -keyout "$T/$1.key" -out "$T/$1.pem" 2>>"$T/openssl.log" || fail "openssl: the CA $1: $(tail -n 3 "$T/openssl.log")"
}
mkca ca ik-test-ca
mkca other ik-other-ca
# mkcert NAME EKU: a key and a certificate for 127.0.0.1 signed by the CA ca (etcd's
# gateway dials etcd's own gRPC port with the server certificate: it needs both EKUs)
mkcert() {
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
    -keyout "$T/$1.key" -out "$T/$1.csr" 2>>"$T/openssl.log" || fail "openssl: the key $1: $(tail -n 3 "$T/openssl.log")"
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=%s\n' "$2" >"$T/$1.ext"
  openssl x509 -req -in "$T/$1.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -days 2 \
    -extfile "$T/$1.ext" -out "$T/$1.pem" 2>>"$T/openssl.log" || fail "openssl: signing $1: $(tail -n 3 "$T/openssl.log")"
}
mkcert server serverAuth,clientAuth
mkcert client clientAuth

# etcd with its client URL on https only (its peer URL stays http: one member)
CP=$(ik_free_port "$T/.ports")
PP=$(ik_free_port "$T/.ports")
mkdir -p "$T/etcd-tls"
etcd --name tls --data-dir "$T/etcd-tls/data" \
  --listen-client-urls "https://127.0.0.1:$CP" --advertise-client-urls "https://127.0.0.1:$CP" \
  --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
  --initial-cluster "tls=http://127.0.0.1:$PP" --initial-cluster-state new \
  --cert-file "$T/server.pem" --key-file "$T/server.key" --trusted-ca-file "$T/ca.pem" \
  --heartbeat-interval 100 --election-timeout 1000 --log-level warn >>"$T/etcd-tls.log" 2>&1 &
EPID=$!
IK_PIDS+=("$EPID")
CURL_TLS=(--cacert "$T/ca.pem" --cert "$T/client.pem" --key "$T/client.key")
answers() {
  curl -fsS -m 2 "${CURL_TLS[@]}" -X POST "https://127.0.0.1:$CP/v3/kv/range" -d '{"key":"aWs="}' 2>/dev/null |
    grep -q '"cluster_id"'
}
wait_until 60 answers || fail "etcd on https://127.0.0.1:$CP did not serve: $(tail -n 5 "$T/etcd-tls.log")"

U="etcds://127.0.0.1:$CP/ik-tls-$$"
MINE="cert=$T/client.pem&key=$T/client.key"
# 1. the right CA
"$IK_BIN" workers --coord "$U?cacert=$T/ca.pem&$MINE" >"$T/out" 2>"$T/err" ||
  fail "workers over TLS with the CA that signed etcd's certificate: $(cat "$T/err")"
serve_on tls1 --coord "$U?cacert=$T/ca.pem&$MINE" --worker-range 0-3 --allow-unsafe-store --lease-ttl 2000 ||
  fail "serve over TLS: $(tail -n 5 "$T/tls1.log")"
id=$(http_get "http://127.0.0.1:$PORT/v1/snowflake?format=text") || fail "no snowflake ID over TLS"
[[ $id =~ ^[0-9]+$ ]] || fail "the snowflake answer is '$id'"
held=$(curl -fsS -m 5 "${CURL_TLS[@]}" -X POST "https://127.0.0.1:$CP/v3/kv/range" \
  -d "{\"key\":\"$(printf 'ik-tls-%s/idkeeper/default/slot/' $$ | base64 -w0)\",\"range_end\":\"$(printf 'ik-tls-%s/idkeeper/default/slot0' $$ | base64 -w0)\",\"count_only\":true}" | jq -r '.count // "0"')
[ "$held" = 1 ] || fail "one slot key expected in etcd while serving, found $held"
kill -TERM "${SERVER_PID[tls1]}"
wait "${SERVER_PID[tls1]}" || fail "serve over TLS did not exit 0 on SIGTERM: $(tail -n 5 "$T/tls1.log")"
held=$(curl -fsS -m 5 "${CURL_TLS[@]}" -X POST "https://127.0.0.1:$CP/v3/kv/range" \
  -d "{\"key\":\"$(printf 'ik-tls-%s/idkeeper/default/slot/' $$ | base64 -w0)\",\"range_end\":\"$(printf 'ik-tls-%s/idkeeper/default/slot0' $$ | base64 -w0)\",\"count_only\":true}" | jq -r '.count // "0"')
[ "$held" = 0 ] || fail "the slot key is still there after a clean stop ($held)"
pass "etcds:// with ?cacert=&cert=&key=: workers, serve (ID $id), a clean stop released its slot"

# 2. another CA: one line naming the certificate problem; serve never ready
expect_fail 1 "SSL certificate problem" "$IK_BIN" workers --coord "$U?cacert=$T/other.pem&$MINE"
cp "$T/err" "$T/err.other"
hp=$(free_port)
start_server tls2 "$hp" --coord "$U?cacert=$T/other.pem&$MINE" --allow-unsafe-store --lease-ttl 2000
while alive "${SERVER_PID[tls2]}"; do
  ready_probe "$hp" && fail "serve became ready with a CA that did not sign etcd's certificate"
  sleep 0.1
done
rc=0
wait "${SERVER_PID[tls2]}" || rc=$?
((rc != 0)) || fail "serve with the wrong CA exited 0"
grepq -i certificate "$T/tls2.log" || fail "serve's error does not name the certificate: $(tail -n 3 "$T/tls2.log")"
pass "etcds:// with a CA that did not sign etcd's certificate: refused in one line ($(cat "$T/err.other")); serve exited $rc, never ready"

# 3. no client certificate, where etcd requires one
expect_fail 1 "" "$IK_BIN" workers --coord "$U?cacert=$T/ca.pem"
pass "etcds:// without a client certificate where etcd requires one: refused in one line ($(cat "$T/err"))"

# 4. plain etcd:// on the https port
expect_fail 1 "" "$IK_BIN" workers --coord "etcd://127.0.0.1:$CP/ik-tls-$$"
pass "etcd:// (no TLS) on an https port: refused in one line ($(cat "$T/err"))"
