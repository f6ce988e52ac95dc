#!/usr/bin/env bash
# labels: local slots
# timeout: 300
# SPEC 3 on local: 8 servers with --worker-range 0-7 hold 8 distinct slots; a 9th
# exits non-zero within 5 s naming the range and the holders; after kill -9 of one,
# a new server takes the freed slot at once; 1,000,000+ IDs fetched from all of
# them while this happens contain no duplicate.
source "$(dirname "$0")/lib.sh"

DATA="local:$T/data"
declare -A PORT
for i in 0 1 2 3 4 5 6 7; do
  PORT[s$i]=$(free_port)
  start_server s$i "${PORT[s$i]}" --coord "$DATA" --worker-range 0-7 --quiet
done
for i in 0 1 2 3 4 5 6 7; do wait_ready "${PORT[s$i]}" || fail "server s$i not ready"; done

worker_of() { curl -fsS "http://127.0.0.1:$1/v1/status" | jq -r '.worker'; }
declare -A WORKER
for i in 0 1 2 3 4 5 6 7; do WORKER[s$i]=$(worker_of "${PORT[s$i]}"); done
distinct=$(printf '%s\n' "${WORKER[@]}" | sort -u | wc -l)
[ "$distinct" -eq 8 ] || fail "8 servers hold $distinct distinct slots: ${WORKER[*]}"
for w in "${WORKER[@]}"; do [ "$w" -ge 0 ] && [ "$w" -le 7 ] || fail "worker $w outside 0-7"; done
pass "8 servers hold 8 distinct slots: ${WORKER[*]}"

# the 9th is refused within 5 s, naming the range and the holders
p9=$(free_port)
start=$(date +%s%N)
set +e
timeout 10 "$IK_BIN" serve --coord "$DATA" --worker-range 0-7 --http 127.0.0.1:$p9 --identity ninth --quiet >"$T/ninth.log" 2>&1
rc=$?
set -e
took=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "9th server: exit code $rc (want non-zero, not a timeout)"
[ $took -lt 5000 ] || fail "9th server took $took ms to give up"
grep -q '0-7' "$T/ninth.log" || fail "refusal does not name the range: $(cat "$T/ninth.log")"
grep -q 's3' "$T/ninth.log" || fail "refusal does not name the holders: $(cat "$T/ninth.log")"
pass "9th server refused in $took ms: $(head -c 300 "$T/ninth.log")"

# fetch IDs from all 8 while one is killed -9 and replaced
: >"$T/ids"
fetchers=()
for i in 0 1 2 3 4 5 6 7; do
  [ $i -eq 3 ] && continue
  ( for r in 1 2 3 4 5 6 7 8 9 10; do fetch_ids "${PORT[s$i]}" 12500 "$T/ids.s$i"; done ) &
  fetchers+=($!)
done
fetch_ids "${PORT[s3]}" 50000 "$T/ids.s3-before"
victim_worker=${WORKER[s3]}
kill -9 "${SERVER_PID[s3]}"
wait "${SERVER_PID[s3]}" 2>/dev/null || true
PORT[s8]=$(free_port)
t0=$(date +%s%N)
start_server s8 "${PORT[s8]}" --coord "$DATA" --worker-range 0-7 --quiet
wait_ready "${PORT[s8]}" 10 || fail "replacement server not ready"
took=$(( ($(date +%s%N) - t0) / 1000000 ))
w8=$(worker_of "${PORT[s8]}")
[ "$w8" = "$victim_worker" ] || fail "replacement took slot $w8, not the freed $victim_worker"
pass "replacement took freed slot $w8 and was ready in $took ms"
fetch_ids "${PORT[s8]}" 200000 "$T/ids.s8"
for p in "${fetchers[@]}"; do wait "$p" || fail "a fetcher failed"; done

for f in "$T"/ids.s*; do assert_increasing "$f"; done
cat "$T"/ids.s* >"$T/ids"
total=$(wc -l <"$T/ids")
[ "$total" -ge 1000000 ] || fail "only $total IDs fetched"
assert_unique "$T/ids"
pass "$total IDs from 9 servers, each server's increasing, no duplicate"
