#!/usr/bin/env bash
# labels: local slots
# timeout: 240
# A slot file removed or replaced under its live holder (docs/local.md, "A slot file
# removed or replaced"): a slot is the inode its holder flocks and a name the kernel
# keeps for it, not the file's name. Servers in --worker-range 0-0, a client drawing
# snowflake IDs from each all along.
# 1. For `rm 0000.slot` (a hand, rsync --delete) and a copy renamed over it (a backup
#    restore, rsync): the first server (A) holds slot 0; the file is changed and a
#    second server (B) started at once, with a --slot-wait. B does not take slot 0
#    while A lives (A's name for it is still bound); A notices the change at its next
#    renewal (a log line naming the file), takes slot 0 again on the file the path
#    names now and serves on. A stopped (SIGTERM), B takes slot 0 and serves, above
#    every ID of A's. No ID is answered by both, nor twice.
# 2. The same change, with the new file flocked (before it is put in place) by a
#    process that is not an idkeeper (what a holder in another network namespace,
#    which does not see A's name, would do): A stops issuing within its renewal
#    (half the 1 s persist interval) plus slack for a loaded machine, and serves
#    again once that lock is gone, its IDs still increasing.
source "$(dirname "$0")/lib.sh"

STOP_SLACK=${STOP_SLACK:-10} # the renewal comes every 0.5 s; the machine may be busy

