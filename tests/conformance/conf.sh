# conf.sh: the backend of a conformance group (tests/conformance/*.sh), sourced after
# tests/integration/lib.sh. The backend comes from IK_STORE (CTest sets it). Every
# hook below is one `case "$IK_STORE"`: a new backend adds one case to each and
# nothing else (docs/testing.md, "Adding a backend to the suite").
#
#   conf_store_start          starts the backend's store for this test (zk: a standalone
#                             ZooKeeper, or the shared fixture's with a fresh chroot;
#                             redis: the shared fixture's, with a fresh key prefix);
#                             sets CONF_SERVE_ARGS, the options every server, CLI and
#                             lock of this test gets besides --coord
#   conf_coord NAME           a fresh coordination URI of this test's store
#   conf_slot_free_ms         how long after its holder's kill -9 a slot is free at
#                             the latest (SPEC 3 rule 2)
#   conf_slot_wait_ms         the default --slot-wait (SPEC 3 rule 4)
#   conf_slot_record URI APP W  an independent reading of slot W's time record (Unix ms)
#   conf_lock_free_ms         how long after its holder's kill -9 a lock is free
#   conf_patient_args         options for a client that must not lose its session
#                             while a loaded machine starves the store for seconds
#   conf_lock_waiters URI PATH  the contenders (tickets, nodes) queued or holding the
#                             lock PATH, as the store shows them to another client
#   conf_counter_raw URI TAG [APP]  an independent reading of the tag's max_id in the
#                             store (not through idkeeper)
#   conf_proxy_start          a fault proxy (tests/interop/fault_proxy.py) between this
#                             test's clients and the store's server, driven with
#                             lib.sh's `proxy` (down, up, delay MS...); 1 where the
#                             store has no server to put one in front of (local:)
#   conf_proxy_coord NAME     conf_coord NAME, reached through that proxy
#   conf_elect_args MS        options for a lock or candidate whose grant is LOST
#                             after 2/3 of MS without the store (zk: the session
#                             timeout; SQL: the lease TTL)
#   conf_slow_args MS         options for a server whose store may answer MS late
#                             and keep its lease with room to spare (a session or
#                             lease TTL of 4 MS: the lease tolerates about a third)
#   conf_release_bound_ms     the longest a clean stop waits on the store after its
#                             requests are done (docs/http.md, "Shutdown"), for a
#                             server of conf_slow_args
#   conf_elect_nodes URI PATH the candidates of the election PATH as the store shows
#                             them to another client, one a line, first in line first
#   conf_counters             sets the store of tests/tools/counters.sh (DATA,
#                             SERVE_ARGS) to conf_coord data; source counters.sh after
#   conf_store_port           the store's TCP port on 127.0.0.1 (for a fault proxy;
#                             local: has none)
#   conf_coord_via PORT NAME  conf_coord NAME (the same store and namespace), reached
#                             through 127.0.0.1:PORT (a fault proxy to conf_store_port)
#   conf_fault_answer_lost [TAG]  tells the fault proxy of conf_coord_via (lib.sh's
#                             proxy) that the next write of TAG (default orders) is to
#                             reach the store and be
#                             applied, and its answer held (until "proxy release";
#                             "proxy down" closes its connection)
#   conf_fault_freeze_after_write [TAG]  ... that the next write of TAG is to be applied, and
#                             then the store to answer nothing on any connection
#                             (a store frozen right after it; "proxy unmute" ends it)
IK_STORE=${IK_STORE:-local}
CONF_SESSION_MS=${CONF_SESSION_MS:-3000} # zk: short, so kill -9 frees a slot soon
CONF_SERVE_ARGS=()

case $IK_STORE in
  local) ;;
  zk)
    # shellcheck source=../integration/zk.sh
    source "$IK_SRC/tests/integration/zk.sh"
    ZK_SESSION_MS=$CONF_SESSION_MS
    ;;
  postgresql)
    # the shared server (tests/fixtures/postgres.sh), a database per conf_coord NAME
    [ -r "${IK_FIXTURE_POSTGRES:-}/env" ] || fail "conf.sh: no postgres fixture (IK_FIXTURE_POSTGRES)"
    source "$IK_FIXTURE_POSTGRES/env"
    IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
    export IDKEEPER_PASSWORD=$PG_PASSWORD
    ;;
  redis)
    # shellcheck source=../integration/redis.sh
    source "$IK_SRC/tests/integration/redis.sh"
    ;;
  mysql)
    # shellcheck source=../integration/mysql.sh
    source "$IK_SRC/tests/integration/mysql.sh"
    ;;
  *) fail "conf.sh: IK_STORE=$IK_STORE is not a backend of the suite (local zk redis postgresql mysql)" ;;
