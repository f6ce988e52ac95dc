#!/usr/bin/env bash
# labels: recipes release
# timeout: 900
# Semaphores (docs/guarantees.md promise 28; docs/recipes.md, "Semaphores"): at most
# N leases of PATH held at once, served in order of arrival, each lease a grant that
# ends as a lock's does. Every CMD appends "NAME TIME_US" to one file every 20 ms
# while it runs, NAME naming its hold; tests/tools/holds.py counts from those
# heartbeats how many held at once. The cases:
#   contend   N = 2, N + 1 loops of `idkeeper semaphore` taking a lease, running
#             CMD for 0.3 s and giving it back, 6 rounds each: never more than N at
#             once, N at once for a while (they contended), every lease's fence its
#             own and larger than those of the leases given back before it;
#   fifo      N = 2 held; W1, W2, W3 queue in that order; --list shows max 2 and
#             the two holders' leases (their fences), no waiter's; the holders give
#             theirs back: the leases go to W1, W2, then W3 (their fences in that order);
#   mismatch  --max 3 on a semaphore whose stored max is 2: refused (exit 2), the
#             message naming both, CMD never run;
#   tree      (case_tree in lock_cases.sh, as lock_tree.sh runs it for lock and elect)
#             --max 2, C holding one lease throughout, A the other with CMD's worker a
#             grandchild (finishing over 3 s after a SIGTERM) or deaf to SIGTERM;
#             A's idkeeper killed -9, given SIGTERM, or CMD exiting with its worker
#             left running: no heartbeat of A's tree after B's CMD started on A's
#             lease, none of A's processes left;
#   kill9     N = 2 held and W queued; kill -9 of one holder's idkeeper: its CMD is
#             gone (the guardian), and W holds within the store's bound for a dead
#             holder's grant (conf_lock_free_ms), never beside 2 others;
#   revoke    (where the store can end a grant by hand: conf_hold_revokes) N = 2 held
#             and W queued; one lease ended by hand: its holder is told LOST within
#             1 s (exit 125) and its CMD gone within 0.5 s of W's start (the store
#             hands the lease on at that moment, as it hands on a lock: only the
#             fencing token closes that race, docs/recipes.md);
#   frozen    (where the store's server can be frozen) N = 2 held and W queued; the
#             store's server stopped (SIGSTOP) for T + 1.5 s, then continued: the
#             holders are told LOST and their CMDs stopped by the end of their trust
#             window; 0 over-admission (never more than N heartbeating at once);
#   reset, oneway  (the hold group's cut-offs, tests/conformance/hold_lost.sh) N = 2
#             held, A1 through the fault proxy, W queued: A1's connections reset and
#             then silent 0.3 s before its window's end (silent from the start where
#             a reset frees a grant at once: conf_hold_reset_frees), or A1's answers
#             dropped while its requests arrive: A1 told LOST within the window after
#             the last answer it got, exit 125; 0 over-admission.
# On local: a lease cannot be lost while its holder lives (conf_hold_unlosable):
# revoke, frozen, reset and oneway do not apply there. SEMA_CASES runs a part, by hand.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
CONF_OWN_STORE=1 # the frozen case stops the server
conf_store_start
COORD=$(conf_coord sema)
A1_COORD=$COORD # hold2's first holder's store: the fault proxy's in reset and oneway
TMS=${SEMA_TMS:-6000}                # frozen: the session timeout or lease TTL
REVOKE_TMS=${SEMA_REVOKE_TMS:-15000} # revoke: a probe every T/4 would be too late
SLACK_MS=${SEMA_SLACK_MS:-400} # reset, oneway: the monitor's wake and the CLI's line on a busy machine
HOLDS=$IK_SRC/tests/tools/holds.py
source "$(dirname "$0")/lock_cases.sh" # case_tree
UNLOSABLE=$(conf_hold_unlosable)

# hb NAME LINGER_MS OUT [MS]: "NAME TIME_US" every 20 ms, for MS ms if given (else
# until stopped); the lease's fence into OUT.fences; after a SIGTERM, LINGER_MS more
cat >"$T/hb" <<'SH'
#!/usr/bin/env bash
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
name=$1 linger=$2 out=$3 ms=${4:-}
now_us() { echo "${EPOCHREALTIME/./}"; }
echo "$name $IDKEEPER_FENCE" >>"$out.fences"
stop= end=
[ -z "$ms" ] || end=$(($(now_us) + ms * 1000))
trap 'stop=$(($(now_us) + linger * 1000))' TERM
while :; do # one heartbeat at least: a CMD starved past its MS still held
  echo "$name $(now_us)" >>"$out"
  sleep 0.02
  { [ -z "$stop" ] || (($(now_us) < stop)); } && { [ -z "$end" ] || (($(now_us) < end)); } || break
