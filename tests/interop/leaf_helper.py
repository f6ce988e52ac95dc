"""leaf_helper.py: a Meituan Leaf snowflake server, as far as ZooKeeper, its local cache
file and its IDs go, for the Leaf fleet tests (tests/integration/t_zk_leaf*.sh); Python
on Debian's python3-kazoo (run with /usr/bin/python3). Leaf itself (Java, Spring)
cannot be installed here; this follows its source, Meituan-Dianping/Leaf at 86a6441,
leaf-core/src/main/java/com/sankuai/inf/leaf/snowflake/: SnowflakeZookeeperHolder.java
(ZH:line) and SnowflakeIDGenImpl.java (GEN:line), with leaf-server's
SnowflakeService.java (SVC:line). Each step cites the line it follows, error paths
included.

  serve HOSTS LEAF_NAME IP PORT OUT TMPDIR
      Leaf's start-up (ZH:49-108), TMPDIR standing for the host's java.io.tmpdir,
      which holds the cache file TMPDIR/LEAF_NAME/leafconf/PORT/workerID.properties
      (ZH:35). Then issues IDs by Leaf's algorithm into OUT, one a line, about 5,000 a
      second, until SIGTERM. Prints on stdout, for the tests:
        "worker N PATH"        started on ZooKeeper's node PATH; heartbeats every 3 s,
                               the first after 1 s (ZH:114-129), each printed
                               "beat MS" once written
        "worker N cache FILE"  the start-up failed and N came from the cache file
                               (ZH:95-101): no heartbeat is ever written
        "error: WHY"           what made the start-up fail, before the cache is read
        "refused: WHY"         no number at all: exits 3 (ZH:102-104, GEN:50-57)
  put HOSTS PATH DATA      creates PATH (parents too) with DATA, or sets it
  seq HOSTS PREFIX DATA    creates PREFIX as a persistent sequential node; prints it

What Leaf does at start, in short (the reason the tests have this helper): one
`catch (Exception e)` covers the whole start-up (ZH:95), whether ZooKeeper cannot be
reached, a child of the forever path is not IP:PORT-N (ZH:68-70), the node's data is
not an Endpoint (ZH:178-182) or its timestamp is ahead of the clock (ZH:77-79). The
catch reads the cached worker number and starts on it (ZH:98-101, returns true at
ZH:107), without scheduling a heartbeat; only without a readable cache file does the
start fail (ZH:102-104).
"""
import json
import logging
import os
import random
import re
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
INT_MIN, INT_MAX = -(1 << 31), (1 << 31) - 1
LONG_MIN, LONG_MAX = -(1 << 63), (1 << 63) - 1


def now_ms():
    return int(time.time() * 1000)  # System.currentTimeMillis() (ZH:135, ZH:172, GEN:106)


def java_parse_int(s):
    """Integer.parseInt / Integer.valueOf (ZH:70, ZH:89, ZH:100): an optional sign and
    ASCII digits, within int; anything else (null included) raises."""
    if s is None or not re.fullmatch(r"[+-]?[0-9]+", s):
        raise ValueError("NumberFormatException: For input string: \"%s\"" % s)
    v = int(s)
    if not INT_MIN <= v <= INT_MAX:
        raise ValueError("NumberFormatException: For input string: \"%s\"" % s)
    return v


def java_split_dash(s):
    """String.split("-") (ZH:68, ZH:88): trailing empty strings are dropped."""
    parts = s.split("-")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def java_index(parts, i):
    """nodeKey[i] (ZH:70, ZH:89): past the end throws."""
    if i >= len(parts):
        raise IndexError("ArrayIndexOutOfBoundsException: %d" % i)
    return parts[i]


def build_data(ip, port):
    # ZH:171-176: Jackson writes Endpoint's fields in declaration order (ZH:231-233),
    # the port a String
    return json.dumps({"ip": ip, "port": port, "timestamp": now_ms()},
                      separators=(",", ":")).encode()


