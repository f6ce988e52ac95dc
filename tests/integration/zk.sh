# zk.sh: a real Apache ZooKeeper for the integration tests (bash, sourced after lib.sh).
#
# Debian's zookeeper package, started with java directly (never the init scripts), on
# free loopback ports with fresh data dirs under $T, a 256 MiB heap and tickTime 500 ms
# (so sessions may be as short as 1 s and tests run fast): tests/fixtures/zk_jvm.sh.
# Every server started here is stopped when the test exits, pass or fail. A server
# that does not answer within ZK_START_TIMEOUT seconds (default 120) fails the test
# loudly: no test passes without a ZooKeeper.
#
# The shared server: a test whose header says "# fixtures: zk" (tests/fixtures/README)
# runs with IK_FIXTURE_ZK set, and zk_start_standalone then boots no JVM: it uses the
# one ZooKeeper the fixture started for the whole stage, under a chroot of the test's
# own (ZK_CONNECT="127.0.0.1:PORT/ik-TEST-PID"; zk_uri, zk_tool and the interop
# helpers all work under it), and fails the test loudly if that server does not
# answer. What would stop, kill, proxy or reconfigure the shared server (zk_stop,
# zk_start, zk_proxy_start, zk_start_ensemble) fails the test loudly there: a test
# that needs them does not declare the fixture and gets a server of its own.
#
#   zk_start_standalone          one server; sets ZK_CONNECT ("127.0.0.1:PORT")
#   zk_start_ensemble N [O]      N servers (N=3 for a quorum), the last O of them
#                                observers (peerType=observer); waits for a leader
#   zk_stop I [SIGNAL]           stops server I (default SIGKILL) and waits for it
#   zk_start I                   starts server I again on its data (same ports)
#   zk_wait_serving I [SECS]     until server I serves (standalone, leader, follower, observer)
#   zk_wait_quorum [SECS]        until one leader and every running server serves
#   zk_leader                    prints the index of the leading server
#   zk_4lw I WORD                a four-letter word (ruok, srvr, mntr...) to server I
#   zk_uri [CHROOT]              zk://HOST:PORT,.../CHROOT for idkeeper
#   zk_interop_start [c] [java]  ZooKeeper and the interop helpers (tests/interop)
#   zk_proxy_start               a fault proxy to server 1 (PP: its port); then
#   proxy up|down|blackhole|hold|release|mute|unmute|delay MS|cut N OPS PATTERN
#                                what it does to the connections through it (lib.sh)
#   zk_tool CMD ARGS...          the kazoo helper (an independent client): see below
#   zk_port I                    client port of server I
#   zk_session_of I PID          true once server I has a session on a connection of PID

# shellcheck source=../fixtures/zk_jvm.sh
source "$IK_SRC/tests/fixtures/zk_jvm.sh"
ZK_START_TIMEOUT=${ZK_START_TIMEOUT:-120} # generous: a loaded machine is slow to start a JVM
ZK_N=0
ZK_CONNECT=
declare -A ZK_PID=() ZK_CPORT=()

[ -r /usr/share/java/zookeeper.jar ] || fail "zk.sh: /usr/share/java/zookeeper.jar missing (apt-get install zookeeper)"
command -v java >/dev/null || fail "zk.sh: no java (apt-get install default-jre-headless)"

# zk_free_port: a loopback port free now, below the kernel's ephemeral range (so no
# outgoing connection can be holding it) and not handed out by this file before
# (the list is a file: callers run it in a subshell, $(zk_free_port)).
zk_free_port() { ik_free_port "$T/.ports"; }
_zk_port() { zk_free_port; }

zk_port() { echo "${ZK_CPORT[$1]}"; }

# zk_session_of I PID: true once server I holds an established session on one of
# PID's connections to it: a TCP connection alone is not one (a server still loading
# its data accepts and then closes it, "ZooKeeperServer not running"), and the client
# is connected only once the server has answered its session request, which cons
# shows as the connection's sid.
zk_session_of() {
  local port ports cons
  ports=$(ss -Htnp state established "( dport = :${ZK_CPORT[$1]} )" 2>/dev/null |
    awk -v p="pid=$2," 'index($0, p) { n = split($3, a, ":"); print a[n] }')
  [ -n "$ports" ] || return 1
  cons=$(zk_4lw "$1" cons)
  for port in $ports; do
    grepq ":$port\[[0-9]*\](.*sid=0x" <<<"$cons" && return 0
  done
  return 1
}