refuses() { [ "$(ik_http "http://127.0.0.1:$1/v1/snowflake?count=1")" = 503 ]; }
change() { # change removed|replaced FILE
  if [ "$1" = removed ]; then
    rm "$2"
  else
    cp "$2" "$T/copy.slot"
    mv "$T/copy.slot" "$2"
  fi
}
holder_is() { grepq "^holder=$2\$" "$1"; }
more_than() { [ "$(wc -l <"$1")" -gt "$2" ]; } # more_than FILE N: FILE has over N lines

for how in removed replaced; do
  D=$T/$how
  slot=$D/default/slots/0000.slot
  serve_on "a-$how" --coord "local:$D" --worker-range 0-0 || fail "A: $(tail -n 3 "$T/a-$how.log")"
  PA=$PORT
  rm -f "$T/stop-$how"
  probe "pa-$how" "http://127.0.0.1:$PA/v1/snowflake?count=50&format=text" "$T/stop-$how" 0.005 &
  IK_PIDS+=($!)
  wait_until 10 test -s "$T/pa-$how.ids" || fail "the client drew nothing from A"

  change "$how" "$slot"
  PB=$(free_port)
  start_server "b-$how" "$PB" --coord "local:$D" --worker-range 0-0 --slot-wait 60000
  probe "pb-$how" "http://127.0.0.1:$PB/v1/snowflake?count=50&format=text" "$T/stop-$how" 0.005 &
  IK_PIDS+=($!)
  if ! wait_grep "was removed or replaced under its holder" "$T/a-$how.log" "$STOP_SLACK"; then
    touch "$T/stop-$how"
    both=$(sort "$T/pa-$how.ids" "$T/pb-$how.ids" | uniq -d | wc -l)
    fail "A did not notice its slot file $how within $STOP_SLACK s; B served $(wc -l <"$T/pb-$how.ids") IDs meanwhile, $both of them answered by A too"
  fi
  grepq -F "$slot" "$T/a-$how.log" || fail "A's log does not name $slot"
  wait_grep "took slot 0 again" "$T/a-$how.log" "$STOP_SLACK" ||
    fail "A did not take slot 0 again: $(tail -n 5 "$T/a-$how.log")"
  holder_is "$slot" "a-$how" || fail "the file at $slot is not A's: $(cat "$slot")"
  n0=$(wc -l <"$T/pa-$how.ids")
  wait_until 10 more_than "$T/pa-$how.ids" "$((n0 + 500))" || fail "A does not serve on"
  ! ready_probe "$PB" || fail "B is ready while A holds slot 0: $(tail -n 3 "$T/b-$how.log")"
  pass "$how: A notices, takes slot 0 again on the file the path names and serves on; B waits"

  kill -TERM "${SERVER_PID[a-$how]}"
  wait "${SERVER_PID[a-$how]}" || fail "A did not exit 0"
  wait_until 20 ready_probe "$PB" || fail "B did not take slot 0 once A stopped: $(tail -n 3 "$T/b-$how.log")"
  fetch_ids "$PB" 3000 "$T/b-$how.ids" || fail "no IDs from B"
  touch "$T/stop-$how"
  last_a=$(sort "$T/pa-$how.ids" | tail -n 1) # 19-digit IDs: text order is numeric order
  first_b=$(sort "$T/pb-$how.ids" "$T/b-$how.ids" | awk "NR == 1")
  [[ $first_b > $last_a ]] || fail "B's first ID $first_b is not above A's last $last_a"
  cat "$T/pa-$how.ids" "$T/pb-$how.ids" "$T/b-$how.ids" >"$T/all-$how.ids"
  assert_unique "$T/all-$how.ids"
  pass "$how: B takes slot 0 once A stops, above A's IDs; $(wc -l <"$T/all-$how.ids") IDs, none twice"
  kill -TERM "${SERVER_PID[b-$how]}"
  wait "${SERVER_PID[b-$how]}" || fail "B did not exit 0"
done

# 2. another holder of the new file, unseen by A's name: A stops at its renewal
D=$T/other
slot=$D/default/slots/0000.slot
serve_on a-other --coord "local:$D" --worker-range 0-0 || fail "A: $(tail -n 3 "$T/a-other.log")"
PA=$PORT
rm -f "$T/stop-other"
probe pa-other "http://127.0.0.1:$PA/v1/snowflake?count=50&format=text" "$T/stop-other" 0.005 &
IK_PIDS+=($!)
wait_until 10 test -s "$T/pa-other.ids" || fail "the client drew nothing from A"
# The copy is flocked before it is renamed over the slot's name: flocked after, A
# (which takes the file the name points at again within milliseconds of noticing)
# could take it first, and the holder found it locked (a load run saw exactly that).
rm -f "$T/holder.ready"
/usr/bin/python3 -c 'import fcntl, os, shutil, sys, time
slot, copy, ready = sys.argv[1:]
shutil.copyfile(slot, copy)
f = open(copy)
fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
os.rename(copy, slot)
open(ready, "w").close()
time.sleep(600)' "$slot" "$T/copy.slot" "$T/holder.ready" &
HOLDER=$!
IK_PIDS+=($HOLDER)
wait_until 10 test -e "$T/holder.ready" || fail "the other holder did not put its flocked copy in place"
t0=$(mono_ms)
wait_until "$STOP_SLACK" refuses "$PA" || fail "A still issues $STOP_SLACK s after its slot file was replaced and flocked by another"
log "A refuses $(($(mono_ms) - t0)) ms after the change"
wait_until 5 not ready_probe "$PA" || fail "A still ready without its slot"
# not the moment's refusal of a re-take: A waits while the other holds the file
alive "$HOLDER" || fail "the other holder of the new file exited"
! grepq "took slot 0 again" "$T/a-other.log" || fail "A took slot 0 again while another holds its file: $(tail -n 3 "$T/a-other.log")"
pass "another holder of the new file: A stops issuing at its renewal and is not ready"
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null || true
wait_until 20 ready_probe "$PA" || fail "A did not take slot 0 again: $(tail -n 3 "$T/a-other.log")"
n0=$(wc -l <"$T/pa-other.ids")
wait_until 10 more_than "$T/pa-other.ids" "$((n0 + 500))" || fail "A does not serve again"
touch "$T/stop-other"
assert_unique "$T/pa-other.ids"
assert_increasing "$T/pa-other.ids"
pass "A serves again once the lock is gone; its IDs unique and increasing"
kill -TERM "${SERVER_PID[a-other]}"
wait "${SERVER_PID[a-other]}" || fail "A did not exit 0"