done
SH
chmod +x "$T/hb"

# queued PATH N: at least N contenders in the semaphore's queue
queued() { local n && n=$(conf_sema_queued "$COORD" "$1") && [ "${n:-0}" -ge "$2" ]; }

# lines_at_least FILE REGEX N: N lines of FILE match
lines_at_least() {
  local n
  n=$(grep -c -- "$2" "$1" 2>/dev/null || true)
  ((${n:-0} >= $3))
}

# held FILE NAME: NAME has heartbeats in FILE
held() { grepq "^$2 " "$1"; }

# at_most N FILE: holds.py's line; fails the test above N
at_most() {
  local res
  res=$(/usr/bin/python3 "$HOLDS" "$1" "$2") || fail "more than $1 at once: $res"
  echo "$res"
}

case_contend() {
  local path=/sema-contend hb="$T/hb.contend" i r pids=() res most
  : >"$hb"
  for i in 1 2 3; do
    (
      for r in 1 2 3 4 5 6; do
        echo "I$i.$r S ${EPOCHREALTIME/./}" >>"$hb.spans"
        "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2 "$path" -- \
          "$T/hb" "I$i.$r" 0 "$hb" 300 2>>"$hb.err.$i" || exit 1
        echo "I$i.$r E ${EPOCHREALTIME/./}" >>"$hb.spans"
      done
    ) &
    pids+=($!)
  done
  IK_PIDS+=("${pids[@]}")
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || fail "contend: loop $((i + 1)) failed: $(tail -n 3 "$hb.err.$((i + 1))")"
  done
  res=$(at_most 2 "$hb")
  [[ $res == "holds 18 "* ]] || fail "contend: not 18 holds: $res"
  most=$(sed -n 's/.*at most \([0-9]*\) at once.*/\1/p' <<<"$res")
  [ "$most" = 2 ] || fail "contend: never 2 at once, the loops did not contend: $res"
  # every fence its own; a lease granted after another was given back has a larger
  # one. Given back before its idkeeper exited (E), granted after the other's started
  # (S): heartbeats bound neither (a CMD starved past another's whole lease starts
  # after it, its lease granted before)
  /usr/bin/python3 - "$hb.spans" "$hb.fences" <<'PY' || fail "contend: fences"
import sys
first, last = {}, {}
for line in open(sys.argv[1]):
    n, k, t = line.split()
    (first if k == "S" else last)[n] = int(t)
fence = dict(line.split() for line in open(sys.argv[2]))
fs = [int(f) for f in fence.values()]
if len(set(fs)) != len(fs):
    sys.exit("two leases share a fence: %s" % sorted(fs))
for a in fence:
    for b in fence:
        if a in last and b in first and last[a] < first[b] and int(fence[b]) <= int(fence[a]):
            sys.exit("%s (fence %s) held after %s (fence %s) was given back" % (b, fence[b], a, fence[a]))
PY
  pass "contend: 3 loops on --max 2: $res; every fence its own, growing with the grants"
}

