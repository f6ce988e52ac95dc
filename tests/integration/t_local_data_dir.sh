#!/usr/bin/env bash
# labels: local
# timeout: 180
# What an operator sees when local:'s data directory fails (docs/local.md, "When the
# data directory fails"): each case names the path, the errno and what to change, in
# serve, lock, tags and check, and never passes for "all slots held", "connection
# lost" or a store that is merely "unreachable".
# 1. Not writable: a directory root used first, then serve, tags, lock and check run
#    as another user (uid 65534).
# 2. Read-only: the same directory through a read-only bind mount (EROFS).
# 3. Full: a server on a small tmpfs (--allow-unsafe-store: tmpfs is a refused store
#    hazard otherwise) that has committed a sequence range, whose filesystem is then
#    filled (SQLite's log has no room for the next commit): sequence and segment requests
#    answer 503 store_unavailable naming ENOSPC, one log line names the file and the
#    cause, snowflake IDs go on (the slot's record is rewritten in place), check
#    names the full filesystem; once space is freed the sequence goes on at the very
#    next ID (nothing was committed while full).
# 4. Damaged idkeeper.db (its first 100 bytes overwritten): serve, check, tags and
#    workers refuse, naming the file and SQLite's words.
# The mounts live in a mount namespace of this test's own (unshare -m): a test that
# dies leaves none behind. CASES (default "eacces erofs full damaged") runs some of
# them, in that order (each on the code before its fix, say).
if [ -z "${IK_IN_MOUNT_NS:-}" ]; then
  IK_IN_MOUNT_NS=1 exec unshare -m --propagation private bash "$0" "$@"
fi
source "$(dirname "$0")/lib.sh"

as_other() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
# says FILE TEXT...: FILE has each TEXT (fixed strings)
says() {
  local f=$1 t
  shift
  for t in "$@"; do grepq -F -- "$t" "$f" || fail "$(basename "$f") lacks \"$t\": $(cat "$f")"; done
}
# denies FILE: not one of the old words for a failing directory
denies() {
  ! grepq -E 'are held|connection lost' "$1" || fail "$(basename "$1") names the wrong cause: $(cat "$1")"
}
# runs NAME EXPECT CMD...: a command of the CLI that fails: its exit code EXPECT ("!0":
# any but 0), exactly one line on stderr (docs/cli.md; besides the line of a hazard
# --allow-unsafe-store accepts), into $T/NAME.log
runs() {
  local name=$1 want=$2 rc=0 lines
  shift 2
  "$@" >"$T/$name.stdout" 2>"$T/$name.log" || rc=$?
  if [ "$want" = '!0' ]; then
    [ "$rc" != 0 ] || fail "$name exited 0: $(cat "$T/$name.log")"
  else
    [ "$rc" = "$want" ] || fail "$name exited $rc, not $want: $(cat "$T/$name.log")"
  fi
  lines=$(grep -cv 'store hazard accepted by --allow-unsafe-store' "$T/$name.log" || true)
  [ "$lines" = 1 ] || fail "$name printed $lines lines on stderr: $(cat "$T/$name.log")"
}

# refuses_to_serve NAME ARGS...: `serve ARGS` (run by the command in RUN_AS, if set)
# exits non-zero, never ready; its log in $T/NAME.log
RUN_AS=()
refuses_to_serve() {
  local name=$1 port rc=0 pid
  shift
  port=$(free_port)
  ${RUN_AS[@]+"${RUN_AS[@]}"} "$IK_BIN" serve --http 127.0.0.1:"$port" "$@" >"$T/$name.log" 2>&1 &
  pid=$!
  IK_PIDS+=($pid)
  up_or_gone() { ready_probe "$port" || ! alive "$pid"; }
  wait_until 30 up_or_gone || fail "$name: serve neither refused nor got ready in 30 s"
  if ready_probe "$port"; then
    kill -TERM "$pid"
    fail "$name: serve is ready: $(cat "$T/$name.log")"
  fi
  wait "$pid" || rc=$?
  [ "$rc" != 0 ] || fail "$name: serve exited 0: $(cat "$T/$name.log")"
}

# A directory made and used by root: a tag, a slot file, the database.
D=$T/data
"$IK_BIN" tags add seq --kind sequence --coord "local:$D" >/dev/null || fail "tags add"
serve_on first --coord "local:$D" --quiet || fail "first server: $(tail -n 3 "$T/first.log")"
http_get "http://127.0.0.1:$PORT/v1/sequence/seq?count=2" >/dev/null || fail "no sequence IDs"
kill -TERM "${SERVER_PID[first]}"
wait "${SERVER_PID[first]}" || fail "first server did not exit 0"
chmod 711 "$T" # others may reach DIR, not write in it

