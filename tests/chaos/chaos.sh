#!/usr/bin/env bash
# chaos.sh: hunts duplicate IDs under faults (docs/RELIABILITY.md).
#
#   IK_BIN=build/idkeeper IK_BUILD=build tests/chaos/chaos.sh [--seed N]
#       [--duration SECONDS] [--servers K] [--kinds snowflake,segment,sequence]
#       [--rate R]
#
# A 3-server ZooKeeper ensemble, K idkeeper servers, and one client per server and
# kind fetching IDs all the time (tests/tools/hammer, one connection each, so a
# file holds one server incarnation's answers in order); with --rate R each client
# connection sends at most R requests a second (make test's run: the whole load
# would take both cores from the tests beside it). For sequence IDs each
# server also has a client that gives up early (hammer --give-up: two connections,
# each request abandoned if not answered within 1..G ms, G from the seed, 5-40). A fault injector, driven by
# the seed, picks every 2-6 s one of:
#   kill9     kill -9 a server, restart it with the same identity
#   sigstop   SIGSTOP a server past the ZooKeeper session timeout, then SIGCONT
#   zk        stop a ZooKeeper follower for 2-8 s, then start it again
#   zkleader  the same for the ZooKeeper leader
#   clock     step one server's clock 1-4 s forwards or backwards (libfaketime's
#             timestamp file), and back to true time a few seconds later
# Then every ID is checked: no duplicate within a kind, each client file strictly
# increasing (snowflake and segment), and the sequence IDs one contiguous run except
# for IDs that a server killed -9 had committed but not answered (its commit log,
# IDKEEPER_LOG_SEQUENCE_COMMITS=1, names them) and the gaps a live server logged
# ("tag gap", e.g. why=client gone): any other gap fails the run, and so does a
# logged gap that a client received, or a server whose gap metric disagrees with
# its log.
#
# The seed fixes the schedule of faults (which, whom, how long); the timing of
# requests is the machine's. It prints its seed first: rerun with --seed to replay.
#
# libfaketime shifts CLOCK_MONOTONIC along with the wall clock. A real monotonic
# clock never goes back; here it may, which can lengthen a lease's deadline by the
# step. The time record does not depend on the monotonic clock, so this cannot
# cause a duplicate, and the run would find one if it did.
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../integration/lib.sh"
source "$here/../integration/zk.sh"

seed=$(( $(date +%s%N) % 1000000 ))
duration=120
nservers=4
kinds=snowflake,segment,sequence
rate=
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --servers) nservers=$2; shift 2 ;;
    --kinds) kinds=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    *) fail "usage: chaos.sh [--seed N] [--duration S] [--servers K] [--kinds LIST] [--rate R]" ;;
  esac
done
echo "chaos: seed $seed, duration ${duration}s, $nservers servers, kinds $kinds, ${rate:-unlimited} requests/s a client connection"
RANDOM=$seed
# rnd A B: sets R to A..B from the seeded RANDOM. Never call it in $(...): bash
# reseeds RANDOM in subshells, which would break replay by seed.
rnd() { R=$(( $1 + RANDOM % ($2 - $1 + 1) )); }

HAMMER=${IK_BUILD:?IK_BUILD must name the build dir}/tests/tools/hammer
[ -x "$HAMMER" ] || fail "no $HAMMER"
SESSION_MS=4000
has_kind() { [[ ",$kinds," == *",$1,"* ]]; }
rnd 5 40
GIVEUP_MS=$R
has_kind sequence && echo "chaos: sequence clients that give up after 1..$GIVEUP_MS ms"

zk_start_ensemble 3
URI=$(zk_uri chaos)
if has_kind segment; then
  "$IK_BIN" tags add chaos-seg --kind segment --start 1 --step 1000 --coord "$URI" >/dev/null ||
    fail "cannot create the segment tag on $URI"
fi
if has_kind sequence; then
  "$IK_BIN" tags add chaos-seq --kind sequence --start 1 --coord "$URI" >/dev/null ||
    fail "cannot create the sequence tag on $URI"