case_fifo() {
  local path=/sema-fifo hb="$T/hb.fifo" h1 h2 w i f1 f2 f3
  : >"$hb"
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2 "$path" -- \
    bash -c 'echo "H1 $IDKEEPER_FENCE" >>"$0.fences"; while [ ! -e "$0.stop" ]; do sleep 0.02; done' "$hb" 2>"$hb.h1.err" &
  h1=$!
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2 "$path" -- \
    bash -c 'echo "H2 $IDKEEPER_FENCE" >>"$0.fences"; while [ ! -e "$0.stop" ]; do sleep 0.02; done' "$hb" 2>"$hb.h2.err" &
  h2=$!
  IK_PIDS+=($h1 $h2)
  wait_until 60 lines_at_least "$hb.fences" '^H' 2 ||
    fail "fifo: the two holders did not both hold: $(cat "$hb.h1.err" "$hb.h2.err")"
  w=()
  for i in 1 2 3; do
    "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2 "$path" -- "$T/hb" "W$i" 0 "$hb" 200 \
      2>"$hb.w$i.err" &
    w+=($!)
    IK_PIDS+=($!)
    wait_until 60 queued "$path" "$i" || fail "fifo: W$i did not queue: $(cat "$hb.w$i.err")"
  done
  ! grepq '^W' "$hb.fences" || fail "fifo: a waiter held while 2 leases were held"
  # --list: the two holders, by their fences, and none of the waiters
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --list --json "$path" >"$hb.list" ||
    fail "fifo: --list failed"
  /usr/bin/python3 - "$hb.list" "$hb.fences" <<'PY' || fail "fifo: --list: $(cat "$hb.list")"
import json, sys
got = json.load(open(sys.argv[1]))
held = sorted(h["fence"] for h in got["held"])
want = sorted(int(line.split()[1]) for line in open(sys.argv[2]) if line.startswith("H"))
if got["max"] != 2 or held != want:
    sys.exit("max %s, fences %s; the holders' fences %s" % (got["max"], held, want))
PY
  touch "$hb.stop"
  for i in 0 1 2; do
    wait "${w[$i]}" || fail "fifo: W$((i + 1)) failed: $(cat "$hb.w$((i + 1)).err")"
  done
  wait $h1 $h2 || true
  f1=$(sed -n 's/^W1 //p' "$hb.fences") f2=$(sed -n 's/^W2 //p' "$hb.fences") f3=$(sed -n 's/^W3 //p' "$hb.fences")
  ((f1 < f2 && f2 < f3)) || fail "fifo: the leases did not go in order of arrival: fences W1 $f1, W2 $f2, W3 $f3"
  pass "fifo: --list showed the 2 holders' fences; W1, W2, W3 queued in that order got leases in that order (fences $f1 < $f2 < $f3); $(at_most 2 "$hb")"
}

case_mismatch() {
  local path=/sema-mismatch rc=0 err="$T/mismatch.err"
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 2 "$path" -- true ||
    fail "mismatch: a first user of --max 2 failed"
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --max 3 "$path" -- touch "$T/mismatch.ran" 2>"$err" ||
    rc=$?
  [ "$rc" = 2 ] || fail "mismatch: --max 3 on a semaphore of max 2 exited $rc, not 2: $(cat "$err")"
  [ ! -e "$T/mismatch.ran" ] || fail "mismatch: CMD ran under a max of 3"
  grepq 'at most 2' "$err" && grepq 'not 3' "$err" || fail "mismatch: the refusal does not name both maxima: $(cat "$err")"
  "$IK_BIN" semaphore --coord "$COORD" "${CONF_SERVE_ARGS[@]}" --list "$path" >"$T/mismatch.list" ||
    fail "mismatch: --list failed"
  grepq 'max 2' "$T/mismatch.list" || fail "mismatch: --list shows no max 2: $(cat "$T/mismatch.list")"
  pass "mismatch: $(cat "$err")"
}

# hold2 CASE PATH LINGER ARGS...: holders A1 (on A1_COORD), A2 (CMD: hb, lingering
# LINGER ms after SIGTERM) and waiter W queued (CMD: hb); sets A1 A2 W (pids) and HB
hold2() {
  local case=$1 path=$2 linger=$3 i
  shift 3
  HB="$T/hb.$case"
  : >"$HB"
  for i in 1 2; do
    "$IK_BIN" semaphore --coord "$([ $i = 1 ] && echo "$A1_COORD" || echo "$COORD")" "$@" --max 2 \
      "$path" -- "$T/hb" "A$i" "$linger" "$HB" 2> >(stamp >"$HB.a$i.err") &
    eval "A$i=\$!"
    IK_PIDS+=($!)
    wait_until 60 held "$HB" "A$i" || fail "$case: A$i did not hold: $(cat "$HB.a$i.err")"
  done
  "$IK_BIN" semaphore --coord "$COORD" "$@" --max 2 "$path" -- "$T/hb" W 0 "$HB" 2>"$HB.w.err" &
  W=$!
  IK_PIDS+=($W)
  wait_until 60 queued "$path" 1 || fail "$case: W did not queue: $(cat "$HB.w.err")"
}

