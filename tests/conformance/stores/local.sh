# stores/local.sh: the hooks of conf.sh for local:DIR (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store is a
# directory of this test's own: no server, no fault proxy, no elections to show.
#
# The groups that do not apply to this store (tests/conformance/CMakeLists.txt
# registers no test for them and prints why):
# skips: close_refused: the store is SQLite inside the server's own process: no write is left in doubt for a stop to settle
# skips: elect_outage: an flock(2) has no store to lose: nothing can cut a candidate off from it
# skips: hold_lost: a grant is an flock(2) that the kernel keeps while its holder lives: there is no store to end it by hand, to cut the holder off from, or to freeze apart from the holder (docs/recipes.md, "One host")
# skips: locks_stopped: a lock is an flock(2) that a stopped process keeps: nobody can take it over, so there is no loss to see
# skips: proof: the store is a directory of this host: no setting of it that loses a write can be turned unsafe at run time (a filesystem's type is fixed while it is mounted); the local checks (statfs of DIR at open and every interval) are tried by their own tests
# skips: shutdown_unreachable: the store is SQLite inside the server's own process: there is no store server to freeze apart from the server
# skips: sigterm_slow: SQLite is a file the server opens itself: there is no store server to put a slow network in front of
# skips: slots_stopped: a slot is an flock(2) that a stopped process keeps: nobody can take the slot while its holder sleeps
# skips: stop_frozen: the store is SQLite inside the server's own process: there is no store server to freeze apart from the server
# skips: tags_doubt_term: the store is SQLite inside the server's own process: a write's call returns only once SQLite committed or rolled back, so no write is left in doubt for a stop to settle, and there is no store to freeze apart from the server

conf_store_start() { :; }

conf_coord() { echo "local:$T/$1"; }

conf_slot_free_ms() { echo 0; } # flock: the kernel frees it with the process

conf_slot_wait_ms() { echo 0; }

conf_slot_record() {
  local uri=$1 app=$2 w=$3
  sed -n 's/^record_ms=//p' "${uri#local:}/$app/slots/$(printf %04d "$w").slot"
}

conf_lock_free_ms() { echo 0; }

conf_patient_args() { :; }

conf_lock_waiters() {
  local uri=$1 path=$2
  find "${uri#local:}/locks$path.lock.q" -name '[0-9]*' 2>/dev/null | wc -l
}

conf_sema_queued() { # the tickets of the semaphore's queue (docs/recipes.md, "Semaphores")
  find "${1#local:}/locks$2.semq.q" -name '[0-9]*' 2>/dev/null | wc -l
}

# a grant is an flock(2) that the kernel keeps while its holder lives: nothing ends it
# by hand, and no server can be frozen apart from the holder
conf_hold_unlosable() { echo "a lease is an flock(2) that the kernel keeps while its holder lives: no store to end it by hand or to freeze apart from the holder (docs/recipes.md, \"One host\")"; }

conf_counter_raw() {
  local uri=$1 tag=$2 app=${3:-default}
  python3 - "${uri#local:}/idkeeper.db" "$app" "$tag" <<'PY'
import sqlite3, sys
c = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=30)
print(c.execute("SELECT max_id FROM leaf_alloc WHERE app = ? AND biz_tag = ?", sys.argv[2:]).fetchone()[0])
PY
}

conf_store_port() { return 1; } # no server: SQLite is a file the server opens itself
