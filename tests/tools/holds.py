#!/usr/bin/python3
"""holds.py MAX FILE...: how many held a semaphore at once, counted from heartbeats
(tests/conformance/semaphore.sh, tests/integration/t_semaphore_interop_*.sh).

Each line of the FILEs is "NAME TIME_US", more fields ignored: NAME names one hold
(one lease, from its grant to its release: a holder writes a new NAME for each),
TIME_US the wall clock in microseconds when the holder wrote it, every 20 ms or so
while it holds. A hold's interval is [its first heartbeat, its last]: inside the
lease, so the count is never above what the store granted. Prints one line:

  holds H (KIND=N ...), at most M at once (for T ms in all), K switches between kinds

where KIND is NAME's first character (I idkeeper, J Curator, P kazoo, ...) and a
switch is a hold that starts after one of another kind. Exits 1 when M > MAX, and
then prints the first moment, with the holds that overlapped in it.
"""
import sys


def main():
    limit = int(sys.argv[1])
    first, last = {}, {}
    for path in sys.argv[2:]:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) < 2 or not p[1].isdigit():
                    continue
                name, t = p[0], int(p[1])
                if name not in first or t < first[name]:
                    first[name] = t
                if name not in last or t > last[name]:
                    last[name] = t
    events = []
    for name in first:
        events.append((first[name], 1, name))
        # a hold of one heartbeat ends after it starts, at the same instant
        events.append((last[name], -1 if last[name] > first[name] else 2, name))
    # at one instant an end counts before a start (touching intervals do not
    # overlap), but a hold's own start comes before its end
    events.sort(key=lambda e: (e[0], e[1]))
    now, most, at_most_us, since, worst = set(), 0, 0, None, None
    for t, d, name in events:
        if len(now) == most and since is not None:
            at_most_us += t - since
        if d == 1:
            now.add(name)
        else:
            now.discard(name)
        if len(now) > most:
            most, at_most_us = len(now), 0
            if most > limit and worst is None:
                worst = (t, sorted(now))
        since = t
    kinds = {}
    for name in first:
        kinds[name[0]] = kinds.get(name[0], 0) + 1
    order = sorted(first, key=lambda n: first[n])
    switches = sum(1 for a, b in zip(order, order[1:]) if a[0] != b[0])
    print("holds %d (%s), at most %d at once (for %d ms in all), %d switches between kinds" % (
        len(first), " ".join("%s=%d" % kv for kv in sorted(kinds.items())), most,
        at_most_us // 1000, switches))
    if worst:
        t, names = worst
        print("first over %d: at %d us: %s" % (limit, t, ", ".join(
            "%s [%d, %d]" % (n, first[n], last[n]) for n in names)))
        sys.exit(1)


if __name__ == "__main__":
    main()
