#!/usr/bin/env bash
# labels: recipes
# timeout: 400
# What CMD's tree cannot escape (docs/recipes.md, "CMD's process tree"), under
# `idkeeper lock` and `idkeeper elect`, on every store. As in lock_tree.sh, A's CMD
# starts a worker that appends "A PID TIME" to one file every 20 ms, and the next
# holder's CMD (B) appends "B PID TIME" once it holds: no A line may follow B's, and no
# process of A's tree may be left once B is done.
#   killpg    CMD starts the worker with setsid, then runs `kill -KILL 0`. Before, the
#             guardian headed CMD's group and died of it: the worker was reparented to
#             pid 1, `lock` released, and B ran beside the worker.
#   uid       idkeeper runs as the user daemon (not root) in a cgroup delegated to it,
#             as systemd delegates one; CMD starts its worker as nobody through a
#             set-user-ID program (as `sudo -u` does), and exits (exit) or idkeeper is
#             killed -9 (kill9). Before, kill() answered EPERM, the worker outlived the
#             tree beside B, and after CMD's exit idkeeper said "killed them" and waited
#             for ever, its guardian spinning.
#   nobody    root's idkeeper (a PID namespace), the worker as nobody, kill -9.
#   refused   --contain guardian as daemon, the worker as nobody, CMD exits: the
#             limitation is said at start, the refused kill is said (never "killed
#             them"), the guardian waits without spinning, and the grant is kept until
#             the worker ends (here, killed by the test): B runs after it.
#   fds       CMD's descriptors are 0, 1, 2 and the one idkeeper was started with
#             (5>FILE): nothing of the store's client (before, on zk:// CMD held the
#             session's socket and the client's wake-up pipe).
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
IK_LOCK=("$IK_BIN" lock "${CONF_SERVE_ARGS[@]}")
IK_ELECT=("$IK_BIN" elect "${CONF_SERVE_ARGS[@]}")
AS_DAEMON=(setpriv --reuid=daemon --regid=daemon --clear-groups --inh-caps=-all)

chmod 755 "$T" # the user daemon and nobody work in it too
# a worker a failed case left (one its guardian could not kill) ends with the test
_kill_workers() { pkill -KILL -f -- "$T/worker" 2>/dev/null; sleep 0.2; }
IK_CLEANUPS+=(_kill_workers)
cat >"$T/worker" <<'SH'
#!/usr/bin/env bash
# worker NAME MODE FILE: a heartbeat line every 20 ms. MODE graceful: after a
# SIGTERM, 3 s more; deaf: SIGTERM ignored.
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
name=$1 mode=$2 out=$3 stop=
[ ! -w "$out.user" ] || id -un >"$out.user" # who it runs as, where the test asks
case $mode in
  graceful) trap 'stop=$((SECONDS + 3))' TERM ;;
  deaf) trap '' TERM ;;
esac
while [ -z "$stop" ] || ((SECONDS < stop)); do
  echo "$name $$ $EPOCHREALTIME" >>"$out"
  sleep 0.02
done
SH
chmod 755 "$T/worker"
# a set-user-ID root copy of setpriv: what `sudo -u nobody` does, without a sudoers file
cp /usr/bin/setpriv "$T/suid-setpriv"
chmod 4755 "$T/suid-setpriv"
AS_NOBODY="$T/suid-setpriv --reuid=nobody --regid=nogroup --clear-groups"

# delegated_cgroup: a cgroup v2 below this test's own, owned by daemon as systemd's
# Delegate=yes leaves one; its directory in CG. Removed at the end.
delegated_cgroup() {
  local rel mnt
  rel=$(sed -n 's/^0:://p' /proc/self/cgroup)
  mnt=$(awk '$9 == "cgroup2" && $4 == "/" { print $5; exit }' /proc/self/mountinfo)
  [ -n "$mnt" ] && [ -n "$rel" ] || fail "no cgroup v2 hierarchy on this host"
  CG="$mnt${rel%/}/ik-test-$$"
  mkdir "$CG" || fail "cannot make a cgroup at $CG"
  chown daemon:daemon "$CG" "$CG/cgroup.procs" "$CG/cgroup.threads" "$CG/cgroup.subtree_control"
  _rm_cg() { wait_until 10 rmdir "$CG" 2>/dev/null; }
  IK_CLEANUPS+=(_rm_cg)
}

