#!/usr/bin/env bash
# labels: http
# timeout: 120
# docs/guarantees.md promise 13: SIGTERM/SIGINT/SIGHUP stop accepting, finish the request in flight (its
# answer says "Connection: close"), close idle keep-alive connections, release the
# slot and exit 0. The same identity then gets the same worker back, and the slot
# is free for anyone. A request that never completes does not hold the exit up
# beyond --shutdown-timeout.
source "$(dirname "$0")/lib.sh"

DATA="local:$T/data"

# client PORT NAME MODE: a background raw client. MODE inflight: sends half a
# request, writes $T/NAME.ready, waits for $T/go, sends the rest and reads the
# answer until the server closes. MODE idle: one full request, writes NAME.ready,
# then waits for the server to close the connection. MODE stuck: half a request,
# NAME.ready, then waits for the close. Output in $T/NAME.out.
cat >"$T/client.py" <<'EOF'
import os, socket, sys, time
port, name, mode, T = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(30)
full = b"GET /api/snowflake/get/x HTTP/1.1\r\nHost: t\r\n\r\n"
if mode == "idle":
    s.sendall(full)
    first = s.recv(65536)
else:
    s.sendall(full[:-2])
open(f"{T}/{name}.ready", "w").close()
if mode == "inflight":
    while not os.path.exists(f"{T}/go"):
        time.sleep(0.01)
    time.sleep(0.2)
    s.sendall(full[-2:])
out = first if mode == "idle" else b""
try:
    while True:
        b = s.recv(65536)
        if not b: break
        out += b
    out += b"\n<CLOSED>"
except Exception as e:
    out += ("\n<%s>" % type(e).__name__).encode()
open(f"{T}/{name}.out", "wb").write(out)
EOF
client() { python3 "$T/client.py" "$1" "$2" "$3" "$T" & IK_PIDS+=($!); CLIENT_PID=$!; }
wait_file() { for _ in $(seq 200); do [ -e "$1" ] && return 0; sleep 0.025; done; fail "no $1"; }

# stop NAME SIGNAL MAXMS: signals the server, waits for it, checks exit 0 in time.
stop() {
  local name=$1 sig=$2 max=$3 pid=${SERVER_PID[$1]} rc=0 t0 took
  t0=$(date +%s%N)
  kill -"$sig" "$pid"
  wait "$pid" || rc=$?
  took=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ $rc -eq 0 ] || fail "$name exited $rc after SIG$sig"
  [ $took -le "$max" ] || fail "$name took $took ms to exit after SIG$sig"
  log "$name exited 0 after SIG$sig in $took ms"
}

worker_of() { curl -fsS "http://127.0.0.1:$1/v1/status" | jq -r .worker; }

# ---- first life: a request in flight and an idle connection during SIGTERM
port=$(free_port)
start_server same "$port" --coord "$DATA" --quiet
wait_ready "$port" || fail "server not ready"
w1=$(worker_of "$port")
client "$port" inflight inflight; c_inflight=$CLIENT_PID
client "$port" idle idle; c_idle=$CLIENT_PID
wait_file "$T/inflight.ready"
wait_file "$T/idle.ready"
pid=${SERVER_PID[same]}
kill -TERM "$pid"
refusing() { ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
wait_until 5 refusing || fail "still accepting after SIGTERM"
kill -0 "$pid" 2>/dev/null || fail "exited before the request in flight was answered"
touch "$T/go"
rc=0; wait "$pid" || rc=$?
[ $rc -eq 0 ] || fail "exit code $rc after SIGTERM"
wait "$c_inflight" "$c_idle"
head -n 1 "$T/inflight.out" | grepq '^HTTP/1.1 200 ' || fail "in-flight request: $(cat "$T/inflight.out")"
grep -qi '^Connection: close' "$T/inflight.out" || fail "in-flight answer lacks Connection: close"
grep -qE '^[1-9][0-9]{15,18}' <(tail -n 2 "$T/inflight.out") || fail "in-flight answer has no ID: $(cat "$T/inflight.out")"
grep -q '<CLOSED>' "$T/inflight.out" || fail "in-flight connection not closed cleanly"
grep -q '<CLOSED>' "$T/idle.out" || fail "idle connection not closed: $(cat "$T/idle.out")"
grep -q "released worker $w1" "$T/same.log" || fail "no release logged: $(cat "$T/same.log")"
pass "SIGTERM: request in flight answered with Connection: close, idle connection closed, exit 0, worker $w1 released"

# ---- second life, same identity: the same worker back (out of 1024)
port=$(free_port)
start_server same "$port" --coord "$DATA" --quiet
wait_ready "$port" || fail "restarted server not ready"
w2=$(worker_of "$port")
[ "$w2" = "$w1" ] || fail "same identity got worker $w2 after a clean release of $w1"
stop same INT 5000
pass "same identity got worker $w1 back; SIGINT exits 0"

# ---- the slot is free for anyone
port=$(free_port)
start_server other "$port" --coord "$DATA" --worker-range "$w1-$w1" --shutdown-timeout 1500 --quiet
wait_ready "$port" || fail "a server limited to worker $w1 cannot take it: $(cat "$T/other.log")"
[ "$(worker_of "$port")" = "$w1" ] || fail "other identity did not get worker $w1"
pass "worker $w1 was free for another identity"

# ---- a request that never completes holds the exit up to the shutdown timeout
client "$port" stuck stuck; c_stuck=$CLIENT_PID
wait_file "$T/stuck.ready"
t0=$(date +%s%N)
stop other TERM 3500
took=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $took -ge 1300 ] || fail "exited after $took ms without waiting for the request in flight"
wait "$c_stuck"
grep -q '<CLOSED>' "$T/stuck.out" || fail "stuck client not disconnected: $(cat "$T/stuck.out")"
pass "a never-completing request is dropped at --shutdown-timeout (exit after $took ms); exit 0"

# ---- an idle daemon exits at once
port=$(free_port)
start_server quick "$port" --coord "$DATA" --quiet
wait_ready "$port" || fail "quick not ready"
stop quick TERM 1500
pass "idle daemon exits promptly on SIGTERM"

# ---- SIGHUP (the terminal of `idkeeper serve ... &` closed) is a stop, as SIGTERM is:
# before, the default action killed the server at once (exit 129), no slot released
port=$(free_port)
start_server hup "$port" --coord "$DATA" --quiet
wait_ready "$port" || fail "hup not ready"
wh=$(worker_of "$port")
stop hup HUP 5000
grep -q 'SIGHUP: stopping' "$T/hup.log" || fail "SIGHUP not named: $(cat "$T/hup.log")"
grep -q "released worker $wh; bye" "$T/hup.log" || fail "SIGHUP: worker $wh not released: $(cat "$T/hup.log")"
pass "SIGHUP stops as SIGTERM does: exit 0, worker $wh released"
