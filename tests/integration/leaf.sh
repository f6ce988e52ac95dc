# leaf.sh: a Meituan Leaf snowflake fleet on the test's ZooKeeper, for the
# t_zk_leaf_* tests (bash, sourced after lib.sh and zk.sh, once zk_start_standalone
# ran). Leaf servers are tests/interop/leaf_helper.py (Leaf's own protocol, cited
# line by line there); idkeeper servers join the fleet with --leaf-name.
#
#   LEAF_HOSTS                  kazoo's connect string of $(zk_uri "$ZK_CHROOT")
#   leaf_start NAME FLEET IP:PORT [HOST]   starts a Leaf helper on host HOST's
#                               java.io.tmpdir, $T/host-HOST (default: the IP; it
#                               holds Leaf's cache, leaf_cache_file); its IDs go to
#                               $T/NAME.ids, its log to $T/NAME.log; sets LEAF_PID[NAME]
#                               (LEAF_FAKETIME=OFFSET: with its clock that far off,
#                               "+3s", by libfaketime)
#   leaf_worker NAME [SECS]     waits for the helper to start; prints its number
#   leaf_from_cache NAME        0 if the helper started on its cached number (no
#                               heartbeat: Leaf's catch in SnowflakeZookeeperHolder.init)
#   leaf_cache_file FLEET PORT HOST   the path of that host's workerID.properties
#   leaf_stop_after_beat NAME  waits for the helper's next heartbeat, then SIGSTOPs it
#   leaf_beats NAME N           (a condition) the helper has written N heartbeats
#   leaf_tool put|seq ARGS...   raw writes of leaf_helper.py (bad-input cases)
#   leaf_serve NAME PORT FLEET IP:PORT [ARGS...]   idkeeper serve in the fleet
#   ids_at_least FILE N         FILE has N lines (IDs) or more
#   ids_apart FILE...           the IDs of each file (an issuer's) decoded: no two files
#                               issue on one worker number in overlapping times (a
#                               duplicate needs the same ms and sequence too, so this
#                               catches two issuers of one number where a duplicate
#                               may not have happened yet), and no ID twice
LEAF_HOSTS="$ZK_CONNECT/$ZK_CHROOT"
declare -A LEAF_PID=()

leaf_start() {
  local name=$1 fleet=$2 id=$3 host=${4:-${3%:*}} f pre=()
  mkdir -p "$T/host-$host"
  if [ -n "${LEAF_FAKETIME:-}" ]; then
    for f in /usr/lib/*/faketime/libfaketime.so.1 /usr/lib/faketime/libfaketime.so.1; do
      [ -f "$f" ] && pre=(env LD_PRELOAD="$f" FAKETIME="$LEAF_FAKETIME")
    done
    ((${#pre[@]})) || fail "libfaketime.so.1 not found (apt-get install libfaketime)"
  fi
  : >"$T/$name.log" # now, not in the background: a name started again has a new log at once
  "${pre[@]}" /usr/bin/python3 "$IK_SRC/tests/interop/leaf_helper.py" serve "$LEAF_HOSTS" "$fleet" \
    "${id%:*}" "${id##*:}" "$T/$name.ids" "$T/host-$host" >>"$T/$name.log" 2>&1 &
  LEAF_PID[$name]=$!
  IK_PIDS+=($!)
}

leaf_worker() {
  local name=$1 limit=${2:-30} i
  for ((i = 0; i < limit * 20; i++)); do
    if grep -q '^worker ' "$T/$name.log"; then
      sed -n 's/^worker \([0-9]*\) .*/\1/p' "$T/$name.log" | head -n 1
      return 0
    fi
    grep -q '^refused' "$T/$name.log" && return 1
    alive "${LEAF_PID[$name]}" || return 1
    sleep 0.05
  done
  return 1
}

leaf_from_cache() { grep -q '^worker [0-9]* cache ' "$T/$1.log"; }

leaf_cache_file() { echo "$T/host-$3/$1/leafconf/$2/workerID.properties"; }

leaf_stop_after_beat() {
  local name=$1 n i
  n=$(grep -c '^beat ' "$T/$name.log" || true)
  for ((i = 0; i < 200; i++)); do
    if (($(grep -c '^beat ' "$T/$name.log" || true) > n)); then
      kill -STOP "${LEAF_PID[$name]}"
      return 0
    fi
    sleep 0.025
  done
  fail "leaf helper $name wrote no heartbeat in 5 s"
}

leaf_beats() { (($(grep -c '^beat ' "$T/$1.log" || true) >= $2)); }

leaf_tool() { /usr/bin/python3 "$IK_SRC/tests/interop/leaf_helper.py" "$1" "$LEAF_HOSTS" "${@:2}"; }

leaf_serve() {
  local name=$1 port=$2 fleet=$3 id=$4
  shift 4
  zk_serve "$name" "$port" --leaf-name "$fleet" --identity "$id" "$@"
}

ids_at_least() { [ -f "$1" ] && (($(wc -l <"$1") >= $2)); }

ids_apart() {
  /usr/bin/python3 - "$@" <<'PY' || fail "IDs of two issuers on one worker number at the same time"
import sys
span, seen, dup = {}, {}, []
for f in sys.argv[1:]:
    for line in open(f):
        if not line.strip():
            continue
        x = int(line)
        w, t = (x >> 12) & 1023, (x >> 22) + 1288834974657
        lo_hi = span.setdefault((f, w), [t, t])
        lo_hi[0], lo_hi[1] = min(lo_hi[0], t), max(lo_hi[1], t)
        if seen.setdefault(x, f) != f and len(dup) < 3:
            dup.append("%d (%s and %s)" % (x, seen[x], f))
bad = ["worker %d: %s %d-%d and %s %d-%d" % (w, a, sa[0], sa[1], b, sb[0], sb[1])
       for (a, w), sa in span.items() for (b, w2), sb in span.items()
       if a < b and w == w2 and sa[0] <= sb[1] and sb[0] <= sa[1]]
for m in bad[:3] + ["the same ID twice: " + d for d in dup]:
    print(m, file=sys.stderr)
sys.exit(1 if bad or dup else 0)
PY
}
