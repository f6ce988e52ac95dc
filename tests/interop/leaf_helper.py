"""leaf_helper.py: a Meituan Leaf snowflake server, as far as ZooKeeper and its IDs go,
for the Leaf fleet tests (tests/integration/t_zk_leaf*.sh); Python on Debian's
python3-kazoo (run with /usr/bin/python3). Leaf itself (Java, Spring) cannot be
installed here; this follows its source, Meituan-Dianping/Leaf at 86a6441,
leaf-core/src/main/java/com/sankuai/inf/leaf/snowflake/: SnowflakeZookeeperHolder.java
(ZH:line) and SnowflakeIDGenImpl.java (GEN:line). Where it had to choose, the comment
cites the line it follows.

  serve HOSTS LEAF_NAME IP PORT OUT
      Leaf's start-up (ZH:49-108), then issues IDs by Leaf's algorithm into OUT, one
      a line, about 5,000 a second, until SIGTERM; heartbeats every 3 s, the first
      after 1 s (ZH:114-129). Prints "worker N PATH" on stdout once started, "beat
      MS" after each heartbeat written; on a refused start prints "refused: WHY" and
      exits 3.
  put HOSTS PATH DATA      creates PATH (parents too) with DATA, or sets it
  seq HOSTS PREFIX DATA    creates PREFIX as a persistent sequential node; prints it

Not followed: the local workerID.properties fallback when ZooKeeper is down at start
(ZH:95-106); the tests start with ZooKeeper up.
"""
import json
import logging
import os
import random
import signal
import sys
import threading
import time

logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient  # noqa: E402

TWEPOCH = 1288834974657  # GEN:36
WORKER_BITS, SEQ_BITS = 10, 12  # GEN:23, GEN:25
MAX_WORKER = ~(-1 << WORKER_BITS)  # GEN:24: 1023
SEQ_MASK = ~(-1 << SEQ_BITS)


def now_ms():
    return int(time.time() * 1000)  # System.currentTimeMillis() (ZH:172, GEN:106)


def build_data(ip, port):
    # ZH:171-176: Jackson writes Endpoint's fields in declaration order (ZH:231-233),
    # the port a String
    return json.dumps({"ip": ip, "port": port, "timestamp": now_ms()},
                      separators=(",", ":")).encode()


def connect(hosts):
    # ZH:51: session timeout 6000 ms
    zk = KazooClient(hosts=hosts, timeout=6.0)
    zk.start(timeout=30)
    return zk


def start(zk, leaf_name, ip, port):
    """ZH:49-94. Returns (worker, node path) or raises with the reason."""
    forever = "/snowflake/%s/forever" % leaf_name  # ZH:34, ZH:36
    listen = "%s:%s" % (ip, port)  # ZH:45
    if zk.exists(forever) is None:
        # ZH:54-61: first start: create the node, use worker 0 whatever its suffix
        node = zk.create(forever + "/" + listen + "-", build_data(ip, port),
                         sequence=True, makepath=True)
        return 0, node
    node_map, real_node = {}, {}
    for key in zk.get_children(forever):  # ZH:66-71
        parts = key.split("-")
        real_node[parts[0]] = key
        node_map[parts[0]] = int(parts[1])  # a malformed name raises, as parseInt does
    if listen in node_map:  # ZH:72-83: reuse, after the time check
        node = forever + "/" + real_node[listen]
        data, _ = zk.get(node)
        endpoint = json.loads(data.decode())  # ZH:178-182
        if endpoint["timestamp"] > now_ms():  # ZH:131-136
            raise RuntimeError("init timestamp check error,forever node timestamp gt this "
                               "node time (%s)" % node)
        return node_map[listen], node
    # ZH:84-93: a new server: a new persistent sequential node, no time check
    node = zk.create(forever + "/" + listen + "-", build_data(ip, port), sequence=True)
    return int(node.split("-")[1]), node  # ZH:88-89: the whole path split at '-'


class Gen:
    """SnowflakeIDGenImpl.get (GEN:60-95)."""

    def __init__(self, worker):
        self.worker = worker
        self.sequence = 0
        self.last = -1

    def get(self):
        ts = now_ms()
        if ts < self.last:  # GEN:63-79
            off = self.last - ts
            if off > 5:
                return None
            time.sleep((off << 1) / 1000.0)
            ts = now_ms()
            if ts < self.last:
                return None
        if self.last == ts:  # GEN:80-86
            self.sequence = (self.sequence + 1) & SEQ_MASK
            if self.sequence == 0:
                self.sequence = random.randrange(100)
                while ts <= self.last:  # tilNextMillis, GEN:97-103
                    ts = now_ms()
        else:
            self.sequence = random.randrange(100)  # GEN:87-90: random 0-99 a new ms
        self.last = ts
        return ((ts - TWEPOCH) << (WORKER_BITS + SEQ_BITS)) | (self.worker << SEQ_BITS) | \
            self.sequence


def serve(hosts, leaf_name, ip, port, out):
    zk = connect(hosts)
    try:
        worker, node = start(zk, leaf_name, ip, port)
    except Exception as e:  # ZH:95-97 (the file fallback is not followed)
        print("refused: %s" % e, flush=True)
        sys.exit(3)
    if not 0 <= worker <= MAX_WORKER:  # GEN:57
        print("refused: workerID must gte 0 and lte 1023 (%d, %s)" % (worker, node), flush=True)
        sys.exit(3)
    stop = threading.Event()
    last_update = [0]

    def heartbeat():  # ZH:114-129: fixed delay 3 s, first after 1 s
        delay = 1.0
        while not stop.wait(delay):
            delay = 3.0
            try:  # ZH:154-164
                if now_ms() < last_update[0]:
                    continue
                zk.set(node, build_data(ip, port))
                last_update[0] = now_ms()
                print("beat %d" % last_update[0], flush=True)  # for the tests
            except Exception:
                pass  # ZH:161-163: only logged; the server keeps issuing

    threading.Thread(target=heartbeat, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("worker %d %s" % (worker, node), flush=True)
    gen = Gen(worker)
    with open(out, "a") as f:
        while not stop.is_set():
            ids = [gen.get() for _ in range(50)]
            f.write("".join("%d\n" % i for i in ids if i is not None))
            f.flush()
            time.sleep(0.01)
    zk.stop()


def put(hosts, path, data):
    zk = connect(hosts)
    if zk.exists(path) is None:
        zk.create(path, data.encode(), makepath=True)
    else:
        zk.set(path, data.encode())
    zk.stop()


def seq(hosts, prefix, data):
    zk = connect(hosts)
    print(zk.create(prefix, data.encode(), sequence=True, makepath=True))
    zk.stop()


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 6 and a[0] == "serve":
        serve(*a[1:])
    elif len(a) == 4 and a[0] == "put":
        put(*a[1:])
    elif len(a) == 4 and a[0] == "seq":
        seq(*a[1:])
    else:
        sys.exit("usage: see the top of leaf_helper.py")
