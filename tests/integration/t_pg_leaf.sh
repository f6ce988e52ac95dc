#!/usr/bin/env bash
# labels: postgresql sql counters
# timeout: 240
# processors: 2
# fixtures: postgres
# Leaf migration on postgresql:// (docs/guarantees.md promise 24): a tag made the Leaf way (a leaf_alloc
# row and nothing else) is a segment tag of the default app as it is; two Leaf
# "servers" (tests/tools/leaf_pg.py: Leaf's exact statements in Leaf's transaction,
# psycopg2) draw segments of it beside two idkeeper servers serving it over HTTP;
# together they draw at least 200,000 IDs, with no duplicate, all below max_id.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
IK_STORE=local
CONF_COUNTERS=1
source "$IK_SRC/tests/tools/counters.sh"
export IDKEEPER_PASSWORD=$PG_PASSWORD
/usr/bin/python3 -c 'import psycopg2' 2>/dev/null || fail "python3-psycopg2 missing (scripts/install-deps.sh test)"
db=tleaf_$$
DATA=$(pg_new_db "$PG_SHARED_PORT" "$db")
SERVE_ARGS=()

# Leaf's own table and row, made the way Leaf's README says, before idkeeper ever ran
pg_psql "$PG_SHARED_PORT" "$db" "CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL DEFAULT '',
  max_id bigint NOT NULL DEFAULT 1, step integer NOT NULL, description varchar(256) DEFAULT NULL,
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (biz_tag))"
pg_psql "$PG_SHARED_PORT" "$db" "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) VALUES ('leaf-test', 1, 2000, 'Test leaf Segment Mode Get Id')"

"$IK_BIN" tags show leaf-test --coord "$DATA" --json >"$T/tag.json"
[ "$(jq -r .kind "$T/tag.json")" = segment ] || fail "a Leaf tag is not a segment tag: $(cat "$T/tag.json")"
pass "a Leaf row without a kind is a segment tag of the default app: $(jq -c . "$T/tag.json")"

fleet 2
dsn="host=127.0.0.1 port=$PG_SHARED_PORT dbname=$db user=$PG_USER"
for i in 1 2; do
  PGPASSWORD=$PG_PASSWORD /usr/bin/python3 "$IK_SRC/tests/tools/leaf_pg.py" "$dsn" leaf-test 60000 "$T/leaf.$i.ids" >"$T/leaf.$i.out" 2>&1 &
  leaf[$i]=$!
  IK_PIDS+=($!)
done
hammer seg.s1 "$(url s1)/api/segment/get/leaf-test" 2 8
hammer seg.s2 "$(url s2)/api/segment/get/leaf-test" 2 8
# a fixed count beside the timed hammers, so that the total does not hang on the
# machine's speed: Leaf's 2 x 60,000 and these 2 x 50,000 make 220,000 at least
"$IK_BIN" next --server "$(url s1)" --count 50000 --batch 1000 segment leaf-test >"$T/seg.n1.ids"
"$IK_BIN" next --server "$(url s2)" --count 50000 --batch 1000 segment leaf-test >"$T/seg.n2.ids"
for i in 1 2; do wait "${leaf[$i]}" || fail "leaf $i failed: $(cat "$T/leaf.$i.out")"; done
hammer_wait seg.s1
hammer_wait seg.s2
[ "$(hammer_field seg.s1 errors)" = 0 ] && [ "$(hammer_field seg.s2 errors)" = 0 ] || fail "idkeeper errors"
total=$(cat "$T"/leaf.*.ids "$T"/seg.*.ids | wc -l)
((total >= 200000)) || fail "only $total IDs drawn"
"${IDCHECK[@]}" unique "$T"/leaf.1.ids "$T"/leaf.2.ids "$T"/seg.*.ids >&2 || fail "duplicate IDs between Leaf and idkeeper"
max=$(pg_psql "$PG_SHARED_PORT" "$db" "SELECT max_id FROM leaf_alloc WHERE biz_tag = 'leaf-test'")
top=$(cat "$T"/leaf.*.ids "$T"/seg.*.ids | sort -n | tail -n 1)
((top < max)) || fail "ID $top not below max_id $max"
pass "Leaf ($(cat "$T/leaf.1.out"), $(cat "$T/leaf.2.out")) and idkeeper ($(cat "$T"/seg.*.ids | wc -l) IDs) on one leaf_alloc row: $total IDs, no duplicate, all below max_id $max"
stop_clean s1
stop_clean s2