esac

# postgresql: the database of conf_coord NAME: made once per test ("c<pid>_NAME").
conf_pg_db() {
  local db
  db=$(printf 'c%s_%s' "$$" "$1" | tr -c 'a-zA-Z0-9_\n' _ | tr 'A-Z' 'a-z' | cut -c1-63)
  if [ -z "$(pg_psql "$PG_SHARED_PORT" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]; then
    pg_psql "$PG_SHARED_PORT" postgres "CREATE DATABASE $db" >/dev/null 2>&1 ||
      [ -n "$(pg_psql "$PG_SHARED_PORT" postgres "SELECT 1 FROM pg_database WHERE datname = '$db'")" ] ||
      fail "cannot create database $db"
  fi
  echo "$db"
}

# mysql: this test's database NAME on the MariaDB (made on first use).
_conf_my_db() {
  local db="$1_$$"
  my_sql -e "CREATE DATABASE IF NOT EXISTS \`$db\`" || fail "could not create database $db"
  echo "$db"
}

conf_store_start() {
  case $IK_STORE in
    local) ;;
    zk)
      zk_start_standalone
      CONF_SERVE_ARGS=(--zk-session-timeout "$CONF_SESSION_MS")
      ;;
    postgresql) CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS") ;;
    redis)
      redis_start # the shared fixture's, under a key prefix of this test's own
      CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
      ;;
    mysql)
      my_start # the shared fixture's server; a database per conf_coord NAME
      CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
      ;;
  esac
}

conf_coord() {
  case $IK_STORE in
    local) echo "local:$T/$1" ;;
    zk) zk_uri "$1" ;;
    postgresql) echo "postgresql://$PG_USER@127.0.0.1:$PG_SHARED_PORT/$(conf_pg_db "$1")" ;;
    redis) redis_uri "$1" ;;
    mysql) echo "mysql://$MDB_USER@127.0.0.1:$MY_PORT/$(_conf_my_db "$1")" ;;
  esac
}

conf_slot_free_ms() {
  case $IK_STORE in
    local) echo 0 ;; # flock: the kernel frees it with the process
    zk | redis | postgresql | mysql) echo "$CONF_SESSION_MS" ;; # redis, postgresql: the slot's TTL (--lease-ttl)
  esac
}

conf_slot_wait_ms() {
  case $IK_STORE in
    local) echo 0 ;;
    zk | redis | postgresql | mysql) echo $((CONF_SESSION_MS + 2000)) ;;
  esac
}

conf_slot_record() {
  local uri=$1 app=$2 w=$3
  case $IK_STORE in
    local)
      sed -n 's/^record_ms=//p' "${uri#local:}/$app/slots/$(printf %04d "$w").slot"
      ;;
    zk)
      local root=${uri#"zk://$ZK_CONNECT/"} # relative to ZK_CONNECT (the shared fixture adds a chroot to it)
      zk_tool slot "/$root/idkeeper/apps/$app" "$w" | jq -r .record_ms
      ;;
    postgresql)
      pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT record_ms FROM idk_slots WHERE app = '$app' AND worker = $w"
      ;;
    redis) # the record's own key (docs/redis.md), read with redis-cli
      rcli HGET "${uri##*prefix=}idkeeper/$app/record/$w" record_ms
      ;;
    mysql) my_sql -D "${uri##*/}" -e "SELECT record_ms FROM idk_slots WHERE app = '$app' AND worker = $w" ;;
  esac
}

conf_lock_free_ms() {
  case $IK_STORE in
    local) echo 0 ;;
    postgresql) echo 1000 ;; # the server frees it when the connection closes
    zk) echo "$CONF_SESSION_MS" ;;
    redis) fail "conf.sh: redis:// has no locks (docs/redis.md)" ;;
    mysql) echo 0 ;; # GET_LOCK: the server frees it as the holder's connection closes
  esac
}

conf_patient_args() {
  case $IK_STORE in
    local) ;;
    zk) echo --zk-session-timeout 10000 ;;
    postgresql) echo --lease-ttl 10000 ;;
    redis) echo --lease-ttl 10000 ;;
    mysql) ;;
  esac
}

