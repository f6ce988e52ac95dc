#!/usr/bin/env bash
# labels: cli
# timeout: 120
# The CLI against a real server: decode of a served ID shows now and the server's
# worker; next fetches a million IDs fast, unique and increasing; next reports
# server errors in one line.
source "$(dirname "$0")/lib.sh"
cd "$T"

serve_on cli1 --coord "local:$T/data" --app cliapp --worker-range 40-47 ||
  fail "server did not become ready"
port=$PORT
status=$(curl -fsS "http://127.0.0.1:$port/v1/status")
worker=$(jq -r .worker <<<"$status")
[ "$worker" -ge 40 ] && [ "$worker" -le 47 ] || fail "worker $worker outside 40-47"

# ---- decode of a served ID: now, and the server's worker -------------------------------
id=$(curl -fsS "http://127.0.0.1:$port/api/snowflake/get/x")
now_ms=$(date +%s%3N)
out=$("$IK_BIN" decode "$id") || fail "decode $id failed"
log "decode: $out"
t_ms=$(sed -n 's/.* time_ms=\([0-9]*\) .*/\1/p' <<<"$out")
w=$(sed -n 's/.* worker=\([0-9]*\) .*/\1/p' <<<"$out")
d=$((now_ms - t_ms)); d=${d#-}
[ "$d" -le 1000 ] || fail "decoded time $t_ms is $d ms from now ($now_ms)"
[ "$w" = "$worker" ] || fail "decoded worker $w, server holds $worker"
iso=$(sed -n 's/.* time=\([^ ]*\) .*/\1/p' <<<"$out")
[ "$(date -u -d "$iso" +%s%3N)" = "$t_ms" ] || fail "time $iso and time_ms $t_ms disagree"
# the server's own decoding agrees
curl -fsS "http://127.0.0.1:$port/v1/decode/$id" |
  jq -e ".time_ms == $t_ms and .worker == $w" >/dev/null || fail "/v1/decode disagrees with decode"
pass "decode of a served ID: time within 1 s of now, worker $worker"

# ---- next: a million IDs over one connection ----------------------------------------
start=$(date +%s%3N)
"$IK_BIN" next --server "http://127.0.0.1:$port" --count 1000000 >"$T/ids" || fail "next --count 1000000 failed"
ms=$(($(date +%s%3N) - start))
n=$(wc -l <"$T/ids")
[ "$n" -eq 1000000 ] || fail "next printed $n IDs, not 1000000"
assert_unique "$T/ids"
assert_increasing "$T/ids"
log "next: 1000000 IDs in $ms ms"
[ "$ms" -lt 30000 ] || fail "next took $ms ms for 1000000 IDs"
"$IK_BIN" decode "$(tail -n 1 "$T/ids")" | grepq " worker=$worker " || fail "last ID not from worker $worker"
pass "next: 1000000 unique increasing IDs in $ms ms"

# defaults and small counts; IDKEEPER_SERVER; a batch above the server's limit adapts
"$IK_BIN" next --server "127.0.0.1:$port" | grep -Eqx '[0-9]+' || fail "next (one ID)"
IDKEEPER_SERVER="http://127.0.0.1:$port/" "$IK_BIN" next --count 3 snowflake >"$T/three"
[ "$(wc -l <"$T/three")" -eq 3 ] || fail "IDKEEPER_SERVER next --count 3: $(cat "$T/three")"
"$IK_BIN" next --server "http://127.0.0.1:$port" --count 25000 --batch 30000 >"$T/adapt" ||
  fail "next --batch above --max-batch failed"
[ "$(wc -l <"$T/adapt")" -eq 25000 ] || fail "next --batch 30000: $(wc -l <"$T/adapt") IDs"
# next | decode -
"$IK_BIN" next --server "http://127.0.0.1:$port" --count 5 | "$IK_BIN" decode --json - |
  jq -se "length == 5 and all(.worker == $worker)" >/dev/null || fail "next | decode --json -"
pass "next: small counts, IDKEEPER_SERVER, batch adaptation, piping into decode"

# ---- next: the server's refusals, in one line -----------------------------------------
rc=0
"$IK_BIN" next --server "http://127.0.0.1:$port" segment no-such-tag >"$T/out" 2>"$T/err" || rc=$?
[ "$rc" -eq 1 ] || fail "next segment no-such-tag exited $rc"
[ ! -s "$T/out" ] || fail "next segment no-such-tag printed IDs"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "next error is not one line: $(cat "$T/err")"
grep -q '^idkeeper: next: .*(HTTP 404' "$T/err" || fail "next error: $(cat "$T/err")"
log "next refusal: $(cat "$T/err")"
pass "next reports a refusal in one line, exit 1"

# (idkeeper workers on each backend: the conformance group tests/conformance/cli.sh)
kill -TERM "${SERVER_PID[cli1]}"
wait "${SERVER_PID[cli1]}" || fail "server did not exit 0 on SIGTERM"
