# stores/redis.sh: the hooks of conf.sh for redis:// (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store: the shared
# fixture's Redis, under a key prefix of this test's own
# (tests/integration/redis.sh). No locks or elections (docs/redis.md): their hooks
# keep conf.sh's refusal.
#
# The groups that do not apply to this store (tests/conformance/CMakeLists.txt
# registers no test for them and prints why):
# skips: elect: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: elect_outage: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: hold_lost: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: lock_escape: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: lock_tree: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: locks: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: locks_stopped: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why
# skips: semaphore: no locks or elections on Redis, which cannot fence them under failover (docs/redis.md); t_redis_bad_input checks that idkeeper lock and elect refuse, saying why

# shellcheck source=../../integration/redis.sh
source "$IK_SRC/tests/integration/redis.sh"

conf_store_start() {
  if [ -n "${CONF_OWN_STORE:-}" ]; then # a server of this test's own (conf.sh)
    redis_own own
    REDIS_PORT=${REDIS_PORT_OF[own]}
    REDIS_PREFIX=ik-$$/
  else
    redis_start # the shared fixture's, under a key prefix of this test's own
  fi
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

# tags_two_sequences: X's script runs and its answer is held (X's call gives up: in
# doubt) while Y's write, on a lane of its own, runs; X's next write, on X's lane,
# settles the doubt: its range logged as a gap (docs/redis.md, "Counters")
conf_fault_race_lost() { proxy hold-after 1 "tagw/$1/"; }

# _conf_redis_port URI: the port a redis://127.0.0.1:PORT/... URI names
_conf_redis_port() {
  local p=${1#redis://127.0.0.1:}
  echo "${p%%/*}"
}

# appendonly no: Redis applies a CONFIG SET before it answers it
conf_unsafe_on() {
  local p
  p=$(_conf_redis_port "$1")
  [ "$(rcli "$p" CONFIG SET appendonly no)" = OK ] || return 1
  [ "$(rcli "$p" CONFIG GET appendonly | tail -n 1)" = no ] || return 1
  echo appendonly
}

# appendonly yes, and until its first rewrite ended (docs/hazards.md, Redis:
# aof-rewrite): only then does Redis keep a write again
conf_unsafe_off() {
  local p
  p=$(_conf_redis_port "$1")
  [ "$(rcli "$p" CONFIG SET appendonly yes)" = OK ] || return 1
  _conf_rewriting() { rcli "$p" INFO persistence | grep -q '^aof_rewrite_in_progress:1'; }
  wait_until 30 not _conf_rewriting
}

# proof's second case: the write held between its round trips (a setting changed
# after the write began, before its commit point read the evidence)
conf_write_hold_var() { echo IDKEEPER_TEST_REDIS_WRITE_HOLD; }
