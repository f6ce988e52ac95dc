# resp.sh: helpers for the Redis-protocol tests (sourced after lib.sh).
# The clients are Debian's: redis-cli and redis-benchmark (redis-tools), redis-py
# (python3-redis, for /usr/bin/python3), nc (netcat-openbsd).

for tool in redis-cli redis-benchmark nc; do
  command -v "$tool" >/dev/null || fail "$tool missing: run scripts/install-deps.sh --test"
done
/usr/bin/python3 -c 'import redis' 2>/dev/null || fail "python3-redis missing: run scripts/install-deps.sh --test"

# resp_serve NAME [serve args...]: serve_on with a RESP listener on a free port; sets
# PORT (HTTP) and RPORT (RESP). Tries another RESP port if the one chosen was taken.
resp_serve() {
  local name=$1 try; shift
  for try in 1 2 3 4 5; do
    RPORT=$(free_port)
    serve_on "$name" --resp 127.0.0.1:"$RPORT" "$@" && return 0
    grep -q 'Address already in use' "$T/$name.log" || return 1
    log "RESP port $RPORT was taken meanwhile; trying another"
  done
  return 1
}

# rcli ARGS...: redis-cli against the RESP port.
rcli() { redis-cli -p "$RPORT" "$@"; }

# rss_kb PID: resident set size in KiB.
rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status"; }
