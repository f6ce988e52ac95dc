#!/usr/bin/env bash
# labels: etcd release
# timeout: 300
# processors: 2
# Faults on a 3-member etcd cluster (docs/etcd.md, "The failure model";
# docs/guarantees.md promises 1, 3, 4, 7, 10, 11) while clients draw snowflake,
# segment and sequence IDs from every idkeeper server without a pause (hammer,
# --reconnect; lease TTL 3 s; the three servers fill --worker-range 0-2, so a freed
# slot is the only one a newcomer can take; every server logs its sequence
# commits, IDKEEPER_LOG_SEQUENCE_COMMITS):
#   1. kill -9 of the leader member: every server serves again within the TTL + 5 s
#      of the new leader's election (the quorum's return); the member comes back;
#   2. the quorum lost: two members (the leader among them) killed -9 and kept down
#      past the TTL (no server answers a snowflake or sequence ID by then), then
#      restarted: every server serves again within the TTL + 5 s of the quorum's
#      return, without a restart of its own;
#   3. SIGSTOP of an idkeeper server past the TTL while a standby waits for a slot:
#      the standby takes the stopped one's slot; woken, the stopped server answers
#      503 (a request queued while it was stopped included) and issues nothing
#      under its old worker; the standby's IDs lie above the stopped one's; the
#      woken one is then stopped (SIGTERM, exit 0);
#   4. kill -9 of two idkeeper servers at once: two newcomers take their slots
#      within their default --slot-wait, their IDs above the dead ones' on the same
#      worker (the time record, promise 11);
# and over the whole run: no ID twice of any kind, each server's snowflake IDs
# increasing; every sequence ID of the run that no client received lies in a range
# a server logged (committed and handed to a request, or a "tag gap" line), or in
# the rest of a killed server's last write: a run above every range it logged that
# no other server logged (as tests/tools/idcheck.py kill9 allows), one per killed
# server; nothing else is missing. "Serves" means all three kinds answer 200.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"

etcd_cluster3 c
TTL=3000
URI="etcd://$ETCD_ENDPOINTS/$ETCD_PREFIX/faults"
HAMMER=$IK_BUILD/tests/tools/hammer
# auth is off on the test's cluster: a risk the servers are told to accept
S=(--coord "$URI" --lease-ttl "$TTL" --worker-range 0-2 --threads 1 --quiet --allow-unsafe-store)
declare -A P HP
export IDKEEPER_LOG_SEQUENCE_COMMITS=1
"$IK_BIN" tags add seg --kind segment --step 200 --coord "$URI" >/dev/null 2>"$T/tags.err" || fail "tags add seg: $(cat "$T/tags.err")"
"$IK_BIN" tags add seq --kind sequence --start 1 --coord "$URI" >/dev/null 2>"$T/tags.err" || fail "tags add seq: $(cat "$T/tags.err")"
KINDS=(snowflake segment/seg sequence/seq)

