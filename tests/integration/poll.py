#!/usr/bin/python3
"""poll.py IDS ST URL STOP PERIOD SECS CLOCK: lib.sh's poll (read it there).

Until the file STOP exists, or the shell that started it is gone: a GET of URL
(Python's http.client, SECS seconds the limit of each read), then PERIOD seconds of sleep. The
body of each whole 200 answer is appended to IDS; a line "sent_ms status" to ST for
each request, status 000 when no whole answer came. sent_ms is read before the
request from CLOCK: mono_ms (milliseconds since boot, in the 10 ms steps of
/proc/uptime, as lib.sh's mono_ms reads them) or now_ms (the wall clock).

One process for the whole loop: in bash, each request cost about 3 ms of CPU here
(its read builtin blocks and unblocks signals for every byte), and a few of these
loops run at once for minutes, 20 requests a second each.
"""
import http.client
import os
import sys
import time


def mono_ms():
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * 100) * 10


def now_ms():
    return int(time.time() * 1000)


def get(host, port, path, secs):
    """(status, body) of a whole answer, or (None, None)."""
    conn = http.client.HTTPConnection(host, port, timeout=secs)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read()
    except (OSError, http.client.HTTPException):
        return None, None
    finally:
        conn.close()


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
            if code == 200:
                out.write(body)
                out.flush()
            status.write("%d %03d\n" % (t0, code or 0))
            status.flush()
            time.sleep(period)


if __name__ == "__main__":
    try:
        main()
    except (KeyboardInterrupt, BrokenPipeError):
        pass
