#!/usr/bin/env python3
"""seqgaps.py START END TAG LOG... -- IDS...: every ID of START..END-1 that no client
received lies in a range a server logged either as handed to a request
("sequence tag=TAG first=A count=K": committed, its answer not delivered) or as a
gap ("tag gap tag=TAG first=A count=K": committed, never handed out). No ID is
received twice, and none lies outside START..END-1. Exit 0 with one line of
figures, 1 with the reason (for the redis:// outage tests, docs/redis.md)."""
import re
import sys

args = sys.argv[1:]
start, end, tag = int(args[0]), int(args[1]), args[2]
sep = args.index("--")
logs, idfiles = args[3:sep], args[sep + 1:]
commit = re.compile(r"sequence tag=%s first=(\d+) count=(\d+)" % re.escape(tag))
gap = re.compile(r"tag gap tag=%s first=(\d+) count=(\d+)" % re.escape(tag))
ranges, gaps = [], 0
for path in logs:
    with open(path, errors="replace") as f:
        for line in f:
            for rx, is_gap in ((commit, 0), (gap, 1)):
                m = rx.search(line)
                if m:
                    a, k = int(m.group(1)), int(m.group(2))
                    ranges.append((a, a + k))
                    gaps += is_gap
got = set()
for path in idfiles:
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            v = int(line)
            if v in got:
                print("seqgaps: FAIL: %d received twice" % v, file=sys.stderr)
                sys.exit(1)
            if not start <= v < end:
                print("seqgaps: FAIL: %d outside %d..%d" % (v, start, end - 1), file=sys.stderr)
                sys.exit(1)
            got.add(v)
ranges.sort()
missing = unexplained = 0
ri = 0
for v in range(start, end):
    if v in got:
        continue
    missing += 1
    while ri < len(ranges) and ranges[ri][1] <= v:
        ri += 1
    if not any(a <= v < b for a, b in ranges[ri:ri + 64]):
        unexplained += 1
        if unexplained <= 5:
            print("seqgaps: FAIL: %d was never received, and no log names it" % v, file=sys.stderr)
if unexplained:
    sys.exit(1)
print("%d IDs received of %d..%d, none twice; %d missing, each in a logged range (%d gap lines)"
      % (len(got), start, end - 1, missing, gaps))
