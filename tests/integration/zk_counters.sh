# zk_counters.sh: the segment and sequence tests on zk:// (t_zk_counters_*.sh), sourced
# after lib.sh and zk.sh. Starts a standalone ZooKeeper (unless one runs already),
# points tests/tools/counters.sh at it (DATA=zk://.../t) and adds:
#
#   zk_fleet N [ARGS...]     counters.sh's fleet on ZooKeeper, --zk-session-timeout
#                            $ZK_SESSION_MS (4 s)
#   zk_restart NAME [ARGS...]  starts server NAME again (same identity and port)
#   counter_raw TAG [APP]    an independent client's (kazoo) reading of the tag node:
#                            "MAX_ID VERSION" (MAX_ID: the first 8 bytes, big-endian,
#                            as Curator's DistributedAtomicLong reads them)
#   commit_lines NAME TAG    the "sequence tag=TAG first=A count=K" lines of NAME's log
((ZK_N > 0)) || zk_start_standalone
DATA=$(zk_uri "$ZK_CHROOT")
source "$IK_SRC/tests/tools/counters.sh"

zk_fleet() {
  local n=$1
  shift
  fleet "$n" --zk-session-timeout "$ZK_SESSION_MS" "$@"
}

zk_restart() {
  local name=$1
  shift
  start_server "$name" "${PORT[$name]}" --coord "$DATA" --threads 1 --quiet \
    --zk-session-timeout "$ZK_SESSION_MS" "$@"
  wait_ready "${PORT[$name]}" || fail "$name not ready after restart: $(tail -n 5 "$T/$name.log")"
}

counter_raw() {
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 - "$(app_base "${2:-default}")/tags/$1" <<'PY'
import logging, os, struct, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"], timeout=10)
zk.start(timeout=20)
try:
    data, st = zk.get(sys.argv[1])
    print(struct.unpack(">q", data[:8])[0], st.version)
finally:
    zk.stop()
PY
}

commit_lines() { grep -h "sequence tag=$2 " "$T/$1.log" || true; }
