# conf.sh: the backend of a conformance group (tests/conformance/*.sh), sourced after
# tests/integration/lib.sh. The backend comes from IK_STORE (CTest sets it), and its
# hooks from tests/conformance/stores/$IK_STORE.sh, which defines the hooks below
# for that store: a new backend is one new file there and nothing here
# (docs/testing.md, "Adding a backend to the suite"). The store file is sourced once,
# here; it may source its helpers and set variables. A hook marked (optional) fails
# the test, saying so, where the store's file leaves it out (no locks on redis://,
# elections shown on zk:// only); conf.sh checks that a store defines the others.
#
# The store's hooks:
#   conf_store_start          starts the backend's store for this test (zk: a standalone
#                             ZooKeeper, or the shared fixture's with a fresh chroot;
#                             redis: the shared fixture's, with a fresh key prefix);
#                             sets CONF_SERVE_ARGS, the options every server, CLI and
#                             lock of this test gets besides --coord
#   conf_coord NAME           a fresh coordination URI of this test's store
#   conf_slot_free_ms         how long after its holder's kill -9 a slot is free at
#                             the latest (docs/guarantees.md promise 7)
#   conf_slot_wait_ms         the default --slot-wait (docs/guarantees.md promise 9)
#   conf_slot_record URI APP W  an independent reading of slot W's time record (Unix ms)
#   conf_patient_args         options for a client that must not lose its session
#                             while a loaded machine starves the store for seconds
#   conf_counter_raw URI TAG [APP]  an independent reading of the tag's max_id in the
#                             store (not through idkeeper)
#   conf_store_port           the TCP port on 127.0.0.1 of the store's server, which
#                             conf_coord's URIs name; 1 (nothing printed) where there
#                             is no server (local:)
#   conf_lock_free_ms         (optional) how long after its holder's kill -9 a lock
#                             is free
#   conf_lock_waiters URI PATH  (optional) the contenders (tickets, nodes) queued or
#                             holding the lock PATH, as the store shows them to
#                             another client
#   conf_elect_nodes URI PATH (optional) the candidates of the election PATH as the
#                             store shows them to another client, one a line, first
#                             in line first
#   conf_elect_args MS        (optional) options for a lock or candidate whose grant
#                             is LOST after 2/3 of MS without the store (zk: the
#                             session timeout; SQL: the lease TTL)
#   conf_slow_args MS         (optional) options for a server whose store may answer
#                             MS late and keep its lease with room to spare (a
#                             session or lease TTL of 4 MS: the lease tolerates
#                             about a third)
#   conf_release_bound_ms MS  (optional) the longest a clean stop waits on the store
#                             after its requests are done (docs/http.md,
#                             "Shutdown"), for a server of conf_slow_args MS
#   conf_fault_answer_lost [TAG]  (optional) tells the fault proxy of
#                             conf_proxy_start (lib.sh's proxy) that the next write
#                             of TAG (default orders) is to reach the store and be
#                             applied, and its answer held (until "proxy release";
#                             "proxy down" closes its connection)
#   conf_fault_freeze_after_write [TAG]  (optional) ... that the next write of TAG is
#                             to be applied, and then the store to answer nothing on
#                             any connection (a store frozen right after it; "proxy
#                             unmute" ends it)
#   conf_fault_race_lost TAG  (optional; without it tags_two_sequences skips its
#                             "lost" part) tells the fault proxy to lose X's write of
#                             TAG while Y's, queued behind it, goes on, in the way
#                             the store's settle must tell apart from Y's (SQL: the
#                             COMMIT after a commit mark's INSERT never arrives;
#                             redis: X's script runs and its answer is held)
#   conf_unsafe_on URI        (optional) turns one setting of the server behind URI
#                             that loses acknowledged writes unsafe, at run time,
#                             and returns once the server applies it; prints the
#                             setting's name (as idkeeper's hazard rows name it) on
#                             stdout (redis: appendonly, to no). Only ever called
#                             on a server of the test's own (CONF_OWN_STORE below)
#   conf_unsafe_off URI       (optional) puts that setting back, and returns once the
#                             server keeps writes again (redis: appendonly yes, and
#                             its first rewrite of the append-only file ended)
#   conf_hold_revokes         (optional) the ways a holder's grant can be ended by
#                             hand in the store, words for conf_hold_revoke's HOW
#                             (zk: delete; etcd: delete revoke; SQL: its session's end)
#   conf_hold_revoke URI KIND PATH HOW  (optional) ends the grant of the lock (KIND
#                             lock) or election (elect) PATH's holder by hand, as an
#                             operator would; prints what it did
#   conf_hold_reset_frees     (optional) prints why a connection reset frees a grant
#                             in the store at once (SQL: the session ends), nothing
#                             where the store frees it a session or TTL later
#   conf_store_freeze, conf_store_thaw  (optional) SIGSTOP and SIGCONT of the test's
#                             own store server (CONF_OWN_STORE), all its processes
#   conf_hold_unlosable       (optional, nothing if absent) why no grant of the store
#                             can be ended by hand or by the store's freeze (local:)
#   conf_sema_queued URI PATH (optional) the contenders in the queue of the semaphore
#                             PATH (its holder, the one waiting for a lease,
#                             included), as the store shows them to another client
#   conf_sema_revoke URI PATH HOW  (optional) ends one lease of the semaphore PATH by
#                             hand, as an operator would, each way conf_hold_revokes
#                             names; prints what it did
#   conf_write_hold_var       (optional) the name of the test hook (docs/testing.md)
#                             that holds a counter write after it began and before
#                             its commit point, where the evidence that rides with it
#                             is read (SQL: between the advance's two round trips, its
#                             row lock held; redis: between its gate and its script);
#                             absent where the store has no setting to change while a
#                             write is under way (proof then says so)
#   conf_counters_store       (optional, nothing if absent) what
#                             tests/tools/counters.sh needs of the store beyond its
#                             URI (zk: counter_raw)
#
# A group sets CONF_OWN_STORE=1 before conf_store_start when it changes the store
# server's own settings (proof: conf_unsafe_on): conf_store_start then starts a
# server of this test's own instead of using the shared fixture's, which the other
# tests of the stage use at the same time. A store file whose server is always the
# test's own (local:) may ignore it.
# A group sets CONF_FLEET_STORE=1 before conf_store_start when it needs the store
# configured as a fleet should configure it (check: `idkeeper check` exits 0): a
# store file whose shared server is not (etcd: one member without auth, two risks)
# then starts one of the test's own that is (etcd: 3 members, auth on, a user whose
# role alone may write the prefix; CONF_SERVE_ARGS carry its password file). The
# others may ignore it.
#
# conf.sh's own, the same on every store:
#   conf_counters             sets the store of tests/tools/counters.sh (DATA,
#                             SERVE_ARGS) to conf_coord data; source counters.sh after
#   conf_proxy_start          a fault proxy (tests/interop/fault_proxy.py, raw) on a
#                             free port (CONF_PROXY_PORT) in front of the store's
#                             server (conf_store_port), driven with lib.sh's `proxy`
#                             (down, up, delay MS...); 1 where the store has no
#                             server to put one in front of (local:)
#   conf_proxy_coord NAME     conf_coord NAME (the same store and namespace), reached
#                             through that proxy
IK_STORE=${IK_STORE:-local}
CONF_SESSION_MS=${CONF_SESSION_MS:-3000} # zk: short, so kill -9 frees a slot soon
CONF_SERVE_ARGS=()