def debuild_data(text):
    """ZH:178-182, ObjectMapper().readValue(json, Endpoint.class) as Jackson 2.9.6 (the
    version Leaf's pom names) reads it: the first JSON value must be an object (what
    follows it is not read: FAIL_ON_TRAILING_TOKENS is off); an unknown key fails
    (FAIL_ON_UNKNOWN_PROPERTIES is on); ip and port take any scalar as text;
    timestamp, a long, takes an integer, a float (truncated), a string of one, or
    null, "" (0). Returns the timestamp; raises where Jackson throws."""
    value, _ = json.JSONDecoder().raw_decode(text.lstrip(" \t\r\n"))
    if not isinstance(value, dict):
        raise ValueError("MismatchedInputException: not an Endpoint object")
    ts = 0  # a long field never set stays 0
    for key, v in value.items():
        if key in ("ip", "port"):
            if isinstance(v, (dict, list)):
                raise ValueError("MismatchedInputException: %s is not a String" % key)
        elif key == "timestamp":
            if v is None or (isinstance(v, str) and v.strip() in ("", "null")):
                ts = 0
            elif isinstance(v, bool) or isinstance(v, (dict, list)):
                raise ValueError("MismatchedInputException: timestamp is not a long")
            elif isinstance(v, (int, float)):
                ts = int(v)
            else:
                ts = int(v.strip()) if re.fullmatch(r"[+-]?[0-9]+", v.strip()) else None
                if ts is None:
                    raise ValueError("InvalidFormatException: timestamp '%s'" % v)
            if not LONG_MIN <= ts <= LONG_MAX:
                raise ValueError("InputCoercionException: timestamp out of range")
        else:
            raise ValueError("UnrecognizedPropertyException: \"%s\"" % key)
    return ts


def prop_path(tmpdir, leaf_name, port):
    # ZH:35: java.io.tmpdir + File.separator + leaf.name + "/leafconf/{port}/workerID.properties"
    # ({port} replaced at ZH:99 and ZH:190)
    return os.path.join(tmpdir, leaf_name, "leafconf", port, "workerID.properties")


def update_local_worker_id(path, worker):
    """ZH:189-217: writes "workerID=N" if the file exists; else makes its parent
    directories and, only if mkdirs made one (File.mkdirs is false for a directory
    that already exists, ZH:203-205), creates the file and writes it. Every error is
    only logged."""
    try:
        if os.path.exists(path):  # ZH:191-199
            with open(path, "w") as f:
                f.write("workerID=%d" % worker)
            return
        parent = os.path.dirname(path)
        made = False
        if not os.path.isdir(parent):  # ZH:203: mkdirs
            os.makedirs(parent)
            made = True
        if made and not os.path.exists(path):  # ZH:205-209: createNewFile, then write
            with open(path, "w") as f:
                f.write("workerID=%d" % worker)
    except OSError:
        pass  # ZH:197, ZH:213-215: logged


def load_properties(path):
    """java.util.Properties.load (ZH:98-99), the part a workerID file can need: blank
    lines and '#' or '!' comments skipped; the key ends at '=', ':' or white space;
    the value is the rest of the line after the separator and leading white space.
    A missing file raises (FileInputStream, ZH:99)."""
    props = {}
    with open(path, "r", encoding="latin-1") as f:
        for line in f.read().splitlines():
            s = line.lstrip(" \t\f")
            if not s or s[0] in "#!":
                continue
            m = re.match(r"([^=: \t\f]*)[ \t\f]*[=:]?[ \t\f]*(.*)$", s)
            props[m.group(1)] = m.group(2)
    return props


def connect(hosts, timeout):
    # ZH:51, ZH:219-225: session timeout 6000 ms; Curator's first call waits up to the
    # connection timeout, 10000 ms, for a connection, then fails (RetryUntilElapsed(1000, 4)
    # retries no longer than 1 s)
    zk = KazooClient(hosts=hosts, timeout=6.0)
    zk.start(timeout=timeout)
    return zk