# 1. not writable by the user that runs
case_eacces() {
RUN_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
  refuses_to_serve serve-eacces --coord "local:$D"
  RUN_AS=()
says "$T/serve-eacces.log" "$D/default/slots/" "Permission denied (EACCES)" "uid 65534" "chown"
denies "$T/serve-eacces.log"
runs lock-eacces '!0' as_other "$IK_BIN" lock /x --coord "local:$D" -- true
says "$T/lock-eacces.log" "$D: Permission denied (EACCES)" "uid 65534"
runs tags-eacces '!0' as_other "$IK_BIN" tags add other --kind segment --coord "local:$D"
says "$T/tags-eacces.log" "Permission denied (EACCES)" "uid 65534"
# a listing reads, and needs no write while SQLite's -shm file is there
if as_other "$IK_BIN" tags list --coord "local:$D" >"$T/list-eacces.stdout" 2>"$T/list-eacces.log"; then
  grepq '^seq ' "$T/list-eacces.stdout" || fail "tags list as another user: $(cat "$T/list-eacces.stdout")"
else
  says "$T/list-eacces.log" "Permission denied (EACCES)" "uid 65534"
fi
runs check-eacces 1 as_other "$IK_BIN" check --coord "local:$D"
says "$T/check-eacces.log" "cannot write in $D" "Permission denied (EACCES)" "uid 65534"
pass "not writable: serve, lock, tags and check name the path, EACCES, the user and what to change"
}

# 2. read-only
case_erofs() {
RO=$T/ro
mkdir -p "$RO"
mount --bind "$D" "$RO" && mount -o remount,bind,ro "$RO" || fail "cannot make a read-only bind mount (the test runs as root)"
for cmd in serve lock list check; do
  case $cmd in
  serve) refuses_to_serve ro-serve --coord "local:$RO" ;;
  lock) runs ro-lock '!0' "$IK_BIN" lock /x --coord "local:$RO" -- true ;;
  list) runs ro-list '!0' "$IK_BIN" tags list --coord "local:$RO" ;;
  check) runs ro-check 1 "$IK_BIN" check --coord "local:$RO" ;;
  esac
  says "$T/ro-$cmd.log" "Read-only file system (EROFS)" "remount it read-write"
  denies "$T/ro-$cmd.log"
done
says "$T/ro-list.log" "$RO/idkeeper.db"
umount "$RO"
pass "read-only: serve, lock, tags list and check name EROFS and what to change"
}

# 3. full
case_full() {
F=$T/full
mkdir -p "$F"
mount -t tmpfs -o size=2m ik-full "$F" || fail "cannot mount a tmpfs"
U=(--coord "local:$F/d" --allow-unsafe-store)
"$IK_BIN" tags add q --kind sequence --start 1 "${U[@]}" >/dev/null 2>&1 || fail "tags add q"
"$IK_BIN" tags add g --kind segment "${U[@]}" >/dev/null 2>&1 || fail "tags add g"
serve_on full "${U[@]}" --quiet || fail "server on the small tmpfs: $(tail -n 3 "$T/full.log")"
URL=http://127.0.0.1:$PORT
dd if=/dev/zero of="$F/fill" bs=4k >/dev/null 2>&1 || true # until ENOSPC
code=$(ik_http "$URL/v1/sequence/q?count=3" "$T/full-seq.body")
[ "$code" = 503 ] || fail "sequence on a full disk: $code $(cat "$T/full-seq.body")"
says "$T/full-seq.body" '"error":"store_unavailable"' "No space left on device"
denies "$T/full-seq.body"
code=$(ik_http "$URL/v1/segment/g?count=3" "$T/full-seg.body")
[ "$code" = 503 ] || fail "segment on a full disk: $code $(cat "$T/full-seg.body")"
says "$T/full-seg.body" "No space left on device"
wait_grep "idkeeper.db .*No space left on device (ENOSPC).* is full" "$T/full.log" 5 ||
  fail "no log line names the full file: $(tail -n 5 "$T/full.log")"
http_get "$URL/v1/snowflake?count=3" >/dev/null || fail "snowflake IDs stop on a full disk"
runs full-check 1 "$IK_BIN" check "${U[@]}"
says "$T/full-check.log" "No space left on device (ENOSPC)" "is full"
rm "$F/fill"
first=$(http_get "$URL/v1/sequence/q?count=1&format=text") || fail "sequence once space is freed"
[ "$first" = 1 ] || fail "the first sequence ID after the full disk is $first, not 1: a range was lost"
kill -TERM "${SERVER_PID[full]}"
wait "${SERVER_PID[full]}" || fail "the server on the full disk did not exit 0"
umount "$F"
pass "full: 503 naming ENOSPC, a log line naming the file, snowflake on, check names it, nothing committed"
}

# 4. a damaged database
case_damaged() {
dd if=/dev/urandom of="$D/idkeeper.db" bs=100 count=1 conv=notrunc 2>/dev/null
refuses_to_serve bad-serve --coord "local:$D"
runs bad-check 1 "$IK_BIN" check --coord "local:$D"
runs bad-list '!0' "$IK_BIN" tags list --coord "local:$D"
runs bad-workers '!0' "$IK_BIN" workers --coord "local:$D"
for cmd in serve check list workers; do
  says "$T/bad-$cmd.log" "$D/idkeeper.db is damaged" "file is not a database" "docs/local.md"
done
pass "damaged idkeeper.db: serve, check, tags list and workers refuse, naming it and SQLite's words"
}

for c in ${CASES:-eacces erofs full damaged}; do "case_$c"; done
