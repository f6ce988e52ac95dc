#!/usr/bin/env bash
# labels: page browser
# variants: local zk
# timeout: 300
# processors: 2
# The status page in a real browser (Debian's headless Chromium through chromedriver
# and python3-selenium; tests/tools/page_check.py says what it checks): a 3-server
# app on local: (with the js53 layout) or zk:// (the default layout), s1 with a
# token. The page loads with no console error, lists the three servers and marks s1,
# shows a tag created after load, decodes an ID s1 just issued, answers IDs as
# JavaScript-safe numbers on js53 (400 on a 63-bit layout), draws the worker range
# as a grid (32 slots here; 1,024 on w1, a server of another app with the default
# layout), the lease panel, the rates of IDs it issued as charts and the last events
# (the slot taken, a sequence gap it makes), and on zk:// shows the lease as not
# ready, s1's cell in doubt and the event while ZooKeeper is stopped. Without
# JavaScript (curl), the page is a whole snapshot (the grid, the lease panel and the
# events included), and ?decode= decodes. Screenshots are kept in
# $IK_BUILD/Testing/artifacts/ (page-STORE.png, page-STORE-1024.png,
# page-STORE-zk-stopped.png).
source "$(dirname "$0")/lib.sh"
source "$IK_SRC/tests/tools/counters.sh"

[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] ||
  fail "no /usr/bin/chromium or /usr/bin/chromedriver (apt-get install chromium chromium-driver)"
/usr/bin/python3 -c 'import selenium' 2>/dev/null || fail "no python3-selenium (apt-get install python3-selenium)"

printf 'page-token-1\n' >"$T/token"
layout=()
js53=()
zkpid=()
if [ "$IK_STORE" = local ]; then layout=(--layout js53); js53=(--js53); fi
if [ "$IK_STORE" = zk ]; then zkpid=(--zk-pid "${ZK_PID[1]}"); fi
fleet 3 "${layout[@]}" --worker-range 0-31
# s1 again with the token (same identity, same port): the page must respect it
stop_clean s1
restart_server s1 "${layout[@]}" --worker-range 0-31 --http-token-file "$T/token" \
  --semaphores /page-sema
# a lease of /page-sema held for the page to show (its refresh: /v1/semaphores)
"$IK_BIN" semaphore --coord "$DATA" "${SERVE_ARGS[@]}" --max 2 /page-sema -- \
  bash -c 'touch "$0.held"; while [ ! -e "$0.stop" ]; do sleep 0.05; done' "$T/sema" 2>"$T/sema.err" &
sema=$!
IK_PIDS+=($sema)
wait_until 30 test -e "$T/sema.held" || fail "no lease of /page-sema: $(cat "$T/sema.err")"
add_tag s2 orders segment ',"start":1000,"step":100'
# w1: another app, the default layout's 1,024 slots (the grid's dense form)
PORT[w1]=$(free_port)
start_server w1 "${PORT[w1]}" --coord "$DATA" --threads 1 --quiet "${SERVE_ARGS[@]}" --app wide
wait_ready "${PORT[w1]}" || fail "w1 not ready: $(tail -n 5 "$T/w1.log")"
curl -fsS "$(url s2)/api/segment/get/orders" >/dev/null || fail "segment ID from s2"

# Without JavaScript: the snapshot has the three servers, s1 marked, the tag, and
# ?decode= answers in the page.
snap="$T/snapshot.html"
curl -fsS -H 'Authorization: Bearer page-token-1' "$(url s1)/" >"$snap" || fail "GET / with the token"
for s in s1 s2 s3; do grep -q "<td>$s</td>" "$snap" || fail "snapshot lacks $s in the worker table"; done
grep -q '<tr class="self" data-worker="[0-9]*"><td>[0-9]*</td><td>s1</td>' "$snap" || fail "snapshot does not mark s1"
grep -q 'data-tag="orders"' "$snap" || fail "snapshot lacks the tag"
grep -q '<tbody id="store-rows">' "$snap" && grep -q '<tr class="v-ok"><td>' "$snap" ||
  fail "snapshot lacks the store checks with an ok verdict"
s1w=$(curl -fsS -H 'Authorization: Bearer page-token-1' "$(url s1)/v1/status" | jq -r .worker)
grep -q "<div class=\"cell c-self\" data-worker=\"$s1w\" data-state=\"self\" title=\"worker $s1w: this server, s1\">$s1w</div>" "$snap" ||
  fail "snapshot's range grid does not mark s1's worker $s1w"
[ "$(grep -o '<div class="cell c-[a-z]*" data-worker=' "$snap" | wc -l)" = 32 ] || fail "snapshot's grid has not 32 cells"
grep -q '<td data-k="proof">[0-9-]*T' "$snap" || fail "snapshot's lease panel has no last proof"
grep -q "<tr class=\"e-slot\"><td>[^<]*</td><td>slot</td><td>slot $s1w taken</td></tr>" "$snap" ||
  fail "snapshot's events lack 'slot $s1w taken'"
id=$(curl -fsS -H 'Authorization: Bearer page-token-1' "$(url s1)/api/snowflake/get/x")
w=$(curl -fsS -H 'Authorization: Bearer page-token-1' "$(url s1)/v1/decode/$id" | jq -r .worker)
# (each answer is read whole before grep: grep -q would close the pipe early)
page=$(curl -fsS -u "anyone:page-token-1" "$(url s1)/?decode=$id") || fail "GET /?decode= with Basic auth"
grep -q "^worker    $w$" <<<"$page" || fail "?decode=$id (Basic auth) does not show worker $w"
page=$(curl -fsS -u "anyone:page-token-1" "$(url s1)/?decode=%3Cscript%3E") || fail "GET /?decode=<script>"
grep -q 'layout: &lt;script&gt;' <<<"$page" || fail "?decode= input is not escaped"
[ "$(http_status "$(url s1)/")" = 401 ] || fail "GET / without the token is not 401"
hdrs=$(curl -s -D - -o /dev/null "$(url s1)/")
grep -qi '^WWW-Authenticate: Basic' <<<"$hdrs" || fail "no Basic challenge on /"

mkdir -p "$IK_BUILD/Testing/artifacts"
shot="$IK_BUILD/Testing/artifacts/page-$IK_STORE.png"
/usr/bin/python3 "$IK_SRC/tests/tools/page_check.py" --url "$(url s1)" --servers s1,s2,s3 --self s1 \
  --token page-token-1 "${js53[@]}" "${zkpid[@]}" --screenshot "$shot" --wide-url "$(url w1)" \
  --semaphore /page-sema || fail "page_check failed"
touch "$T/sema.stop" # (on zk:// page_check's frozen ZooKeeper may have ended the lease already)
wait $sema || true
[ -s "$shot" ] && [ -s "${shot%.png}-1024.png" ] || fail "no screenshots at $shot and ${shot%.png}-1024.png"
for s in s1 s2 s3 w1; do stop_clean "$s"; done
pass "status page on $IK_STORE: snapshot, browser, token, decode, tags, workers, semaphores"
