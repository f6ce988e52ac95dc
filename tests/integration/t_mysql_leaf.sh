#!/usr/bin/env bash
# labels: mysql counters
# timeout: 240
# fixtures: mariadb
# Leaf migration (docs/guarantees.md promise 24): Leaf servers and idkeeper servers share one
# leaf_alloc during a migration without a duplicate. Two "Leaf servers" (Python
# with python3-pymysql) take segments with Leaf's exact statements in Leaf's
# transaction (IDAllocDaoImpl: the UPDATE, then the SELECT, then the commit; both
# the table's step and the explicit step of adaptive blocks) and hand out every ID
# of each segment [max_id - step, max_id), beside two idkeeper servers drawing the
# same tag, created by hand as a Leaf DBA does (a Leaf tag: no side row, so a
# segment tag of the default app). Together at least 200,000 IDs, no duplicate.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
/usr/bin/python3 -c 'import pymysql' 2>/dev/null || fail "no pymysql (apt-get install python3-pymysql)"
my_start
DATA=$(my_uri leaf)
DB=${DATA##*/}
SERVE_ARGS=()
CONF_COUNTERS=1
source "$IK_SRC/tests/tools/counters.sh"

# Leaf's own DDL and its own way of adding a tag
my_sql -D "$DB" -e "CREATE TABLE \`leaf_alloc\` (
  \`biz_tag\` varchar(128)  NOT NULL DEFAULT '',
  \`max_id\` bigint(20) NOT NULL DEFAULT '1',
  \`step\` int(11) NOT NULL,
  \`description\` varchar(256)  DEFAULT NULL,
  \`update_time\` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (\`biz_tag\`)
) ENGINE=InnoDB;
INSERT INTO leaf_alloc(biz_tag, max_id, step, description) VALUES('leaf-orders', 1, 2000, 'Leaf tag')"

fleet 2
[ "$(tag_field s1 leaf-orders kind)" = segment ] || fail "Leaf's tag is not a segment tag: $(curl -s "$(url s1)/v1/tags/leaf-orders")"

# leaf.py OUT SECONDS: one Leaf server: segments until SECONDS pass, every ID to OUT
cat >"$T/leaf.py" <<'PY'
import os, random, sys, time
import pymysql
out, secs = sys.argv[1], float(sys.argv[2])
db = pymysql.connect(host="127.0.0.1", port=int(os.environ["MY_PORT"]), user=os.environ["MDB_USER"],
                     password=os.environ["IDKEEPER_PASSWORD"], database=os.environ["DB"], autocommit=False)
tag = "leaf-orders"
n = blocks = 0
end = time.time() + secs
with open(out, "w") as f:
    while time.time() < end:
        cur = db.cursor()
        if blocks % 2 == 0:  # updateMaxIdAndGetLeafAlloc
            cur.execute("UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = %s", (tag,))
            cur.execute("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = %s", (tag,))
            _, max_id, step = cur.fetchone()
        else:  # updateMaxIdByCustomStepAndGetLeafAlloc: an adaptive block
            step = random.choice([1000, 2000, 4000, 8000])
            cur.execute("UPDATE leaf_alloc SET max_id = max_id + %s WHERE biz_tag = %s", (step, tag))
            cur.execute("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = %s", (tag,))
            _, max_id, _ = cur.fetchone()
        db.commit()
        f.write("".join("%d\n" % i for i in range(max_id - step, max_id)))
        n += step
        blocks += 1
        time.sleep(0.02)
print("leaf: %d blocks, %d IDs" % (blocks, n))
PY
export MY_PORT MDB_USER DB
/usr/bin/python3 "$T/leaf.py" "$T/leaf1.ids" 20 >"$T/leaf1.out" 2>&1 &
l1=$!
/usr/bin/python3 "$T/leaf.py" "$T/leaf2.ids" 20 >"$T/leaf2.out" 2>&1 &
l2=$!
IK_PIDS+=($l1 $l2)
# fixed counts beside the timed hammers: Leaf's 2 x 20 blocks of at least 1,000 and
# these 2 x 80,000 make 200,000 whatever the machine's speed
hammer h1 "$(url s1)/api/segment/get/leaf-orders" 2 20
hammer h2 "$(url s2)/api/segment/get/leaf-orders" 2 20
"$IK_BIN" next --server "$(url s1)" --count 80000 --batch 1000 segment leaf-orders >"$T/n1.ids"
"$IK_BIN" next --server "$(url s2)" --count 80000 --batch 1000 segment leaf-orders >"$T/n2.ids"
wait $l1 || fail "leaf 1 failed: $(cat "$T/leaf1.out")"
wait $l2 || fail "leaf 2 failed: $(cat "$T/leaf2.out")"
hammer_wait h1
hammer_wait h2
log "$(cat "$T/leaf1.out"); $(cat "$T/leaf2.out")"

total=$(cat "$T"/leaf1.ids "$T"/leaf2.ids "$T"/h1.ids "$T"/h2.ids "$T"/n1.ids "$T"/n2.ids | wc -l)
((total >= 200000)) || fail "only $total IDs drawn"
"${IDCHECK[@]}" unique "$T"/leaf1.ids "$T"/leaf2.ids "$T"/h1.ids "$T"/h2.ids "$T"/n1.ids "$T"/n2.ids >&2 ||
  fail "a duplicate between Leaf and idkeeper"
max=$(my_sql -D "$DB" -e "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'leaf-orders'")
[ -z "$(cat "$T"/*.ids | awk -v m="$max" '$1 >= m' | head -n 1)" ] || fail "an ID at or above max_id $max"
pass "Leaf x2 ($(cat "$T"/leaf*.ids | wc -l) IDs) and idkeeper x2 ($(cat "$T"/h*.ids "$T"/n*.ids | wc -l) IDs) on one leaf_alloc: $total IDs, no duplicate, all below max_id"
stop_clean s1
stop_clean s2
