#!/usr/bin/python3
"""leaf_pg.py: a Meituan Leaf segment server's database side, on PostgreSQL, for the
migration test (tests/integration/t_pg_leaf.sh).

  leaf_pg.py DSN TAG COUNT OUT

Takes segments of TAG the way Leaf's SegmentIDGenImpl.updateSegmentFromDb does,
with Leaf's own statements in Leaf's transaction (IDAllocMapper.xml), alternating
the plain one (updateMaxIdAndGetLeafAlloc) and the explicit-step one
(updateMaxIdByCustomStepAndGetLeafAlloc, Leaf's adaptive step), and hands out every
ID of each segment [max_id - step, max_id) into OUT, one a line, until COUNT IDs.
Prints "segments=N ids=M". The password comes from PGPASSWORD.
"""
import sys

import psycopg2


def main(argv):
    dsn, tag, count, out = argv[1], argv[2], int(argv[3]), argv[4]
    conn = psycopg2.connect(dsn)
    done = segs = 0
    with open(out, "w") as f:
        while done < count:
            with conn:  # Leaf's transaction: commit on success, rollback on error
                with conn.cursor() as cur:
                    if segs % 2 == 0:
                        cur.execute("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = %s",
                                    (tag,))
                        cur.execute("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = %s",
                                    (tag,))
                        _, max_id, step = cur.fetchone()
                    else:
                        step = 1500
                        cur.execute("UPDATE leaf_alloc SET max_id = max_id + %s WHERE biz_tag = %s",
                                    (step, tag))
                        cur.execute("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = %s",
                                    (tag,))
                        _, max_id, _ = cur.fetchone()
            segs += 1
            n = min(step, count - done)
            f.write("".join("%d\n" % i for i in range(max_id - step, max_id - step + n)))
            done += n
    conn.close()
    print("segments=%d ids=%d" % (segs, done))


if __name__ == "__main__":
    main(sys.argv)
