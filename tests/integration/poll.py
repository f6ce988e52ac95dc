#!/usr/bin/python3
"""poll.py IDS ST URL STOP PERIOD SECS CLOCK: lib.sh's poll (read it there).

Until the file STOP exists, or the shell that started it is gone: a GET of URL
(HTTP/1.0, SECS seconds the limit of each read), then PERIOD seconds of sleep. The
body of each whole 200 answer is appended to IDS; a line "sent_ms status" to ST for
each request, status 000 when no whole answer came. sent_ms is read before the
request from CLOCK: mono_ms (milliseconds since boot, in the 10 ms steps of
/proc/uptime, as lib.sh's mono_ms reads them) or now_ms (the wall clock).

One process for the whole loop: in bash, each request cost about 3 ms of CPU here
(its read builtin blocks and unblocks signals for every byte), and a few of these
loops run at once for minutes, 20 requests a second each.
"""
import os
import socket
import sys
import time


def mono_ms():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 100) * 10


def now_ms():
    return int(time.time() * 1000)


def get(host, port, path, secs):
    """(status, body) of a whole answer, or (None, None)."""
    try:
        with socket.create_connection((host, port), timeout=secs) as s:
            s.sendall(b"GET %s HTTP/1.0\r\nHost: %s:%d\r\n\r\n" % (path.encode(), host.encode(), port))
            buf = b""
            while b"\r\n\r\n" not in buf:
                chunk = s.recv(65536)
                if not chunk:
                    return None, None
                buf += chunk
            head, body = buf.split(b"\r\n\r\n", 1)
            lines = head.split(b"\r\n")
            parts = lines[0].split(b" ")
            if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or len(parts[1]) != 3:
                return None, None
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            while len(body) < length:
                chunk = s.recv(65536)
                if not chunk:
                    return None, None
                body += chunk
            return parts[1].decode(), body[:length]
    except (OSError, ValueError):
        return None, None


def main():
    ids, st, url, stop, period, secs, clock = sys.argv[1:8]
    clock = {"mono_ms": mono_ms, "now_ms": now_ms}[clock]
    period, secs = float(period), float(secs)
    hostport, _, path = url.removeprefix("http://").partition("/")
    host, _, port = hostport.rpartition(":")
    path, port = "/" + path, int(port)
    parent = os.getppid()
    with open(ids, "ab") as out, open(st, "a") as status:
        while not os.path.exists(stop) and os.getppid() == parent:
            t0 = clock()
            code, body = get(host, port, path, secs)
            if code == "200":
                out.write(body)
                out.flush()
            status.write("%d %s\n" % (t0, code or "000"))
            status.flush()
            time.sleep(period)


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
