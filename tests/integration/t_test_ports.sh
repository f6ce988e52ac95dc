#!/usr/bin/env bash
# labels: tools nosan
# timeout: 360
# The suite's own port picker (tests/tools/ports.sh): tests that run in parallel never
# get one port. Four shells of their own (four pids, as four ctest tests are) each
# pick 400 ports without binding any, as a test does before its servers start; with
# 22,768 ports to pick from, an unclaimed pick would give about 55 pairs. Then a
# claim whose shell has ended is taken over, and a live one is not.
source "$(dirname "$0")/lib.sh"

export IK_PORT_DIR=$T/ports
# each shell stays alive until all four have picked, as tests do while their servers
# run: a claim whose shell has ended is free again (below)
for j in 1 2 3 4; do
  bash -c 'source "$IK_SRC/tests/tools/ports.sh"; for i in $(seq 400); do ik_free_port; done >"$1"
    touch "$1.done"; while [ ! -e "$2" ]; do sleep 0.05; done' picker "$T/picks.$j" "$T/all.done" &
done
all_picked() { [ -e "$T/picks.1.done" ] && [ -e "$T/picks.2.done" ] && [ -e "$T/picks.3.done" ] && [ -e "$T/picks.4.done" ]; }
# 1,600 picks of a process or two each: 27 s in a run of this test alone at a load
# of 35 (2026-12-07), past 100 s in make test-under-load beside other suites; the
# deadline is for a hung picker
wait_until 300 all_picked || fail "the four shells did not pick 400 ports each in 300 s"
touch "$T/all.done"
wait
n=$(cat "$T"/picks.* | wc -l)
[ "$n" = 1600 ] || fail "expected 1,600 picks, got $n"
dup=$(cat "$T"/picks.* | sort | uniq -d | head -n 5 | tr '\n' ' ')
[ -z "$dup" ] || fail "two tests got one port: $dup"
pass "4 tests, 1,600 picks, no port twice"

# a claim of a shell that has ended is free again; one of a live shell is not. With
# RANDOM seeded, a shell's first pick is the same port each time.
pick() { bash -c 'source "$IK_SRC/tests/tools/ports.sh"; RANDOM=7; ik_free_port'; }
first=$(pick)
again=$(pick)
[ "$again" = "$first" ] || fail "the ended shell's port $first was not taken over (got $again)"
sleep 300 &
IK_PIDS+=($!)
ln -sfn "$!" "$IK_PORT_DIR/$first"
other=$(pick)
[ "$other" != "$first" ] || fail "port $first, claimed by the live pid $!, was picked again"
pass "an ended test's claim is taken over (port $first), a live one's is not (got $other)"
