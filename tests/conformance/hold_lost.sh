#!/usr/bin/env bash
# labels: recipes release
# timeout: 900
# The hold rule (docs/recipes.md, "The hold monitor"): a grant is trusted until the
# send of the last round trip that proved it plus 2/3 of its term T, and lost as soon
# as the store says so. Holder A (`idkeeper lock`, or `idkeeper elect --once`) runs a
# CMD that appends "A PID EPOCHREALTIME" to one file every 20 ms and, told to stop,
# goes on for a second (the CLI kills it after its grace); waiter B queues on a direct
# connection with a CMD that appends "B ..." lines to the same file. T is 6 s, A's
# --grace 0.5 s. Then one fault:
#   revoke  the holder's grant ended by hand, each way the store has (zk: its node
#           deleted; etcd: its key deleted, its lease revoked; SQL: its session
#           terminated or killed): the store hands the grant on at that moment, so A
#           must be told LOST at once (within 1 s) and its CMD gone within 0.5 s of
#           B's start (A's CMD stops at once here: the race is A's stop against B's
#           start, which only the fencing token can close);
#   reset   A's network resets every connection, then goes silent 0.3 s before the
#           window's end (through the fault proxy: down, then 2/3 T - 0.3 s after the
#           last answer A got, up and partition): a probe sent then hangs past the
#           window's end; on SQL, where a reset ends the session and frees the lock
#           at once (conf_hold_reset_frees), silent from the start instead;
#   oneway  A's answers are dropped while its requests arrive (proxy mute): the
#           store keeps A's grant, so B may hold only after A gave it back;
#   frozen  the store's server frozen (SIGSTOP) for T + 1.5 s, then continued;
#   start   the store frozen as `lock --timeout 60000` (or `elect`) starts: it says it
#           waits for the store, in the store's words, and once the store is
#           continued it runs its CMD and exits 0 (before: exit 1 at once);
#   keep    (the library, tests/tools/keepelect) an ik_election with keep_on_loss,
#           cut off one way: after LOST it keeps its node (B does not lead for T/6)
#           until ik_election_rejoin, which gives it back (B leads after it).
# In every case but revoke, no line of A may follow B's first (0 overlap), and A
# must say it lost the grant no later than the window after its last proof's send
# plus SLACK_MS for a loaded machine; B must run. A reaches the store through the
# fault proxy in these cases, and the last proof's send is bounded by the arrival of
# the last answer the proxy passed on before the fault (`proxy last-answer`: what A
# got after that was nothing). Before the one hold monitor, etcd's keepalive hung
# past the window (LOST up to a third of the TTL late), SQL counted the window from
# the first ping that went unanswered.
# Before the one hold monitor, etcd's keeper said LOST up to a third of the TTL
# late (a keepalive's wait not cut to the window), never for a key deleted by hand,
# and at the next keepalive for a lease revoked; elect's campaign thread gave the
# grant back at LOST, while A's CMD still ran; an etcd waiter whose lease lapsed
# with the store frozen exited 1.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
CONF_OWN_STORE=1 # the frozen case stops the server
conf_store_start
conf_proxy_start || fail "no fault proxy in front of $IK_STORE"
COORD=$(conf_coord hold)
VIA=$(conf_proxy_coord hold)
TMS=${HOLD_TMS:-6000}                # the session timeout or lease TTL
REVOKE_TMS=${HOLD_REVOKE_TMS:-15000} # a long T: a probe every T/4 would be too late
SLACK_MS=${HOLD_SLACK_MS:-400} # the monitor's wake and the CLI's line on a busy machine
GRACE_MS=500                     # A's grace: its tree is gone T/3 - 0.5 s before T
CASES=${HOLD_CASES:-revoke reset oneway frozen start keep}
TOOLS=${HOLD_TOOLS:-lock elect}
# (HOLD_CASES, HOLD_TOOLS, HOLD_REVOKES: a part of the group, by hand)

# hb NAME LINGER_MS FILE: "NAME PID EPOCHREALTIME" every 20 ms; after a SIGTERM,
# LINGER_MS more
cat >"$T/hb" <<'SH'
#!/usr/bin/env bash
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
name=$1 linger=$2 out=$3 stop=
now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }
trap 'stop=$(($(now_ms) + linger))' TERM
while [ -z "$stop" ] || (($(now_ms) < stop)); do
  echo "$name $$ $EPOCHREALTIME" >>"$out"
  sleep 0.02
