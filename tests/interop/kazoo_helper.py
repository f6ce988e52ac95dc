"""kazoo_helper.py: the Python side of the interop tests, on Debian's python3-kazoo
(run with /usr/bin/python3). Times are time.monotonic_ns(): CLOCK_MONOTONIC, the
clock every helper uses.

  lock CONNECT PATH ROUNDS OUT HOLD_US START_FILE
      five unrecorded rounds, creates OUT, waits for START_FILE, then ROUNDS times
      kazoo Lock (with extra_lock_patterns=["-lock-"], so that Curator-style and
      idkeeper nodes count as contenders) acquire, hold, release; OUT gets
      "P ENTER_NS EXIT_NS" a line
  sema CONNECT PATH MAX CLIENTS SECONDS OUT
      CLIENTS clients (sessions, a thread each), each a kazoo Semaphore(PATH,
      max_leases=MAX), take a lease, hold it 50 to 250 ms (random) appending
      "P<pid>.<client>.<round> TIME_US" to OUT every 20 ms (TIME_US: the wall clock,
      microseconds), release it, again, until SECONDS have passed; prints "leases N"
      (tests/tools/holds.py reads OUT)
  sema-try CONNECT PATH MAX
      one kazoo Semaphore(PATH, max_leases=MAX) acquire without blocking, released at
      once: prints "got", "busy", or kazoo's ValueError ("Inconsistent max leases:
      STORED, expected: MAX") as "refused: ..."
"""
import logging
import os
import random
import sys
import threading
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


# The real kazoo Semaphore (Debian's python3-kazoo 2.8.0, kazoo/recipe/lock.py):
# acquire (:572) stores or checks the max as PATH's data (:546-565), takes the Lock
# PATH-__lock__ (:625-627), creates its lease PATH/<hex> while fewer than max_leases
# children are there (:666-672), waits on the children watch otherwise (:637-645) and
# releases the Lock (:649); release (:697) deletes the lease (:705).
def sema(connect, path, max_leases, clients, seconds, out):
    session = int(os.environ.get("IK_INTEROP_SESSION_MS", "4000")) / 1000.0
    until = time.monotonic() + float(seconds)
    # O_APPEND: each heartbeat one write(2), whole, whoever else appends
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    count = [0]
    lock = threading.Lock()

    def client(me):
        zk = KazooClient(hosts=connect, timeout=session)
        zk.start(timeout=30)
        s = zk.Semaphore(path, "kazoo-%d-%d" % (os.getpid(), me), max_leases=int(max_leases))
        r = 0
        while time.monotonic() < until:
            s.acquire()
            name = "P%d.%d.%d" % (os.getpid(), me, r)
            end = time.monotonic() + random.randint(50, 250) / 1000.0
            while True:
                os.write(fd, ("%s %d\n" % (name, time.time_ns() // 1000)).encode())
                time.sleep(0.02)
                if time.monotonic() >= end:
                    break
            s.release()
            with lock:
                count[0] += 1
            r += 1
        zk.stop()
        zk.close()

    ts = [threading.Thread(target=client, args=(i,)) for i in range(int(clients))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os.close(fd)
    print("leases %d" % count[0])


def sema_try(connect, path, max_leases):
    zk = KazooClient(hosts=connect, timeout=4.0)
    zk.start(timeout=30)
    s = zk.Semaphore(path, "kazoo-try", max_leases=int(max_leases))
    try:
        got = s.acquire(blocking=False)
        print("got" if got else "busy")
        if got:
            s.release()
    except ValueError as e:
        print("refused: %s" % e)
    zk.stop()
    zk.close()


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "lock":
        lock(*sys.argv[2:])
    elif len(sys.argv) == 8 and sys.argv[1] == "sema":
        sema(*sys.argv[2:])
    elif len(sys.argv) == 5 and sys.argv[1] == "sema-try":
        sema_try(*sys.argv[2:])
    else:
        sys.exit("usage: see the top of kazoo_helper.py")
