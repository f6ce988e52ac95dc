# stores/local.sh: the hooks of conf.sh for local:DIR (docs/testing.md, "Adding a
# backend to the suite"; conf.sh says what each hook does). The store is a
# directory of this test's own: no server, no fault proxy, no elections to show.

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