# zk_4lw I WORD: prints the server's answer (empty if it does not answer in 2 s).
zk_4lw() {
  local fd line
  { exec {fd}<>"/dev/tcp/127.0.0.1/${ZK_CPORT[$1]}"; } 2>/dev/null || return 0
  trap '' PIPE
  printf '%s' "$2" >&"$fd" 2>/dev/null
  trap - PIPE
  while IFS= read -r -t 2 line <&"$fd" || [ -n "$line" ]; do
    printf '%s\n' "$line"
    line=
  done
  exec {fd}>&-
  return 0
}

_zk_write_cfg() { # I CPORT [server lines]
  local i=$1
  shift
  zk_jvm_cfg "$T/zk$i" "$@"
}

# _zk_not_shared WHAT: fails the test if it uses the shared server (IK_FIXTURE_ZK).
_zk_not_shared() {
  [ -z "${IK_FIXTURE_ZK:-}" ] ||
    fail "$1 on the shared ZooKeeper (this test declares '# fixtures: zk'): a test that stops, restarts, proxies or reconfigures ZooKeeper needs a server of its own; remove the fixture from its header"
}

# zk_start I: starts server I in the background (its config must exist).
zk_start() {
  local i=$1 dir=$T/zk$1
  _zk_not_shared "zk_start $i"
  [ -f "$dir/zoo.cfg" ] || fail "zk_start: no server $i"
  [ -n "${ZK_PID[$i]:-}" ] && kill -0 "${ZK_PID[$i]}" 2>/dev/null && fail "zk_start: server $i runs already"
  zk_jvm_exec "$dir" >>"$T/zk$i.log" 2>&1 &
  ZK_PID[$i]=$!
  log "zk: server $i started (pid ${ZK_PID[$i]}, client port ${ZK_CPORT[$i]})"
}

# zk_stop I [SIGNAL]: stops server I (SIGKILL by default: a crash) and reaps it.
zk_stop() {
  local i=$1 sig=${2:-KILL} pid=${ZK_PID[$1]:-}
  _zk_not_shared "zk_stop $i"
  [ -n "$pid" ] || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill -"$sig" "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  ZK_PID[$i]=
  log "zk: server $i stopped ($sig)"
}

# zk_wait_serving I [SECS]: until server I answers srvr with a serving mode.
zk_wait_serving() {
  local i=$1 limit=${2:-$ZK_START_TIMEOUT} t0=$SECONDS
  while ((SECONDS - t0 < limit)); do
    if [ -n "${ZK_PID[$i]:-}" ] && ! kill -0 "${ZK_PID[$i]}" 2>/dev/null; then
      fail "zk: server $i exited while starting (see $T/zk$i.log)"
    fi
    zk_4lw "$i" srvr | grepq -E '^Mode: (standalone|leader|follower|observer)' && return 0
    sleep 0.1
  done
  fail "zk: server $i does not serve after ${limit}s (see $T/zk$i.log)"
}

# zk_leader: the index of the server that leads (or the standalone one).
zk_leader() {
  local i
  for ((i = 1; i <= ZK_N; i++)); do
    [ -n "${ZK_PID[$i]:-}" ] || continue
    zk_4lw "$i" srvr | grepq -E '^Mode: (leader|standalone)' && { echo "$i"; return 0; }
  done
  return 1
}

# zk_wait_quorum [SECS]: until a leader is elected and every running server serves.
zk_wait_quorum() {
  local limit=${1:-$ZK_START_TIMEOUT} t0=$SECONDS i ok
  while ((SECONDS - t0 < limit)); do
    ok=1
    for ((i = 1; i <= ZK_N; i++)); do
      [ -n "${ZK_PID[$i]:-}" ] || continue
      zk_4lw "$i" srvr | grepq -E '^Mode: (standalone|leader|follower|observer)' || { ok=0; break; }
    done
    if ((ok)) && zk_leader >/dev/null; then return 0; fi
    sleep 0.1
  done
  fail "zk: no serving quorum after ${limit}s (see $T/zk*.log)"
}

_zk_cleanup() {
  local i
  for ((i = 1; i <= ZK_N; i++)); do
    [ -n "${ZK_PID[$i]:-}" ] && { kill -KILL "${ZK_PID[$i]}" 2>/dev/null; wait "${ZK_PID[$i]}" 2>/dev/null; }
  done
  return 0
}
IK_CLEANUPS+=(_zk_cleanup)

