#!/usr/bin/env bash
# lock_zk_ops.sh [BUILD_DIR]: ZooKeeper requests per lock acquire+release cycle, by
# type, for idkeeper (tests/interop/ik_interop.c bench-lock) and for Curator's
# InterProcessMutex (tests/interop/CuratorHelper.java bench-mutex), 1 and 4
# contending clients, counted by the server itself: the standalone test server
# (tests/integration/zk.sh) logs every request its FinalRequestProcessor applies
# (DEBUG for that one class), and the requests of each run are counted by type
# over the cycles the run made. A count does not depend on the machine's load, so
# this is the figure to trust on a shared machine; the wall-clock throughput is
# bench/lock_zk.sh's. Pings and session open/close are left out (per session, not
# per cycle).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export IK_BIN=${IK_BIN:-$build/idkeeper} IK_BUILD=$build IK_SRC=$(cd "$here/.." && pwd)
export ZK_JAVA_OPTS="${ZK_JAVA_OPTS--XX:TieredStopAtLevel=1} -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.server.FinalRequestProcessor=debug"
source "$here/../tests/integration/lib.sh"
source "$here/../tests/integration/zk.sh"
source "$here/../tests/interop/build.sh"
SECS=${SECS:-2}

zk_start_standalone
interop_build_c
interop_build_java
uri=$(zk_uri bench)
zlog=$T/zk1.log

# count SIDE N FROM: the requests logged since line FROM, by type, per cycle
count() {
  local cycles=$1 from=$2
  tail -n +"$from" "$zlog" | grep -a 'Processing request::' |
    sed -n 's/.* type:\([A-Za-z0-9]*\) .*/\1/p' |
    grep -v -x -E 'ping|createSession|closeSession' |
    sort | uniq -c | awk -v c="$cycles" '
      { n[$2] = $1; t += $1; if ($2 ~ /^(create|create2|createContainer|delete|setData|multi)$/) w += $1 }
      END {
        printf "%.2f requests (%.2f writes):", t / c, w / c
        for (k in n) if (n[k] / c >= 0.005) printf " %s %.2f", k, n[k] / c
        printf "\n"
      }'
}
run() { # SIDE N
  local from cycles
  sleep 1
  from=$(($(wc -l <"$zlog") + 1))
  if [ "$1" = idkeeper ]; then
    "${IK_INTEROP[@]}" bench-lock "$uri" "/ops$2" "$2" "$SECS" >"$T/out"
  else
    "${CURATOR[@]}" bench-mutex "$ZK_CONNECT" "/bench/ops$2" "$2" "$SECS" >"$T/out" 2>/dev/null
  fi
  sleep 1 # the server's log of the last requests
  cycles=$(awk '{print $4}' "$T/out")
  printf '%-8s %d client(s): %6d cycles, per cycle %s\n' "$1" "$2" "$cycles" "$(count "$cycles" "$from")"
}
echo "ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone on loopback; requests counted by the server over ${SECS}s + 1 s runs"
for n in 1 4; do
  run idkeeper "$n"
  run Curator "$n"
done