fi

# A wrapper that starts the daemon with libfaketime reading its offset from a file
# (cached for 1 s), so the injector can step a running server's clock.
faketime_bin "$T/ik-clocked" 'FAKETIME_TIMESTAMP_FILE=$IK_CLOCK_FILE' FAKETIME_CACHE_DURATION=1 IDKEEPER_LOG_SEQUENCE_COMMITS=1

declare -A PORT INC PID HPIDS KILLED_LOGS
declare -A FAULTS=([kill9]=0 [sigstop]=0 [zk]=0 [zkleader]=0 [clock]=0)

# start_clients S: one hammer per kind for server S's current incarnation.
start_clients() {
  local s=$1 inc=${INC[$1]} p=${PORT[$1]} url
  HPIDS[$s]=
  for kind in ${kinds//,/ }; do
    case $kind in
      snowflake) url="http://127.0.0.1:$p/v1/snowflake?count=10&format=text" ;;
      segment) url="http://127.0.0.1:$p/v1/segment/chaos-seg?count=10&format=text" ;;
      sequence) url="http://127.0.0.1:$p/v1/sequence/chaos-seq?count=5&format=text" ;;
    esac
    "$HAMMER" --url "$url" --connections 1 --duration $((duration + 60)) --drain 5 --quiet ${rate:+--rate "$rate"} \
      --out "$T/ids.$kind.$s.$inc" >"$T/hammer.$kind.$s.$inc.out" 2>&1 &
    HPIDS[$s]+=" $!"
    IK_PIDS+=($!)
    [ "$kind" = sequence ] || continue
    # clients that give up; answers that reach them after that go to FILE.late
    "$HAMMER" --url "$url" --connections 2 --duration $((duration + 60)) --drain 5 --quiet ${rate:+--rate "$rate"} \
      --give-up "$GIVEUP_MS" --out "$T/ids.$kind.$s.$inc.gu" >"$T/hammer.giveup.$s.$inc.out" 2>&1 &
    HPIDS[$s]+=" $!"
    IK_PIDS+=($!)
  done
}

# start S: a new incarnation of server S (same identity, same port).
start() {
  local s=$1
  INC[$s]=$(( ${INC[$s]:--1} + 1 ))
  echo "+0s" >"$T/clock.$s"
  IK_CLOCK_FILE="$T/clock.$s" "$T/ik-clocked" serve --coord "$URI" --http "127.0.0.1:${PORT[$s]}" \
    --identity "chaos-$s" --worker-range 0-15 --zk-session-timeout $SESSION_MS --quiet \
    >"$T/server.$s.${INC[$s]}.log" 2>&1 &
  PID[$s]=$!
  IK_PIDS+=($!)
}

# ready_then_clients S: waits for S to serve, then starts its clients.
ready_then_clients() {
  wait_ready "${PORT[$1]}" 30 || fail "server $1 (incarnation ${INC[$1]}) not ready in 30 s"
  start_clients "$1"
}

for ((s = 0; s < nservers; s++)); do
  PORT[$s]=$(free_port)
  start $s
done
for ((s = 0; s < nservers; s++)); do ready_then_clients $s; done