# up NAME [serve args...]: a server, ready, and clients drawing IDs from it (draw)
up() {
  local name=$1
  shift
  serve_on "$name" "${S[@]}" "$@" || fail "$name did not start: $(tail -n 5 "$T/$name.log")"
  P[$name]=$PORT
  draw "$name"
}
# draw NAME: a client of each kind (one connection, so that its IDs are in the order
# they were issued; 10 snowflake or 1 segment or sequence ID a request, at most 100
# requests a second) until the end of the test, into $T/NAME.KIND.ids
draw() {
  local k n count
  for k in "${KINDS[@]}"; do
    n=$1.${k%%/*}
    count=1
    [ "$k" = snowflake ] && count=10
    "$HAMMER" --url "http://127.0.0.1:${P[$1]}/v1/$k?count=$count&format=text" --connections 1 \
      --duration 600 --rate 100 --reconnect --drain 5 --out "$T/$n.ids" >"$T/$n.hammer" 2>&1 &
    HP[$n]=$!
    IK_PIDS+=($!)
  done
}

# serves NAME: every kind answers 200 now
serves() {
  local k
  for k in "${KINDS[@]}"; do
    [ "$(http_status "http://127.0.0.1:${P[$1]}/v1/$k?format=text")" = 200 ] || return 1
  done
}
# unfenced NAME: snowflake or sequence answers 200 now (a segment server may go on
# from a block it holds, docs/segment.md; the other two need the store)
unfenced() {
  local k
  for k in snowflake sequence/seq; do
    [ "$(http_status "http://127.0.0.1:${P[$1]}/v1/$k?format=text")" != 200 ] || return 0
  done
  return 1
}

# all_serve_within T0 NAME...: each server serves by T0 (mono ms) + TTL + 5 s; sets
# BACK_MS, how long after T0 the last one did
all_serve_within() {
  local t0=$1 n now
  shift
  for n in "$@"; do
    until serves "$n"; do
      mono_ms now
      ((now < t0 + TTL + 5000)) ||
        fail "$n does not serve within the TTL + 5 s of the quorum's return: lease $(status_of "${P[$n]}" .lease.state), $(status_of "${P[$n]}" .lease.why); $(tail -n 5 "$T/$n.log")"
      sleep 0.05
    done
  done
  mono_ms now
  BACK_MS=$((now - t0))
}

# quorum: some member answers as leader
quorum() { etcd_leader >/dev/null; }
# drawn NAME N: NAME's clients have drawn N IDs of each kind (its metrics)
drawn() {
  metric_at_least "${P[$1]}" ik_ids_issued_total "$2" && metric_at_least "${P[$1]}" ik_segment_ids_total "$2" &&
    metric_at_least "${P[$1]}" ik_sequence_ids_total "$2"
}
# waits_for_slot NAME: NAME is not ready, waiting for a free slot (the range is full)
waits_for_slot() { [ "$(ik_http "http://127.0.0.1:${P[$1]}/readyz" "$T/$1.readyz")" = 503 ] && grep -q "free slot" "$T/$1.readyz"; }

up s1
up s2
up s3
for n in s1 s2 s3; do wait_until 30 drawn $n 20 || fail "$n's clients draw no IDs"; done

# ---- 1. kill -9 of the leader member ---------------------------------------------
leader=$(etcd_leader) || fail "no leader"
etcd_kill "$leader"
t_kill=$(mono_ms)
wait_until 20 quorum || fail "no new leader within 20 s of killing $leader"
t_q=$(mono_ms)
all_serve_within "$t_q" s1 s2 s3
pass "leader $leader killed -9: $(etcd_leader) leads $((t_q - t_kill)) ms after (as the test sees it); all three servers serve $BACK_MS ms after that ($((t_q + BACK_MS - t_kill)) ms after the kill)"
etcd_restart "$leader"
wait_until 20 quorum || fail "no leader after $leader came back"

# ---- 2. the quorum lost past the TTL ---------------------------------------------
leader=$(etcd_leader) || fail "no leader"
other=
for m in c0 c1 c2; do [ "$m" = "$leader" ] || { other=$m; break; }; done
etcd_kill "$leader"
etcd_kill "$other"
t_lost=$(mono_ms)
log "quorum lost: $leader and $other killed -9"
sleep $(((TTL + 2000) / 1000)) # let time pass: the quorum stays lost past the TTL
for n in s1 s2 s3; do
  ! unfenced "$n" || fail "$n serves snowflake or sequence IDs $(($(mono_ms) - t_lost)) ms into a quorum loss (TTL $TTL ms)"
done
# both at once: neither answers alone (no quorum); the quorum is back when both
# answer a linearizable read
t_r=$(mono_ms)
_etcd_launch "$leader"
_etcd_launch "$other"
_etcd_wait "$leader"
_etcd_wait "$other"
t_q=$(mono_ms)
all_serve_within "$t_q" s1 s2 s3
pass "quorum lost for $((t_r - t_lost)) ms (past the TTL): no snowflake or sequence ID served past the TTL; the members answer $((t_q - t_r)) ms after their restart, all three servers serve $BACK_MS ms after that"

# ---- 3. SIGSTOP of an idkeeper server past the TTL --------------------------------
w1=$(status_of "${P[s1]}" .worker)
# the standby waits for a slot (the range is full), not ready meanwhile
P[s4]=$(free_port)
start_server s4 "${P[s4]}" "${S[@]}" --slot-wait 120000
wait_until 30 waits_for_slot s4 || fail "the standby s4 does not wait for a slot while every slot is held: $(tail -n 3 "$T/s4.log")"
kill -STOP "${SERVER_PID[s1]}"
t_stop=$(mono_ms)
curl -s -m 60 -o "$T/queued.body" -w '%{http_code}' "http://127.0.0.1:${P[s1]}/v1/snowflake?count=5&format=text" >"$T/queued.code" &
queued=$!
IK_PIDS+=("$queued")
wait_ready "${P[s4]}" 30 || fail "s4 did not take the stopped server's slot: $(tail -n 5 "$T/s4.log")"
t_took=$(mono_ms)
w4=$(status_of "${P[s4]}" .worker)
[ "$w4" = "$w1" ] || fail "s4 took worker $w4, not the stopped s1's $w1"
draw s4
wait_until 30 drawn s4 20 || fail "s4's clients draw no IDs"
kill -CONT "${SERVER_PID[s1]}"
log "s1 stopped $((t_took - t_stop)) ms before s4 took its worker $w1; woken"
wait $queued || true
[ "$(cat "$T/queued.code")" = 503 ] ||
  fail "a request queued while s1 was stopped got $(cat "$T/queued.code"): $(cat "$T/queued.body")"
for ((i = 0; i < 40; i++)); do
  code=$(http_status "http://127.0.0.1:${P[s1]}/v1/snowflake?format=text")
  [ "$code" = 503 ] || fail "s1 answered $code after waking while s4 holds its worker $w1"
  sleep 0.05
done
[ "$(status_of "${P[s1]}" .lease.state)" != held ] || fail "s1 claims to hold a lease while s4 holds its slot"
pass "s1 stopped past the TTL: s4 took worker $w1 after $((t_took - t_stop)) ms; s1 woken answers 503 (the queued request too)"
# s1 waits for a slot again: it leaves, so that the one slot phase 4 frees is s5's
for k in snowflake segment sequence; do kill -TERM "${HP[s1.$k]}"; done
kill -TERM "${SERVER_PID[s1]}"
wait "${SERVER_PID[s1]}" || fail "s1 did not exit 0 on SIGTERM: $(tail -n 5 "$T/s1.log")"

# ---- 4. kill -9 of two idkeeper servers at once ----------------------------------
w2=$(status_of "${P[s2]}" .worker)
w3=$(status_of "${P[s3]}" .worker)
kill -KILL "${SERVER_PID[s2]}" "${SERVER_PID[s3]}"
t_k=$(mono_ms)
up s5
up s6
t_up=$(mono_ms)
got="$(status_of "${P[s5]}" .worker) $(status_of "${P[s6]}" .worker)"
[ "$got" = "$w2 $w3" ] || [ "$got" = "$w3 $w2" ] || fail "s5 and s6 took workers $got, not the dead s2's and s3's $w2 $w3"
pass "s2 and s3 killed -9: s5 and s6 took their workers $w2 and $w3 within $((t_up - t_k)) ms"
for n in s5 s6; do wait_until 30 drawn $n 100 || fail "$n's clients draw no IDs"; done

# ---- the IDs -----------------------------------------------------------------------
for n in "${!HP[@]}"; do kill -TERM "${HP[$n]}" 2>/dev/null || true; done
for n in "${!HP[@]}"; do wait "${HP[$n]}" || true; done
end=$(curl -fsS "http://127.0.0.1:${P[s4]}/v1/tags/seq" | jq -r .max_id)
for f in "$T"/s?.*.hammer; do log "$(basename "$f" .hammer): $(tail -n 1 "$f")"; done
for k in snowflake segment sequence; do
  python3 "$IK_SRC/tests/tools/idcheck.py" unique "$T"/s?.$k.ids >"$T/check" || fail "$k IDs repeat"
  log "$k: $(cat "$T/check")"
  # (a sequence request is a txn on the cluster, about 40 ms here: a few a second)
  min=100
  [ $k = sequence ] && min=10
  for n in s1 s2 s3 s4 s5 s6; do
    [ "$(wc -l <"$T/$n.$k.ids")" -gt $min ] || fail "too few $k IDs from $n: its client did not run"
  done
done
python3 "$IK_SRC/tests/tools/idcheck.py" increasing "$T"/s?.snowflake.ids >/dev/null || fail "a server's snowflake IDs do not increase"
ids_time_check "$T/s4.snowflake.ids" "$(ids_time_max "$T/s1.snowflake.ids")"
# s5 and s6 each above the dead holder of the worker they took
for n in s5 s6; do
  w=$(ids_workers "$T/$n.snowflake.ids")
  for d in s2 s3; do
    [ "$(ids_workers "$T/$d.snowflake.ids")" != "$w" ] || ids_time_check "$T/$n.snowflake.ids" "$(ids_time_max "$T/$d.snowflake.ids")"
  done
done
# the sequence: the probes took IDs too, which are in the commit logs, not in a file
/usr/bin/python3 - 1 "$end" seq s2,s3 "$T" s1 s2 s3 s4 s5 s6 >"$T/check" 2>&1 <<'PY' || fail "sequence check failed: $(cat "$T/check")"
import re, sys
start, end, tag, dead, T = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4].split(","), sys.argv[5]
names = sys.argv[6:]
commit = re.compile(r"sequence tag=%s first=(\d+) count=(\d+)" % re.escape(tag))
gap = re.compile(r"tag gap tag=%s first=(\d+|\?) count=(\d+)" % re.escape(tag))
ranges, unknown, gaps = {}, 0, 0
for n in names:
    ranges[n] = []
    for line in open("%s/%s.log" % (T, n), errors="replace"):
        m = commit.search(line) or gap.search(line)
        if not m:
            continue
        if m.re is gap:
            gaps += 1
            if m.group(1) == "?":
                unknown += int(m.group(2))
                continue
        a = int(m.group(1))
        ranges[n].append((a, a + int(m.group(2))))
got = set()
for n in names:
    for line in open("%s/%s.sequence.ids" % (T, n)):
        v = int(line)
        if v in got:
            sys.exit("%d received twice" % v)
        if not start <= v < end:
            sys.exit("%d outside the run %d..%d" % (v, start, end - 1))
        got.add(v)
logged = [0] * (end - start)
for n in names:
    for a, b in ranges[n]:
        for v in range(max(a, start), min(b, end)):
            logged[v - start] = 1
missing = [v for v in range(start, end) if v not in got]
tail = [v for v in missing if not logged[v - start]]
# the rest of a killed server's last write: a run above all it logged, one a server
runs = []
for v in tail:
    if runs and runs[-1][1] == v:
        runs[-1][1] = v + 1
    else:
        runs.append([v, v + 1])
tops = sorted(max((b for _, b in ranges[d]), default=start) for d in dead)
# each run lies above the last logged range of a killed server of its own
free = list(tops)
bad = []
for a, b in runs:
    fit = [t for t in free if t <= a]
    if fit:
        free.remove(max(fit))
    else:
        bad.append((a, b))
if bad and sum(b - a for a, b in bad) > unknown:
    sys.exit("IDs missing and in no logged range, not the rest of a killed server's last write "
             "(runs %s; the killed servers' last ranges end at %s): first %s"
             % (runs[:5], tops, bad[:5]))
print("%d IDs received of %d..%d, none twice; %d missing: %d in logged ranges (%d tag gap lines), "
      "%d in the rest of the last writes of %s" % (len(got), start, end - 1, len(missing),
                                                  len(missing) - len(tail), gaps, len(tail),
                                                  " and ".join(dead)))
PY
log "sequence: $(cat "$T/check")"
pass "over every fault: no ID twice of any kind, each server's snowflake IDs increasing, each newcomer's above its slot's last holder's; no unlogged sequence gap"
for n in s4 s5 s6; do
  kill -TERM "${SERVER_PID[$n]}"
  wait "${SERVER_PID[$n]}" || fail "$n did not exit 0 on SIGTERM: $(tail -n 5 "$T/$n.log")"
done