zk_start_standalone() {
  ((ZK_N == 0)) || fail "zk_start_standalone: ZooKeeper runs already"
  if [ -n "${IK_FIXTURE_ZK:-}" ]; then
    _zk_use_shared
    return
  fi
  ZK_N=1
  ZK_CPORT[1]=$(_zk_port)
  _zk_write_cfg 1 "${ZK_CPORT[1]}"
  local t0=$SECONDS
  zk_start 1
  zk_wait_serving 1
  ZK_CONNECT=127.0.0.1:${ZK_CPORT[1]}
  log "zk: standalone serving at $ZK_CONNECT after $((SECONDS - t0))s"
}

# _zk_use_shared: zk_start_standalone under the fixture: the shared server (its
# address in $IK_FIXTURE_ZK/env, written by tests/fixtures/zk.sh start) with a fresh
# chroot node /ik-TEST-PID, created here so that every client (idkeeper, kazoo,
# Curator, the C client) may work under it at once.
_zk_use_shared() {
  local env=$IK_FIXTURE_ZK/env chroot
  [ -r "$env" ] || fail "zk: no $env: the shared ZooKeeper (fixture zk) did not start; see the test fixture/zk.start"
  # shellcheck disable=SC1090 # written by tests/fixtures/zk.sh start
  source "$env"
  [ -n "${ZK_SHARED_PORT:-}" ] || fail "zk: $env names no ZK_SHARED_PORT"
  chroot=/ik-$(basename "$0" .sh)${IK_STORE:+.$IK_STORE}-$$
  ZK_CONNECT=127.0.0.1:$ZK_SHARED_PORT
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 - "$chroot" >"$T/zk-shared.err" 2>&1 <<'PY' ||
import logging, os, sys
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
zk = KazooClient(hosts=os.environ["ZK_CONNECT"], timeout=10)
zk.start(timeout=30)
zk.create(sys.argv[1])
zk.stop()
PY
    fail "zk: the shared ZooKeeper at $ZK_CONNECT (fixture zk, pid ${ZK_SHARED_PID:-?}) does not answer or refused the chroot $chroot: $(tail -n 3 "$T/zk-shared.err")"
  ZK_N=1
  ZK_CPORT[1]=$ZK_SHARED_PORT
  ZK_CONNECT=127.0.0.1:$ZK_SHARED_PORT$chroot
  log "zk: shared server (fixture zk) at $ZK_CONNECT"
}

zk_start_ensemble() {
  local n=${1:-3} observers=${2:-0} i role
  _zk_not_shared "zk_start_ensemble"
  ((ZK_N == 0)) || fail "zk_start_ensemble: ZooKeeper runs already"
  ((observers < n)) || fail "zk_start_ensemble: $observers observers of $n servers leave no voter"
  ZK_N=$n
  local servers=()
  for ((i = 1; i <= n; i++)); do
    ZK_CPORT[$i]=$(_zk_port)
    role=
    ((i > n - observers)) && role=:observer
    servers+=("server.$i=127.0.0.1:$(_zk_port):$(_zk_port)$role")
  done
  ZK_CONNECT=
  for ((i = 1; i <= n; i++)); do
    if ((i > n - observers)); then
      _zk_write_cfg "$i" "${ZK_CPORT[$i]}" "${servers[@]}" peerType=observer
    else
      _zk_write_cfg "$i" "${ZK_CPORT[$i]}" "${servers[@]}"
    fi
    echo "$i" >"$T/zk$i/data/myid"
    ZK_CONNECT+="${ZK_CONNECT:+,}127.0.0.1:${ZK_CPORT[$i]}"
  done
  local t0=$SECONDS
  for ((i = 1; i <= n; i++)); do zk_start "$i"; done
  zk_wait_quorum
  log "zk: ensemble of $n serving at $ZK_CONNECT after $((SECONDS - t0))s, leader $(zk_leader)"
}

# zk_uri [CHROOT]: the coordination URI of the running ZooKeeper.
zk_uri() { echo "zk://$ZK_CONNECT${1:+/${1#/}}"; }

# zk_interop_start [c] [java]: the set-up of the interop tests: loads
# tests/interop/build.sh (IK_INTEROP, CURATOR, KAZOO, interop_check_intervals),
# starts a standalone ZooKeeper, builds the C helper (c) and the Java Curator helper
# (java), and sets URI to $(zk_uri t), the chroot the helpers' paths live under.
zk_interop_start() {
  local what
  # shellcheck source=../interop/build.sh
  source "$IK_SRC/tests/interop/build.sh"
  zk_start_standalone
  for what in "$@"; do
    case $what in
      c) interop_build_c ;;
      java) interop_build_java ;;
      *) fail "zk_interop_start: unknown helper $what" ;;
    esac
  done
  URI=$(zk_uri t)
}