end=$(( $(date +%s) + duration ))
while [ "$(date +%s)" -lt "$end" ]; do
  rnd 2 6; sleep "$R"
  rnd 0 $((nservers - 1)); s=$R
  rnd 0 4
  case $R in
    0) # kill -9 and restart with the same identity
      log "fault kill9: server $s (incarnation ${INC[$s]})"
      kill -9 "${PID[$s]}"; wait "${PID[$s]}" 2>/dev/null || true
      KILLED_LOGS[$s.${INC[$s]}]=1
      rnd 0 2; sleep "$R"
      start $s; ready_then_clients $s
      FAULTS[kill9]=$(( FAULTS[kill9] + 1 )) ;;
    1) # pause past the session timeout
      log "fault sigstop: server $s for $((SESSION_MS / 1000 + 2)) s"
      kill -STOP "${PID[$s]}"; sleep $((SESSION_MS / 1000 + 2)); kill -CONT "${PID[$s]}"
      FAULTS[sigstop]=$(( FAULTS[sigstop] + 1 )) ;;
    2|3) # a ZooKeeper server down for a while (the leader on 3)
      leader=$(zk_leader || echo 1)
      rnd 1 3; z=$R; [ $(( RANDOM % 2 )) -eq 0 ] && [ -n "$leader" ] && z=$leader
      kind=zk; [ "$z" = "$leader" ] && kind=zkleader
      rnd 2 8; d=$R
      log "fault $kind: ZooKeeper server $z down for $d s"
      zk_stop "$z"; sleep "$d"; zk_start "$z"; zk_wait_quorum 300 # generous: a loaded machine can take minutes (rule 5)
      FAULTS[$kind]=$(( FAULTS[$kind] + 1 )) ;;
    4) # step the clock, then back to true time
      rnd 1 4; step=$R; [ $(( RANDOM % 2 )) -eq 0 ] && step=-$step
      log "fault clock: server $s clock ${step} s"
      printf '%+ds\n' "$step" >"$T/clock.$s"; rnd 3 6; sleep "$R"; echo "+0s" >"$T/clock.$s"
      FAULTS[clock]=$(( FAULTS[clock] + 1 )) ;;
  esac
done

# Stop the clients (they drain what is in flight), then the servers.
for ((s = 0; s < nservers; s++)); do kill -TERM ${HPIDS[$s]} 2>/dev/null || true; done
for ((s = 0; s < nservers; s++)); do for h in ${HPIDS[$s]}; do wait "$h" 2>/dev/null || true; done; done
# Each server's metrics once nothing is pending (a gap is logged when its commit
# comes back), for the check of the gap counter against the log.
FINAL=()
for ((s = 0; s < nservers; s++)); do
  m="$T/metrics.$s.${INC[$s]}"
  for _ in $(seq 600); do
    curl -fsS --max-time 5 "http://127.0.0.1:${PORT[$s]}/metrics" >"$m" 2>/dev/null &&
      awk '$1 == "ik_pending_requests" && $2 == 0 { ok = 1 } END { exit !ok }' "$m" && break
    rm -f "$m"
    sleep 0.05
  done
  [ -s "$m" ] && FINAL+=("$s.${INC[$s]}")
done
for ((s = 0; s < nservers; s++)); do kill -TERM "${PID[$s]}" 2>/dev/null || true; done
for ((s = 0; s < nservers; s++)); do wait "${PID[$s]}" 2>/dev/null || true; done

