#!/usr/bin/env bash
# labels: sql counters
# timeout: 120
# variants: postgresql mysql
# fixtures.postgresql: postgres
# fixtures.mysql: mariadb
# An advance trusts what the store says it stored, never what it meant to write
# (docs/sql.md, "Tags"): a BEFORE UPDATE trigger on leaf_alloc that caps max_id at 10.
# PostgreSQL's UPDATE ... RETURNING shows the row the trigger left; MariaDB, which has
# no UPDATE ... RETURNING, reads it back with Leaf's SELECT in the same round trip.
# Before, MariaDB trusted "the max_id read plus delta": a server answered 1 ... 9, then
# 10 six times. Now:
#   - IDs 1 ... 9, each once, then 503 for every request: no ID twice;
#   - the 503 names the cause in the store's words (the max_id stored, not the one
#     written), not "unreachable or timed out", and so does the log;
#   - once the trigger is dropped, the server serves again from 10.
source "$(dirname "$0")/lib.sh"
source "$IK_SRC/tests/conformance/conf.sh"
conf_store_start
URI=$(conf_coord trig)
DB=${URI##*/}
case $IK_STORE in
mysql)
  raw() { my_sql -D "$DB" -e "$1"; }
  CAP="CREATE TRIGGER cap BEFORE UPDATE ON leaf_alloc FOR EACH ROW SET NEW.max_id = LEAST(NEW.max_id, 10)"
  UNCAP="DROP TRIGGER cap"
  ;;
postgresql)
  raw() { pg_psql "$PG_SHARED_PORT" "$DB" "$1"; }
  CAP="CREATE FUNCTION cap() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN NEW.max_id := LEAST(NEW.max_id, 10); RETURN NEW; END \$\$; CREATE TRIGGER cap BEFORE UPDATE ON leaf_alloc FOR EACH ROW EXECUTE FUNCTION cap()"
  UNCAP="DROP TRIGGER cap ON leaf_alloc"
  ;;
*) fail "t_sql_trigger: no SQL for $IK_STORE" ;;
esac
"$IK_BIN" tags add q --kind sequence --coord "$URI" "${CONF_SERVE_ARGS[@]}" >/dev/null || fail "tags add q"
raw "$CAP" >/dev/null || fail "could not create the trigger"
serve_on s --coord "$URI" "${CONF_SERVE_ARGS[@]}" || fail "serve: $(tail -n 5 "$T/s.log")"
base=http://127.0.0.1:$PORT
: >"$T/ids"
codes=
for i in $(seq 1 16); do
  code=$(ik_http "$base/v1/sequence/q?format=text" "$T/body")
  codes="$codes $code"
  if [ "$code" = 200 ]; then cat "$T/body" >>"$T/ids"; else cp "$T/body" "$T/refused.body"; fi
done
assert_unique "$T/ids"
[ "$(tr '\n' ' ' <"$T/ids")" = "1 2 3 4 5 6 7 8 9 " ] || fail "IDs answered under the trigger: $(tr '\n' ' ' <"$T/ids") (codes:$codes)"
[ -s "$T/refused.body" ] || fail "no request was refused (codes:$codes)"
grep -q 'unreachable or timed out' "$T/refused.body" && fail "the refusal says the store is unreachable: $(cat "$T/refused.body")"
grep -q 'max_id 10' "$T/refused.body" || fail "the refusal does not say what the store stored: $(cat "$T/refused.body")"
grep -q 'stored leaf_alloc.max_id 10' "$T/s.log" || fail "the log does not say what the store stored: $(grep -i 'tag q' "$T/s.log" | tail -n 3)"
pass "a trigger capping max_id at 10: IDs 1-9 once each, then 503 naming what the store stored ($(head -c 200 "$T/refused.body"))"
raw "$UNCAP" >/dev/null || fail "could not drop the trigger"
again() { [ "$(ik_http "$base/v1/sequence/q?format=text" "$T/body")" = 200 ]; }
wait_until 10 again || fail "not serving after the trigger was dropped: $(cat "$T/body")"
[ "$(cat "$T/body")" = 10 ] || fail "the first ID after the trigger went is $(cat "$T/body"), not 10"
pass "the trigger dropped: served again from 10"
