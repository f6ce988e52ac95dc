#!/usr/bin/env bash
# labels: redis release
# timeout: 240
# processors: 2
# kill -9 of redis-server, and a restart from its append-only file (appendfsync
# always), while two idkeeper servers hold worker slots (lease TTL 3 s) and clients
# draw snowflake, segment and sequence IDs from both (docs/redis.md, "The failure model"): Redis stays down
# past the TTL, so the slots' keys expire meanwhile. Then:
#   - no ID twice, of any kind;
#   - every sequence ID of the run that no client received lies in a range a server
#     logged (committed, its answer not delivered; or a "tag gap" line: a write in
#     doubt that was recorded): no unlogged gap (tests/tools/seqgaps.py);
#   - both servers serve every kind again within 10 s of Redis's return, without a
#     restart of their own.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/redis.sh"

redis_own main
REDIS_PORT=${REDIS_PORT_OF[main]}
DATA=$(redis_uri data)
HAMMER=$IK_BUILD/tests/tools/hammer
export IDKEEPER_LOG_SEQUENCE_COMMITS=1
S=(--coord "$DATA" --lease-ttl 3000 --worker-range 0-7 --threads 1 --quiet)
"$IK_BIN" tags add seg --kind segment --step 200 --coord "$DATA" >/dev/null
"$IK_BIN" tags add seq --kind sequence --start 1 --coord "$DATA" >/dev/null
declare -A P
for s in s1 s2; do
  serve_on "$s" "${S[@]}" || fail "$s did not start: $(tail -n 5 "$T/$s.log")"
  P[$s]=$PORT
done

DUR=24
declare -A HP
for s in s1 s2; do
  for k in snowflake segment/seg sequence/seq; do
    n=$s-${k%%/*}
    "$HAMMER" --url "http://127.0.0.1:${P[$s]}/v1/$k?count=1&format=text" --connections 4 \
      --duration $DUR --reconnect --out "$T/$n.ids" >"$T/$n.hammer" 2>&1 &
    IK_PIDS+=($!)
    HP[$n]=$!
  done
done
# flowing [SINCE...]: each server has answered 50 more IDs of each kind than SINCE
# (its counts, kept by the caller)
counts() { local s m; for s in s1 s2; do for m in ik_ids_issued_total ik_segment_ids_total ik_sequence_ids_total; do metric_of "${P[$s]}" $m; done; done; }
flowing() {
  local now i=0 v
  read -ra now <<<"$(counts | tr '\n' ' ')"
  ((${#now[@]} == 6)) || return 1
  for v in "$@"; do ((${now[i]%.*} >= ${v%.*} + 50)) || return 1; i=$((i + 1)); done
}
read -ra c0 <<<"$(counts | tr '\n' ' ')"
wait_until 30 flowing "${c0[@]}" || fail "the hammers' traffic does not flow: $(counts | tr '\n' ' ')"
redis_kill main
log "redis-server killed -9; down for 4 s (past the 3 s TTL)"
sleep 4 # let time pass: the outage outlasts the slots' 3 s TTL
redis_restart main
mono_ms t0
log "redis-server restarted from its append-only file"
for s in s1 s2; do
  for k in snowflake segment/seg sequence/seq; do
    until [ "$(http_status "http://127.0.0.1:${P[$s]}/v1/$k?format=text")" = 200 ]; do
      (($(mono_ms) - t0 < 10000)) || fail "$s does not serve $k 10 s after Redis's return: $(tail -n 5 "$T/$s.log")"
      sleep 0.05
    done
  done
done
back=$(($(mono_ms) - t0))
log "both servers serve every kind again $back ms after Redis's return"
for n in "${!HP[@]}"; do wait "${HP[$n]}" || true; done
for s in s1 s2; do alive "${SERVER_PID[$s]}" || fail "$s died: $(tail -n 20 "$T/$s.log")"; done
for f in "$T"/*.hammer; do log "$(basename "$f"): $(tail -n 1 "$f")"; done

python3 "$IK_SRC/tests/tools/idcheck.py" unique "$T"/s?-snowflake.ids >"$T/check" || fail "snowflake IDs repeat"
log "snowflake: $(cat "$T/check")"
python3 "$IK_SRC/tests/tools/idcheck.py" unique "$T"/s?-segment.ids >"$T/check" || fail "segment IDs repeat"
log "segment: $(cat "$T/check")"
end=$(curl -fsS "http://127.0.0.1:${P[s1]}/v1/tags/seq" | jq -r .max_id)
# the probes above took IDs too: they are in the servers' commit logs, not in a file
python3 "$IK_SRC/tests/tools/seqgaps.py" 1 "$end" seq "$T/s1.log" "$T/s2.log" -- "$T"/s?-sequence.ids >"$T/check" ||
  fail "sequence check failed"
log "sequence: $(cat "$T/check")"
for k in snowflake segment sequence; do
  [ "$(cat "$T"/s?-$k.ids | wc -l)" -gt 1000 ] || fail "too few $k IDs: the clients did not run"
done
pass "kill -9 of Redis and a restart from its AOF: no duplicate, no unlogged sequence gap, serving again after $back ms without a restart"
for s in s1 s2; do
  kill -TERM "${SERVER_PID[$s]}"
  wait "${SERVER_PID[$s]}" || fail "$s did not exit 0 on SIGTERM"
done
