#!/usr/bin/env bash
# labels: cli recipes
# timeout: 120
# What a server shows of semaphores (docs/http.md, "GET /v1/semaphores"; the status
# page): `serve --semaphores` names them; GET /v1/semaphores and the page list each
# one's stored max and the leases held, as `idkeeper semaphore --list` does; a lease
# given back leaves the list; a
# semaphore that cannot be listed (kazoo's layout on local:) says why in its own row
# and the others are listed still; a bad --semaphores is refused at start (exit 2).
source "$(dirname "$0")/lib.sh"
cd "$T"
coord="local:$T/data"

rc=0
"$IK_BIN" serve --coord "$coord" --semaphores "/a,,/b" 2>"$T/bad.err" || rc=$?
[ $rc = 2 ] && grepq 'an empty item' "$T/bad.err" || fail "--semaphores '/a,,/b': exit $rc: $(cat "$T/bad.err")"
rc=0
"$IK_BIN" serve --coord "$coord" --semaphores "/a/../b" 2>"$T/bad.err" || rc=$?
[ $rc = 2 ] && grepq "'.' or '..'" "$T/bad.err" || fail "--semaphores '/a/../b': exit $rc: $(cat "$T/bad.err")"

serve_on s1 --coord "$coord" --semaphores "/exports,kazoo:/k" || fail "server did not become ready"
port=$PORT
sema() { curl -fsS "http://127.0.0.1:$port/v1/semaphores"; }
[ "$(sema | jq -c '.semaphores[0] | [.path, .layout, .max, (.held | length)]')" = '["/exports","curator",0,0]' ] ||
  fail "before any use: $(sema)"
sema | jq -e '.semaphores[1] | .path == "/k" and .layout == "kazoo" and (.error | test("zk://"))' >/dev/null ||
  fail "kazoo's layout on local: does not say why: $(sema)"

"$IK_BIN" semaphore --coord "$coord" --max 2 /exports -- \
  bash -c 'touch "$0.held"; while [ ! -e "$0.stop" ]; do sleep 0.02; done' "$T/h" 2>"$T/h.err" &
h=$!
IK_PIDS+=($h)
wait_until 30 test -e "$T/h.held" || fail "the holder never held: $(cat "$T/h.err")"
"$IK_BIN" semaphore --coord "$coord" --max 2 /exports -- true # a second lease, given back
got=$(sema)
jq -e '.semaphores[0] | .max == 2 and (.held | length) == 1 and (.held[0].data | test("^pid=[0-9]+ host=")) and .held[0].fence > 0' \
  <<<"$got" >/dev/null || fail "one lease held, max 2: $got"
list=$("$IK_BIN" semaphore --coord "$coord" --list --json /exports)
[ "$(jq -c '[.max, .held[0].fence, .held[0].data]' <<<"$list")" = "$(jq -c '.semaphores[0] | [.max, .held[0].fence, .held[0].data]' <<<"$got")" ] ||
  fail "the route and --list disagree: $got | $list"
page=$(curl -fsS "http://127.0.0.1:$port/")
grepq '<section id="semaphores">' <<<"$page" || fail "the page has no semaphores section"
data=$(jq -r '.semaphores[0].held[0].data' <<<"$got")
grepq "<td>$data</td>" <<<"$page" || fail "the page does not show the holder $data"
grepq "cannot list the leases: kazoo" <<<"$page" || fail "the page does not say why /k cannot be listed"

touch "$T/h.stop"
wait $h || fail "the holder failed: $(cat "$T/h.err")"
[ "$(sema | jq '.semaphores[0].held | length')" = 0 ] || fail "the lease given back is still listed: $(sema)"
pass "GET /v1/semaphores and the page: max 2 and the lease held (as --list shows it), then none; kazoo's layout on local: says why; bad --semaphores refused"
