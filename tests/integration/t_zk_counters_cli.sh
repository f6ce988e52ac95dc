#!/usr/bin/env bash
# labels: zk counters cli interop
# timeout: 240
# fixtures: zk
# Tags on zk:// as other ZooKeeper clients see them (the CLI's tags commands on zk://
# are the conformance group tests/conformance/cli.sh):
#   - the node layout of docs/zookeeper.md, read with kazoo: TAG's first 8 bytes are
#     max_id big-endian, then "since=" and the writer table; TAG/meta holds kind,
#     start, step, made_by and the description;
#   - Apache Curator's DistributedAtomicLong reads max_id from the node, and its
#     add() (which rewrites the node as 8 bytes) is followed by daemons that go on
#     above it, the writer table restarting at Curator's version;
#   - with --zk-auth the tag nodes carry the app's digest ACL: anyone may read, a
#     client without the credentials cannot change max_id, and a CLI with other
#     credentials cannot add a tag to the app.
source "$(dirname "$0")/lib.sh"
IK_STORE=zk
source "$IK_SRC/tests/tools/counters.sh"
source "$IK_SRC/tests/interop/build.sh"

C=(--coord "$DATA")
ik() { "$IK_BIN" "$@"; }
# node PATH: "VERSION" then the data (repr of the bytes after 8), and the max_id
node() {
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 - "$1" <<'PY'
import logging, os, struct, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"], timeout=10)
zk.start(timeout=20)
data, st = zk.get(sys.argv[1])
if sys.argv[1].endswith("/meta"):
    print(data.decode())
else:
    print("max_id=%d" % struct.unpack(">q", data[:8])[0])
    print("version=%d" % st.version)
    print(data[8:].decode(), end="")
zk.stop()
PY
}

# (idkeeper tags add/list/show, exit codes, apps and concurrent adds on zk://: the
# conformance group tests/conformance/cli.sh)
ik tags add invoices --kind sequence --start 1000 "${C[@]}" >/dev/null || fail "add invoices"

# ---- the node layout -------------------------------------------------------------------
B=$(app_base)/tags
node "$B/invoices/meta" >"$T/meta"
grep -qx 'kind=sequence' "$T/meta" && grep -qx 'start=1000' "$T/meta" && grep -qx 'step=1' "$T/meta" &&
  grep -q '^made_by=[0-9a-f]\{16\}:[0-9]*$' "$T/meta" && grep -qx 'description=' "$T/meta" ||
  fail "meta: $(cat "$T/meta")"
node "$B/invoices" >"$T/n0"
grep -qx 'max_id=1000' "$T/n0" && grep -qx 'version=0' "$T/n0" && grep -qx 'since=0' "$T/n0" ||
  fail "a new counter node: $(cat "$T/n0")"
fleet 2
for s in s1 s2; do curl -fsS "$(url $s)/v1/sequence/invoices?count=10" >/dev/null; done
node "$B/invoices" >"$T/n1"
grep -qx 'max_id=1020' "$T/n1" && grep -qx 'version=2' "$T/n1" && grep -qx 'since=0' "$T/n1" &&
  [ "$(grep -c '^w=[0-9a-f]\{16\}:[0-9]*:[0-9]*$' "$T/n1")" = 2 ] || fail "after two advances: $(cat "$T/n1")"
pass "layout: meta $(tr '\n' ' ' <"$T/meta"); counter after 2 advances: $(tr '\n' ' ' <"$T/n1")"

# ---- Curator's DistributedAtomicLong on the same node ------------------------------------
interop_javac CuratorCounter "$CURATOR_CP"
CC=(java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$INTEROP_OUT/classes:$CURATOR_CP" CuratorCounter)
got=$("${CC[@]}" get "$ZK_CONNECT" "$B/invoices" 2>"$T/cc.log") || fail "Curator get: $(cat "$T/cc.log")"
[ "$got" = 1020 ] || fail "Curator reads $got, max_id is 1020"
got=$("${CC[@]}" add "$ZK_CONNECT" "$B/invoices" 5 2>"$T/cc.log") || fail "Curator add: $(cat "$T/cc.log")"
[ "$got" = "1020 1025" ] || fail "Curator add 5: $got"
node "$B/invoices" >"$T/n2"
grep -qx 'max_id=1025' "$T/n2" && grep -qx 'version=3' "$T/n2" && [ "$(wc -l <"$T/n2")" = 2 ] ||
  fail "after Curator's add: $(cat "$T/n2")"
ids=$(curl -fsS "$(url s2)/v1/sequence/invoices?count=3&format=text" | tr '\n' ' ')
[ "$ids" = "1025 1026 1027 " ] || fail "after Curator's add s2 answered $ids"
node "$B/invoices" >"$T/n3"
grep -qx 'since=3' "$T/n3" || fail "the writer table did not restart at Curator's version: $(cat "$T/n3")"
[ "$(tag_field s1 invoices max_id)" = 1028 ] || fail "max_id after all: $(tag_field s1 invoices max_id)"
pass "Curator reads max_id 1020, adds 5 (1025, data now 8 bytes); the daemons go on at 1025, table since=3"
for s in s1 s2; do stop_clean $s; done

# ---- ACLs with --zk-auth -----------------------------------------------------------------
A=(--coord "$(zk_uri secure)" --zk-auth app:s3cret)
ik tags add paid --kind sequence "${A[@]}" >/dev/null || fail "add with --zk-auth"
SB=/secure/idkeeper/apps/default/tags
acl=$(zk_tool acl "$SB/paid")
jq -e 'length == 2 and (map(select(.scheme == "digest" and .perms == 31)) | length == 1) and
       (map(select(.scheme == "world" and .perms == 1)) | length == 1)' <<<"$acl" >/dev/null ||
  fail "ACL of the tag node: $acl"
zk_tool acl "$SB/paid/meta" | jq -e 'map(select(.scheme == "world")) | .[0].perms == 1' >/dev/null ||
  fail "ACL of meta: $(zk_tool acl "$SB/paid/meta")"
[ "$(zk_tool set "$SB/paid" xxxxxxxx)" = noauth ] || fail "a client without credentials changed max_id"
[ "$(zk_tool delete "$SB/paid/meta")" = noauth ] || fail "a client without credentials deleted meta"
ik tags show paid "${A[@]}" >/dev/null || fail "show with the credentials"
ik tags show paid --coord "$(zk_uri secure)" >/dev/null || fail "show without credentials (world may read)"
expect_fail 1 "not authorized" ik tags add other --kind segment --coord "$(zk_uri secure)" --zk-auth intruder:x
pass "--zk-auth: tag nodes are digest ALL + world READ; others can read, not write or add"
