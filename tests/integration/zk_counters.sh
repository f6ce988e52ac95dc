# zk_counters.sh: the counters' store on zk://, sourced by tests/tools/counters.sh
# when IK_STORE=zk (t_zk_counters_*.sh and the zk variant of t_counters_*.sh; the
# conformance groups take counter_raw from here too, tests/conformance/conf.sh), after
# zk.sh. Starts a standalone ZooKeeper (unless one runs already), points counters.sh
# at it (DATA=zk://.../t, servers with --zk-session-timeout $ZK_SESSION_MS, 4 s) and
# adds:
#
#   counter_raw TAG [APP]    an independent client's (kazoo) reading of the tag node:
#                            "MAX_ID VERSION" (MAX_ID: the first 8 bytes, big-endian,
#                            as Curator's DistributedAtomicLong reads them)
#   commit_lines NAME TAG    the "sequence tag=TAG first=A count=K" lines of NAME's log
((ZK_N > 0)) || zk_start_standalone
DATA=$(zk_uri "$ZK_CHROOT")
SERVE_ARGS=(--zk-session-timeout "$ZK_SESSION_MS")

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
