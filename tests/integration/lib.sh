# lib.sh: shared helpers for the integration tests (sourced, bash).
# Each test runs in its own process (CTest) with its own temporary directory;
# everything it starts is stopped on exit, pass or fail.
set -euo pipefail
# Debian's programs first. The tests need Debian's python3 and its modules, and a
# python3 found earlier on the PATH may be a pyenv shim: a bash script that costs
# about 350 ms of CPU a run here, against 40 ms, in a suite that runs python3
# hundreds of times on two cores.
PATH=/usr/bin:/bin:$PATH
# bash's own sleep (Debian's bash-builtins, a loadable builtin): the suite's wait loops
# sleep tens of thousands of times, and each /bin/sleep is a fork and an exec, a few ms
# of CPU on this machine. Without the package, /bin/sleep does the same work.
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true

: "${IK_BIN:?IK_BIN must name the idkeeper binary (CTest sets it)}"
# IK_BIN_OVERRIDE: another idkeeper binary to test with this build's scripts (CTest's
# IK_BIN wins over the caller's environment; this does not), for running a new test
# against an older commit's build (docs/testing.md, "Running a test on older code").
IK_BIN=${IK_BIN_OVERRIDE:-$IK_BIN}
IK_SRC=${IK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
T=$(mktemp -d "${TMPDIR:-/tmp}/ik-test.XXXXXX")
# Every process this test starts carries its mark in its environment: the cleanup
# kills a pid of IK_PIDS only while it is still this test's (_ik_ours). A pid whose
# process exited and was reaped is handed to the next process the kernel starts, on
# a busy machine within seconds (pid_max 32768), and a SIGKILL by number then lands
# on another test's server (CI: slots_time.etcd's b, "Killed" mid-test).
export IK_TEST_MARK=$T
IK_PIDS=()
IK_CLEANUPS=()

# log: a line on stderr stamped with the wall clock's time of day (ms), from bash itself.
log() {
  local us=${EPOCHREALTIME/[.,]/}
  printf '[%(%T)T.%s] %s\n' "${us:0:-6}" "${us: -6:3}" "$*" >&2
}
fail() { log "FAIL: $*"; exit 1; }
pass() { log "PASS: $*"; }

# _ik_ours PID: PID is a live process of this test: below this shell, or a program
# started with our mark in its environment (one whose parent has gone; a fork of
# this shell shows the environment bash was started with, so it is found by the
# first rule).
_ik_ours() {
  local p=$1 stat n
  for ((n = 0; n < 64 && p > 1; n++)); do
    [ "$p" = "$$" ] && return 0
    { read -r stat <"/proc/$p/stat"; } 2>/dev/null || return 1
    stat=${stat##*) }
    p=${stat#* }
    p=${p%% *}
  done
  { tr '\0' '\n' <"/proc/$1/environ"; } 2>/dev/null | grep -qxF "IK_TEST_MARK=$T"
}

ik_cleanup() {
  local rc=$?
  set +e
  for fn in "${IK_CLEANUPS[@]}"; do $fn; done
  for p in "${IK_PIDS[@]}"; do _ik_ours "$p" && { kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; }; done
  wait 2>/dev/null
  # A sanitizer report in any log or stderr capture fails the test, even one from a
  # process whose exit code nobody looked at (TSan and LSan report and go on).
  local reports
  reports=$(grep -lE 'ERROR: (Address|Leak|Memory)Sanitizer|WARNING: ThreadSanitizer|runtime error: ' \
    "$T"/*.log "$T"/*.err 2>/dev/null)
  if [ $rc -eq 0 ] && [ -n "$reports" ]; then
    log "FAIL: sanitizer reports in: $reports"
    for f in $reports; do grep -m 5 -A 12 -E 'Sanitizer|runtime error' "$f" >&2; done
    rc=1
  fi
  if [ $rc -ne 0 ]; then
    log "test failed (rc=$rc); logs in $T:"
    for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f (last 30 lines)" >&2; tail -n 30 "$f" >&2; }; done
  else
    rm -rf "$T"
  fi
  exit $rc
}
trap ik_cleanup EXIT
trap 'exit 130' INT TERM

# _ik_size VAR FILE: FILE's size in bytes into VAR (0 if there is no FILE), by bash's
# loadable stat (Debian's bash-builtins), enabled only for the call: a test's own
# `stat` stays the program.
if enable -f /usr/lib/bash/stat stat 2>/dev/null; then
  enable -n stat
  _ik_size() {
    local -A _ik_st=([size]=0)
    enable stat
    stat -A _ik_st "$2" 2>/dev/null || true
    enable -n stat
    printf -v "$1" '%s' "${_ik_st[size]}"
  }
else
  _ik_size() { printf -v "$1" '%s' "$(wc -c <"$2" 2>/dev/null || echo 0)"; }
fi

# _ik_put VAR VALUE: VALUE stored in VAR, or printed when VAR is empty.
_ik_put() { if [ -n "$1" ]; then printf -v "$1" '%s' "$2"; else echo "$2"; fi; }

# mono_ms [VAR]: milliseconds since boot (a monotonic clock for measuring waits; 10 ms
# steps), read by bash itself: the probes call it many times a second. Printed, or
# with VAR stored in VAR (no subshell).
mono_ms() {
  local _ik_up _ik_idle
  read -r _ik_up _ik_idle </proc/uptime
  _ik_put "${1:-}" $((10#${_ik_up/./} * 10))
}

# alive PID: the process exists and is not a zombie.
alive() {
  local st
  { read -r st <"/proc/$1/stat"; } 2>/dev/null || return 1
  st=${st##*) }
  st=${st%% *}
  [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}

# host_pid ANCESTOR PID: the host's pid of the live process below ANCESTOR that calls
# itself PID. `idkeeper lock` and `elect` run CMD in a PID namespace of its own where
# the host allows it (docs/recipes.md, "CMD's process tree"): there CMD's $$ is its
# pid in that namespace (CMD itself is 2), which means another process out here. A
# process in the host's namespace is PID itself. Prints it, or nothing (status 1).
host_pid() {
  # grep fails (2) when a process exits between the glob and its read: not our
  # answer's failure, which is awk's (pipefail would make it ours)
  { grep -E '^(PPid|NSpid|State):' /proc/[0-9]*/status 2>/dev/null || true; } |
    awk -F'[:\t ]+' -v anc="$1" -v want="$2" '
      { split($1, a, "/"); p = a[3] }
      $2 == "State" { st[p] = $3 }
      $2 == "PPid" { par[p] = $3 }
      $2 == "NSpid" { if ($NF == want) c[p] = 1 }
      END {
        for (p in c) {
          if (st[p] == "Z" || st[p] == "X") continue
          for (q = p; q != "" && q > 1; q = par[q]) if (q == anc) { print p; found = 1; exit }
        }
        exit !found
      }'
}

# wait_grep PATTERN FILE SECONDS: until FILE has a line matching PATTERN (0), or
# SECONDS passed (1).
wait_grep() {
  local t0=$SECONDS
  while ((SECONDS - t0 < $3)); do grep -q "$1" "$2" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# wait_until SECONDS CMD [ARG...]: runs CMD every 50 ms until it succeeds (0), or
# SECONDS passed (1; SECONDS may have a fraction: 2.5). The one polling loop of the
# harness: a test names what it waits for, not how. The deadline is kept to 10 ms
# (mono_ms), not to bash's whole $SECONDS, which would cut a short wait by up to a
# second; CMD runs once more at the deadline.
wait_until() {
  local limit_ms t0 now int=${1%.*} frac=
  [[ $1 == *.* ]] && frac=${1#*.}
  frac=${frac}000
  limit_ms=$((10#${int:-0} * 1000 + 10#${frac:0:3}))
  shift
  mono_ms t0
  while :; do
    "$@" && return 0
    mono_ms now
    ((now - t0 < limit_ms)) || return 1
    sleep 0.05
  done
}

# bounded SECONDS FILE CMD [ARG...]: CMD, for a command whose end within SECONDS is
# part of what is promised (an acquire's --timeout, a bounded stop): its exit code.
# Past SECONDS, what it and each process below it are doing goes to FILE (each
# thread's kernel wait channel and, where gdb is installed, each thread's
# backtrace), then it is killed: 125. A hang becomes a finding with its evidence,
# not a ctest timeout that shows nothing.
bounded() {
  local limit=$1 out=$2 pid
  shift 2
  "$@" &
  pid=$!
  wait_until "$limit" not alive "$pid" || {
    _ik_hang_report "$pid" "$*" >"$out" 2>&1 || true
    kill -KILL $(_ik_tree "$pid") 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 125
  }
  wait "$pid"
}

_ik_tree() {
  local c
  echo "$1"
  for c in $(pgrep -P "$1"); do _ik_tree "$c"; done
}

_ik_hang_report() {
  local p t pids
  pids=$(_ik_tree "$1")
  echo "still running past its bound: $2"
  ps -o pid,ppid,pgid,etimes,stat,wchan:24,args -p "$(echo $pids | tr ' ' ,)"
  for p in $pids; do
    echo "--- pid $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
    for t in /proc/"$p"/task/*; do echo "  thread ${t##*/}: $(cat "$t/comm" "$t/wchan" 2>/dev/null | tr '\n' ' ')"; done
    command -v gdb >/dev/null && timeout 30 gdb -p "$p" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(Thread|#)'  || true
  done
}

# not CMD [ARG...]: succeeds when CMD fails, for wait_until (wait_until 5 not alive
# "$pid": until the process is gone).
not() { ! "$@"; }

# A TCP port that nothing listens on now (loopback), below the ephemeral range.
# shellcheck source=../tools/ports.sh
source "$IK_SRC/tests/tools/ports.sh"
free_port() { ik_free_port; }

# start_server NAME PORT [idkeeper serve args...]: starts a daemon in the
# background, logging to $T/NAME.log; sets SERVER_PID[NAME]. Does not wait.
declare -A SERVER_PID
start_server() {
  local name=$1 port=$2; shift 2
  "$IK_BIN" serve --http 127.0.0.1:"$port" --identity "$name" "$@" >"$T/$name.log" 2>&1 &
  SERVER_PID[$name]=$!
  IK_PIDS+=($!)
}

# ready_probe PORT: 0 if GET /readyz on 127.0.0.1:PORT answers 200 now. Bash's own
# /dev/tcp, no process: the suite polls readiness thousands of times, and a curl
# costs tens of ms of CPU each on a machine the whole suite keeps busy.
ready_probe() {
  local fd line=
  { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
  # a server that closes at once (draining, max-connections) must not SIGPIPE the test
  trap '' PIPE
  printf 'GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&"$fd" 2>/dev/null
  trap - PIPE
  IFS= read -r -t 5 line <&"$fd" 2>/dev/null
  exec {fd}>&-
  [[ $line == HTTP/1.[01]\ 200* ]]
}

# wait_ready PORT [SECONDS]: until /readyz answers 200 (default 20 s).
wait_ready() {
  local port=$1 limit=${2:-20} i
  for ((i = 0; i < limit * 20; i++)); do
    ready_probe "$port" && return 0
    sleep 0.05
  done
  return 1
}

# now_ms [VAR]: milliseconds of the wall clock (date +%s%3N), from bash, no process;
# printed, or stored in VAR.
now_ms() {
  local _ik_us=${EPOCHREALTIME/[.,]/}
  _ik_put "${1:-}" "${_ik_us:0:-3}"
}

# ik_http URL [OUT] [SECONDS]: GET URL (http://HOST:PORT/PATH?QUERY) through bash's
# own /dev/tcp, no process: the suite's helpers make thousands of requests, and a
# curl costs 25 to 45 ms of CPU a run on this 2-core machine (an ASan `idkeeper
# next` three times that). Prints the status code: 000 when no whole answer came
# (refused, no status line or headers within SECONDS (default 5), a body cut short).
# The body goes to the file OUT (default: nowhere). HTTP/1.0: the server closes
# after its answer.
ik_http() {
  _ik_http "$1" "${2:-}" "${3:-5}"
  echo "$IK_HTTP_CODE"
}

# http_get URL [SECONDS]: like `curl -fsS URL`: the body of a 200 answer on stdout;
# else nothing there, a line on stderr, and status 1.
http_get() {
  _ik_http "$1" - "${2:-30}"
  [ "$IK_HTTP_CODE" = 200 ] || { echo "GET $1: $IK_HTTP_CODE" >&2; return 1; }
}

# _ik_http URL OUT SECONDS: ik_http's work, in the caller's shell (no subshell); sets
# IK_HTTP_CODE. OUT "-" is stdout, and then only a 200 answer's body is written;
# "+FILE" appends a 200 answer's body to FILE. A body over 8 KiB is read by cat
# (under `timeout SECONDS`), a shorter one by bash's read: `read -t` makes two system
# calls a byte, about 3 us each here, against about 20 ms for the fork and execs.
_ik_http() {
  local LC_ALL=C url=$1 out=$2 secs=$3 hp path fd line len=-1 body= got append=
  IK_HTTP_CODE=000
  [[ $out == +* ]] && { append=1; out=${out#+}; }
  hp=${url#http://}
  path=/
  [[ $hp == */* ]] && path=/${hp#*/}
  hp=${hp%%/*}
  { exec {fd}<>"/dev/tcp/${hp%:*}/${hp##*:}"; } 2>/dev/null || return 0
  trap '' PIPE
  printf 'GET %s HTTP/1.0\r\nHost: %s\r\n\r\n' "$path" "$hp" >&"$fd" 2>/dev/null
  trap - PIPE
  if IFS= read -r -t "$secs" line <&"$fd" && [[ $line =~ ^HTTP/1\.[01]\ ([0-9]{3}) ]]; then
    local code=${BASH_REMATCH[1]} whole=1
    while :; do
      IFS= read -r -t "$secs" line <&"$fd" || { whole=0; break; }
      line=${line%$'\r'}
      [ -z "$line" ] && break
      [[ ${line,,} =~ ^content-length:\ *([0-9]+) ]] && len=${BASH_REMATCH[1]}
    done
    # stdout and appending take only a 200 answer's body
    if [ "$code" != 200 ] && { [ "$out" = - ] || [ -n "$append" ]; }; then out= append=; fi
    if ((whole && len > 8192)); then
      if [ "$out" = - ]; then
        timeout "$secs" cat <&"$fd" || true
      elif [ -z "$out" ]; then
        timeout "$secs" cat <&"$fd" >/dev/null || true
      else
        # straight into OUT; its size then tells whether the whole body came (not
        # cat's status: a reset after the last byte is no loss), and a short one
        # appended is cut off again (rare: a connection that broke)
        local before=0
        if [ -n "$append" ]; then
          _ik_size before "$out"
          timeout "$secs" cat <&"$fd" >>"$out" || true
        else
          timeout "$secs" cat <&"$fd" >"$out" || true
        fi
        _ik_size got "$out"
        if ((got - before != len)); then
          whole=0
          [ -z "$append" ] || truncate -s "$before" "$out"
        fi
      fi
    elif ((whole && len > 0)); then
      IFS= read -r -N "$len" -t "$secs" body <&"$fd"
      ((${#body} == len)) || whole=0
      if [ "$out" = - ]; then
        printf '%s' "$body"
      elif [ -n "$append" ]; then
        ((whole)) && printf '%s' "$body" >>"$out"
      elif [ -n "$out" ]; then
        printf '%s' "$body" >"$out"
      fi
    elif ((whole)) && [ -n "$out" ] && [ "$out" != - ] && [ -z "$append" ]; then
      : >"$out"
    fi
    ((whole)) && IK_HTTP_CODE=$code
  fi
  exec {fd}>&-
  return 0
}

# http_status URL: prints the HTTP status code (ik_http). http_status [curl args...]
# URL: the same through curl, for what ik_http does not send (headers, methods).
http_status() {
  if [ $# -eq 1 ]; then ik_http "$1"; else curl -s -o /dev/null -w '%{http_code}' "$@"; fi
}

# status_of PORT [JQ]: the daemon's /v1/status (or a jq filter of it); nothing (and
# status 0) when no answer came.
status_of() {
  local f=$T/.status.$BASHPID rc=0
  ik_http "http://127.0.0.1:$1/v1/status" "$f" 3 >/dev/null
  if [ -s "$f" ]; then jq -r "${2:-.}" "$f" || rc=$?; fi
  rm -f "$f"
  return $rc
}

# poll IDS ST URL STOP PERIOD SECS CLOCK: until the file STOP exists, a GET of URL
# every PERIOD seconds (SECS limit each): the bodies of the 200 answers appended to
# IDS, a line "sent_ms status" a request to ST (000: no whole answer), sent_ms read
# by CLOCK (mono_ms or now_ms). Run it in the background. One python3 process for
# the whole loop (tests/integration/poll.py): a few of these run at once for
# minutes, 20 requests a second each, and in bash a request cost 3 ms of CPU.
poll() { /usr/bin/python3 "$IK_SRC/tests/integration/poll.py" "$@"; }

# probe NAME URL STOP PERIOD: poll with 15 s a request on the monotonic clock, into
# $T/NAME.ids and $T/NAME.st. Run it in the background.
probe() { poll "$T/$1.ids" "$T/$1.st" "$2" "$3" "$4" 15 mono_ms; }

# metric_of PORT NAME: the value of NAME (its line "NAME VALUE" of the server's
# /metrics), or nothing (no answer, no such line). metric_at_least PORT NAME N: it is
# at least N (a condition for wait_until: "the servers have answered traffic").
metric_of() {
  local f=$T/.metrics.$BASHPID
  ik_http "http://127.0.0.1:$1/metrics" "$f" 3 >/dev/null
  awk -v m="$2" '$1 == m { print $2; exit }' "$f" 2>/dev/null || true
  rm -f "$f"
}
metric_at_least() {
  local v
  v=$(metric_of "$1" "$2")
  [ -n "$v" ] && ((${v%.*} >= $3))
}

# probe_answered NAME N [SINCE]: probe NAME's requests sent at or after SINCE (mono
# ms; default: all) include N answered 200. probe_refused NAME SINCE: one of them was
# not answered 200 (a refusal, or no whole answer). Conditions for wait_until: the
# traffic a test waits for, rather than a time it would take.
probe_answered() {
  (($(awk -v t="${3:-0}" '$1 >= t && $2 == 200 { n++ } END { print n + 0 }' "$T/$1.st" 2>/dev/null || echo 0) >= $2))
}
probe_refused() { awk -v t="$2" '$1 >= t && $2 != 200 { f = 1 } END { exit !f }' "$T/$1.st" 2>/dev/null; }

# fetch_ids PORT N OUT: appends N snowflake IDs from the server to OUT (one a line),
# in requests of at most 10,000 (the default --max-batch); fails (1) at the first
# answer that is not 200, after appending the IDs of the ones before.
fetch_ids() {
  local left=$2 n
  while ((left > 0)); do
    n=$((left < 10000 ? left : 10000))
    _ik_http "http://127.0.0.1:$1/v1/snowflake?count=$n&format=text" "+$3" 15
    [ "$IK_HTTP_CODE" = 200 ] || return 1
    left=$((left - n))
  done
}

# fetch_kind KIND FILE: 20 IDs of KIND (snowflake, or sequence on tag inv) from the
# server at $URL appended to FILE; 0, or 1 on a refusal (the store-hazard tests).
fetch_kind() {
  local path=/v1/snowflake
  [ "$1" = sequence ] && path=/v1/sequence/inv
  _ik_http "$URL$path?count=20&format=text" "+$2" 10
  [ "$IK_HTTP_CODE" = 200 ]
}

# assert_unique FILE: no line appears twice.
assert_unique() {
  local d
  d=$(sort "$1" | uniq -d | head -n 5)
  [ -z "$d" ] || fail "duplicate IDs in $1: $d"
}

# assert_increasing FILE: each line (an integer) is greater than the one before.
assert_increasing() {
  # Compared as digit strings: awk's numbers are doubles and lose 64-bit IDs.
  awk 'NR > 1 && (length($1) < length(prev) || (length($1) == length(prev) && ($1 "") <= (prev ""))) {
         print "not increasing at line " NR ": " prev " then " $1; bad = 1; exit }
       { prev = $1 } END { exit bad }' "$1" || fail "IDs in $1 do not increase"
}

# serve_on NAME [serve args...]: start_server on a free port and wait until it is
# ready; if it exits first only because the port was taken after free_port chose it
# (free_port's range overlaps the ephemeral ports), tries another (5 tries). Sets
# PORT. Returns 0 when ready, 1 if the server exited (see $T/NAME.log) or never got
# ready in 20 s.
serve_on() {
  local name=$1 try rc; shift
  for try in 1 2 3 4 5; do
    PORT=$(free_port)
    rc=0
    _serve_up "$name" "$PORT" "$@" || rc=$?
    [ "$rc" -eq 2 ] || return "$rc"
    log "port $PORT was taken meanwhile; trying another"
  done
  return 1
}

# _serve_up NAME PORT [serve args...]: starts a server and waits until it is ready
# (0), or until it exits (1; 2 if only because the port was taken).
_serve_up() {
  local name=$1 port=$2 i; shift 2
  start_server "$name" "$port" "$@"
  for ((i = 0; i < 400; i++)); do
    ready_probe "$port" && return 0
    kill -0 "${SERVER_PID[$name]}" 2>/dev/null || break
    sleep 0.05
  done
  grep -q 'Address already in use' "$T/$name.log" && return 2
  return 1
}

# fault_proxy_start LISTEN_PORT TARGET_PORT [raw]: tests/interop/fault_proxy.py, a
# TCP proxy on LISTEN_PORT to TARGET_PORT that injects faults (raw: for any protocol,
# not only ZooKeeper's), output in $T/proxy.log. 0 once it listens, 1 if it exited
# first (the port was taken) or did not come up in 5 s.
fault_proxy_start() {
  local i
  : >"$T/proxy.log"
  /usr/bin/python3 "$IK_SRC/tests/interop/fault_proxy.py" "$1" "$2" "$T/ctl" ${3:+"$3"} >>"$T/proxy.log" 2>&1 &
  PROXY_PID=$!
  IK_PIDS+=($!)
  PROXY_N=0
  for ((i = 0; i < 100; i++)); do
    grep -q ready "$T/proxy.log" 2>/dev/null && return 0
    alive "$PROXY_PID" || return 1
    sleep 0.05
  done
  return 1
}

# proxy MODE [ARGS]: tells the proxy of fault_proxy_start to let new connections
# pass (up), to close every connection and refuse new ones (down), to keep the open
# ones sending to the server but drop all it answers (blackhole; mute/unmute: the
# same for new connections too), to keep what it answers on them until release
# (hold, release), to deliver the server's answers MS later (delay MS), to lose the
# answers of the next N ZooKeeper requests of opcodes OPS containing PATTERN (cut N
# OPS PATTERN), or, for any protocol, the answers (answer-lost N PATTERN) or the
# requests themselves (request-lost N PATTERN) of the next N sends containing
# PATTERN (see fault_proxy.py); returns once the proxy has done it.
proxy() {
  local i
  PROXY_N=$((PROXY_N + 1))
  echo "$PROXY_N $*" >"$T/ctl"
  for ((i = 0; i < 200; i++)); do grep -q "^$PROXY_N done" "$T/ctl.ack" 2>/dev/null && return 0; sleep 0.01; done
  fail "the proxy did not do '$*'"
}

# expect_fail CODE WHAT CMD...: CMD exits CODE, prints nothing on stdout and exactly
# one line "idkeeper: ..." on stderr that contains WHAT (the CLI's error contract).
expect_fail() {
  local code=$1 what=$2 rc=0; shift 2
  "$@" >"$T/out" 2>"$T/err" || rc=$?
  [ "$rc" -eq "$code" ] || fail "$* exited $rc, not $code: $(cat "$T/err")"
  [ ! -s "$T/out" ] || fail "$* printed on stdout: $(head -c 200 "$T/out")"
  [ "$(wc -l <"$T/err")" -eq 1 ] || fail "$* printed $(wc -l <"$T/err") lines on stderr: $(cat "$T/err")"
  grep -q '^idkeeper: ' "$T/err" || fail "$*: stderr does not start with 'idkeeper: ': $(cat "$T/err")"
  grep -qF -- "$what" "$T/err" || fail "$*: stderr lacks '$what': $(cat "$T/err")"
}

# tags_add_race [coord args...]: 8 concurrent `idkeeper tags add race` (segment,
# start 1..8) on one store: exactly one exits 0, seven exit 3 (exists), and the
# stored tag is the winner's.
tags_add_race() {
  local i racers=() codes winner
  for i in $(seq 1 8); do
    (rc=0; "$IK_BIN" tags add race --kind segment --start "$i" "$@" >/dev/null 2>"$T/race.$i.err" || rc=$?
     echo "$rc" >"$T/race.$i.rc") &
    racers+=($!)
  done
  wait "${racers[@]}" # not a bare wait: a ZooKeeper may run in the background too
  codes=$(cat "$T"/race.*.rc | sort | uniq -c | awk '{print $2 "x" $1}' | tr '\n' ' ')
  [ "$codes" = "0x1 3x7 " ] || fail "8 concurrent adds of one name: exit codes $codes"
  winner=$(grep -lx 0 "$T"/race.*.rc | sed 's/.*race\.\([0-9]*\)\.rc/\1/')
  "$IK_BIN" tags show race --json "$@" | jq -e --arg s "$winner" '.start == $s' >/dev/null ||
    fail "the stored tag is not the winner's (start $winner)"
  pass "8 concurrent adds of one name: one exits 0, seven exit 3"
}

# sqlite_lock DB SECONDS: another process holds the write lock of the SQLite store DB
# (BEGIN IMMEDIATE), as a store that hangs, until sqlite_unlock or SECONDS pass;
# returns once it holds it (sets LOCK_PID).
sqlite_lock() {
  rm -f "$T/release" "$T/locked"
  python3 - "$1" "$T" "$2" <<'PY' &
import os, sqlite3, sys, time
db, T, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
c = sqlite3.connect(db, isolation_level=None, timeout=10)
c.execute("BEGIN IMMEDIATE")
open(T + "/locked", "w").close()
end = time.time() + secs
while time.time() < end and not os.path.exists(T + "/release"):
    time.sleep(0.02)
c.execute("ROLLBACK")
c.close()
PY
  LOCK_PID=$!
  IK_PIDS+=($!)
  for _ in $(seq 500); do [ -e "$T/locked" ] && return 0; sleep 0.01; done
  fail "the lock holder did not start"
}
sqlite_unlock() { touch "$T/release"; wait "$LOCK_PID" || true; }

# Snowflake IDs of the default layout (41 bits of ms since the Twitter epoch, 10, 12),
# for any backend (moved here from zk.sh for the conformance suite):
#   ids_time_check FILE MS   every ID's time is above MS (fails the test otherwise)
#   ids_workers FILE         the distinct worker numbers of the IDs in FILE
#   ids_time_max FILE        the highest ID time (Unix ms) in FILE
ids_time_check() {
  /usr/bin/python3 - "$1" "$2" <<'PY' || fail "IDs in $1 at or below the record $2"
import sys
rec = int(sys.argv[2])
bad = [l.strip() for l in open(sys.argv[1]) if l.strip() and (int(l) >> 22) + 1288834974657 <= rec]
if bad:
    print("%d IDs at or below %d, e.g. %s (time %d)" % (len(bad), rec, bad[0], (int(bad[0]) >> 22) + 1288834974657), file=sys.stderr)
    sys.exit(1)
PY
}

ids_workers() {
  /usr/bin/python3 -c '
import sys
print("\n".join(str(w) for w in sorted({(int(l) >> 12) & 1023 for l in open(sys.argv[1]) if l.strip()})))' "$1"
}

ids_time_max() {
  /usr/bin/python3 -c '
import sys
print(max(((int(l) >> 22) + 1288834974657 for l in open(sys.argv[1]) if l.strip()), default=0))' "$1"
}

# faketime_bin FILE SETTING...: writes FILE, an idkeeper wrapper with libfaketime
# preloaded, to run as IK_BIN. Each SETTING is VAR=VALUE, exported by the wrapper
# (VALUE in double quotes there: "\$X" is read when it runs), or a bare FAKETIME
# ("-10s": a clock 10 s behind). The preload goes straight into the daemon (the
# faketime wrapper would fork, and the test would lose the daemon's pid). Monotonic
# is shifted too unless a SETTING says otherwise: libfaketime 0.9.10 with
# FAKETIME_DONT_FAKE_MONOTONIC=1 makes timed waits on CLOCK_MONOTONIC condition
# variables return at once; a constant shift of both clocks is harmless.
#
# An ASan build runs with the preload ahead of its runtime (verify_asan_link_order=0)
# and with allocator_release_to_os_interval_ms=-1: by default ASan's allocator reads
# CLOCK_MONOTONIC when it maps a size class's first region, holding that class's
# lock; if that is the process's first clock_gettime, libfaketime's hook looks its
# real functions up with dlsym, whose error path calls malloc, which waits on the
# same lock forever. Whether a build hit it depended on its layout: a build that
# differed by one initializer hung at its start in every run.
faketime_bin() {
  local f lib= out=$1 set
  shift
  for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
    [ -f "$f" ] && { lib=$f; break; }
  done
  [ -n "$lib" ] || fail "libfaketime.so.1 not found (apt-get install libfaketime)"
  {
    echo '#!/bin/sh'
    echo 'export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0:allocator_release_to_os_interval_ms=-1"'
    echo "export LD_PRELOAD=\"$lib\""
    for set in "$@"; do
      case $set in *=*) echo "export ${set%%=*}=\"${set#*=}\"" ;; *) echo "export FAKETIME=\"$set\"" ;; esac
    done
    echo "exec \"$IK_BIN\" \"\$@\""
  } >"$out"
  chmod +x "$out"
}

# grepq [GREP ARGS...]: `grep -q` that reads its input to the end. Under pipefail,
# `producer | grep -q PATTERN` fails at random: grep exits at the first match and a
# producer still writing dies of SIGPIPE (ldd, zcat, curl, redis-cli...).
grepq() { grep "$@" >/dev/null; }
