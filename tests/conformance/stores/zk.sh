# stores/zk.sh: the hooks of conf.sh for zk:// (docs/testing.md, "Adding a backend
# to the suite"; conf.sh says what each hook does). The store: a standalone
# ZooKeeper of this test's own, or the shared fixture's with a fresh chroot
# (tests/integration/zk.sh).
#
# The groups that do not apply to this store (tests/conformance/CMakeLists.txt
# registers no test for them and prints why):
# skips: check: the stage's ZooKeeper is one standalone server, a quorum of one, which `idkeeper check` reports as a risk (docs/hazards.md), so it cannot exit 0 there; t_zk_hazards_ensemble checks exit 0 and the same table on a 3-server ensemble with forceSync=yes, and t_zk_hazards the standalone server's risk and its refusals

# shellcheck source=../../integration/zk.sh
source "$IK_SRC/tests/integration/zk.sh"
ZK_SESSION_MS=$CONF_SESSION_MS

conf_store_start() {
  [ -z "${CONF_OWN_STORE:-}" ] || unset IK_FIXTURE_ZK # a server of this test's own (conf.sh)
  zk_start_standalone
  CONF_SERVE_ARGS=(--zk-session-timeout "$CONF_SESSION_MS")
}

conf_coord() { zk_uri "$1"; }

# conf_unsafe_on URI: ZooKeeper reads forceSync only at its start, so the server
# behind URI (the test's own standalone server 1) is restarted on its data with
# forceSync=no: what a running idkeeper sees is its ensemble come back unsafe, its
# session (if it outlived the restart) and its nodes intact (t_zk_hazards). Prints
# the row's name once the server serves. It may run in a subshell ($(...)), whose
# ZK_PID the caller never sees: the new server's pid is kept in $T/zk-unsafe.pid for
# conf_unsafe_off and the cleanup.
conf_unsafe_on() {
  zk_stop 1
  ZK_FORCE_SYNC=no zk_start 1
  echo "${ZK_PID[1]}" >"$T/zk-unsafe.pid"
  zk_wait_serving 1 >&2
  echo forceSync
}

# conf_unsafe_off URI: the same server restarted on its data with forceSync=yes
conf_unsafe_off() {
  local pid
  if [ -r "$T/zk-unsafe.pid" ]; then
    pid=$(cat "$T/zk-unsafe.pid")
    kill -KILL "$pid" 2>/dev/null || true
    wait_until 30 not alive "$pid" || fail "the forceSync=no ZooKeeper ($pid) outlived SIGKILL"
    rm -f "$T/zk-unsafe.pid"
    ZK_PID[1]=
  else
    zk_stop 1
  fi
  ZK_FORCE_SYNC=yes zk_start 1
  zk_wait_serving 1 >&2
}

# the forceSync=no server of a conf_unsafe_on run in a subshell, which IK_PIDS missed
_conf_zk_unsafe_stop() {
  [ -r "$T/zk-unsafe.pid" ] && kill -KILL "$(cat "$T/zk-unsafe.pid")" 2>/dev/null
  return 0
}
IK_CLEANUPS+=(_conf_zk_unsafe_stop)

conf_slot_free_ms() { echo "$CONF_SESSION_MS"; }

conf_slot_wait_ms() { echo $((CONF_SESSION_MS + 2000)); }

# _conf_zk_root URI: the URI's path relative to ZK_CONNECT (the shared fixture adds
# a chroot to it)
_conf_zk_root() { echo "${1#"zk://$ZK_CONNECT/"}"; }

conf_slot_record() {
  local uri=$1 app=$2 w=$3
  zk_tool slot "/$(_conf_zk_root "$uri")/idkeeper/apps/$app" "$w" | jq -r .record_ms
}

conf_lock_free_ms() { echo "$CONF_SESSION_MS"; }

conf_patient_args() { echo --zk-session-timeout 10000; }

conf_lock_waiters() {
  local uri=$1 path=$2
  zk_tool ls "/$(_conf_zk_root "$uri")$path" 2>/dev/null | grep -c -- '-lock-' || true
}

conf_counter_raw() {
  local uri=$1 tag=$2 app=${3:-default}
  ZK_CHROOT=$(_conf_zk_root "$uri") counter_raw "$tag" "$app" | cut -d' ' -f1
}

conf_counters_store() { source "$IK_SRC/tests/integration/zk_counters.sh"; } # counter_raw

conf_store_port() { local hp=${ZK_CONNECT%%/*} && echo "${hp##*:}"; } # the shared fixture's adds a chroot

conf_elect_nodes() {
  local uri=$1 path=$2
  # the latch- children in sequence order (Curator's LeaderLatch names)
  zk_tool ls "/$(_conf_zk_root "$uri")$path" 2>/dev/null | grep -- 'latch-' |
    awk -F'latch-' '{ print $2, $0 }' | sort -n | cut -d' ' -f2- || true
}

conf_elect_args() { echo --zk-session-timeout "$1"; }

conf_slow_args() { echo --zk-session-timeout $(($1 * 4)); }

conf_release_bound_ms() {
  # the release: max(2 s, T/2); the close: 2 s for open doubts (docs/zookeeper.md)
  local t=$(($1 * 4))
  echo $(((t / 2 > 2000 ? t / 2 : 2000) + 2000))
}

# zk:// writes a tag in one request (a setData or a multi) on the session's one
# connection, so what the proxy holds or mutes after it is sent has been applied.
conf_fault_answer_lost() { proxy hold; }

conf_fault_freeze_after_write() { proxy mute; }

# hold_lost (tests/conformance/hold_lost.sh). A grant ends by hand when its node is
# deleted (the contender first in line of KIND's names).
conf_hold_revokes() { echo delete; }

conf_hold_revoke() { # URI KIND PATH HOW
  local root pat node
  root="/$(_conf_zk_root "$1")$3"
  [ "$2" = elect ] && pat=latch- || pat=-lock-
  node=$(zk_tool ls "$root" 2>/dev/null | grep -- "$pat" | awk -F"$pat" '{ print $2, $0 }' | sort -n | head -n 1 | cut -d' ' -f2)
  [ -n "$node" ] || fail "stores/zk.sh: no contender at $root"
  [ "$(zk_tool delete "$root/$node")" = deleted ] || fail "stores/zk.sh: $root/$node not deleted"
  echo "deleted the holder's node $node"
}

conf_hold_reset_frees() { :; } # a reset ends no session: the server expires it a timeout later

# semaphore (tests/conformance/semaphore.sh): Curator's layout, the default
# (docs/recipes.md, "Semaphores"): the queue PATH/locks, the leases PATH/leases.
conf_sema_queued() {
  local uri=$1 path=$2
  zk_tool ls "/$(_conf_zk_root "$uri")$path/locks" 2>/dev/null | grep -c -- '-lock-' || true
}

conf_sema_revoke() { # URI PATH HOW: the oldest lease's node deleted
  local dir node
  dir="/$(_conf_zk_root "$1")$2/leases"
  node=$(zk_tool ls "$dir" 2>/dev/null | awk -F'lease-' '{ print $2, $0 }' | sort -n | head -n 1 | cut -d' ' -f2)
  [ -n "$node" ] || fail "stores/zk.sh: no lease at $dir"
  [ "$(zk_tool delete "$dir/$node")" = deleted ] || fail "stores/zk.sh: $dir/$node not deleted"
  echo "deleted the lease node $node"
}

# the store frozen: the test's own server (CONF_OWN_STORE)
conf_store_freeze() { kill -STOP "${ZK_PID[1]}"; }
conf_store_thaw() { kill -CONT "${ZK_PID[1]}"; }
