"""kazoo_helper.py: the Python side of the interop tests, on Debian's python3-kazoo
(run with /usr/bin/python3). Times are time.monotonic_ns(): CLOCK_MONOTONIC, the
clock every helper uses.

  lock CONNECT PATH ROUNDS OUT HOLD_US START_FILE
      five unrecorded rounds, creates OUT, waits for START_FILE, then ROUNDS times
      kazoo Lock (with extra_lock_patterns=["-lock-"], so that Curator-style and
      idkeeper nodes count as contenders) acquire, hold, release; OUT gets
      "P ENTER_NS EXIT_NS" a line
"""
import logging
import os
import sys
import time

logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient  # noqa: E402


def spin_us(us):
    end = time.monotonic_ns() + us * 1000
    while time.monotonic_ns() < end:
        pass


def lock(connect, path, rounds, out, hold_us, start):
    session = int(os.environ.get("IK_INTEROP_SESSION_MS", "4000")) / 1000.0
    zk = KazooClient(hosts=connect, timeout=session)
    zk.start(timeout=30)
    lk = zk.Lock(path, "kazoo-%d" % os.getpid(), extra_lock_patterns=["-lock-"])
    # Unrecorded rounds before OUT exists (the caller's sign that we are ready),
    # as the Java helper does: the first recorded acquire is then not the slow one.
    for _ in range(5):
        with lk:
            pass
    with open(out, "w") as f:
        while not os.path.exists(start):
            time.sleep(0.001)
        for _ in range(int(rounds)):
            lk.acquire()
            enter = time.monotonic_ns()
            spin_us(int(hold_us))
            exit_ = time.monotonic_ns()
            lk.release()
            f.write("P %d %d\n" % (enter, exit_))
    zk.stop()
    zk.close()


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "lock":
        lock(*sys.argv[2:])
    else:
        sys.exit("usage: see the top of kazoo_helper.py")