_conf_store=$IK_SRC/tests/conformance/stores/$IK_STORE.sh
[ -r "$_conf_store" ] ||
  fail "conf.sh: IK_STORE=$IK_STORE is not a backend of the suite (no $_conf_store; there are: $(cd "${_conf_store%/*}" && ls | sed 's/\.sh$//' | tr '\n' ' '))"

# The optional hooks, until the store's file defines them.
for _h in conf_lock_free_ms conf_lock_waiters conf_elect_nodes conf_elect_args conf_slow_args \
  conf_release_bound_ms conf_fault_answer_lost conf_fault_freeze_after_write conf_unsafe_on \
  conf_unsafe_off conf_hold_revokes conf_hold_revoke conf_hold_reset_frees conf_store_freeze \
  conf_store_thaw conf_sema_queued conf_sema_revoke; do
  eval "$_h() { fail \"conf.sh: no $_h on $IK_STORE (tests/conformance/stores/$IK_STORE.sh)\"; }"
done
conf_counters_store() { :; }
conf_hold_unlosable() { :; }

# shellcheck source=stores/local.sh
source "$_conf_store"

for _h in conf_store_start conf_coord conf_slot_free_ms conf_slot_wait_ms conf_slot_record \
  conf_patient_args conf_counter_raw conf_store_port; do
  declare -F "$_h" >/dev/null || fail "conf.sh: $_conf_store defines no $_h"
done
unset _h

conf_counters() {
  conf_counters_store
  DATA=$(conf_coord data)
  SERVE_ARGS=("${CONF_SERVE_ARGS[@]}")
  CONF_COUNTERS=1 # tests/tools/counters.sh: the store is set already
}

conf_proxy_start() {
  local store try
  store=$(conf_store_port) || return 1
  for try in 1 2 3; do
    CONF_PROXY_PORT=$(free_port)
    fault_proxy_start "$CONF_PROXY_PORT" "$store" raw && return 0
    grep -q 'Address already in use' "$T/proxy.log" && ((try < 3)) ||
      fail "the fault proxy did not start: $(cat "$T/proxy.log")"
  done
}

conf_proxy_coord() {
  local uri store
  uri=$(conf_coord "$1")
  store=$(conf_store_port) || fail "conf.sh: no proxy on $IK_STORE"
  [ -n "${CONF_PROXY_PORT:-}" ] || fail "conf.sh: conf_proxy_coord before conf_proxy_start"
  [[ $uri == *"127.0.0.1:$store/"* ]] || fail "conf.sh: $uri does not name 127.0.0.1:$store"
  echo "${uri/127.0.0.1:$store\//127.0.0.1:$CONF_PROXY_PORT/}"
}
