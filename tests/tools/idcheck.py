#!/usr/bin/env python3
"""idcheck.py: checks on files of IDs (one decimal ID a line), for the counters tests
and the chaos run. Exit 0 and one line of figures on stdout when the check holds,
exit 1 with the reason on stderr when it does not.

  idcheck.py unique FILE...             no ID in two places (within or across files)
  idcheck.py increasing FILE...         each file strictly increasing
  idcheck.py above OLD FILE...          every ID of FILE... above every ID of OLD
  idcheck.py contiguous START END FILE...
                                        the union is exactly START..END-1, once each
  idcheck.py kill9 START END DEAD NAME=IDS:LOG...
                                        sequence IDs after server DEAD was killed -9;
                                        see check_kill9
  idcheck.py gaps START END TAG IDS LOG...
                                        every ID of START..END-1 answered once or in
                                        a logged gap, and every gap counted in the
                                        metrics the server logged at exit; see
                                        check_gaps
Logs are the daemons' stderr with log_sequence_commits on: lines holding
"sequence tag=T first=A count=K".
"""
import bisect
import re
import sys

LOG_RE = re.compile(r"sequence tag=(\S+) first=(\d+) count=(\d+)")


def fail(msg):
    print("idcheck: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def read_ids(path):
    with open(path) as f:
        out = []
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if not line.isdigit():
                fail("%s:%d: not an ID: %r" % (path, n, line[:40]))
            out.append(int(line))
        return out


def read_ranges(path):
    """Logged ranges of a server, as (first, end) with end exclusive, in log order."""
    with open(path, errors="replace") as f:
        return [(int(m.group(2)), int(m.group(2)) + int(m.group(3)))
                for m in (LOG_RE.search(l) for l in f) if m]


def first_dup(sorted_ids):
    for a, b in zip(sorted_ids, sorted_ids[1:]):
        if a == b:
            return a
    return None


def check_unique(files):
    ids = sorted(i for f in files for i in read_ids(f))
    d = first_dup(ids)
    if d is not None:
        fail("ID %d appears more than once" % d)
    print("unique: %d IDs in %d files, none twice" % (len(ids), len(files)))


def check_increasing(files):
    for f in files:
        ids = read_ids(f)
        for k in range(1, len(ids)):
            if ids[k] <= ids[k - 1]:
                fail("%s: line %d: %d after %d" % (f, k + 1, ids[k], ids[k - 1]))
    print("increasing: %d files" % len(files))


def check_above(old, files):
    o = read_ids(old)
    if not o:
        fail("%s holds no ID" % old)
    floor = max(o)
    new = [i for f in files for i in read_ids(f)]
    if not new:
        fail("no new ID")
    low = min(new)
    if low <= floor:
        fail("new ID %d is not above %d, handed out before" % (low, floor))
    print("above: %d new IDs, lowest %d > %d (highest of %d before)" % (len(new), low, floor, len(o)))


def check_contiguous(start, end, files):
    ids = sorted(i for f in files for i in read_ids(f))
    d = first_dup(ids)
    if d is not None:
        fail("ID %d appears more than once" % d)
    if not ids:
        fail("no ID")
    if ids[0] != start:
        fail("first ID %d, want the tag's start %d" % (ids[0], start))
    for a, b in zip(ids, ids[1:]):
        if b != a + 1:
            fail("gap: %d then %d (%d IDs missing)" % (a, b, b - a - 1))
    if ids[-1] != end - 1:
        fail("last ID %d, but the store's max_id is %d: IDs %d..%d committed and never "
             "answered" % (ids[-1], end, ids[-1] + 1, end - 1))
    print("contiguous: %d IDs, %d..%d, no duplicate, no gap" % (len(ids), start, end - 1))


def in_ranges(x, ranges):
    return any(a <= x < b for a, b in ranges)


def check_kill9(start, end, dead, servers):
    """Sequence IDs of a run in which server `dead` was killed with -9.

    Each server logs "sequence tag=T first=A count=K" for every range it hands to a
    request, before it queues the answer (log_sequence_commits). So:
      1. no ID was answered twice (across all servers);
      2. every ID a server answered lies in a range it logged;
      3. no two servers logged overlapping ranges;
      4. a survivor answered every ID of every range it logged (it was never killed
         and the clients waited for their answers);
      5. every ID from START to END-1 (END: the tag's max_id in the store after the
         run) that nobody answered (a gap) lies either in a range the dead server
         logged (committed, handed to a request, not answered before the kill) or in
         one contiguous run above every range the dead server logged and outside
         every survivor's ranges: the rest of the dead server's last write, which the
         store committed but whose requests the kill stopped before they were logged
         (the committer logs the ranges of one write in order, and one write is in
         flight at a time).
    """
    answered = {}
    logged = {}
    for spec in servers:
        name, rest = spec.split("=", 1)
        ids_path, log_path = rest.split(":", 1)
        answered[name] = read_ids(ids_path)
        logged[name] = read_ranges(log_path)
    if dead not in answered:
        fail("dead server %s not among %s" % (dead, ", ".join(answered)))
    all_ids = sorted(i for v in answered.values() for i in v)
    d = first_dup(all_ids)
    if d is not None:
        fail("ID %d answered twice" % d)
    for name, ids in answered.items():
        rs = sorted(logged[name])
        starts = [a for a, _ in rs]
        for x in ids:
            k = bisect.bisect_right(starts, x) - 1
            if k < 0 or not (rs[k][0] <= x < rs[k][1]):
                fail("%s answered %d, which it never logged" % (name, x))
    every = sorted((a, b, n) for n, rs in logged.items() for a, b in rs)
    for (a1, b1, n1), (a2, b2, n2) in zip(every, every[1:]):
        if a2 < b1:
            fail("ranges overlap: %s [%d,%d) and %s [%d,%d)" % (n1, a1, b1, n2, a2, b2))
    answered_set = set(all_ids)
    for name, rs in logged.items():
        if name == dead:
            continue
        for a, b in rs:
            for x in range(a, b):
                if x not in answered_set:
                    fail("survivor %s logged [%d,%d) but %d was never answered" % (name, a, b, x))
    if all_ids and (all_ids[0] < start or all_ids[-1] >= end):
        fail("answered IDs %d..%d outside the tag's run %d..%d" % (all_ids[0], all_ids[-1],
                                                                    start, end - 1))
    dead_ranges = logged[dead]
    dead_top = max((b for _, b in dead_ranges), default=start)
    missing = [x for x in range(start, end) if x not in answered_set]
    in_logged = [x for x in missing if in_ranges(x, dead_ranges)]
    tail = [x for x in missing if not in_ranges(x, dead_ranges)]
    if tail:
        if tail[-1] - tail[0] + 1 != len(tail):
            fail("unexplained gaps: %d IDs not in the dead server's logged ranges and not "
                 "one run: first %s" % (len(tail), tail[:10]))
        if tail[0] < dead_top:
            fail("unexplained gap %d..%d lies below the dead server's last logged range "
                 "(ends %d)" % (tail[0], tail[-1], dead_top))
        for name, rs in logged.items():
            if name != dead and any(in_ranges(x, rs) for x in (tail[0], tail[-1])):
                fail("gap %d..%d overlaps survivor %s's ranges" % (tail[0], tail[-1], name))
    print("kill9: %d IDs answered of %d..%d, no duplicate; %d missing, all the dead "
          "server's: %d in ranges it logged but did not answer, %d in the rest of its last "
          "write; %d ranges logged by %s, %d by the others"
          % (len(all_ids), start, end - 1, len(missing), len(in_logged), len(tail),
             len(dead_ranges), dead, sum(len(v) for n, v in logged.items() if n != dead)))


GAP_RE = re.compile(r"tag gap tag=(\S+) first=(\d+|\?) count=(\d+) why=([^(\n]*?)\s*(?:\(|$)")
# the daemon's own causes as its log writes them, and their metric labels
# (src/server/metrics.c, ik__gone_text and ik__gone_label); the library's causes
# are written as their labels
GAP_LABEL = {"client gone": "client_gone", "shutdown deadline": "shutdown_deadline",
             "ids above 2^53 asked as numbers": "ids_too_large"}
EXIT_RE = re.compile(r'at exit: ik_sequence_gap_ids_total\{tag="([^"]+)",why="([^"]+)"\} (\d+)')


def check_gaps(start, end, tag, ids_path, logs):
    """Sequence IDs of servers that stopped: every ID of START..END-1 (END: the tag's
    max_id in the store) was answered once, or lies in a gap a server logged ("tag
    gap tag=T first=A count=K why=W"), or is one of the IDs of a gap it could not
    place (first=?): answered, placed and unplaced add up to END - START exactly,
    none of them twice. And each server's metrics at exit ("at exit:
    ik_sequence_gap_ids_total{tag,why} N", written after the store was closed) count
    exactly the gaps it logged, cause by cause (GAP_LABEL: the log's "client
    gone" is the metric's client_gone)."""
    ids = read_ids(ids_path)
    srt = sorted(ids)
    d = first_dup(srt)
    if d is not None:
        fail("ID %d answered twice" % d)
    if srt and (srt[0] < start or srt[-1] >= end):
        fail("answered IDs %d..%d outside %d..%d" % (srt[0], srt[-1], start, end - 1))
    placed, unplaced, causes = [], 0, {}
    for path in logs:
        logged, counted = {}, {}
        with open(path, errors="replace") as f:
            for line in f:
                m = GAP_RE.search(line)
                if m and m.group(1) == tag:
                    k, why = int(m.group(3)), GAP_LABEL.get(m.group(4), m.group(4))
                    logged[why] = logged.get(why, 0) + k
                    causes[why] = causes.get(why, 0) + k
                    if m.group(2) == "?":
                        unplaced += k
                    else:
                        placed.append((int(m.group(2)), int(m.group(2)) + k))
                m = EXIT_RE.search(line)
                if m and m.group(1) == tag:
                    counted[m.group(2)] = counted.get(m.group(2), 0) + int(m.group(3))
        if logged != counted:
            fail("%s: gaps logged %s, but its metrics at exit count %s" % (path, logged, counted))
    placed.sort()
    for (a1, b1), (a2, b2) in zip(placed, placed[1:]):
        if a2 < b1:
            fail("logged gaps overlap: [%d,%d) and [%d,%d)" % (a1, b1, a2, b2))
    got = set(ids)
    for a, b in placed:
        if a < start or b > end:
            fail("logged gap [%d,%d) outside %d..%d" % (a, b, start, end - 1))
        for x in range(a, b):
            if x in got:
                fail("%d was answered, and lies in the logged gap [%d,%d)" % (x, a, b))
    nplaced = sum(b - a for a, b in placed)
    if len(ids) + nplaced + unplaced != end - start:
        fail("%d answered + %d in placed gaps + %d in gaps of unknown place = %d, but the "
             "store's run %d..%d holds %d" % (len(ids), nplaced, unplaced,
                                              len(ids) + nplaced + unplaced, start, end - 1,
                                              end - start))
    print("gaps: %d IDs answered of %d..%d, none twice; %d in logged gaps (%d of unknown "
          "place), by cause %s, each counted at exit" % (len(ids), start, end - 1,
                                                         nplaced + unplaced, unplaced,
                                                         " ".join("%s=%d" % kv for kv in
                                                                  sorted(causes.items()))))


def main(argv):
    if len(argv) < 2:
        fail("usage: see the top of " + argv[0])
    cmd, args = argv[1], argv[2:]
    if cmd == "unique":
        check_unique(args)
    elif cmd == "increasing":
        check_increasing(args)
    elif cmd == "above":
        check_above(args[0], args[1:])
    elif cmd == "contiguous":
        check_contiguous(int(args[0]), int(args[1]), args[2:])
    elif cmd == "gaps":
        check_gaps(int(args[0]), int(args[1]), args[2], args[3], args[4:])
    elif cmd == "kill9":
        check_kill9(int(args[0]), int(args[1]), args[2], args[3:])
    else:
        fail("unknown check " + cmd)


if __name__ == "__main__":
    main(sys.argv)
