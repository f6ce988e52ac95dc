#!/usr/bin/env bash
# labels: local slots
# timeout: 120
# A new slot file on local: survives a power cut: after its first record is written
# the server fsyncs the slots directory (and its parents), so the file's name is as
# durable as its record. Shown with strace -y on a server start: the fsync of the
# directory comes after the new file's fdatasync. A second start, on the same file,
# needs no directory fsync.
source "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || fail "strace is not installed (the test needs it)"

# serve_traced NAME: a server under strace until ready, then SIGTERM; the trace is
# in $T/NAME.trace.
serve_traced() {
  local name=$1 port i
  port=$(free_port)
  # LeakSanitizer cannot run under ptrace (the ASan build of this test)
  ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
    strace -f -qq -y -e trace=fsync,fdatasync -o "$T/$name.trace" \
      "$IK_BIN" serve --http 127.0.0.1:"$port" --identity "$name" --coord "local:$T/data" \
      --worker-range 3-3 --quiet >"$T/$name.log" 2>&1 &
  local spid=$! pid=
  IK_PIDS+=($spid)
  for ((i = 0; i < 600; i++)); do # the daemon is strace's child: signals go to it
    pid=$(pgrep -P "$spid" -x idkeeper || true)
    [ -n "$pid" ] && break
    sleep 0.05
  done
  [ -n "$pid" ] || fail "$name: no daemon under strace"
  IK_PIDS+=($pid)
  for ((i = 0; i < 600; i++)); do
    ready_probe "$port" && break
    kill -0 "$pid" 2>/dev/null || fail "$name exited: $(tail -n 5 "$T/$name.log")"
    sleep 0.05
  done
  curl -fsS "http://127.0.0.1:$port/api/snowflake/get/x" >/dev/null || fail "$name issued no ID"
  kill -TERM "$pid"
  wait "$spid" || fail "$name did not exit 0 on SIGTERM"
}

serve_traced first
slots=$(cd "$T/data/default/slots" && pwd -P)
[ -f "$slots/0003.slot" ] || fail "no slot file 0003.slot"
grep -qE "fdatasync\([0-9]+<$slots/0003\.slot>\)" "$T/first.trace" ||
  fail "no fdatasync of the new slot file: $(cat "$T/first.trace")"
# the directory fsync follows the file's first fdatasync
awk -v f="<$slots/0003.slot>)" -v d="<$slots>)" '
  index($0, "fdatasync(") && index($0, f) && !seen { seen = NR }
  index($0, "fsync(") && !index($0, "fdatasync(") && index($0, d) && seen { ok = 1 }
  END { exit !ok }' "$T/first.trace" ||
  fail "the slots directory $slots was not fsynced after the new slot file was written: $(cat "$T/first.trace")"
pass "a new slot file: its directory fsynced after its first record"

serve_traced second
if grep -qE "^[0-9]+ +fsync\([0-9]+<$slots>\)" "$T/second.trace"; then
  fail "the directory was fsynced again for a slot file that already existed"
fi
pass "an existing slot file: no directory fsync"
