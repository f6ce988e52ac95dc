#!/usr/bin/env bash
# labels: make nosan
# timeout: 600
# resource_lock: compile
# The README's first command: `make run` installs what is missing, builds and serves
# on local:./idkeeper-data; an ID from the Leaf route decodes to now and to the
# server's worker number. It runs on this stage's own build directory (BUILD=), the
# one `make test` has just built from this checkout (release_stage, which holds the
# daemon that `make run` builds), so its build step is a no-op and no third build
# joins the suite; that a fresh clone builds is what `make test` on CI's fresh clone
# shows. (HTTP= moves it
# off 8080 so the test never collides; DATA= keeps the data out of the source tree,
# and the default ./idkeeper-data is checked by name in the Makefile below.)
source "$(dirname "$0")/lib.sh"

[ -f "$IK_BUILD/CMakeCache.txt" ] || fail "IK_BUILD=$IK_BUILD is not a configured build directory"
grep -qx 'DATA ?= ./idkeeper-data' "$IK_SRC/Makefile" || fail "the Makefile's default DATA is not ./idkeeper-data"
port=$(free_port)
( cd "$IK_SRC" && exec make run BUILD="$IK_BUILD" HTTP=127.0.0.1:$port DATA="$T/idkeeper-data" ) >"$T/make-run.log" 2>&1 &
IK_PIDS+=($!)
make_pid=$!
stop_run() { pkill -TERM -f "idkeeper serve --coord local:$T/idkeeper-data --http 127.0.0.1:$port" 2>/dev/null || true; }
IK_CLEANUPS+=(stop_run)
wait_ready "$port" 400 || fail "make run did not serve within 400 s: $(tail -n 20 "$T/make-run.log")"
[ -d "$T/idkeeper-data" ] || fail "make run made no data directory $T/idkeeper-data"

# The ID's time lies between the wall clock read just before the request and just
# after it (1 s of slack each side for the clock's unit and rounding), however long
# a loaded machine takes to answer or to run decode: a fixed distance from a "now"
# read after decode failed once at 1,107 ms in a loaded make test.
now_ms before
id=$(curl -fsS "http://127.0.0.1:$port/api/snowflake/get/x")
now_ms after
[[ "$id" =~ ^[0-9]+$ ]] || fail "Leaf route answered '$id'"
out=$("$IK_BUILD/idkeeper" decode --json "$id")
t=$(jq -r .time_ms <<<"$out"); w=$(jq -r .worker <<<"$out")
sw=$(curl -fsS "http://127.0.0.1:$port/v1/status" | jq -r .worker)
((t >= before - 1000 && t <= after + 1000)) ||
  fail "decoded time $t is not within the request's [$before, $after] ms (1 s slack)"
d=$((after - t))
[ "$w" = "$sw" ] || fail "decoded worker $w, server holds $sw"
grep -q 'curl' "$T/make-run.log" || fail "make run does not print how to try it"
pass "make run serves: id $id, time $d ms before the answer, worker $w"
stop_run
wait "$make_pid" 2>/dev/null || true
