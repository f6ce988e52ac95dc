#!/usr/bin/env bash
# labels: resp
# timeout: 300
# docs/resp.md through redis-py (Debian's python3-redis): a
# connection pool shared by threads, and one pipeline of 1,000 mixed commands (INCR
# on a sequence tag, IDK.SNOWFLAKE, INCR of an unknown tag, an unknown command):
# every answer in order and of the right type, the sequence IDs contiguous, the
# errors the documented ones (NOTAG, ERR unknown command; redis-py strips the ERR
# prefix of a message and keeps the others).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add orders --kind sequence "${coord[@]}" >/dev/null
"$IK_BIN" tags add clicks --kind segment "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" || fail "server did not start"

cat >"$T/client.py" <<'PY'
import sys, threading
import redis

port = int(sys.argv[1])
pool = redis.ConnectionPool(host="127.0.0.1", port=port, max_connections=8)
r = redis.Redis(connection_pool=pool)

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

# 1. the pool, from 8 threads at once: every INCR of the sequence tag distinct,
#    together one gap-free run
got, lock = [], threading.Lock()
def worker():
    mine = [r.incr("orders") for _ in range(250)]
    with lock:
        got.extend(mine)
ts = [threading.Thread(target=worker) for _ in range(8)]
for t in ts: t.start()
for t in ts: t.join()
if sorted(got) != list(range(1, 2001)):
    fail("pooled INCRs are not exactly 1..2000")
print("pool: 2000 INCRs from 8 threads are exactly 1..2000")

# 2. one pipeline of 1,000 mixed commands
p = r.pipeline(transaction=False)
kinds = []
for i in range(1000):
    k = i % 5
    if k in (0, 1):
        p.incr("orders"); kinds.append("seq")
    elif k == 2:
        p.execute_command("IDK.SNOWFLAKE"); kinds.append("sf")
    elif k == 3:
        p.incr("no-such-tag"); kinds.append("notag")
    else:
        p.execute_command("NOSUCHCMD", "x"); kinds.append("unknown")
res = p.execute(raise_on_error=False)
if len(res) != 1000:
    fail("%d answers to 1000 commands" % len(res))
seq, sf = [], []
for i, (k, a) in enumerate(zip(kinds, res)):
    if k == "seq":
        if not isinstance(a, int): fail("answer %d (INCR): %r" % (i, a))
        seq.append(a)
    elif k == "sf":
        if not isinstance(a, int) or a <= 0: fail("answer %d (IDK.SNOWFLAKE): %r" % (i, a))
        sf.append(a)
    elif k == "notag":
        if not isinstance(a, redis.ResponseError) or not str(a).startswith("NOTAG no tag 'no-such-tag'"):
            fail("answer %d (unknown tag): %r" % (i, a))
    else:
        if not isinstance(a, redis.ResponseError) or not str(a).startswith("unknown command 'NOSUCHCMD'"):
            fail("answer %d (unknown command): %r" % (i, a))
if seq != list(range(2001, 2001 + 400)):
    fail("pipelined sequence IDs are not 2001..2400 in order: %r..." % seq[:5])
if sf != sorted(sf) or len(set(sf)) != len(sf):
    fail("pipelined snowflake IDs do not increase")
print("pipeline: 1000 answers in order; 400 sequence IDs 2001..2400 contiguous; "
      "200 increasing snowflakes; 200 NOTAG; 200 unknown command")

# 3. the same client library's other calls: INCRBY, PING, ECHO, CLIENT SETNAME
if r.incrby("orders", 10) != 2410: fail("INCRBY orders 10 != 2410")
if not r.ping(): fail("PING")
if r.echo("x") != b"x": fail("ECHO")
r.client_setname("py")
if r.client_getname() not in ("py", b"py"): fail("CLIENT GETNAME")
c = r.incr("clicks")
if r.incr("clicks") <= c: fail("segment INCR does not increase")
try:
    r.execute_command("IDK.SEQUENCE", "clicks")
    fail("IDK.SEQUENCE on a segment tag answered")
except redis.ResponseError as e:
    if not str(e).startswith("WRONGTYPE tag 'clicks' is a segment tag"): fail("wrong kind: %s" % e)
print("INCRBY, PING, ECHO, CLIENT SETNAME/GETNAME, WRONGTYPE")
PY

/usr/bin/python3 "$T/client.py" "$RPORT" >"$T/py.out" 2>&1 || fail "redis-py client: $(cat "$T/py.out")"
while read -r line; do pass "redis-py $line"; done <"$T/py.out"
n=$(rcli INCR orders)
[ "$n" = 2411 ] || fail "after the redis-py run the next sequence ID is $n, not 2411"
pass "no sequence ID was skipped"