# hb_check NAME FILE: no A line after B's first, no A worker left (killed here), B ran.
hb_check() {
  local name=$1 hb=$2 p left=() after
  for p in $(pgrep -f -- "$T/worker A [a-z]* $hb\$"); do
    left+=("$p")
    kill -KILL "$p" 2>/dev/null
  done
  after=$(awk '$1 == "B" && b == "" { b = $3; next } b != "" && $1 == "A" { n++; last = $3 }
               END { if (n) printf "%d heartbeats of A after B started, the last %.0f ms after", n, (last - b) * 1000 }' "$hb")
  [ -z "$after" ] || fail "$name: $after (A's processes left: ${left[*]:-none})"
  ((${#left[@]} == 0)) || fail "$name: A's processes ${left[*]} still ran after B ended"
  grepq '^B ' "$hb" || fail "$name: B's CMD never ran"
}

# start_b TOOL PATH FILE: B, waiting for the grant; its pid in B.
start_b() {
  local b_cmd='echo "B $$ $EPOCHREALTIME" >>"$0"; sleep 0.5'
  if [ "$1" = lock ]; then
    "${IK_LOCK[@]}" --coord "$COORD" "$2" -- bash -c "$b_cmd" "$3" 2>>"$T/b.err" &
  else
    "${IK_ELECT[@]}" --coord "$COORD" --once --id B "$2" -- bash -c "$b_cmd" "$3" 2>>"$T/b.err" &
  fi
  B=$!
  IK_PIDS+=($B)
}

# a_run TOOL PATH ERR [PREFIX...] -- CMD...: A, in the background; its pid in A.
a_run() {
  local tool=$1 path=$2 err=$3 pre=()
  shift 3
  while [ "$1" != -- ]; do pre+=("$1"); shift; done
  shift
  if [ "$tool" = lock ]; then
    "${pre[@]}" "${IK_LOCK[@]}" --coord "$COORD" "$path" -- "$@" 2>"$err" &
  else
    "${pre[@]}" "${IK_ELECT[@]}" --coord "$COORD" --id A "$path" -- "$@" 2>"$err" &
  fi
  A=$!
  IK_PIDS+=($A)
}

wait_b() {
  wait_until 60 not alive "$B" || fail "$1: B did not end within 60 s"
  wait "$B" || fail "$1: B exited $?: $(tail -n 3 "$T/b.err")"
}

case_killpg() {
  local tool=$1 name="$1 killpg" hb="$T/killpg.$1" rc=0
  COORD=$(conf_coord "killpg$tool")
  : >"$hb"
  a_run "$tool" /killpg "$hb.a.err" -- bash -c 'setsid "$0" A graceful "$1" & sleep 0.3; kill -KILL 0' "$T/worker" "$hb"
  wait_until 20 grepq '^A ' "$hb" || fail "$name: A's worker never ran: $(tail -n 3 "$hb.a.err")"
  start_b "$tool" /killpg "$hb"
  wait_b "$name"
  wait "$A" || rc=$?
  hb_check "$name" "$hb"
  [ $rc = 137 ] || fail "$name: A exited $rc, not CMD's 137: $(cat "$hb.a.err")"
  grepq 'still ran when the grace ended: killed them' "$hb.a.err" ||
    fail "$name: A did not say it killed the worker: $(cat "$hb.a.err")"
  pass "$name: CMD's kill -KILL 0 left the guardian; the setsid worker was gone before B's CMD started (A exited 137)"
}

# case_uid TOOL HOW: idkeeper as daemon in a delegated cgroup, the worker as nobody.
case_uid() {
  local tool=$1 how=$2 name="$1 uid $2" hb="$T/uid.$1.$2" rc=0 inner
  COORD=$(conf_coord "uid$tool$how")
  [[ $COORD != local:* ]] || { mkdir -p "${COORD#local:}" && chown daemon "${COORD#local:}"; }
  : >"$hb"
  : >"$hb.cgroup"
  : >"$hb.user"
  chmod 666 "$hb" "$hb.cgroup" "$hb.user"
  inner='cat /proc/self/cgroup >"$1.cgroup"; '"$AS_NOBODY"' "$0" A deaf "$1" &'
  if [ "$how" = exit ]; then inner="$inner sleep 0.3; exit 0"; else inner="$inner sleep 300"; fi
  (
    echo $BASHPID >"$CG/cgroup.procs"
    a_run "$tool" /uid "$hb.a.err" "${AS_DAEMON[@]}" -- bash -c "$inner" "$T/worker" "$hb"
    echo "$A" >"$hb.a.pid"
    wait "$A"
  ) &
  local sub=$!
  IK_PIDS+=($sub)
  wait_until 20 grepq '^A ' "$hb" || fail "$name: A's worker never ran: $(tail -n 3 "$hb.a.err")"
  A=$(cat "$hb.a.pid")
  IK_PIDS+=($A)
  [ "$(cat "$hb.user")" = nobody ] || fail "$name: the worker runs as '$(cat "$hb.user")', not nobody"
  [ "$how" = kill9 ] && kill -KILL "$A"
  start_b "$tool" /uid "$hb"
  wait_b "$name"
  wait "$sub" || rc=$?
  hb_check "$name" "$hb"
  grepq "ik-test-$$/ik-" "$hb.cgroup" ||
    fail "$name: CMD ran in $(cat "$hb.cgroup"), not in a cgroup of its own below the delegated one"
  pass "$name: the worker running as nobody was gone before B's CMD started ($(sed -n 's/^0:://p' "$hb.cgroup"))"
}

case_nobody() { # root's idkeeper, a worker as nobody, kill -9
  local tool=$1 name="$1 nobody kill9" hb="$T/nobody.$1"
  COORD=$(conf_coord "nobody$tool")
  : >"$hb"
  chmod 666 "$hb"
  a_run "$tool" /nobody "$hb.a.err" -- bash -c 'setpriv --reuid=nobody --regid=nogroup --clear-groups "$0" A deaf "$1" & sleep 300' "$T/worker" "$hb"
  wait_until 20 grepq '^A ' "$hb" || fail "$name: A's worker never ran: $(tail -n 3 "$hb.a.err")"
  kill -KILL "$A"
  start_b "$tool" /nobody "$hb"
  wait_b "$name"
  wait "$A" 2>/dev/null || true
  hb_check "$name" "$hb"
  pass "$name: the worker as nobody was gone before B's CMD started"
}

case_refused() { # --contain guardian as daemon: a kill refused is said, never "killed"
  local name="lock refused" hb="$T/refused.hb" rc=0
  COORD=$(conf_coord refused)
  [[ $COORD != local:* ]] || { mkdir -p "${COORD#local:}" && chown daemon "${COORD#local:}"; }
  : >"$hb"
  chmod 666 "$hb"
  "${AS_DAEMON[@]}" "${IK_LOCK[@]}" --contain guardian --coord "$COORD" /refused -- \
    bash -c "$AS_NOBODY"' "$0" A deaf "$1" & sleep 0.3; exit 0' "$T/worker" "$hb" 2>"$hb.a.err" &
  A=$!
  IK_PIDS+=($A)
  wait_grep 'cannot kill process' "$hb.a.err" 30 || fail "$name: the refused kill was not said: $(cat "$hb.a.err")"
  start_b lock /refused "$hb"
  local g t0 c0 c1 t1
  g=$(pgrep -P "$A" -x idkeeper-guard) || fail "$name: no guardian below $A"
  read -r -a st <"/proc/$g/stat"
  c0=$((st[13] + st[14]))
  mono_ms t0
  sleep 3 # a window to measure the guardian's CPU in, not a wait for anything
  read -r -a st <"/proc/$g/stat"
  c1=$((st[13] + st[14]))
  mono_ms t1
  # clock ticks (100 a second): the old guardian swept /proc every 10 ms, spinning
  (((c1 - c0) * 10 * 100 <= (t1 - t0) * 4)) ||
    fail "$name: the guardian used $(((c1 - c0) * 10)) ms of CPU in $((t1 - t0)) ms while it waited"
  [ -z "$(awk '$1 == "B"' "$hb")" ] || fail "$name: B ran while A's worker lived (the grant was given back)"
  # the worker ends (here, by root's hand): the guardian exits, the lock passes
  pkill -KILL -f -- "$T/worker A deaf $hb\$" || fail "$name: the worker is gone already"
  wait_b "$name"
  wait "$A" || rc=$?
  hb_check "$name" "$hb"
  [ $rc = 0 ] || fail "$name: A exited $rc, not CMD's 0: $(cat "$hb.a.err")"
  grepq 'no PID namespace or cgroup' "$hb.a.err" || fail "$name: the limitation was not said at start: $(cat "$hb.a.err")"
  ! grepq 'killed them' "$hb.a.err" || fail "$name: A said it killed what it could not: $(cat "$hb.a.err")"
  pass "$name: the refused kill said ($(grep -o 'uid [0-9]*' "$hb.a.err" | head -n 1)), the guardian waited with $(((c1 - c0) * 10)) ms of CPU in $((t1 - t0)) ms, B after the worker"
}

case_fds() {
  local tool=$1 name="$1 fds" out="$T/fds.$1" base
  COORD=$(conf_coord "fds$tool")
  # what a command run here has without idkeeper: 0, 1, 2, 5, and what the harness
  # passes on
  base=$(sh -c 'ls /proc/$$/fd' 5>"$T/five" | sort -n | tr '\n' ' ')
  [[ " $base" == *" 5 "* ]] || fail "$name: the baseline lacks descriptor 5: $base"
  if [ "$tool" = lock ]; then
    "${IK_LOCK[@]}" --coord "$COORD" /fds -- sh -c 'ls /proc/$$/fd' >"$out" 5>"$T/five" ||
      fail "$name: lock failed"
  else
    "${IK_ELECT[@]}" --coord "$COORD" --once /fds -- sh -c 'ls /proc/$$/fd' >"$out" 5>"$T/five" ||
      fail "$name: elect failed"
  fi
  local got
  got=$(sort -n "$out" | tr '\n' ' ')
  [ "$got" = "$base" ] || fail "$name: CMD's descriptors are $got, not those it has without idkeeper: $base"
  pass "$name: CMD's descriptors are those it has without idkeeper: $got"
}

if [ -n "${ESCAPE_ONLY:-}" ]; then # one case by hand: ESCAPE_ONLY="case_uid lock exit"
  [[ $ESCAPE_ONLY != case_uid* ]] || delegated_cgroup
  $ESCAPE_ONLY
  exit
fi
case_fds lock
case_fds elect
for tool in lock elect; do
  case_killpg $tool
  case_nobody $tool
done
delegated_cgroup
for tool in lock elect; do
  for how in exit kill9; do case_uid $tool $how; done
done
case_refused