# ---- checks ------------------------------------------------------------------------
total=0
per_kind=""
for kind in ${kinds//,/ }; do
  files=("$T"/ids.$kind.*)
  [ -e "${files[0]}" ] || fail "no $kind IDs at all"
  if [ "$kind" != sequence ]; then
    # Each client's file increases, so merging the files (no sort, no temp files:
    # a 30-minute run holds tens of GB of IDs) brings every duplicate together.
    for f in "${files[@]}"; do assert_increasing "$f"; done
    sort -m -n --batch-size=$(( ${#files[@]} + 2 )) "${files[@]}"
  else
    sort -S 25% --parallel=2 -n "${files[@]}" | tee "$T/all.$kind"
  fi | uniq -c | awk '{ n += $1 } $1 > 1 && d < 3 { print "duplicate " $2 " (" $1 " times)"; d++ }
                      END { print n + 0 }' >"$T/check.$kind"
  n=$(tail -n 1 "$T/check.$kind")
  d=$(grep '^duplicate' "$T/check.$kind" || true)
  [ -z "$d" ] || fail "$kind: duplicate IDs: $d"
  [ "$n" -gt 0 ] || fail "$kind: no IDs"
  log "$kind: $n IDs, no duplicate, each client's increasing"
  total=$((total + n))
  per_kind+="${per_kind:+, }$kind $n"
done

if has_kind sequence; then
  # Every gap in the sequence must be explained by one of:
  #   1. a range that a server killed -9 had logged ("sequence tag=chaos-seq first=A
  #      count=K", written after the store acknowledged the write and before the
  #      answer is queued) and that no client received;
  #   2. the rest of a killed server's last write: ZooKeeper acknowledged it, but the
  #      kill came before the committer logged its ranges. At most one such run per
  #      killed incarnation, above everything that incarnation logged, overlapping
  #      no range any server logged (the same rule as idcheck.py kill9);
  #   3. a range a server reported as "tag gap tag=chaos-seq first=A count=K why=W": a
  #      write whose answer was lost, that landed, and that could only be settled
  #      after its call had given up (docs/zookeeper.md, "Tags"), or a range
  #      committed for a client that had given up ("... why=client gone"), or any
  #      other cause (docs/sequence.md);
  #   4. the IDs of a gap reported with no place ("first=? count=K", a write that
  #      may have landed): what 1-3 leave unexplained adds up to at most their sum.
  # No client may hold an ID of a reported gap. Every cause is held to the metric:
  # each server still running at the end counts in ik_sequence_gap_ids_total{why=W}
  # no more than its log reports for W when /metrics is read (its stop may log
  # more: a doubt settled at close), and a server that stopped cleanly writes the
  # metric at exit ("at exit: ik_sequence_gap_ids_total{...} N", docs/http.md),
  # which must equal its log, cause by cause. IDs that reached a giving-up client
  # after it gave up (its FILE.late) were delivered: they count as answered.
  /usr/bin/python3 - "$T" "${FINAL[*]}" "${!KILLED_LOGS[@]}" >"$T/seq-check" <<'PY' || { cat "$T/seq-check"; fail "sequence has a gap"; }
import glob, os, re, sys
T, final, killed = sys.argv[1], sys.argv[2].split(), set(sys.argv[3:])
LOG = re.compile(r"sequence tag=chaos-seq first=(\d+) count=(\d+)")
GAP = re.compile(r"tag gap tag=chaos-seq first=(\d+|\?) count=(\d+) why=([^(\n]*?)\s*(?:\(|$)")
EXIT = re.compile(r'at exit: ik_sequence_gap_ids_total\{tag="chaos-seq",why="([^"]+)"\} (\d+)')
# the daemon's causes as its log writes them -> their metric labels (metrics.c)
LABEL = {"client gone": "client_gone", "shutdown deadline": "shutdown_deadline",
         "ids above 2^53 asked as numbers": "ids_too_large"}
logged, reported, causes, at_exit, stopped = {}, [], {}, {}, set()
unplaced = 0
for path in glob.glob(os.path.join(T, "server.*.log")):
    key = os.path.basename(path)[len("server."):-len(".log")]
    rs = []
    causes[key], at_exit[key] = {}, {}
    for line in open(path, errors="replace"):
        m = LOG.search(line)
        if m:
            rs.append((int(m.group(1)), int(m.group(1)) + int(m.group(2))))
        m = GAP.search(line)
        if m:
            k, why = int(m.group(2)), LABEL.get(m.group(3), m.group(3))
            causes[key][why] = causes[key].get(why, 0) + k
            if m.group(1) == "?":
                unplaced += k
            else:
                reported.append((int(m.group(1)), int(m.group(1)) + k))
        m = EXIT.search(line)
        if m:
            at_exit[key][m.group(1)] = at_exit[key].get(m.group(1), 0) + int(m.group(2))
        if line.rstrip().endswith("; bye"):
            stopped.add(key)
    logged[key] = rs
gone_logged = {k: c.get("client_gone", 0) for k, c in causes.items()}
have = set(int(l) for l in open(os.path.join(T, "all.sequence")) if l.strip())
for a, b in reported:
    for x in range(a, b):
        if x in have:
            print("sequence: %d is in a gap a server logged (%d..%d), yet a client holds it"
                  % (x, a, b - 1))
            sys.exit(1)
withdrawn = 0
for key in final:
    metric = {}
    for line in open(os.path.join(T, "metrics." + key)):
        f = line.split()
        if len(f) == 2 and not line.startswith("#"):
            metric[f[0]] = int(float(f[1]))
    pre = 'ik_sequence_gap_ids_total{tag="chaos-seq",why="'
    for name, n in metric.items():
        if name.startswith(pre):
            why = name[len(pre):-2]
            if n > causes[key].get(why, 0):
                print("sequence: server %s counts %d gap IDs why=%s, its log names %d"
                      % (key, n, why, causes[key].get(why, 0)))
                sys.exit(1)
    withdrawn += metric.get("ik_sequence_requests_withdrawn_total", 0)
for key in stopped:  # a clean stop wrote the metric at exit: equal to the log, by cause
    if at_exit[key] != causes[key]:
        print("sequence: server %s logged gaps %s, its metric at exit counts %s"
              % (key, causes[key], at_exit[key]))
        sys.exit(1)
n_gone = sum(gone_logged.values())
top = max(have)
def inside(x, rs):
    return any(a <= x < b for a, b in rs)
dead = [r for k in killed for r in logged.get(k, [])]
every = [r for rs in logged.values() for r in rs]
runs = []  # missing IDs in no logged or reported range, as [first, last] runs
n_logged = n_reported = 0
for x in range(1, top + 1):
    if x in have:
        continue
    if inside(x, dead):
        n_logged += 1
    elif inside(x, reported):
        n_reported += 1
    elif inside(x, every):
        print("sequence: gap at %d, logged by a server that was not killed" % x)
        sys.exit(1)
    elif runs and runs[-1][1] == x - 1:
        runs[-1][1] = x
    else:
        runs.append([x, x])
tops = sorted(max((b for _, b in logged.get(k, [])), default=1) for k in killed)
left = []
for a, b in runs:  # each run: the unlogged rest of one killed incarnation's last write
    k = max((i for i, t in enumerate(tops) if t <= a), default=None)
    if k is None:
        left.append((a, b))
    else:
        tops.pop(k)
if sum(b - a + 1 for a, b in left) > unplaced:
    print("sequence: gaps %s not explained by a killed server, and more than the %d IDs "
          "reported as gaps of unknown place" % (left[:5], unplaced))
    sys.exit(1)
print("sequence: contiguous 1..%d except %d IDs logged by killed servers, %d in %d unlogged "
      "last writes of killed servers, %d in reported gaps, %d in gaps of unknown place (of "
      "%d reported); %d IDs logged as gaps of clients gone; %d requests withdrawn by the "
      "servers still running at the end; gaps by cause: %s"
      % (top, n_logged, sum(b - a + 1 for a, b in runs if (a, b) not in left),
         len(runs) - len(left), n_reported, sum(b - a + 1 for a, b in left), unplaced, n_gone,
         withdrawn, " ".join("%s=%d" % (w, sum(c.get(w, 0) for c in causes.values()))
                             for w in sorted({w for c in causes.values() for w in c}))))
PY
  log "$(cat "$T/seq-check")"
  gaveup=0 late=0
  for f in "$T"/hammer.giveup.*.out; do
    g=$(sed -n 's/.* gaveup=\([0-9]*\).*/\1/p' "$f"); gaveup=$((gaveup + ${g:-0}))
    l=$(sed -n 's/.* late=\([0-9]*\).*/\1/p' "$f"); late=$((late + ${l:-0}))
  done
  [ "$gaveup" -gt 0 ] || fail "no sequence client gave up: $(cat "$T"/hammer.giveup.*.out)"
  log "sequence: clients gave up on $gaveup requests; $late IDs reached them after they gave up"
fi

faults=""
for k in kill9 sigstop zk zkleader clock; do faults+=" $k=${FAULTS[$k]}"; done
echo "chaos: seed $seed: $total IDs checked ($per_kind), 0 duplicates; faults:$faults"
pass "chaos run"