# hold2_end PID...: the case's count of places held at once (at_most 2 over HB, into
# RES), then the holders still running stopped and waited for
hold2_end() {
  RES=$(at_most 2 "$HB")
  kill -TERM "$@" 2>/dev/null
  wait "$@" 2>/dev/null || true
}

# stamp: each line of stdin with EPOCHREALTIME before it
stamp() { while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done; }

# first_us FILE NAME: NAME's first heartbeat
first_us() { awk -v n="$2" '$1 == n { print $2; exit }' "$1"; }

case_kill9() {
  local path=/sema-kill9 t0 bound rc
  hold2 kill9 "$path" 0 "${CONF_SERVE_ARGS[@]}"
  t0=${EPOCHREALTIME/./}
  kill -KILL "$A1"
  bound=$(($(conf_lock_free_ms) + 5000))
  wait_until $(((bound + 999) / 1000)) held "$HB" W ||
    fail "kill9: W did not hold within $bound ms of A1's kill -9: $(cat "$HB.w.err")"
  local took=$((($(first_us "$HB" W) - t0) / 1000))
  # the store's bound, and a second for a loaded machine (zk:// expires sessions on
  # the server's tick, 500 ms here)
  ((took <= $(conf_lock_free_ms) + 1000)) ||
    fail "kill9: W held $took ms after A1's kill -9, beyond the store's bound ($(conf_lock_free_ms) ms)"
  hold2_end "$A2" "$W"
  pass "kill9: W held $took ms after A1's kill -9 (the store's bound: $(conf_lock_free_ms) ms); $RES"
}

case_revoke() {
  local how=$1 path="/sema-revoke-$1" t0 note told overlap rc=0 a1_last w_first res
  read -ra args <<<"$(conf_elect_args "$REVOKE_TMS")"
  hold2 "revoke-$how" "$path" 0 "${args[@]}" --grace 500
  note=$(conf_sema_revoke "$COORD" "$path" "$how")
  t0=$EPOCHREALTIME
  wait_until 60 held "$HB" W || fail "revoke $how ($note): W never held: $(cat "$HB.w.err")"
  # the lease ended was the oldest: A1's
  wait_until 30 not alive "$A1" || fail "revoke $how: A1 did not end within 30 s"
  wait "$A1" || rc=$?
  [ "$rc" = 125 ] || fail "revoke $how: A1 exited $rc, not 125: $(cat "$HB.a1.err")"
  local lost
  lost=$(grep -m 1 -E 'lost a lease|within its safe window' "$HB.a1.err" || true)
  [ -n "$lost" ] || fail "revoke $how: A1 never said it lost its lease: $(cat "$HB.a1.err")"
  local lost_at=${lost%% *}
  told=$(((${lost_at/./} - ${t0/./}) / 1000))
  ((told <= 1000)) || fail "revoke $how ($note): A1 was told LOST $told ms after it (as soon as the store says so)"
  a1_last=$(awk '$1 == "A1" { t = $2 } END { print t }' "$HB")
  w_first=$(first_us "$HB" W)
  overlap=$(((a1_last - w_first) / 1000))
  ((overlap <= 500)) || fail "revoke $how: A1's CMD ran $overlap ms after W's started"
  res=$(/usr/bin/python3 "$HOLDS" 2 "$HB") || true
  kill -TERM "$A2" "$W" 2>/dev/null
  wait "$A2" "$W" 2>/dev/null || true
  pass "revoke $how ($note): A1 told LOST $told ms after the revoke returned, exit 125; A1's last heartbeat $((-overlap)) ms before W's first; $res"
}

case_frozen() {
  local path=/sema-frozen t0 rc w=$((TMS * 2 / 3)) i
  read -ra args <<<"$(conf_elect_args "$TMS")"
  hold2 frozen "$path" 1000 "${args[@]}" --grace 500
  t0=$EPOCHREALTIME
  conf_store_freeze
  while (((${EPOCHREALTIME/./} - ${t0/./}) / 1000 < TMS + 1500)); do sleep 0.05; done
  conf_store_thaw
  for i in 1 2; do
    rc=0
    wait_until 60 not alive "$(eval echo "\$A$i")" || fail "frozen: A$i did not end within 60 s of the thaw"
    wait "$(eval echo "\$A$i")" || rc=$?
    [ "$rc" = 125 ] || fail "frozen: A$i exited $rc, not 125: $(cat "$HB.a$i.err")"
    local lost
    lost=$(grep -m 1 -E 'lost a lease|within its safe window' "$HB.a$i.err" || true)
    [ -n "$lost" ] || fail "frozen: A$i never said it lost its lease"
    local lost_at=${lost%% *}
    local told=$(((${lost_at/./} - ${t0/./}) / 1000))
    ((told <= w + 1000)) || fail "frozen: A$i was told LOST $told ms after the freeze (its window: $w ms after its last proof)"
  done
  wait_until 60 held "$HB" W || fail "frozen: W never held after the thaw: $(cat "$HB.w.err")"
  hold2_end "$W"
  pass "frozen: the store stopped $((TMS + 1500)) ms: A1 and A2 told LOST within their window, exit 125; W held after; $RES"
}

