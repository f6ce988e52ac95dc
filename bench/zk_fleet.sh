#!/usr/bin/env bash
# zk_fleet.sh [BUILD_DIR]: 64 `idkeeper serve` processes on zk:// started at once
# (--worker-range 0-1023, random choice): time until the last one took its slot
# (from the servers' own log lines), until ZooKeeper shows 64 owner nodes and until
# all 64 answer /readyz (both polled: one poll of all 64 takes a few hundred ms). Then all stop (SIGTERM) and start again with the
# same identities: the same figures, each one taking back its own slot.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper}
source "$here/../tests/integration/lib.sh"
ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
N=${N:-64}
zk_start_standalone
uri=$(zk_uri fleet)
declare -a PORT
for ((i = 1; i <= N; i++)); do PORT[$i]=$(zk_free_port); done

held_count() {
  "$IK_BIN" workers --coord "$uri" --app default --json 2>/dev/null | jq '[.slots[] | select(.state == "held")] | length'
}

# The latest "lease held" line of the servers' logs, in ms after $1 (Unix ms).
last_held_ms() {
  local t0=$1
  cat "$T"/f*.log | grep -h 'lease held' | cut -c1-23 | sort | tail -n 1 |
    { read -r iso; echo $(( $(date -d "$iso" +%s%3N) - t0 )); }
}

one_run() {
  local t0 t_held= t_ready= i ready
  for ((i = 1; i <= N; i++)); do : >"$T/f$i.log"; done
  t0=$(now_ms)
  for ((i = 1; i <= N; i++)); do
    start_server "f$i" "${PORT[$i]}" --coord "$uri" --worker-range 0-1023 --quiet
  done
  while :; do
    [ -z "$t_held" ] && [ "$(held_count)" = "$N" ] && t_held=$(( $(now_ms) - t0 ))
    if [ -n "$t_held" ]; then
      ready=0
      for ((i = 1; i <= N; i++)); do
        [ "$(http_status "http://127.0.0.1:${PORT[$i]}/readyz")" = 200 ] && ready=$((ready + 1))
      done
      [ $ready = "$N" ] && { t_ready=$(( $(now_ms) - t0 )); break; }
    fi
    (( $(now_ms) - t0 < 120000 )) || fail "not all $N hold slots after 120 s"
    sleep 0.02
  done
  echo "$1: $N servers started at once: the last took its slot after $(last_held_ms "$t0") ms" \
    "(its log); ZooKeeper showed $N owners after ${t_held} ms, all answered /readyz after ${t_ready} ms (polled)"
}

one_run "fresh app   "
declare -A W
for ((i = 1; i <= N; i++)); do W[$i]=$(status_of "${PORT[$i]}" .worker); done
for ((i = 1; i <= N; i++)); do kill -TERM "${SERVER_PID[f$i]}"; done
for ((i = 1; i <= N; i++)); do wait "${SERVER_PID[f$i]}" || fail "f$i did not exit 0"; done
one_run "same again  "
same=0
for ((i = 1; i <= N; i++)); do [ "$(status_of "${PORT[$i]}" .worker)" = "${W[$i]}" ] && same=$((same + 1)); done
echo "             $same of $N took back their own slot"
