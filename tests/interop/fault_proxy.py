"""fault_proxy.py: a TCP proxy in front of ZooKeeper (or, with "raw", any server:
Redis) that injects the faults of the fault tests (t_lock_zk_faults.sh,
t_zk_counters_doubt.sh, t_zk_slow.sh, t_zk_take_cut.sh, t_redis_doubts.sh). Run
with /usr/bin/python3.

  fault_proxy.py LISTEN_PORT TARGET_PORT CONTROL_FILE [raw]

raw: the client's bytes are not parsed as ZooKeeper packets ("cut" is then not
available; "answer-lost" and "request-lost" work with or without it).

Commands: write "N WORD [ARGS]" into CONTROL_FILE (N a new number each time; the
proxy polls the file every 5 ms and acts once per N):
  blackhole   connections open now keep sending to ZooKeeper, but nothing comes
              back (requests are applied, answers and pings are lost: the client
              sees a connection loss after its receive timeout); new connections
              pass
  down        connections open now are closed, new ones are refused
  up          new connections pass again
  delay MS    everything ZooKeeper sends, on open and new connections, reaches the
              client MS later (order kept): a slow ZooKeeper; "delay 0" ends it
  mute        like blackhole, for open and new connections alike (new ones are
              accepted, their handshake is never answered); "unmute" ends it for
              every connection not already blackholed
  cut N OPS PATTERN
              the next N requests whose opcode is in OPS (comma-separated numbers:
              3 exists, 4 getData, 14 multi, ...) and whose bytes contain PATTERN
              are forwarded, then that connection's answers are dropped and it is
              closed 100 ms later: the request is applied, its answer lost
  partition   nothing passes in either direction, on open and new connections
              (new ones are accepted), and nothing is closed: a network partition,
              as the two ends see it ("heal" ends it)
  hold        connections open now keep sending to ZooKeeper, and what comes back
              is kept, in order, until "release" (a store that answers late:
              requests are applied, their answers delayed); new connections pass
  release     sends what "hold" kept and lets answers pass again
  answer-lost N PATTERN
              the next N times a connection's client sends bytes containing
              PATTERN, they are forwarded, then that connection's answers are
              dropped and it is closed 100 ms later: the request is applied, its
              answer lost (any protocol)
  request-lost N PATTERN
              the same, but the bytes that complete PATTERN are not forwarded: the
              request never reaches the server, and the client only sees its
              connection close (a part of the request sent before may have gone:
              the server drops an incomplete request with its connection)
  request-lost N PATTERN then answer-lost M
  (and the other orders): the first for N sends, then the second for M, with no
              gap between them in which a send could slip through
  answer-lost N PATTERN AFTER, request-lost N PATTERN AFTER
              the same, counting only sends on a connection whose client sent
              AFTER since the command (e.g. the COMMIT of a transaction that
              wrote a given row: PATTERN COMMIT, AFTER the row's statement)
  hold-after N PATTERN [AFTER]
              the next time (N times) a client sends PATTERN (after AFTER), it is
              forwarded, and what the server answers on that connection from then
              on is kept as "hold" keeps it (until "release"): the request is
              applied, its answer late, the connection open
  last-answer writes to CONTROL_FILE.last the wall time (Unix s, 6 decimals) at which
              the proxy last passed the server's bytes to a client: after a fault
              that stops every answer, the arrival of the last one
  mute-after N PATTERN [AFTER]
              the next time (N times) a client sends PATTERN (after AFTER), it is
              forwarded, and from then on the proxy is muted (as "mute"): the
              server applied the request, then answers nothing on any connection,
              like a server frozen right after it (SIGSTOP); "unmute" ends it
The proxy writes "N done" to CONTROL_FILE.ack once it acted on N, and a line
"cut OPCODE" to stdout for each request it cut, "answer-lost" or "request-lost"
for each of those.
"""
import collections
import os
import socket
import struct
import sys
import threading
import time

