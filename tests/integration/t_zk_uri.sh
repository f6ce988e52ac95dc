#!/usr/bin/env bash
# labels: zk
# timeout: 60
# fixtures: zk
# zk:// URIs are checked strictly (a reason for each refusal), an unreachable
# ZooKeeper makes `serve` exit non-zero within about the session timeout, and
# `idkeeper workers --coord zk://...` lists the slots: holder, since, record.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

for bad in "zk://" "zk://host" "zk://:2181" "zk://h:0" "zk://h:65536" "zk://h:21x" \
  "zk://h:1," "zk://h:1,,h:2" "zk://h:1/a//b" "zk://h:1/a/" "zk://h:1/./x" "zk://h:1/a/.." \
  "zk://h_1:2" "zk://[::1:5" "zk://user@h:1"; do
  set +e
  out=$("$IK_BIN" workers --coord "$bad" --app default 2>&1)
  rc=$?
  set -e
  [ $rc -ne 0 ] || fail "'$bad' accepted"
  [ -n "$out" ] || fail "'$bad' refused without a reason"
done
pass "15 malformed zk URIs refused, each with a reason"

dead=$(zk_free_port)
now_ms t0
set +e
"$IK_BIN" serve --http 127.0.0.1:"$(zk_free_port)" --identity x --coord "zk://127.0.0.1:$dead/t" \
  --zk-session-timeout 2000 >"$T/x.log" 2>&1
rc=$?
set -e
took=$(( $(now_ms) - t0 ))
[ $rc -ne 0 ] || fail "serve started without a ZooKeeper"
(( took < 8000 )) || fail "serve took $took ms to give up"
grep -q "127.0.0.1:$dead" "$T/x.log" || fail "the refusal does not name the server: $(cat "$T/x.log")"
pass "no ZooKeeper: exit $rc after $took ms: $(grep -v ZOO_ "$T/x.log" | tail -n 1)"

zk_start_standalone
pa=$(zk_free_port)
zk_serve a "$pa" --worker-range 3-3 --app web
wait_ready "$pa" || fail "a not ready"
fetch_ids "$pa" 100 "$T/ids.a"
json=$("$IK_BIN" workers --coord "$(zk_uri "$ZK_CHROOT")" --app web --json)
log "workers: $json"
echo "$json" | jq -e '.slots | length == 1 and .[0].worker == 3 and .[0].state == "held" and .[0].holder == "a" and .[0].since_ms > 0 and .[0].record_ms > 0' >/dev/null ||
  fail "workers shows $json"
echo "$json" | jq -e '.slots[0].detail | test("pid=[0-9]+ host=.* session=0x[0-9a-f]+")' >/dev/null ||
  fail "no pid/host/session in the detail: $json"
"$IK_BIN" workers --coord "$(zk_uri "$ZK_CHROOT")" --app web | grepq -E '^3 +held +a ' || fail "the table does not show slot 3"
[ "$(status_of "$pa" .lease.session)" = "$(echo "$json" | jq -r '.slots[0].detail' | sed 's/.*session=//')" ] ||
  fail "/v1/status session differs from the owner node's"
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a did not exit 0"
json=$("$IK_BIN" workers --coord "$(zk_uri "$ZK_CHROOT")" --app web --json)
echo "$json" | jq -e '.slots[0].state == "free" and .slots[0].holder == "a" and .slots[0].since_ms == 0' >/dev/null ||
  fail "after release workers shows $json"
pass "workers lists slot 3: held by a, then free with a as last holder"
