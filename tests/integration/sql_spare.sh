# shellcheck shell=bash
# sql_spare.sh: the "spare" case of the SQL lock tests (t_pg_locks, t_mysql_lock_kill):
# one ik_election (its latch is an ik_lock) resigning and campaigning again. A lock's
# connection is kept, holding nothing, after a release the database answered
# (docs/recipes.md, "SQL"); this proves it holds nothing and that a dead one is
# replaced. A TTL of 120 s: the server would end an idle lock session after it
# (docs/sql.md, "Session settings"), so B's taking over within 60 s proves A's resign
# unlocked.
#
#   spare_case URI  with the caller's functions latch_free (0 when no session holds
#                   the latch of /sp) and end_sessions (the database ends every
#                   session of the test's database but the caller's own)
source "$IK_SRC/tests/interop/build.sh"

_spare_leads() { [ "$(grep -c "^lead " "$T/$1.out" 2>/dev/null)" -ge "$2" ]; }

spare_case() {
  local uri=$1
  interop_build_c
  mkfifo "$T/ea.in" "$T/eb.in"
  IK_INTEROP_TTL_MS=120000 "${IK_INTEROP[@]}" elect "$uri" /sp A "$T/ea.out" <"$T/ea.in" 2>"$T/ea.err" &
  IK_PIDS+=($!)
  exec 7>"$T/ea.in"
  wait_until 30 _spare_leads ea 1 || fail "A did not lead /sp: $(cat "$T/ea.err")"
  IK_INTEROP_TTL_MS=120000 "${IK_INTEROP[@]}" elect "$uri" /sp B "$T/eb.out" <"$T/eb.in" 2>"$T/eb.err" &
  IK_PIDS+=($!)
  exec 8>"$T/eb.in"
  echo resign >&7
  wait_until 60 _spare_leads eb 1 || fail "B did not lead /sp after A resigned (A's kept connection holds the latch?): $(cat "$T/eb.err")"
  echo resign >&8
  wait_until 30 latch_free || fail "the latch of /sp is still held after both resigned"
  end_sessions # A's kept connection among them
  echo campaign >&7
  wait_until 30 _spare_leads ea 2 || fail "A did not lead again after its kept connection was ended: $(cat "$T/ea.err")"
  wait_until 30 not latch_free || fail "A leads, but no session holds the latch of /sp"
  echo quit >&7
  echo quit >&8
  exec 7>&- 8>&-
  pass "spare: a resigned latch's kept connection holds nothing; a dead one is replaced at the next campaign"
}