conf_lock_waiters() {
  local uri=$1 path=$2
  case $IK_STORE in
    local) find "${uri#local:}/locks$path.lock.q" -name '[0-9]*' 2>/dev/null | wc -l ;;
    zk)
      local root=${uri#"zk://$ZK_CONNECT/"} # relative to ZK_CONNECT (the shared fixture adds a chroot to it)
      zk_tool ls "/$root$path" 2>/dev/null | grep -c -- '-lock-' || true
      ;;
    postgresql) # waiting or granted, on the advisory lock of "lock:PATH" (docs/recipes.md)
      pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('lock:$path', 0)"
      ;;
    redis) fail "conf.sh: redis:// has no locks (docs/redis.md)" ;;
    mysql)
      # GET_LOCK waiters (their statement names the key) and the holder, if any
      my_sql -e "SELECT (SELECT COUNT(*) FROM information_schema.PROCESSLIST
          WHERE INFO LIKE 'SELECT GET_LOCK(%''lock:$path''%')
        + (IS_USED_LOCK(IF(CHAR_LENGTH('lock:$path') <= 61, CONCAT('ik/', 'lock:$path'),
             CONCAT('ik#', LEFT(SHA2('lock:$path', 256), 61)))) IS NOT NULL)"
      ;;
  esac
}

conf_counter_raw() {
  local uri=$1 tag=$2 app=${3:-default}
  case $IK_STORE in
    local)
      python3 - "${uri#local:}/idkeeper.db" "$app" "$tag" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=30)
print(c.execute("SELECT max_id FROM leaf_alloc WHERE app = ? AND biz_tag = ?", sys.argv[2:]).fetchone()[0])
PY
      ;;
    zk)
      local root=${uri#"zk://$ZK_CONNECT/"} # relative to ZK_CONNECT (the shared fixture adds a chroot to it)
      ZK_CHROOT=$root counter_raw "$tag" "$app" | cut -d' ' -f1
      ;;
    postgresql) # docs/sql.md: the default app's tag is its biz_tag, another's APP/TAG
      local biz=$tag
      [ "$app" = default ] || biz=$app/$tag
      pg_psql "$PG_SHARED_PORT" "${uri##*/}" "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$biz'"
      ;;
    redis) # the counter key holds the last ID taken: max_id - 1 (docs/redis.md)
      local prefix=${uri##*prefix=} key v
      if [ "$app" = default ]; then key=$prefix$tag; else key=$prefix$app/$tag; fi
      v=$(rcli GET "$key")
      echo $((v + 1))
      ;;
    mysql)
      local biz=$tag
      [ "$app" = default ] || biz="$app/$tag"
      my_sql -D "${uri##*/}" -e "SELECT max_id FROM leaf_alloc WHERE biz_tag = '$biz'"
      ;;
  esac
}

conf_counters() {
  case $IK_STORE in
    zk) source "$IK_SRC/tests/integration/zk_counters.sh" ;; # counter_raw
  esac
  DATA=$(conf_coord data)
  SERVE_ARGS=("${CONF_SERVE_ARGS[@]}")
  CONF_COUNTERS=1 # tests/tools/counters.sh: the store is set already
}

conf_proxy_start() {
  case $IK_STORE in
    local) return 1 ;;
    zk) # in front of server 1, the shared fixture's included: only connections
      # through the proxy see its faults
      CONF_PROXY_PORT=$(zk_free_port)
      fault_proxy_start "$CONF_PROXY_PORT" "$(zk_port 1)" || fail "the fault proxy did not start: $(cat "$T/proxy.log")"
      ;;
    redis) CONF_PROXY_PORT=$(free_port) && fault_proxy_start "$CONF_PROXY_PORT" "$REDIS_PORT" raw ;;
    postgresql) CONF_PROXY_PORT=$(free_port) && fault_proxy_start "$CONF_PROXY_PORT" "$PG_SHARED_PORT" raw ;;
    mysql) CONF_PROXY_PORT=$(free_port) && fault_proxy_start "$CONF_PROXY_PORT" "$MY_PORT" raw ;;
  esac
}