# zk_proxy_start: starts tests/interop/fault_proxy.py, a TCP proxy on port PP (set
# here) to ZooKeeper server 1, for the tests that inject faults between one client
# and ZooKeeper. Fails the test if it does not come up.
zk_proxy_start() {
  _zk_not_shared "zk_proxy_start"
  PP=$(zk_free_port)
  fault_proxy_start "$PP" "$(zk_port 1)" || fail "the fault proxy did not start: $(cat "$T/proxy.log")"
}

# zk_contenders PATH N: the node PATH (as ZK_CONNECT sees it) has at least N
# contenders: lock (-lock-) or election (latch-) children, as an independent
# client lists them (a condition for wait_until: "B is queued behind A").
zk_contenders() { (($(zk_tool ls "$1" 2>/dev/null | grep -cE -- '-lock-|latch-' || true) >= $2)); }

# zk_tool CMD ARGS...: an independent client (python3-kazoo) on ZK_CONNECT.
#   slot BASE W         JSON of slot W of the app at BASE (/CHROOT/idkeeper/apps/APP):
#                       record_ms, holder, version, owner (owner node's fields, or null)
#   held BASE           the held workers of the app at BASE (its owner nodes), one a line
#   wait-free BASE W SECS  waits until slot W has no owner; prints the seconds it took
#                       and the Unix ms it saw it free ("0.00 ..." if free at once)
#   delete PATH         tries to delete PATH without credentials: prints
#                       "deleted", "noauth", "notempty" or "nonode"
#   set PATH DATA       tries to overwrite PATH without credentials: prints "set" or "noauth"
#   acl PATH            the ACL of PATH as JSON
#   ls PATH             the children of PATH
#   get PATH            the data of PATH, as text
#   owner PATH          the session that owns the ephemeral PATH ("0x..."; 0x0: none)
# With ZK_TOOL_AUTH=user:password the tool authenticates with that digest first.
zk_tool() {
  ZK_CONNECT=$ZK_CONNECT /usr/bin/python3 "$T/zk_tool.py" "$@"
}

cat >"$T/zk_tool.py" <<'PYEOF'
import json, logging, os, sys, time
logging.basicConfig(level=logging.CRITICAL)
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError, NotEmptyError

def fields(data):
    out = {}
    text = data.decode("utf-8", "replace")
    for line in text.split("\n"):
        if "=" in line:
            k, v = line.split("=", 1)
            if k in ("holder", "identity"):
                out[k] = text.split(k + "=", 1)[1].rstrip("\n")
                break
            out[k] = v
    return out

cmd, args = sys.argv[1], sys.argv[2:]
zk = KazooClient(hosts=os.environ["ZK_CONNECT"], timeout=10)
zk.start(timeout=20)
auth = os.environ.get("ZK_TOOL_AUTH")
if auth:
    zk.add_auth("digest", auth)
try:
    if cmd == "slot":
        name = "%04d" % int(args[1])
        data, st = zk.get(args[0] + "/slots/" + name)
        f = fields(data)
        owner = None
        try:
            od, ost = zk.get(args[0] + "/owners/" + name)
            owner = fields(od)
            owner["session"] = hex(ost.ephemeralOwner)
        except NoNodeError:
            pass
        print(json.dumps({"record_ms": int(f.get("record_ms", 0)), "holder": f.get("holder", ""),
                          "version": st.version, "owner": owner}))
    elif cmd == "held":
        for w in sorted(zk.get_children(args[0] + "/owners")):
            print(int(w))
    elif cmd == "wait-free":
        t0 = time.monotonic()
        while zk.exists(args[0] + "/owners/%04d" % int(args[1])):
            if time.monotonic() - t0 > float(args[2]):
                print("timeout")
                sys.exit(1)
            time.sleep(0.05)
        print("%.2f %d" % (time.monotonic() - t0, time.time() * 1000))
    elif cmd == "delete":
        try:
            zk.delete(args[0])
            print("deleted")
        except NoAuthError:
            print("noauth")
        except NotEmptyError:
            print("notempty")
        except NoNodeError:
            print("nonode")
    elif cmd == "set":
        try:
            zk.set(args[0], args[1].encode())
            print("set")
        except NoAuthError:
            print("noauth")
    elif cmd == "acl":
        acl, _ = zk.get_acls(args[0])
        print(json.dumps([{"perms": a.perms, "scheme": a.id.scheme, "id": a.id.id} for a in acl]))
    elif cmd == "ls":
        for c in sorted(zk.get_children(args[0])):
            print(c)
    elif cmd == "get":
        print(zk.get(args[0])[0].decode("utf-8", "replace"))
    elif cmd == "owner":
        print(hex(zk.exists(args[0]).ephemeralOwner))
    else:
        sys.exit("zk_tool: unknown command " + cmd)