done
SH
chmod +x "$T/hb"

# stamp: each line of stdin with EPOCHREALTIME before it
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }

# queued TOOL PATH N: at least N contenders of the lock or election PATH in the store
queued() {
  local n
  if [ "$1" = lock ]; then n=$(conf_lock_waiters "$COORD" "$2"); else n=$(conf_elect_nodes "$COORD" "$2" | grep -c .); fi
  [ "${n:-0}" -ge "$3" ]
}

# ms_since T0: ms from EPOCHREALTIME T0 to now
ms_since() { echo $(((${EPOCHREALTIME/./} - ${1/./}) / 1000)); }

# wait_ms_past T0 MS: until MS ms have passed since EPOCHREALTIME T0
wait_ms_past() { while (($(ms_since "$1") < $2)); do sleep 0.01; done; }

# run_case TOOL CASE [HOW]
run_case() {
  local tool=$1 case=$2 how=${3:-} path hb via linger=1000 t0 a b rc tms=$TMS args note=""
  path="/hold-$tool-$case${how:+-$how}"
  hb="$T/hb.${path#/}"
  : >"$hb"
  via=$COORD
  case $case in reset | silent | oneway | frozen) via=$VIA ;; esac
  if [ "$case" = revoke ]; then
    linger=0
    tms=$REVOKE_TMS
  fi
  read -ra args <<<"$(conf_elect_args "$tms")"
  local w=$((tms * 2 / 3))
  if [ "$tool" = lock ]; then
    "$IK_BIN" lock --coord "$via" "${args[@]}" --grace $GRACE_MS "$path" -- "$T/hb" A "$linger" "$hb" 2> >(stamp >"$hb.a.err") &
  else
    "$IK_BIN" elect --coord "$via" "${args[@]}" --grace $GRACE_MS --once --id A "$path" -- "$T/hb" A "$linger" "$hb" 2> >(stamp >"$hb.a.err") &
  fi
  a=$!
  IK_PIDS+=($a)
  wait_until 60 grepq '^A ' "$hb" || fail "$tool $case: A's CMD never ran: $(tail -n 3 "$hb.a.err")"
  if [ "$tool" = lock ]; then
    "$IK_BIN" lock --coord "$COORD" "${args[@]}" "$path" -- "$T/hb" B 0 "$hb" 2>"$hb.b.err" &
  else
    "$IK_BIN" elect --coord "$COORD" "${args[@]}" --once --id B "$path" -- "$T/hb" B 0 "$hb" 2>"$hb.b.err" &
  fi
  b=$!
  IK_PIDS+=($b)
  wait_until 60 queued "$tool" "$path" 2 || fail "$tool $case: B never queued: $(tail -n 3 "$hb.b.err")"
  t0=$EPOCHREALTIME
  case $case in
    revoke)
      note=$(conf_hold_revoke "$COORD" "$tool" "$path" "$how")
      t0=$EPOCHREALTIME # the revoke is done by now: A may have been told already
      ;;
    reset)
      proxy down
      proxy last-answer # the last proof's answer, about: the window ends W after it
      wait_ms_past "$(cat "$T/ctl.last")" $((w - 300))
      proxy partition
      proxy up
      ;;
    silent) proxy partition ;;
    oneway) proxy mute ;;
    frozen)
      conf_store_freeze
      wait_ms_past "$t0" $((tms + 1500))
      proxy last-answer
      conf_store_thaw
      ;;
  esac
  local last_answer=""
  wait_until $(((3 * tms + 20000) / 1000)) grepq '^B ' "$hb" ||
    fail "$tool $case: B never ran ($((3 * tms + 20000)) ms): B: $(tail -n 3 "$hb.b.err"); A: $(tail -n 3 "$hb.a.err")"
  case $case in reset | silent | oneway) proxy last-answer ;; esac
  [ "$case" = revoke ] || last_answer=$(cat "$T/ctl.last")
  case $case in reset | silent) proxy heal ;; oneway) proxy unmute ;; esac
  rc=0
  wait_until 30 not alive $a || fail "$tool $case: A did not end within 30 s of B's start"
  wait $a || rc=$?
  kill -TERM $b 2>/dev/null
  wait $b 2>/dev/null || true
  local told lost overlap
  # the first word of the loss: the library's LOST, or the guardian's deadline (the
  # last proof's window) if it came first
  lost=$(grep -m 1 -E 'lost the lock|lost leadership|within its safe window' "$hb.a.err" || true)
  [ -n "$lost" ] || fail "$tool $case: A never said it lost the grant (exit $rc): $(cat "$hb.a.err")"
  local lost_at=${lost%% *} since_answer=""
  told=$(((${lost_at/./} - ${t0/./}) / 1000))
  [ -z "$last_answer" ] || since_answer=$(((${lost_at/./} - ${last_answer/./}) / 1000))
  overlap=$(awk '$1 == "B" && b == "" { b = $3; next } b != "" && $1 == "A" { n++; last = $3 }
                 END { if (n) printf "%d %.0f", n, (last - b) * 1000 }' "$hb")
  [ "$rc" = 125 ] || fail "$tool $case: A exited $rc, not 125: $(cat "$hb.a.err")"
  if [ "$case" = revoke ]; then
    ((told <= 1000)) || fail "$tool revoke $how ($note): A was told LOST $told ms after it (T = $tms ms: as soon as the store says so, not at the next probe)"
    if [ -n "$overlap" ]; then
      ((${overlap#* } <= 500)) || fail "$tool revoke $how: A's CMD ran ${overlap#* } ms (${overlap%% *} heartbeats) after B's started"
    fi
    local last="before B's first"
    [ -z "$overlap" ] || last="${overlap#* } ms after B's first"
    pass "$tool, revoke $how ($note): LOST told $told ms after it; A's CMD's last heartbeat $last"
    return 0
  fi
  [ -z "$overlap" ] || fail "$tool $case: ${overlap%% *} heartbeats of A after B's CMD started, the last ${overlap#* } ms after"
  ((told <= w + SLACK_MS)) || fail "$tool $case: A was told LOST $told ms after the fault began (the window: $w ms, T = $tms ms)"
  ((since_answer <= w + SLACK_MS)) || fail "$tool $case: A was told LOST $since_answer ms after the last answer it got (the window: $w ms, T = $tms ms)"
  pass "$tool, $case: LOST told $since_answer ms after the last answer A got, $told ms after the fault began (window $w ms); no heartbeat of A after B's first"
}

# start_case TOOL: the store frozen as the command starts: its open is tried again
# (lock: within --timeout; elect: for as long as it takes), saying so; continued, it
# runs CMD.
start_case() {
  local tool=$1 path="/hold-start-$1" a rc args
  read -ra args <<<"$(conf_elect_args "$TMS")"
  conf_store_freeze
  if [ "$tool" = lock ]; then
    "$IK_BIN" lock --coord "$COORD" "${args[@]}" --timeout 60000 "$path" -- touch "$T/start.$tool" 2>"$T/start.$tool.err" &
  else
    "$IK_BIN" elect --coord "$COORD" "${args[@]}" --once "$path" -- touch "$T/start.$tool" 2>"$T/start.$tool.err" &
  fi
  a=$!
  IK_PIDS+=($a)
  wait_grep 'trying again' "$T/start.$tool.err" 60 || {
    conf_store_thaw
    fail "$tool start: no word of waiting for the frozen store: $(cat "$T/start.$tool.err")"
  }
  alive $a || { conf_store_thaw; fail "$tool start: gave up on the frozen store: $(cat "$T/start.$tool.err")"; }
  conf_store_thaw
  wait_until 90 not alive $a || fail "$tool start: did not end within 90 s of the store's return: $(cat "$T/start.$tool.err")"
  rc=0
  wait $a || rc=$?
  [ "$rc" = 0 ] || fail "$tool start: exited $rc: $(cat "$T/start.$tool.err")"
  [ -e "$T/start.$tool" ] || fail "$tool start: exited 0 without running CMD"
  pass "$tool, start: waited for the frozen store ($(grep -m 1 'trying again' "$T/start.$tool.err" | cut -c1-200)), then ran CMD"
}

# keep_case: keep_on_loss and ik_election_rejoin through the public API
# (tests/tools/keepelect): A, cut off one way, is told LOST; for T/6 after that B
# must not lead (the store keeps A's grant while A's requests arrive: only A can give
# it back); after A's rejoin B leads, and not before it.
keep_case() {
  local path=/hold-keep hb="$T/hb.keep" args w=$((TMS * 2 / 3)) t0 lost rejoined b
  local tool=$IK_BUILD/tests/tools/keepelect
  [ -x "$tool" ] || fail "no keepelect at $tool (built by tests/tools)"
  : >"$hb"
  read -ra args <<<"$(conf_elect_args "$TMS")"
  coproc KEEP { exec "$tool" "$VIA" "$path" A "$TMS" >"$T/keep.out" 2>"$T/keep.err"; }
  IK_PIDS+=($KEEP_PID)
  wait_until 60 grepq ' held ' "$T/keep.out" || fail "keep: A never led: $(cat "$T/keep.err" "$T/keep.out")"
  "$IK_BIN" elect --coord "$COORD" "${args[@]}" --once --id B "$path" -- "$T/hb" B 0 "$hb" 2>"$hb.b.err" &
  b=$!
  IK_PIDS+=($b)
  wait_until 60 queued elect "$path" 2 || fail "keep: B never queued: $(tail -n 3 "$hb.b.err")"
  proxy mute
  t0=$EPOCHREALTIME
  wait_until $(((w + SLACK_MS + 5000) / 1000)) grepq ' lost ' "$T/keep.out" || fail "keep: A never told LOST: $(cat "$T/keep.out")"
  lost=$(grep -m 1 ' lost ' "$T/keep.out" | cut -d' ' -f1)
  wait_ms_past "$lost" $((TMS / 6))
  ! grepq '^B ' "$hb" || fail "keep: B led $(((${EPOCHREALTIME/./} - ${lost/./}) / 1000)) ms after A's LOST, before A rejoined (its grant was given back at LOST)"
  local rj=$EPOCHREALTIME first_b
  echo rejoin >&"${KEEP[1]}"
  proxy unmute # zk://: the release's delete waits for the session's reconnect
  wait_until 10 grepq ' rejoin ' "$T/keep.out" || fail "keep: no answer to rejoin: $(cat "$T/keep.out")"
  rejoined=$(grep -m 1 ' rejoin ' "$T/keep.out")
  [ "${rejoined##* }" = 0 ] || fail "keep: ik_election_rejoin answered ${rejoined##* }"
  wait_until $(((TMS + 10000) / 1000)) grepq '^B ' "$hb" || fail "keep: B never led after A rejoined: $(tail -n 3 "$hb.b.err")"
  first_b=$(grep -m 1 '^B ' "$hb" | cut -d' ' -f3)
  ((${first_b/./} >= ${rj/./})) || fail "keep: B led before A rejoined"
  echo quit >&"${KEEP[1]}"
  wait "$KEEP_PID" 2>/dev/null || true
  kill -TERM $b 2>/dev/null
  wait $b 2>/dev/null || true
  pass "keep: LOST told $(((${lost/./} - ${t0/./}) / 1000)) ms after the outage began; A kept its grant $((TMS / 6)) ms past it; B led $(((${first_b/./} - ${lost/./}) / 1000)) ms after A's LOST, once A rejoined"
}

reset_reason=$(conf_hold_reset_frees)
for tool in $TOOLS; do
  for c in $CASES; do
    case $c in
      revoke) for how in ${HOLD_REVOKES:-$(conf_hold_revokes)}; do run_case "$tool" revoke "$how"; done ;;
      reset)
        if [ -n "$reset_reason" ]; then
          log "reset: not on $IK_STORE ($reset_reason); silent from the start instead"
          run_case "$tool" silent
        else
          run_case "$tool" reset
        fi
        ;;
      keep) if [ "$tool" = elect ]; then keep_case; fi ;;
      start) start_case "$tool" ;;
      *) run_case "$tool" "$c" ;;
    esac
  done
done
