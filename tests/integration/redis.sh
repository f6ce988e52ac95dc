# redis.sh: Redis helpers for the integration tests and the conformance suite
# (sourced after lib.sh). Real redis-server processes, configured by
# tests/fixtures/redis_conf.sh (appendonly yes, appendfsync always).
#
#   redis_start               the test's Redis: the shared fixture's (IK_FIXTURE_REDIS,
#                             tests/fixtures/redis.sh) with a key prefix of its own
#                             (ik-TEST-PID/), else one of its own; sets REDIS_PORT and
#                             REDIS_PREFIX
#   redis_own NAME [CONF...]  a server of this test's own (one it may stop, kill or
#                             reconfigure), data in $T/redis-NAME, CONF extra
#                             redis.conf lines; sets REDIS_PORT_OF[NAME]; waits for
#                             PING. redis_kill NAME / redis_restart NAME: kill -9, and
#                             start again on the same port and data (its AOF)
#   redis_uri NAME [PORT]     a fresh namespace: redis://127.0.0.1:PORT/0?prefix=PREFIX+NAME/
#   rcli [PORT] ARGS...       redis-cli on the test's Redis (PORT: another one)
#   redis_proxy_start [PORT]  a fault proxy (tests/interop/fault_proxy.py, raw) to the
#                             test's Redis (PORT: another one); sets PP, its port; then
#                             proxy MODE ARGS (lib.sh), e.g. proxy answer-lost 1 PATTERN
# shellcheck source=../fixtures/redis_conf.sh
source "$IK_SRC/tests/fixtures/redis_conf.sh"
REDIS_PORT=
REDIS_PREFIX=
declare -A REDIS_PORT_OF REDIS_PID_OF

redis_start() {
  if [ -n "${IK_FIXTURE_REDIS:-}" ]; then
    local env=$IK_FIXTURE_REDIS/env
    [ -r "$env" ] || fail "redis: no $env: the shared Redis (fixture redis) did not start; see the test fixture/redis.start"
    # shellcheck disable=SC1090 # written by tests/fixtures/redis.sh start
    source "$env"
    REDIS_PORT=$REDIS_SHARED_PORT
    REDIS_PREFIX=ik-$(basename "$0" .sh)${IK_STORE:+.$IK_STORE}-$$/
    [ "$(redis-cli -p "$REDIS_PORT" PING 2>/dev/null)" = PONG ] ||
      fail "redis: the shared Redis on port $REDIS_PORT (pid ${REDIS_SHARED_PID:-?}) does not answer"
    return
  fi
  redis_own main
  REDIS_PORT=${REDIS_PORT_OF[main]}
  REDIS_PREFIX=ik-$$/
}

# _redis_up PORT: the server answers (PONG, or NOAUTH where it wants a password).
_redis_up() { [[ "$(redis-cli -p "$1" PING 2>/dev/null)" =~ ^(PONG|NOAUTH) ]]; }

_redis_launch() {
  local name=$1 d=$T/redis-$1
  redis-server "$d/redis.conf" >>"$d/redis.log" 2>&1 &
  REDIS_PID_OF[$name]=$!
  IK_PIDS+=($!)
}

_redis_wait() {
  local name=$1 i
  for ((i = 0; i < 600; i++)); do
    _redis_up "${REDIS_PORT_OF[$name]}" && return 0
    alive "${REDIS_PID_OF[$name]}" || break
    sleep 0.05
  done
  tail -n 20 "$T/redis-$name/redis.log" >&2
  fail "redis $name did not serve on port ${REDIS_PORT_OF[$name]}"
}

redis_own() {
  local name=$1 d=$T/redis-$1 try
  shift
  mkdir -p "$d"
  for try in 1 2 3; do
    REDIS_PORT_OF[$name]=$(free_port)
    redis_conf "$d" "${REDIS_PORT_OF[$name]}" "$@" >"$d/redis.conf"
    _redis_launch "$name"
    local i
    for ((i = 0; i < 600; i++)); do
      _redis_up "${REDIS_PORT_OF[$name]}" && return 0
      alive "${REDIS_PID_OF[$name]}" || break
      sleep 0.05
    done
    grep -q 'Address already in use' "$d/redis.log" && continue
    tail -n 20 "$d/redis.log" >&2
    fail "redis $name did not start"
  done
  fail "redis $name: no free port in 3 tries"
}

redis_kill() {
  kill -KILL "${REDIS_PID_OF[$1]}" 2>/dev/null || true
  while alive "${REDIS_PID_OF[$1]}"; do sleep 0.02; done
}

redis_restart() {
  _redis_launch "$1"
  _redis_wait "$1"
}

redis_uri() {
  echo "redis://127.0.0.1:${2:-$REDIS_PORT}/0?prefix=$REDIS_PREFIX$1/"
}

rcli() {
  if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    local p=$1
    shift
    redis-cli -p "$p" "$@"
  else
    redis-cli -p "$REDIS_PORT" "$@"
  fi
}

redis_proxy_start() {
  local _
  for _ in 1 2 3; do
    PP=$(free_port)
    fault_proxy_start "$PP" "${1:-$REDIS_PORT}" raw && return 0
    grep -q 'Address already in use' "$T/proxy.log" || break
  done
  fail "the fault proxy did not start: $(cat "$T/proxy.log")"
}
