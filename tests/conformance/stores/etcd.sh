# stores/etcd.sh: the hooks of conf.sh for etcd:// (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store: the shared
# fixture's etcd, under a key prefix of this test's own, or a one-member etcd of
# this test's own (CONF_OWN_STORE), or a 3-member one with auth (CONF_FLEET_STORE)
# (tests/integration/etcd.sh). The key layout is
# docs/etcd.md's: PREFIX/idkeeper/APP/slot/W and .../record/W, a lock or election
# at PATH is PREFIX/PATH/LEASEHEX (etcd's own concurrency recipe).

# shellcheck source=../../integration/etcd.sh
source "$IK_SRC/tests/integration/etcd.sh"

conf_store_start() {
  CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
  _CONF_ETCD_QUERY=
  if [ -n "${CONF_FLEET_STORE:-}" ]; then # configured as a fleet's (conf.sh)
    _conf_etcd_fleet
  elif [ -n "${CONF_OWN_STORE:-}" ]; then # a server of this test's own (conf.sh)
    etcd_own own
    ETCD_PORT=${ETCD_PORT_OF[own]}
    ETCD_PREFIX=ik-$$
  else
    etcd_start # the shared fixture's, under a key prefix of this test's own
  fi
}

# _conf_etcd_fleet: a 3-member cluster of this test's own with auth on, and a user
# idk whose role alone may write the test's prefix (docs/hazards.md, etcd: the
# members and auth rows ok; t_etcd_hazards builds the same)
_conf_etcd_fleet() {
  local R=(--user root:root-Pw)
  etcd_cluster3 fleet
  ectl user add root:root-Pw >/dev/null || fail "etcd: user add root"
  ectl user grant-role root root >/dev/null || fail "etcd: grant-role root"
  ectl auth enable >/dev/null || fail "etcd: auth enable"
  ectl "${R[@]}" user add idk:s3cret-Idk >/dev/null || fail "etcd: user add idk"
  ectl "${R[@]}" role add idk >/dev/null || fail "etcd: role add idk"
  ectl "${R[@]}" role grant-permission idk readwrite "$ETCD_PREFIX/" --prefix >/dev/null ||
    fail "etcd: grant-permission"
  ectl "${R[@]}" user grant-role idk idk >/dev/null || fail "etcd: grant-role idk"
  echo s3cret-Idk >"$T/etcd.pw"
  CONF_SERVE_ARGS+=(--password-file "$T/etcd.pw")
  _CONF_ETCD_QUERY='?user=idk'
}

conf_coord() { echo "$(etcd_uri "$1" "${ETCD_ENDPOINTS:-127.0.0.1:$ETCD_PORT}")$_CONF_ETCD_QUERY"; }

