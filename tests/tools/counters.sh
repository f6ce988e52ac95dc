# counters.sh: helpers for the segment and sequence tests (tests/conformance/tags_*.sh,
# t_counters_*.sh, t_zk_counters_*.sh), sourced after tests/integration/lib.sh. Every ID a client
# receives is kept in a file and checked with tests/tools/idcheck.py.
#
# The store comes from IK_STORE (CTest sets it for the tests with "# variants:"),
# or from tests/conformance/conf.sh (conf_counters) in the conformance suite:
#   local (default)  servers on local:$T/data, like processes of one host
#   zk               a standalone ZooKeeper (tests/integration/zk.sh), DATA=zk://.../t,
#                    and the helpers of tests/integration/zk_counters.sh (counter_raw...)
# SERVE_ARGS holds what every server of the store gets besides --coord "$DATA".

HAMMER=${IK_HAMMER:-${IK_BUILD:?IK_BUILD must name the build directory}/tests/tools/hammer}
[ -x "$HAMMER" ] || fail "no hammer at $HAMMER (built by tests/tools)"
IDCHECK=(python3 "$IK_SRC/tests/tools/idcheck.py")
declare -A PORT

# fleet N [serve args...]: starts servers s1..sN on DATA, one loop thread each, and
# waits until each is ready; PORT[sK] is each one's port.
fleet() {
  local n=$1 i name; shift
  for ((i = 1; i <= n; i++)); do
    name=s$i
    PORT[$name]=$(free_port)
    start_server "$name" "${PORT[$name]}" --coord "$DATA" --threads 1 --quiet "${SERVE_ARGS[@]}" "$@"
  done
  for ((i = 1; i <= n; i++)); do
    wait_ready "${PORT[s$i]}" || fail "s$i not ready: $(tail -n 5 "$T/s$i.log")"
  done
}

# restart_server NAME [serve args...]: starts server NAME of the fleet again (same
# identity, same port) and waits until it is ready.
restart_server() {
  local name=$1; shift
  start_server "$name" "${PORT[$name]}" --coord "$DATA" --threads 1 --quiet "${SERVE_ARGS[@]}" "$@"
  wait_ready "${PORT[$name]}" || fail "$name not ready after restart: $(tail -n 5 "$T/$name.log")"
}

url() { echo "http://127.0.0.1:${PORT[$1]}"; }

# add_tag SERVER TAG KIND [JSON fields...]: POST /v1/tags, expecting 201.
add_tag() {
  local srv=$1 tag=$2 kind=$3 extra=${4:-} code
  code=$(curl -s -o "$T/add_tag.out" -w '%{http_code}' -X POST "$(url "$srv")/v1/tags" \
           -d "{\"tag\":\"$tag\",\"kind\":\"$kind\"$extra}")
  [ "$code" = 201 ] || fail "POST /v1/tags $tag: HTTP $code: $(cat "$T/add_tag.out")"
}

# tag_field SERVER TAG FIELD: a field of GET /v1/tags/TAG (start, max_id, ...).
tag_field() { curl -fsS "$(url "$1")/v1/tags/$2" | jq -r ".$3"; }

# hammer NAME URL CONNS SECONDS [hammer args...]: runs hammer in the background,
# IDs to $T/NAME.ids, summary to $T/NAME.hammer; HAMMER_PID[NAME].
declare -A HAMMER_PID
hammer() {
  local name=$1 u=$2 c=$3 s=$4; shift 4
  "$HAMMER" --url "$u" --connections "$c" --duration "$s" --out "$T/$name.ids" "$@" \
    >"$T/$name.hammer" 2>&1 &
  HAMMER_PID[$name]=$!
  IK_PIDS+=($!)
}

# hammer_wait NAME: waits for it; prints its summary line.
hammer_wait() {
  wait "${HAMMER_PID[$1]}" || true
  grep -q '^hammer: ok=' "$T/$1.hammer" || fail "hammer $1 printed no summary: $(cat "$T/$1.hammer")"
  log "$1: $(cat "$T/$1.hammer")"
}

# hammer_field NAME KEY: a value of the summary line (ok, errors, ids, ...).
hammer_field() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" "$T/$1.hammer"; }

# stop_clean NAME: SIGTERM, exit 0, no sanitizer report in its log.
stop_clean() {
  local pid=${SERVER_PID[$1]} rc=0
  kill -TERM "$pid"
  wait "$pid" || rc=$?
  [ $rc -eq 0 ] || fail "$1 exited $rc after SIGTERM: $(tail -n 20 "$T/$1.log")"
  if grep -qE 'runtime error|Sanitizer' "$T/$1.log"; then fail "sanitizer report: $(cat "$T/$1.log")"; fi
}

# The store, unless a conformance group set it already (tests/conformance/conf.sh,
# conf_counters: DATA, SERVE_ARGS and the backend's hooks).
IK_STORE=${IK_STORE:-local}
[ -n "${CONF_COUNTERS:-}" ] || case $IK_STORE in
  local)
    DATA=${DATA:-local:$T/data}
    SERVE_ARGS=()
    ;;
  zk)
    source "$IK_SRC/tests/integration/zk.sh"
    source "$IK_SRC/tests/integration/zk_counters.sh"
    ;;
  *) fail "IK_STORE=$IK_STORE: want local or zk" ;;
esac
