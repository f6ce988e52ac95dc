#!/usr/bin/env bash
# labels: redis http
# needs: redis
# timeout: 120
# /readyz's 503 follows the lease's state (docs/http.md, "/readyz"): with the store
# stopped (SIGSTOP of its own redis-server), a renewal goes unanswered while the safe
# window still runs ("store unreachable: issuing within the safe window"), and the
# next one is tried only after the window has ended (the test-only hook
# IDKEEPER_TEST_PERSIST_STALL_MS spaces the renewals). Once /readyz answers 503 the
# window is over, so its body must not say that the server issues within it, as it
# did while the lease's own line was the one written when the doubt began. Then
# redis-server resumes and the server is ready again.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_own main
REDIS_PORT=${REDIS_PORT_OF[main]}
IDKEEPER_TEST_PERSIST_STALL_MS=1500 serve_on a --coord "$(redis_uri data)" --lease-ttl 9000 \
  --threads 1 --quiet || fail "a not ready: $(tail -n 5 "$T/a.log")"
kill -STOP "${REDIS_PID_OF[main]}"
log "redis-server stopped"
: >"$T/bodies"
t0=$SECONDS
while ((SECONDS - t0 < 30)); do
  code=$(curl -s -m 5 -o "$T/body" -w '%{http_code}' "http://127.0.0.1:$PORT/readyz") || true
  if [ "$code" = 503 ]; then
    echo "$(cat "$T/body")" >>"$T/bodies"
    grep -q 'past the safe window' "$T/body" && break # the lease's own line caught up
  fi
  sleep 0.05
done
kill -CONT "${REDIS_PID_OF[main]}"
[ -s "$T/bodies" ] || fail "no 503 from /readyz in 30 s with redis-server stopped"
sort "$T/bodies" | uniq -c | sed 's/^/  /' >&2
! grep -q 'issuing within the safe window' "$T/bodies" ||
  fail "/readyz answered 503 saying the server issues within its safe window: $(grep -m 1 'issuing within' "$T/bodies")"
pass "$(wc -l <"$T/bodies") answers 503 while the store was stopped, none saying it issues"
wait_ready "$PORT" 30 || fail "not ready again after redis-server resumed"
pass "ready again once redis-server answers"
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a exited $? after SIGTERM"