listen_port, target_port, ctl = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
raw = sys.argv[4:] == ["raw"]
lock = threading.Lock()
conns = []  # [client_sock, server_sock, flags]
state = {"down": False, "partition": False, "delay": 0.0, "mute": False, "cut_left": 0,
         "last_answer": 0.0,
         "cut_ops": set(), "cut_pat": b"", "lose_then": None, "lose_left": 0, "lose_what": "",
         "lose_pat": b"", "lose_after": b"", "lose_gen": 0}


def close_pair(c, s):
    for x in (c, s):
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class Sender:
    """Delivers ZooKeeper's bytes to the client, each chunk state["delay"] after it
    arrived, in order."""

    def __init__(self, dst, flags):
        self.dst, self.flags = dst, flags
        self.q = collections.deque()
        self.cv = threading.Condition()
        self.closed = False
        threading.Thread(target=self.run, daemon=True).start()

    def put(self, data):
        with self.cv:
            self.q.append((time.monotonic() + state["delay"], data))
            self.cv.notify()

    def close(self):
        with self.cv:
            self.closed = True
            self.cv.notify()

    def run(self):
        while True:
            with self.cv:
                while not self.q and not self.closed:
                    self.cv.wait()
                if not self.q:
                    break
                due, data = self.q[0]
                now = time.monotonic()
                if self.flags["hold"]:  # kept, in order, until "release"
                    self.cv.wait(0.005)
                    continue
                if due > now:
                    self.cv.wait(due - now)
                    continue
                self.q.popleft()
            if self.flags["black"] or state["mute"] or state["partition"]:
                continue
            try:
                self.dst.sendall(data)
                state["last_answer"] = time.time()
            except OSError:
                break
        try:
            self.dst.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def should_cut(flags, data):
    """Parses the client's packets (4-byte length, then xid and opcode, after the
    connect request); True if one of them is to be cut (and counts it)."""
    buf = flags["inbuf"] + data
    cut = False
    while len(buf) >= 4:
        (n,) = struct.unpack(">i", buf[:4])
        if len(buf) < 4 + n:
            break
        pkt, buf = buf[4:4 + n], buf[4 + n:]
        if not flags["handshaken"]:
            flags["handshaken"] = True
            continue
        if len(pkt) < 8:
            continue
        (op,) = struct.unpack(">i", pkt[4:8])
        with lock:
            if (not cut and state["cut_left"] > 0 and op in state["cut_ops"]
                    and state["cut_pat"] in pkt):
                state["cut_left"] -= 1
                cut = True
                print("cut %d" % op, flush=True)
    flags["inbuf"] = buf
    return cut


def should_lose(flags, data):
    """"answer-lost" or "request-lost" if data (with the end of what the client sent
    before, so that PATTERN may span two reads) completes an armed PATTERN (and
    counts it), else None."""
    seen = flags["tail"] + data
    with lock:
        pat, after = state["lose_pat"], state["lose_after"]
        keep = max(len(pat), len(after))
        flags["tail"] = seen[len(seen) - keep + 1:] if keep > 1 else b""
        if state["lose_left"] <= 0:
            return None
        if after and flags.get("after_gen") != state["lose_gen"]:
            k = seen.find(after)
            if k < 0:
                return None
            flags["after_gen"] = state["lose_gen"]  # this connection sent AFTER
            seen = seen[k + len(after):]
        if pat not in seen:
            return None
        state["lose_left"] -= 1
        flags["tail"] = b""
        what = state["lose_what"]
        if state["lose_left"] == 0 and state["lose_then"]:
            state["lose_what"], state["lose_left"] = state["lose_then"]
            state["lose_then"] = None
        print(what, flush=True)
        return what


