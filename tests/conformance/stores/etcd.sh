# stores/etcd.sh: the hooks of conf.sh for etcd:// (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store: the shared
# fixture's etcd, under a key prefix of this test's own, or a one-member etcd of
# this test's own (CONF_OWN_STORE) (tests/integration/etcd.sh). The key layout is
# docs/etcd.md's: PREFIX/idkeeper/APP/slot/W and .../record/W, a lock or election
# at PATH is PREFIX/PATH/LEASEHEX (etcd's own concurrency recipe).

# shellcheck source=../../integration/etcd.sh
source "$IK_SRC/tests/integration/etcd.sh"

conf_store_start() {
  if [ -n "${CONF_OWN_STORE:-}" ]; then # a server of this test's own (conf.sh)
    etcd_own own
    ETCD_PORT=${ETCD_PORT_OF[own]}
    ETCD_PREFIX=ik-$$
  else
    etcd_start # the shared fixture's, under a key prefix of this test's own
  fi
  CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
}

conf_coord() { etcd_uri "$1"; }

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
