"""fault_proxy.py: a TCP proxy in front of ZooKeeper that injects the faults of the
recipe tests (tests/integration/t_lock_zk_faults.sh). Run with /usr/bin/python3.

  fault_proxy.py LISTEN_PORT TARGET_PORT CONTROL_FILE

Commands: write "N WORD" into CONTROL_FILE (N a new number each time; the proxy
polls the file every 5 ms and acts once per N):
  blackhole   connections open now keep sending to ZooKeeper, but nothing comes
              back (requests are applied, answers and pings are lost: the client
              sees a connection loss after its receive timeout); new connections
              pass
  down        connections open now are closed, new ones are refused
  up          new connections pass again
  hold        connections open now keep sending to ZooKeeper, and what comes back
              is kept, in order, until "release" (a store that answers late:
              requests are applied, their answers delayed); new connections pass
  release     sends what "hold" kept and lets answers pass again
The proxy writes "N done" to CONTROL_FILE.ack once it acted on N.
"""
import os
import socket
import sys
import threading
import time

listen_port, target_port, ctl = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
lock = threading.Lock()
conns = []  # [client_sock, server_sock, {"black": bool, "hold": bool, "held": [bytes], "mu": Lock}]
state = {"down": False}


def pump(src, dst, flags, to_client):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if not to_client:
                dst.sendall(data)
                continue
            with flags["mu"]:  # a release's flush cannot interleave with this send
                if flags["black"]:
                    continue
                if flags["hold"]:
                    flags["held"].append(data)
                    continue
                dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
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
        flags = {"black": False, "hold": False, "held": [], "mu": threading.Lock()}
        with lock:
            conns.append((c, s, flags))
        threading.Thread(target=pump, args=(c, s, flags, False), daemon=True).start()
        threading.Thread(target=pump, args=(s, c, flags, True), daemon=True).start()


def control_loop():
    done = None
    while True:
        time.sleep(0.005)
        try:
            n, word = open(ctl).read().split()
        except (OSError, ValueError):
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
                    for x in (c, s):
                        try:
                            x.shutdown(socket.SHUT_RDWR)
                        except OSError:
                            pass
                conns.clear()
            elif word == "up":
                state["down"] = False
            elif word == "hold":
                for _, _, f in conns:
                    with f["mu"]:
                        f["hold"] = True
            elif word == "release":
                for c, _, f in conns:
                    with f["mu"]:
                        f["hold"] = False
                        try:
                            for data in f["held"]:
                                c.sendall(data)
                        except OSError:
                            pass
                        f["held"] = []
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
