#!/usr/bin/env python3
"""incr_client.py PORT KEY N [DEPTH]: the legacy client of the redis:// tests and
benchmarks: N INCR KEY requests to the Redis on 127.0.0.1:PORT, one ID each, DEPTH
of them in flight on one connection (pipelined, as a client library's pipeline
sends them; default 1). Prints each reply, one a line, in order; exit 1 on an error
reply."""
import socket
import sys

port, key, n = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3])
depth = int(sys.argv[4]) if len(sys.argv) > 4 else 1
s = socket.create_connection(("127.0.0.1", port))
cmd = b"*2\r\n$4\r\nINCR\r\n$%d\r\n%s\r\n" % (len(key), key)
f = s.makefile("rb")
out = sys.stdout
done = 0
while done < n:
    k = min(depth, n - done)
    s.sendall(cmd * k)
    for _ in range(k):
        line = f.readline()
        if not line.startswith(b":"):
            sys.stderr.write("incr_client: %r\n" % line)
            sys.exit(1)
        out.write(line[1:].decode().strip() + "\n")
    done += k
