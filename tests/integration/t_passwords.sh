#!/usr/bin/env bash
# labels: security
# timeout: 180
# variants: postgresql mysql redis zk
# fixtures.postgresql: postgres
# fixtures.mysql: mariadb
# fixtures.zk: zk
# Passwords never appear in an output (docs/configuration.md, "Passwords in a
# URI"), on every backend that takes one: a store user whose password holds '#' and
# '@' (Pw#26x@y), given in the URI where the backend reads one there (postgresql://,
# redis://: percent-encoded as psql takes it, Pw#26x%40y: '#' as it is, '@' as %40),
# else by --password-file (mysql://) or --zk-auth (zk://). A server (HTTP and RESP)
# and the CLI then work with it, and none of the server's log, /v1/status, the
# status page, /metrics, RESP INFO, nor any CLI output or error (tags, workers,
# check, a refused URI, an unknown tag, a wrong password) holds the password, raw or
# encoded, or a piece of it. Before the one URI rule (rules.h), the '#' ended the
# user part for the redaction but not for the parsers: the password was shown.
source "$(dirname "$0")/lib.sh"

PW='Pw#26x@y'     # the password
ENC='Pw#26x%40y'  # as the URI carries it
U=pw26_$$
ARGS=()           # what every server and CLI call gets besides --coord
case $IK_STORE in
  postgresql)
    source "$IK_FIXTURE_POSTGRES/env"
    IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
    pg_psql "$PG_SHARED_PORT" postgres "CREATE ROLE $U LOGIN PASSWORD 'Pw#26x@y'" >/dev/null
    pg_psql "$PG_SHARED_PORT" postgres "CREATE DATABASE $U OWNER $U" >/dev/null
    URI="postgresql://$U:$ENC@127.0.0.1:$PG_SHARED_PORT/$U"
    BAD="postgresql://$U:${ENC}z@127.0.0.1:$PG_SHARED_PORT/$U" # a wrong password
    SYNTAX="postgresql://$U:$ENC@127.0.0.1:99999/$U"          # refused: the port
    ;;
  mysql)
    source "$(dirname "$0")/mysql.sh"
    my_start
    unset IDKEEPER_PASSWORD
    my_sql -e "CREATE USER '$U'@'127.0.0.1' IDENTIFIED BY 'Pw#26x@y'; CREATE DATABASE $U; GRANT ALL ON $U.* TO '$U'@'127.0.0.1'"
    printf '%s\n' "$PW" >"$T/pw"
    printf '%sz\n' "$PW" >"$T/bad"
    URI="mysql://$U@127.0.0.1:$MY_PORT/$U"
    ARGS=(--password-file "$T/pw")
    SYNTAX="mysql://$U:$ENC@127.0.0.1:$MY_PORT/$U" # refused: a password in a mysql URI
    ;;
  redis)
    source "$(dirname "$0")/redis.sh"
    redis_own pw 'requirepass "Pw#26x@y"'
    URI="redis://:$ENC@127.0.0.1:${REDIS_PORT_OF[pw]}/0?prefix=pw/"
    BAD="redis://:${ENC}z@127.0.0.1:${REDIS_PORT_OF[pw]}/0?prefix=pw/"
    SYNTAX="redis://:$ENC@127.0.0.1:99999/0"
    ;;
  zk)
    source "$(dirname "$0")/zk.sh"
    zk_start_standalone
    URI=$(zk_uri pw)
    ARGS=(--zk-auth "$U:$PW")
    ;;
  *) fail "IK_STORE=$IK_STORE: want postgresql mysql redis zk" ;;
esac

# cli NAME ARGS...: an idkeeper command; its stdout and stderr kept as $T/cli-NAME.out
cli() {
  local name=$1 rc=0
  shift
  "$IK_BIN" "$@" >"$T/cli-$name.out" 2>&1 || rc=$?
  log "idkeeper $1 ($name): exit $rc: $(head -c 300 "$T/cli-$name.out" | tr '\n' ' ')"
}