conf_proxy_coord() {
  local uri
  uri=$(conf_coord "$1")
  case $IK_STORE in
    zk) echo "zk://127.0.0.1:$CONF_PROXY_PORT${ZK_CONNECT#"127.0.0.1:$(zk_port 1)"}/$1" ;;
    redis | postgresql | mysql) sed "s/127\.0\.0\.1:[0-9]*/127.0.0.1:$CONF_PROXY_PORT/" <<<"$uri" ;;
    *) fail "conf.sh: no proxy on $IK_STORE" ;;
  esac
}

conf_elect_nodes() {
  local uri=$1 path=$2
  case $IK_STORE in
    zk) # the latch- children in sequence order (Curator's LeaderLatch names)
      local root=${uri#"zk://$ZK_CONNECT/"}
      zk_tool ls "/$root$path" 2>/dev/null | grep -- 'latch-' | awk -F'latch-' '{ print $2, $0 }' |
        sort -n | cut -d' ' -f2- || true
      ;;
    *) fail "conf.sh: conf_elect_nodes has no case for $IK_STORE" ;;
  esac
}

conf_elect_args() {
  case $IK_STORE in
    zk) echo --zk-session-timeout "$1" ;;
    *) fail "conf.sh: conf_elect_args has no case for $IK_STORE" ;;
  esac
}

conf_slow_args() {
  case $IK_STORE in
    zk) echo --zk-session-timeout $(($1 * 4)) ;;
    redis) echo --lease-ttl $(($1 * 4)) ;; # a renewal waits TTL/3 for its answer
    postgresql | mysql) echo --lease-ttl $(($1 * 4)) ;; # the lease proves 2/3 TTL past a send
    *) fail "conf.sh: conf_slow_args has no case for $IK_STORE" ;;
  esac
}

conf_release_bound_ms() {
  case $IK_STORE in
    zk) # the release: max(2 s, T/2); the close: 2 s for open doubts (docs/zookeeper.md)
      local t=$(($1 * 4))
      echo $(((t / 2 > 2000 ? t / 2 : 2000) + 2000))
      ;;
    redis) # a renewal in flight at the stop (its hazard check and its script, TTL/3
      # each), then the release's script (TTL/3): docs/http.md, "Shutdown"
      echo $(($1 * 4))
      ;;
    postgresql | mysql) # a renewal in flight at the stop (its hazard check and its
      # statement), then the release's statement: each waits at most 5 s for its
      # answer (docs/sql.md, "Slots"; the slot's connection alive)
      echo $((3 * 5000))
      ;;
    *) fail "conf.sh: conf_release_bound_ms has no case for $IK_STORE" ;;
  esac
}

conf_store_port() {
  case $IK_STORE in
    local) fail "conf.sh: local: has no store port" ;;
    zk) local hp=${ZK_CONNECT%%/*} && echo "${hp##*:}" ;; # the shared fixture's adds a chroot
    postgresql) echo "$PG_SHARED_PORT" ;;
    redis) echo "$REDIS_PORT" ;;
    mysql) echo "$MY_PORT" ;;
  esac
}

conf_coord_via() {
  local port=$1 uri store
  uri=$(conf_coord "$2")
  store=$(conf_store_port)
  [[ $uri == *"127.0.0.1:$store/"* ]] || fail "conf.sh: $uri does not name 127.0.0.1:$store"
  echo "${uri/127.0.0.1:$store\//127.0.0.1:$port/}"
}

# A tag write: zk:// writes a tag in one request (a setData or a multi) on the
# session's one connection, so what the proxy holds or mutes after it is sent has
# been applied. redis:// runs one script, on any connection of its pool (a new one,
# when the lease's renewal holds the idle one): the script names the tag's writer
# key, tagw/TAG/. SQL writes it in a transaction: the COMMIT that follows the commit
# mark's INSERT (docs/sql.md) is the request that applies it.
conf_fault_answer_lost() {
  case $IK_STORE in
    zk) proxy hold ;;
    redis) proxy hold-after 1 "tagw/${1:-orders}/" ;;
    postgresql | mysql) proxy hold-after 1 COMMIT INSERT INTO idk_commit_mark ;;
    *) fail "conf.sh: $IK_STORE has no fault proxy" ;;
  esac
}

conf_fault_freeze_after_write() {
  case $IK_STORE in
    zk) proxy mute ;;
    redis) proxy mute-after 1 "tagw/${1:-orders}/" ;;
    postgresql | mysql) proxy mute-after 1 COMMIT INSERT INTO idk_commit_mark ;;
    *) fail "conf.sh: $IK_STORE has no fault proxy" ;;
  esac
}