finally:
    zk.stop()
PYEOF

# ------------------------------------------------------------------------------
# idkeeper daemons on ZooKeeper, and checks on the IDs they issue.
#
#   zk_serve NAME PORT [ARGS...]  idkeeper serve on $(zk_uri $ZK_CHROOT) with
#                                 --zk-session-timeout $ZK_SESSION_MS (lib.sh start_server)
#   fetch_loop PORT OUT           background: fetches 50 IDs every ~50 ms until
#                                 fetch_stop; IDs to OUT, "sent_unix_ms status" lines
#                                 to OUT.st
#   st_check OUT.st FROM TO ok|down  requests sent in [FROM, TO] (Unix ms) all got
#                                 200 (ok) or none did (down); fails otherwise
#   fetch_stop                    stops every fetch_loop and waits for them
#   fetched OUT N [SINCE], fetched_all N [SINCE]  (conditions) N answers 200 since
#                                 SINCE (Unix ms) in one fetch_loop's OUT, in each
#   (ids_time_check, ids_workers, ids_time_max: in lib.sh)
ZK_SESSION_MS=${ZK_SESSION_MS:-4000}
ZK_CHROOT=${ZK_CHROOT:-t}
FETCH_PIDS=()
FETCH_OUTS=()

zk_serve() {
  local name=$1 port=$2
  shift 2
  start_server "$name" "$port" --coord "$(zk_uri "$ZK_CHROOT")" \
    --zk-session-timeout "$ZK_SESSION_MS" "$@"
}

fetch_loop() {
  local port=$1 out=$2
  (
    trap 'exit 0' TERM
    : >"$out"
    : >"$out.st"
    poll "$out" "$out.st" "http://127.0.0.1:$port/v1/snowflake?count=50&format=text" "$T/fetch.stop" 0.04 2 now_ms
  ) &
  FETCH_PIDS+=($!)
  FETCH_OUTS+=("$out")
}

# fetched OUT N [SINCE]: the fetch_loop into OUT has N answers 200 to requests sent
# at or after SINCE (Unix ms; default: all): a condition for wait_until
fetched() {
  (($(awk -v t="${3:-0}" '$1 >= t && $2 == 200 { n++ } END { print n + 0 }' "$1.st" 2>/dev/null || echo 0) >= $2))
}
# fetched_all N [SINCE]: fetched for every OUT of this test's fetch_loops
fetched_all() {
  local f
  for f in "${FETCH_OUTS[@]}"; do fetched "$f" "$@" || return 1; done
}

_fetch_cleanup() {
  touch "$T/fetch.stop"
  local p
  for p in "${FETCH_PIDS[@]}"; do kill "$p" 2>/dev/null; done
  return 0
}
IK_CLEANUPS+=(_fetch_cleanup)

fetch_stop() {
  touch "$T/fetch.stop"
  local p
  for p in "${FETCH_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  FETCH_PIDS=()
  FETCH_OUTS=()
  rm -f "$T/fetch.stop"
}

# wait_held PORT [SECS]: until the server's lease is held and /readyz answers 200
# (ready alone may still be the tail of a safe window).
wait_held() {
  local port=$1 limit=${2:-20} i
  for ((i = 0; i < limit * 10; i++)); do
    [ "$(status_of "$port" .lease.state 2>/dev/null)" = held ] &&
      [ "$(http_status "http://127.0.0.1:$port/readyz")" = 200 ] && return 0
    sleep 0.1
  done
  return 1
}

# slot_json WORKER [APP]: the slot node as the kazoo helper sees it.
slot_json() { zk_tool slot "$(app_base "${2:-default}")" "$1"; }

# app_base [APP]: the app's node, /CHROOT/idkeeper/apps/APP.
app_base() { echo "/$ZK_CHROOT/idkeeper/apps/${1:-default}"; }

st_check() {
  /usr/bin/python3 - "$@" <<'PY' || fail "$1: requests sent in [$2, $3] are not all $4"
import sys
f, lo, hi, mode = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
rows = [l.split() for l in open(f) if l.strip()]
rows = [(int(t), c) for t, c in rows if lo <= int(t) <= hi]
bad = [r for r in rows if (r[1] != "200") == (mode == "ok")]
print("%s: %d requests in [%d, %d], %d not %s%s" % (f, len(rows), lo, hi, len(bad), mode,
      (": first at +%d ms: %s" % (bad[0][0] - lo, bad[0][1])) if bad else ""), file=sys.stderr)
sys.exit(1 if bad or not rows else 0)
PY
}