# _conf_etcd_prefix URI: the URI's key prefix (its path without the leading '/')
_conf_etcd_prefix() {
  local p=${1#etcds://}
  p=${p#etcd://}
  p=${p#*/}
  echo "${p%%\?*}"
}

# the lease's TTL (--lease-ttl, whole seconds), and the up to 500 ms etcd's leader
# takes to notice an expired lease
conf_slot_free_ms() { echo $((CONF_SESSION_MS + 1000)); }

conf_slot_wait_ms() { echo $((CONF_SESSION_MS + 1000 + 2000)); }

conf_slot_record() { # the record's own key: "RECORD_MS HOLDER" (docs/etcd.md)
  local uri=$1 app=$2 w=$3
  ectl get --print-value-only "$(_conf_etcd_prefix "$uri")/idkeeper/$app/record/$w" | cut -d' ' -f1
}

conf_patient_args() { echo --lease-ttl 10000; }

conf_counter_raw() { # the tag's key holds max_id first (docs/etcd.md)
  local uri=$1 tag=$2 app=${3:-default}
  ectl get --print-value-only "$(_conf_etcd_prefix "$uri")/idkeeper/$app/tag/$tag" | cut -d' ' -f1
}

conf_store_port() { echo "$ETCD_PORT"; }

conf_lock_free_ms() { echo $((CONF_SESSION_MS + 1000)); }

conf_lock_waiters() { # the contenders' keys: PREFIX/PATH/LEASEHEX
  local uri=$1 path=$2
  ectl get --prefix --keys-only "$(_conf_etcd_prefix "$uri")$path/" | grep -c . || true
}

conf_elect_nodes() { # the candidates' keys, first in line (lowest create_revision) first
  local uri=$1 path=$2
  ectl get --prefix --keys-only --sort-by=CREATE --order=ASCEND "$(_conf_etcd_prefix "$uri")$path/" | grep . || true
}

conf_elect_args() { echo --lease-ttl "$1"; }

conf_slow_args() { echo --lease-ttl $(($1 * 4)); } # the lease proves 2/3 TTL past a keepalive

conf_release_bound_ms() {
  # a keepalive or record write in flight at the stop, then the release's txn and
  # the lease's revoke: each waits at most a third of the TTL (docs/etcd.md)
  echo $(($1 * 4))
}

# A tag's advance is the one txn whose compare is on a key's mod_revision once the
# slot is taken (the slot's renewals compare create_revision; backend_etcd_tags.c),
# so the proxy holds or freezes after the next request that holds that compare
# (TAG is not in it: the keys are base64).
conf_fault_answer_lost() { proxy hold-after 1 '"target":"MOD"'; }

conf_fault_freeze_after_write() { proxy mute-after 1 '"target":"MOD"'; }

# _conf_etcd_member URI: the name (ETCD_PORT_OF) of this test's own member whose
# client port URI names
_conf_etcd_member() {
  local p=${1#etcd://127.0.0.1:} n
  p=${p%%/*}
  for n in "${!ETCD_PORT_OF[@]}"; do
    [ "${ETCD_PORT_OF[$n]}" = "$p" ] && { echo "$n"; return 0; }
  done
  fail "stores/etcd.sh: no member of this test's own on port $p ($1)"
}

# conf_unsafe_on URI: no setting the etcd checks refuse changes while a member runs
# (docs/hazards.md, etcd); what can change is the cluster behind the address, which
# every answer's cluster id must match (row cluster). The member behind URI is
# stopped, its data kept aside, and a fresh cluster started on the same client port:
# its peers elsewhere, so a new cluster id (t_etcd_cluster_id). Returns once it
# serves; prints the row's name. Only on a member of the test's own
# (CONF_OWN_STORE). It may run in a subshell ($(...)): what conf_unsafe_off and the
# cleanup need is kept in files of $T/etcd-NAME.
conf_unsafe_on() {
  local n
  n=$(_conf_etcd_member "$1")
  etcd_kill "$n"
  mv "$T/etcd-$n/data" "$T/etcd-$n/data.first"
  echo "${ETCD_PEER_OF[$n]}" >"$T/etcd-$n/peer.first"
  ETCD_PEER_OF[$n]=$(ik_free_port "$T/.ports")
  ETCD_CLUSTER_OF[$n]="$n=http://127.0.0.1:${ETCD_PEER_OF[$n]}"
  _etcd_launch "$n"
  echo "${ETCD_PID_OF[$n]}" >"$T/etcd-$n/other.pid"
  _etcd_wait "$n" >&2
  echo cluster
}

# conf_unsafe_off URI: the other cluster stopped and the first one started again
# from its data, on its peer port: the cluster id the open saw answers again.
conf_unsafe_off() {
  local n
  n=$(_conf_etcd_member "$1")
  ETCD_PID_OF[$n]=$(cat "$T/etcd-$n/other.pid")
  etcd_kill "$n"
  rm -f "$T/etcd-$n/other.pid"
  rm -rf "$T/etcd-$n/data"
  mv "$T/etcd-$n/data.first" "$T/etcd-$n/data"
  ETCD_PEER_OF[$n]=$(cat "$T/etcd-$n/peer.first")
  ETCD_CLUSTER_OF[$n]="$n=http://127.0.0.1:${ETCD_PEER_OF[$n]}"
  etcd_restart "$n" >&2
}

# the other cluster of a conf_unsafe_on run in a subshell, which IK_PIDS missed
_conf_etcd_other_stop() {
  local f
  for f in "$T"/etcd-*/other.pid; do
    [ -r "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  return 0
}
IK_CLEANUPS+=(_conf_etcd_other_stop)

# hold_lost (tests/conformance/hold_lost.sh). A grant ends by hand when the holder's
# key (first in line) is deleted, or its lease revoked (which deletes it too).
conf_hold_revokes() { echo delete revoke; }

# _conf_etcd_end KEY HOW: KEY deleted, or its etcd lease (the key's last part) revoked
_conf_etcd_end() {
  case $2 in
    delete) ectl del "$1" >/dev/null || fail "etcdctl del $1 failed" ;;
    revoke) ectl lease revoke "${1##*/}" >/dev/null || fail "etcdctl lease revoke ${1##*/} failed" ;;
    *) fail "stores/etcd.sh: no revoke '$2'" ;;
  esac
}

conf_hold_revoke() { # URI KIND PATH HOW
  local key
  key=$(conf_elect_nodes "$1" "$3" | head -n 1)
  [ -n "$key" ] || fail "stores/etcd.sh: no contender at $3"
  _conf_etcd_end "$key" "$4"
  echo "$4 of the holder's key $key"
}

conf_hold_reset_frees() { :; } # a reset ends no lease: it lapses a TTL after its last keepalive

# semaphore (tests/conformance/semaphore.sh): the queue's keys PATH/locks/LEASEHEX,
# the leases' PATH/leases/LEASEHEX (docs/recipes.md, "Semaphores")
conf_sema_queued() {
  ectl get --prefix --keys-only "$(_conf_etcd_prefix "$1")$2/locks/" | grep -c . || true
}

conf_sema_revoke() { # URI PATH HOW: the oldest lease's key deleted, or its etcd lease revoked
  local key
  key=$(ectl get --prefix --keys-only --sort-by=CREATE --order=ASCEND "$(_conf_etcd_prefix "$1")$2/leases/" | grep . | head -n 1)
  [ -n "$key" ] || fail "stores/etcd.sh: no lease at $2"
  _conf_etcd_end "$key" "$3"
  echo "$3 of the lease's key $key"
}

# the store frozen: the test's own member (CONF_OWN_STORE)
conf_store_freeze() { kill -STOP "${ETCD_PID_OF[own]}"; }
conf_store_thaw() { kill -CONT "${ETCD_PID_OF[own]}"; }
