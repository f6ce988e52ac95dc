# stores/redis.sh: the hooks of conf.sh for redis:// (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store: the shared
# fixture's Redis, under a key prefix of this test's own
# (tests/integration/redis.sh). No locks or elections (docs/redis.md): their hooks
# keep conf.sh's refusal.

# shellcheck source=../../integration/redis.sh
source "$IK_SRC/tests/integration/redis.sh"

conf_store_start() {
  redis_start # the shared fixture's, under a key prefix of this test's own
  CONF_SERVE_ARGS=(--lease-ttl "$CONF_SESSION_MS")
}

conf_coord() { redis_uri "$1"; }

conf_slot_free_ms() { echo "$CONF_SESSION_MS"; } # the slot's TTL (--lease-ttl)

conf_slot_wait_ms() { echo $((CONF_SESSION_MS + 2000)); }

conf_slot_record() { # the record's own key (docs/redis.md), read with redis-cli
  local uri=$1 app=$2 w=$3
  rcli HGET "${uri##*prefix=}idkeeper/$app/record/$w" record_ms
}

conf_patient_args() { echo --lease-ttl 10000; }

conf_counter_raw() { # the counter key holds the last ID taken: max_id - 1 (docs/redis.md)
  local uri=$1 tag=$2 app=${3:-default}
  local prefix=${uri##*prefix=} key v
  if [ "$app" = default ]; then key=$prefix$tag; else key=$prefix$app/$tag; fi
  v=$(rcli GET "$key")
  echo $((v + 1))
}

conf_store_port() { echo "$REDIS_PORT"; }

conf_slow_args() { echo --lease-ttl $(($1 * 4)); } # a renewal waits TTL/3 for its answer

conf_release_bound_ms() {
  # a renewal in flight at the stop (its hazard check and its script, TTL/3 each),
  # then the release's script (TTL/3): docs/http.md, "Shutdown"
  echo $(($1 * 4))
}

# One script, on any connection of its pool (a new one, when the lease's renewal
# holds the idle one): the script names the tag's writer key, tagw/TAG/.
conf_fault_answer_lost() { proxy hold-after 1 "tagw/${1:-orders}/"; }

conf_fault_freeze_after_write() { proxy mute-after 1 "tagw/${1:-orders}/"; }
