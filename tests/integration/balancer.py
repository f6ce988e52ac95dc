"""balancer.py: a TCP load balancer for the tests (t_zk_hazards_members.sh), run
with /usr/bin/python3:

  balancer.py LISTEN_PORT FIRST_PORT REST_PORT...

The first connection it accepts goes to FIRST_PORT, every later one to the next of
REST_PORT... in turn (round robin): a client's session lands on one member, and the
short connections it opens afterwards (ZooKeeper's four-letter words) on others, as
behind a TCP balancer in front of an ensemble. Prints "ready" once it listens, and
"N -> PORT" for each connection it forwards.
"""
import socket
import sys
import threading

listen_port, first, rest = int(sys.argv[1]), int(sys.argv[2]), [int(p) for p in sys.argv[3:]]


def pump(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
    except OSError:
        pass
    for s in (dst, src):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", listen_port))
ls.listen(64)
print("ready", flush=True)
n = 0
while True:
    c, _ = ls.accept()
    port = first if n == 0 else rest[(n - 1) % len(rest)]
    print("%d -> %d" % (n, port), flush=True)
    n += 1
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.settimeout(None)
    except OSError:
        c.close()
        continue
    for a, b in ((c, s), (s, c)):
        threading.Thread(target=pump, args=(a, b), daemon=True).start()
