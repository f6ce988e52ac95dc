# conf.sh: the backend of a conformance group (tests/conformance/*.sh), sourced after
# tests/integration/lib.sh. The backend comes from IK_STORE (CTest sets it). Every
# hook below is one `case "$IK_STORE"`: a new backend adds one case to each and
# nothing else (docs/testing.md, "Adding a backend to the suite").
#
#   conf_store_start          starts the backend's store for this test (zk: a standalone
#                             ZooKeeper, or the shared fixture's with a fresh chroot);
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
#   conf_counters             sets the store of tests/tools/counters.sh (DATA,
#                             SERVE_ARGS) to conf_coord data; source counters.sh after
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
  *) fail "conf.sh: IK_STORE=$IK_STORE is not a backend of the suite (local zk)" ;;
esac

conf_store_start() {
  case $IK_STORE in
    local) ;;
    zk)
      zk_start_standalone
      CONF_SERVE_ARGS=(--zk-session-timeout "$CONF_SESSION_MS")
      ;;
  esac
}

conf_coord() {
  case $IK_STORE in
    local) echo "local:$T/$1" ;;
    zk) zk_uri "$1" ;;
  esac
}

conf_slot_free_ms() {
  case $IK_STORE in
    local) echo 0 ;; # flock: the kernel frees it with the process
    zk) echo "$CONF_SESSION_MS" ;;
  esac
}

conf_slot_wait_ms() {
  case $IK_STORE in
    local) echo 0 ;;
    zk) echo $((CONF_SESSION_MS + 2000)) ;;
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
  esac
}

conf_lock_free_ms() {
  case $IK_STORE in
    local) echo 0 ;;
    zk) echo "$CONF_SESSION_MS" ;;
  esac
}

conf_patient_args() {
  case $IK_STORE in
    local) ;;
    zk) echo --zk-session-timeout 10000 ;;
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
