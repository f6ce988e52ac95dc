#!/usr/bin/env bash
# labels: resp counters local
# timeout: 360
# RESP under the same rules as HTTP (docs/resp.md): pipelined answers stay in order
# while a sequence commit waits on a hung store and the loop keeps serving others;
# the idle and read timeouts close connections; max-connections answers "-ERR max
# number of clients reached"; a client that gives up with sequence commands queued
# has them withdrawn (no gap); a store down past its timeout answers -TRYAGAIN; SIGTERM answers every command already read (a commit
# in flight included) before the server exits 0. The store is made to hang for
# real, as in t_counters_pending: another connection holds SQLite's write lock.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add q --kind sequence "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" --threads 1 --idle-timeout 2000 --read-timeout 2000 \
  --max-connections 6 --shutdown-timeout 30000 || fail "server did not start"
pid=${SERVER_PID[a]}
[ "$(rcli INCR q)" = 1 ] || fail "first INCR q"
DB=$T/data/idkeeper.db

lock() { sqlite_lock "$DB" "$1"; }
unlock() { sqlite_unlock; }
# pending: a request waits on the (hung) store; accepting: a new connection is served
pending() { metric_at_least "$PORT" ik_pending_requests 1; }
accepting() { [ "$(rcli PING 2>/dev/null)" = PONG ]; }
withdrawn() { metric_of "$PORT" ik_sequence_requests_withdrawn_total; }

# client NAME BYTES: a background raw client: sends BYTES (printf escapes), writes
# $T/NAME.sent, then reads until the server closes (or 40 s), into $T/NAME.out.
cat >"$T/client.py" <<'PY'
import socket, sys, time
port, name, data, T = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(40)
s.sendall(data.encode().decode("unicode_escape").encode("latin-1"))
open(T + "/" + name + ".sent", "w").close()
out = b""
t0 = time.time()
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
        open(T + "/" + name + ".out", "wb").write(out)
    out += b"<closed>"
except socket.timeout:
    out += b"<open>"
except OSError:
    out += b"<reset>"
open(T + "/" + name + ".out", "wb").write(out)
open(T + "/" + name + ".secs", "w").write("%.2f" % (time.time() - t0))
PY
client() {
  rm -f "$T/$1.sent" "$T/$1.out"
  /usr/bin/python3 "$T/client.py" "$RPORT" "$1" "$2" "$T" &
  IK_PIDS+=($!)
  CLIENT_PID=$!
  wait_until 5 test -e "$T/$1.sent" || fail "client $1 did not send"
}

# --- idle and read timeouts ---------------------------------------------------------
client idle 'PING\r\n'
client slow '*2\r\n$4\r\nINCR\r\n$1\r\n'
wait_grep '<closed>' "$T/idle.out" 15 || fail "an idle connection was not closed: $(cat "$T/idle.out")"
wait_grep '<closed>' "$T/slow.out" 15 || fail "a half-sent command was not closed: $(cat "$T/slow.out")"
grep -q 'did not complete within 2000 ms' "$T/slow.out" || fail "read timeout: $(cat "$T/slow.out")"
pass "idle timeout closed an idle connection after $(cat "$T/idle.secs") s; read timeout answered -ERR and closed a half-sent command"