class Holder:
    """SnowflakeZookeeperHolder (ZH:29-293)."""

    def __init__(self, hosts, leaf_name, ip, port, tmpdir):
        self.hosts, self.ip, self.port = hosts, ip, port
        self.listen = "%s:%s" % (ip, port)  # ZH:45
        self.forever = "/snowflake/%s/forever" % leaf_name  # ZH:34, ZH:36
        self.prop = prop_path(tmpdir, leaf_name, port)
        self.worker = 0  # ZH:33: an int field, 0 until set
        self.node = None
        self.zk = None
        self.scheduled = False
        self.cached = False
        self.last_update = 0  # ZH:40

    def create_node(self):
        # ZH:145-152: creatingParentsIfNeeded, PERSISTENT_SEQUENTIAL
        return self.zk.create(self.forever + "/" + self.listen + "-",
                              build_data(self.ip, self.port), sequence=True, makepath=True)

    def check_init_timestamp(self, node):
        # ZH:131-136
        data, _ = self.zk.get(node)
        return not (debuild_data(data.decode("utf-8", "replace")) > now_ms())

    def init(self):
        """ZH:49-108: True once a worker number is known, else False."""
        try:
            self.zk = connect(self.hosts, 10.0)  # ZH:51-52
            if self.zk.exists(self.forever) is None:  # ZH:53-54
                # ZH:55-61: the first start: a node, worker 0 whatever its suffix
                self.node = self.create_node()
                update_local_worker_id(self.prop, self.worker)
                self.scheduled = True
                return True
            node_map, real_node = {}, {}
            for key in self.zk.get_children(self.forever):  # ZH:66-71
                parts = java_split_dash(key)
                real_node[parts[0]] = key  # the last of an IP:PORT in the list wins
                node_map[parts[0]] = java_parse_int(java_index(parts, 1))
            if self.listen in node_map:  # ZH:72-83
                self.node = self.forever + "/" + real_node[self.listen]
                self.worker = node_map[self.listen]  # ZH:76: before the check
                if not self.check_init_timestamp(self.node):  # ZH:77-79
                    raise RuntimeError("CheckLastTimeException: init timestamp check error,"
                                       "forever node timestamp gt this node time (%s)" % self.node)
                self.scheduled = True  # ZH:81, doService
                update_local_worker_id(self.prop, self.worker)  # ZH:82
            else:  # ZH:84-93: a new server: a new node, no time check
                new_node = self.create_node()
                self.node = new_node
                # ZH:88-89: the whole path split at '-' (a leaf.name with a '-' fails here)
                parts = java_split_dash(new_node)
                self.worker = java_parse_int(java_index(parts, 1))
                self.scheduled = True  # ZH:90
                update_local_worker_id(self.prop, self.worker)  # ZH:91
        except Exception as e:  # ZH:95-106
            print("error: %s" % e, flush=True)
            self.scheduled = False  # nothing scheduled on this path (ZH:60, 81, 90 not reached)
            try:
                props = load_properties(self.prop)  # ZH:98-99
                self.worker = java_parse_int(props.get("workerID"))  # ZH:100
                self.cached = True  # ZH:101: "START FAILED ,use local node file properties"
            except Exception as e1:  # ZH:102-104
                print("refused: %s; read file error: %s" % (e, e1), flush=True)
                return False
        return True  # ZH:107

    def heartbeat(self, stop):
        """ZH:114-129 scheduleWithFixedDelay(1 s, then 3 s), ZH:154-164 updateNewData."""
        delay = 1.0
        while not stop.wait(delay):
            delay = 3.0
            try:
                if now_ms() < self.last_update:  # ZH:156-158
                    continue
                self.zk.set(self.node, build_data(self.ip, self.port))  # ZH:159, no version
                self.last_update = now_ms()  # ZH:160
                print("beat %d" % self.last_update, flush=True)  # for the tests
            except Exception:
                pass  # ZH:161-163: only logged; the server keeps issuing


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


def serve(hosts, leaf_name, ip, port, out, tmpdir):
    h = Holder(hosts, leaf_name, ip, port, tmpdir)
    if not h.init():  # GEN:50-56, SVC:28: the service fails to start
        sys.exit(3)
    if not 0 <= h.worker <= MAX_WORKER:  # GEN:57
        print("refused: workerID must gte 0 and lte 1023 (%d)" % h.worker, flush=True)
        sys.exit(3)
    stop = threading.Event()
    if h.scheduled:
        threading.Thread(target=h.heartbeat, args=(stop,), daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    if h.cached:
        print("worker %d cache %s" % (h.worker, h.prop), flush=True)
    else:
        print("worker %d %s" % (h.worker, h.node), flush=True)
    gen = Gen(h.worker)
    with open(out, "a") as f:
        while not stop.is_set():
            ids = [gen.get() for _ in range(50)]
            f.write("".join("%d\n" % i for i in ids if i is not None))
            f.flush()
            time.sleep(0.01)
    # Spring's shutdown writes nothing to ZooKeeper; the session ends with the process
    try:
        h.zk.stop()
    except Exception:
        pass


def put(hosts, path, data):
    zk = connect(hosts, 30)
    if zk.exists(path) is None:
        zk.create(path, data.encode(), makepath=True)
    else:
        zk.set(path, data.encode())
    zk.stop()


def seq(hosts, prefix, data):
    zk = connect(hosts, 30)
    print(zk.create(prefix, data.encode(), sequence=True, makepath=True))
    zk.stop()


if __name__ == "__main__":
    a = sys.argv[1:]
    if len(a) == 7 and a[0] == "serve":
        serve(*a[1:])
    elif len(a) == 4 and a[0] == "put":
        put(*a[1:])
    elif len(a) == 4 and a[0] == "seq":
        seq(*a[1:])
    else:
        sys.exit("usage: see the top of leaf_helper.py")