cli tags-add tags add orders --kind sequence --coord "$URI" "${ARGS[@]}"
grep -q orders "$T/cli-tags-add.out" || fail "tags add did not work with the password: $(cat "$T/cli-tags-add.out")"
rport=$(free_port)
serve_on a --coord "$URI" "${ARGS[@]}" --resp "127.0.0.1:$rport" || fail "a not ready: $(tail -n 5 "$T/a.log")"
curl -fsS "http://127.0.0.1:$PORT/v1/sequence/orders?count=3" >"$T/seq.out" || fail "no sequence IDs"
curl -fsS "http://127.0.0.1:$PORT/v1/status" >"$T/status.out"
curl -fsS "http://127.0.0.1:$PORT/" >"$T/page.out"
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$T/metrics.out"
redis-cli -p "$rport" INFO >"$T/info.out" 2>&1
grep -q '^# ' "$T/info.out" || fail "RESP INFO: $(head -c 300 "$T/info.out")"
grep -q . "$T/status.out" && grep -q '<html' "$T/page.out" || fail "no status or page"
cli tags-list tags list --coord "$URI" "${ARGS[@]}"
cli tags-show tags show nosuch --coord "$URI" "${ARGS[@]}"
cli workers workers --coord "$URI" "${ARGS[@]}"
cli workers-json workers --json --coord "$URI" "${ARGS[@]}"
cli check check --coord "$URI" "${ARGS[@]}"
cli next next --server "http://127.0.0.1:$PORT" --count 2 sequence orders
[ -n "${SYNTAX:-}" ] && cli syntax tags list --coord "$SYNTAX" "${ARGS[@]}"
[ -n "${BAD:-}" ] && cli badpw tags list --coord "$BAD"
[ "$IK_STORE" = mysql ] && cli badpw tags list --coord "$URI" --password-file "$T/bad"
[ "$IK_STORE" = zk ] && cli badpw tags show orders --coord "$URI" --zk-auth "$U:${PW}z"
if [ "$IK_STORE" = zk ]; then
  # the store option in the URI's query, as it is ('#' and '@' included), instead of
  # --zk-auth: a server and the CLI work with it, and a URI refused for another key
  # shows none of it (docs/configuration.md, "Store options")
  serve_on q --coord "$URI?auth=$U:$PW" || fail "q (auth in the URI) not ready: $(tail -n 5 "$T/q.log")"
  curl -fsS "http://127.0.0.1:$PORT/v1/sequence/orders?count=2" >/dev/null || fail "q: no sequence IDs with auth in the URI"
  curl -fsS "http://127.0.0.1:$PORT/v1/status" >"$T/status-q.out"
  curl -fsS "http://127.0.0.1:$PORT/" >"$T/page-q.out"
  kill -TERM "${SERVER_PID[q]}"
  wait "${SERVER_PID[q]}" || fail "q exited $? after SIGTERM: $(tail -n 5 "$T/q.log")"
  cli uri-tags tags show orders --coord "$URI?auth=$U:$PW"
  grep -q orders "$T/cli-uri-tags.out" || fail "tags show with auth in the URI: $(cat "$T/cli-uri-tags.out")"
  cli uri-bad tags list --coord "$URI?auth=$U:$PW&bogus=1"
  cli uri-serve serve --coord "$URI?auth=$U:$PW&bogus=1" --http 127.0.0.1:0
fi
kill -TERM "${SERVER_PID[a]}"
wait "${SERVER_PID[a]}" || fail "a exited $? after SIGTERM: $(tail -n 5 "$T/a.log")"

outs=("$T"/a.log "$T"/status.out "$T"/page.out "$T"/metrics.out "$T"/info.out "$T"/cli-*.out)
[ "$IK_STORE" = zk ] && outs+=("$T"/q.log "$T"/status-q.out "$T"/page-q.out)
for piece in "$PW" "$ENC" 'Pw#26' '26x@y' '26x%40y'; do
  if grep -lF -- "$piece" "${outs[@]}" >"$T/hits"; then
    f=$(head -n 1 "$T/hits")
    fail "the password ('$piece') in $(tr '\n' ' ' <"$T/hits"): $(grep -m 1 -F -- "$piece" "$f" | head -c 300)"
  fi
done
pass "$IK_STORE: no piece of the password in ${#outs[@]} outputs (log, status, page, metrics, RESP INFO, CLI)"