# --- max-connections ------------------------------------------------------------------
out=$(/usr/bin/python3 - "$RPORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
held = [socket.create_connection(("127.0.0.1", port)) for _ in range(6)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(5)
print(s.recv(200).decode().strip())
PY
)
[ "$out" = "-ERR max number of clients reached" ] || fail "the 7th connection: $out"
wait_until 10 accepting || fail "the connections of the max-connections case never closed"
pass "max-connections 6: the 7th connection gets -ERR max number of clients reached"

# --- pipelining while the store hangs -----------------------------------------------------
lock 60
client pipe 'INCR q\r\nPING\r\nIDK.SNOWFLAKE\r\nINCR q\r\nECHO x\r\n'
wait_until 10 pending || fail "the pipeline's INCR never waited on the store"
[ ! -s "$T/pipe.out" ] || fail "answers came before the pending INCR's: $(cat "$T/pipe.out")"
mono_ms t0
[ "$(rcli PING)" = PONG ] || fail "PING on another connection while the store hangs"
sf=$(rcli IDK.SNOWFLAKE)
[[ "$sf" =~ ^[0-9]+$ ]] || fail "IDK.SNOWFLAKE while the store hangs: $sf"
[ $(( $(mono_ms) - t0 )) -lt 2000 ] || fail "the loop stalled while the store hangs"
unlock
wait_grep 'x' "$T/pipe.out" 20 || fail "the pipeline was not answered after the store came back"
got=$(tr -d '\r' <"$T/pipe.out" | tr '\n' ' ')
[[ "$got" =~ ^:2\ \+PONG\ :[0-9]+\ :3\ \$1\ x\ $ ]] || fail "pipeline answers: $got"
pass "a pipeline behind a pending sequence commit: nothing early, then all 5 answers in order ($got); the single loop kept serving others"

# --- a client that gives up: its queued sequence requests are withdrawn ---------------------
w0=$(curl -fsS "http://127.0.0.1:$PORT/metrics" | awk '$1 == "ik_sequence_requests_withdrawn_total" {print $2}')
lock 60
client patient 'INCR q\r\n'
wait_until 10 pending || fail "the patient INCR never waited on the store" # what comes next queues behind it
/usr/bin/python3 - "$RPORT" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"INCR q\r\nINCR q\r\nIDK.SEQUENCE q COUNT 5\r\n")
time.sleep(0.5)
s.close()
PY
withdrawn_3() { [ "$(withdrawn)" = $((w0 + 3)) ]; }
wait_until 10 withdrawn_3 || true # checked below, with what it is
w1=$(withdrawn)
unlock
wait_grep '^:' "$T/patient.out" 20 || fail "the patient client got no answer: $(cat "$T/patient.out")"
p=$(tr -d '\r:' <"$T/patient.out" | head -1)
kill "$CLIENT_PID" 2>/dev/null || true
[ $((w1 - w0)) -eq 3 ] || fail "withdrawn requests: $w0 then $w1 (want 3 more)"
n=$(rcli INCR q)
[ "$n" = $((p + 1)) ] || fail "after a client gave up: the patient got $p, the next INCR $n (a gap)"
grep -q 'tag gap' "$T/a.log" && fail "a gap was logged: $(grep 'tag gap' "$T/a.log")"
pass "a client that closed with 3 sequence commands queued: all 3 withdrawn, the next INCR ($n) follows the patient one's ($p), no gap"

# --- -TRYAGAIN where HTTP answers 503 ----------------------------------------------------------
lock 60
client busy 'INCR q\r\n'
wait_grep 'TRYAGAIN' "$T/busy.out" 40 || { unlock; fail "a store locked past its busy timeout: $(cat "$T/busy.out")"; }
unlock
grep -q '^-TRYAGAIN the tag store is unreachable or timed out' "$T/busy.out" || fail "TRYAGAIN: $(cat "$T/busy.out")"
kill "$CLIENT_PID" 2>/dev/null || true
n=$(rcli INCR q)
[ "$n" = 6 ] || fail "after -TRYAGAIN the next INCR q is $n, not 6 (nothing was issued)"
pass "a store that stays locked past SQLite's busy timeout: -TRYAGAIN (HTTP's 503), then the next INCR succeeds with no gap"

# --- SIGTERM answers what it has read -------------------------------------------------------
lock 60
client term 'INCR q\r\nPING\r\nINCR q\r\n'
wait_until 10 pending || fail "the INCR never waited on the store"
kill -TERM "$pid"
wait_grep 'SIGTERM: stopping' "$T/a.log" 10 || fail "no stop logged"
sleep 0.5 # let time pass: a server that did not wait for its commit in flight would be gone
alive "$pid" || fail "the server exited with a commit in flight"
unlock
wait_grep '<closed>' "$T/term.out" 30 || fail "the client was not answered and closed: $(cat "$T/term.out")"
got=$(tr -d '\r' <"$T/term.out" | tr '\n' ' ')
[ "$got" = ":7 +PONG :8 <closed>" ] || fail "answers at shutdown: $got"
wait_until 30 not alive "$pid" || fail "the server did not exit"
wait "$pid" && rc=0 || rc=$?
[ "$rc" = 0 ] || fail "exit code $rc after SIGTERM"
pass "SIGTERM with a commit in flight: every command read was answered ($got), then exit 0"