def pump_up(c, s, flags):
    """client -> ZooKeeper"""
    try:
        while True:
            data = c.recv(65536)
            if not data:
                break
            if flags["deaf"] or state["partition"]:
                continue  # after a lost request (or in a partition) nothing reaches the server
            lose = should_lose(flags, data)
            cut = not raw and should_cut(flags, data)
            if lose == "mute-after":
                state["mute"] = True  # before sending: the answer must not slip through
                lose = None
            elif lose == "hold-after":
                flags["hold"] = True  # the same
                lose = None
            if lose or cut:
                flags["black"] = True  # before sending: the answer must not slip through
                flags["deaf"] = lose == "request-lost"
                threading.Timer(0.1, close_pair, args=(c, s)).start()
            if not flags["deaf"]:
                s.sendall(data)
    except OSError:
        pass
    close_pair(c, s)


def pump_down(s, c, flags, sender):
    """ZooKeeper -> client"""
    try:
        while True:
            data = s.recv(65536)
            if not data:
                break
            if flags["black"] or state["mute"] or state["partition"]:
                continue
            sender.put(data)
    except OSError:
        pass
    # the sender closes the client's side once it has delivered what came before the
    # server's close: a server that answers and closes at once (a four-letter word)
    # must not lose its answer to a race between the two threads
    sender.close()
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def accept_loop(ls):
    while True:
        c, _ = ls.accept()
        with lock:
            if state["down"]:
                c.close()
                continue
        try:
            s = socket.create_connection(("127.0.0.1", target_port))
        except OSError:
            c.close()
            continue
        flags = {"black": False, "hold": False, "inbuf": b"", "handshaken": False,
                 "tail": b"", "deaf": False}
        sender = Sender(c, flags)
        flags["sender"] = sender
        with lock:
            conns.append((c, s, flags))
        threading.Thread(target=pump_up, args=(c, s, flags), daemon=True).start()
        threading.Thread(target=pump_down, args=(s, c, flags, sender), daemon=True).start()


def control_loop():
    done = None
    while True:
        time.sleep(0.005)
        try:
            words = open(ctl).read().split()
            n, word, args = words[0], words[1], words[2:]
        except (OSError, ValueError, IndexError):
            continue
        if n == done:
            continue
        with lock:
            if word == "blackhole":
                for _, _, f in conns:
                    f["black"] = True
            elif word == "down":
                state["down"] = True
                for c, s, _ in conns:
                    close_pair(c, s)
                conns.clear()
            elif word == "up":
                state["down"] = False
            elif word == "hold":
                for _, _, f in conns:
                    f["hold"] = True
            elif word == "release":
                for _, _, f in conns:
                    with f["sender"].cv:
                        f["hold"] = False
                        f["sender"].cv.notify()
            elif word == "delay":
                state["delay"] = int(args[0]) / 1000.0
            elif word == "mute":
                state["mute"] = True
            elif word == "unmute":
                state["mute"] = False
            elif word == "partition":
                state["partition"] = True
            elif word == "heal":
                state["partition"] = False
            elif word in ("answer-lost", "request-lost", "mute-after", "hold-after"):
                state["lose_left"] = int(args[0])
                state["lose_what"] = word
                state["lose_pat"] = args[1].encode()
                then = args[2:3] == ["then"]
                state["lose_then"] = (args[3], int(args[4])) if then else None
                state["lose_after"] = b"" if then else " ".join(args[2:]).encode()
                state["lose_gen"] += 1
            elif word == "last-answer":
                with open(ctl + ".last", "w") as f:
                    f.write("%.6f\n" % state["last_answer"])
            elif word == "cut":
                state["cut_left"] = int(args[0])
                state["cut_ops"] = {int(x) for x in args[1].split(",")}
                state["cut_pat"] = args[2].encode()
        done = n
        with open(ctl + ".ack.tmp", "w") as f:
            f.write("%s done\n" % n)
        os.rename(ctl + ".ack.tmp", ctl + ".ack")


ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port))
ls.listen(64)
threading.Thread(target=control_loop, daemon=True).start()
print("ready", flush=True)
accept_loop(ls)
