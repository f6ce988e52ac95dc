#!/usr/bin/env bash
# labels: make nosan
# timeout: 600
# resource_lock: compile
# processors: 2
# The README's first command on a fresh clone: `make run` builds and serves on
# local:./idkeeper-data; an ID from the Leaf route decodes to now and to the
# server's worker number. (HTTP= moves it off 8080 so the test never collides.)
source "$(dirname "$0")/lib.sh"

git -C "$IK_SRC" rev-parse --git-dir >/dev/null 2>&1 || fail "IK_SRC=$IK_SRC is not a git checkout"
git clone -q "$IK_SRC" "$T/clone"
port=$(free_port)
( cd "$T/clone" && exec make run HTTP=127.0.0.1:$port ) >"$T/make-run.log" 2>&1 &
IK_PIDS+=($!)
make_pid=$!
stop_run() { pkill -TERM -f "idkeeper serve --coord local:./idkeeper-data --http 127.0.0.1:$port" 2>/dev/null || true; }
IK_CLEANUPS+=(stop_run)
wait_ready "$port" 400 || fail "make run did not serve within 400 s: $(tail -n 20 "$T/make-run.log")"
[ -d "$T/clone/idkeeper-data" ] || fail "no ./idkeeper-data in the clone"

id=$(curl -fsS "http://127.0.0.1:$port/api/snowflake/get/x")
[[ "$id" =~ ^[0-9]+$ ]] || fail "Leaf route answered '$id'"
out=$("$T/clone/build/idkeeper" decode --json "$id")
now=$(( $(date +%s%N) / 1000000 ))
t=$(jq -r .time_ms <<<"$out"); w=$(jq -r .worker <<<"$out")
sw=$(curl -fsS "http://127.0.0.1:$port/v1/status" | jq -r .worker)
d=$(( now - t )); [ $d -lt 0 ] && d=$(( -d ))
[ $d -le 1000 ] || fail "decoded time $t is $d ms from now"
[ "$w" = "$sw" ] || fail "decoded worker $w, server holds $sw"
grep -q 'curl' "$T/make-run.log" || fail "make run does not print how to try it"
pass "make run serves on a fresh clone: id $id, time $d ms from now, worker $w"
stop_run
wait "$make_pid" 2>/dev/null || true
