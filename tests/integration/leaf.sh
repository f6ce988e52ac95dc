# leaf.sh: a Meituan Leaf snowflake fleet on the test's ZooKeeper, for the
# t_zk_leaf_* tests (bash, sourced after lib.sh and zk.sh, once zk_start_standalone
# ran). Leaf servers are tests/interop/leaf_helper.py (Leaf's own protocol, cited
# line by line there); idkeeper servers join the fleet with --leaf-name.
#
#   LEAF_HOSTS                  kazoo's connect string of $(zk_uri "$ZK_CHROOT")
#   leaf_start NAME FLEET IP:PORT   starts a Leaf helper; its IDs go to $T/NAME.ids,
#                               its log to $T/NAME.log; sets LEAF_PID[NAME]
#   leaf_worker NAME [SECS]     waits for the helper to start; prints its number
#   leaf_stop_after_beat NAME  waits for the helper's next heartbeat, then SIGSTOPs it
#   leaf_beats NAME N           (a condition) the helper has written N heartbeats
#   leaf_tool put|seq ARGS...   raw writes of leaf_helper.py (bad-input cases)
#   leaf_serve NAME PORT FLEET IP:PORT [ARGS...]   idkeeper serve in the fleet
LEAF_HOSTS="$ZK_CONNECT/$ZK_CHROOT"
declare -A LEAF_PID=()

leaf_start() {
  local name=$1 fleet=$2 id=$3
  /usr/bin/python3 "$IK_SRC/tests/interop/leaf_helper.py" serve "$LEAF_HOSTS" "$fleet" \
    "${id%:*}" "${id##*:}" "$T/$name.ids" >"$T/$name.log" 2>&1 &
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