# cutoff HOW (reset, silent, oneway): A1 cut off from the store through the proxy
case_cutoff() {
  local how=$1 path="/sema-$1" w=$((TMS * 2 / 3)) rc=0 lost last_answer since
  read -ra args <<<"$(conf_elect_args "$TMS")"
  A1_COORD=$VIA
  hold2 "$how" "$path" 1000 "${args[@]}" --grace 500
  A1_COORD=$COORD
  case $how in
    reset)
      proxy down
      proxy last-answer # the last proof's answer, about: A1's window ends W after it
      last_answer=$(cat "$T/ctl.last")
      while (((${EPOCHREALTIME/./} - ${last_answer/./}) / 1000 < w - 300)); do sleep 0.01; done
      proxy partition
      proxy up
      ;;
    silent) proxy partition ;;
    oneway) proxy mute ;;
  esac
  wait_until $(((3 * TMS + 20000) / 1000)) held "$HB" W ||
    fail "$how: W never held: W: $(tail -n 3 "$HB.w.err"); A1: $(tail -n 3 "$HB.a1.err")"
  proxy last-answer
  last_answer=$(cat "$T/ctl.last")
  case $how in reset | silent) proxy heal ;; oneway) proxy unmute ;; esac
  wait_until 30 not alive "$A1" || fail "$how: A1 did not end within 30 s of W's start"
  wait "$A1" || rc=$?
  [ "$rc" = 125 ] || fail "$how: A1 exited $rc, not 125: $(cat "$HB.a1.err")"
  lost=$(grep -m 1 -E 'lost a lease|within its safe window' "$HB.a1.err" || true)
  [ -n "$lost" ] || fail "$how: A1 never said it lost its lease: $(cat "$HB.a1.err")"
  local lost_at=${lost%% *}
  since=$(((${lost_at/./} - ${last_answer/./}) / 1000))
  ((since <= w + SLACK_MS)) ||
    fail "$how: A1 was told LOST $since ms after the last answer it got (the window: $w ms, T = $TMS ms)"
  hold2_end "$A2" "$W"
  pass "$how: A1 told LOST $since ms after the last answer it got (window $w ms), exit 125; $RES"
}

case_trees() {
  local how shape
  for how in kill9 term exit; do
    for shape in grandchild deaf; do case_tree semaphore "$how" "$shape"; done
  done
}

CASES=${SEMA_CASES:-contend fifo mismatch tree kill9 revoke frozen reset oneway} # a part, by hand
for c in $CASES; do
  case $c in
    contend | fifo | mismatch | kill9) "case_$c" ;;
    tree) case_trees ;;
    revoke | frozen | reset | oneway)
      if [ -n "$UNLOSABLE" ]; then
        log "$c: not on $IK_STORE: $UNLOSABLE"
        continue
      fi
      case $c in
        revoke) for how in $(conf_hold_revokes); do case_revoke "$how"; done ;;
        frozen) case_frozen ;;
        *)
          if [ -z "${VIA:-}" ]; then
            conf_proxy_start || fail "no fault proxy in front of $IK_STORE"
            VIA=$(conf_proxy_coord sema)
          fi
          reset_reason=$(conf_hold_reset_frees)
          if [ "$c" = oneway ]; then
            case_cutoff oneway
          elif [ -n "$reset_reason" ]; then
            log "reset: not on $IK_STORE ($reset_reason); silent from the start instead"
            case_cutoff silent
          else
            case_cutoff reset
          fi
          ;;
      esac
      ;;
    *) fail "SEMA_CASES: no case '$c'" ;;
  esac
done
