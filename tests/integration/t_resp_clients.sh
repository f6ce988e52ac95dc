#!/usr/bin/env bash
# labels: resp
# timeout: 300
# docs/resp.md with real clients: redis-cli INCR, INCRBY,
# IDK.SNOWFLAKE COUNT 5, IDK.DECODE, HELLO 3, AUTH; inline commands through nc;
# the connection commands clients send on their own; an unknown command that
# leaves the connection usable; per-command metrics; redis-benchmark's INCR on a
# tag, 200,000 requests without an error.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add seq --kind sequence "${coord[@]}" >/dev/null
"$IK_BIN" tags add seg --kind segment --step 1000 "${coord[@]}" >/dev/null
resp_serve a "${coord[@]}" || fail "server did not start"

# --- INCR / INCRBY on both kinds -------------------------------------------------
[ "$(rcli INCR seq)" = 1 ] || fail "INCR seq: not 1"
[ "$(rcli INCR seq)" = 2 ] || fail "INCR seq: not 2"
[ "$(rcli INCRBY seq 10)" = 12 ] || fail "INCRBY seq 10: not 12 (the caller owns 3..12)"
[ "$(rcli INCR seq)" = 13 ] || fail "INCR seq after INCRBY: not 13"
[ "$(rcli IDK.SEQUENCE seq COUNT 3 | tr '\n' ' ')" = "14 15 16 " ] || fail "IDK.SEQUENCE COUNT 3"
s1=$(rcli INCR seg); s2=$(rcli INCR seg)
[ "$s1" -ge 1 ] && [ "$s2" -gt "$s1" ] || fail "INCR seg: $s1 then $s2"
s3=$(rcli INCRBY seg 5)
[ "$s3" -ge $((s2 + 5)) ] || fail "INCRBY seg 5 after $s2: $s3"
pass "INCR and INCRBY on a sequence and a segment tag"

out=$(rcli INCR nosuch)
[[ "$out" == "NOTAG no tag 'nosuch'"* ]] || fail "INCR of an unknown tag: $out"
out=$(rcli IDK.SEGMENT seq)
[[ "$out" == WRONGTYPE* ]] || fail "IDK.SEGMENT on a sequence tag: $out"
out=$(rcli INCRBY seq 0)
[[ "$out" == ERR* ]] || fail "INCRBY seq 0: $out"
out=$(rcli INCR 'bad tag!')
[[ "$out" == "ERR bad tag name"* ]] || fail "bad tag name: $out"
pass "NOTAG, WRONGTYPE and ERR answers"

# --- snowflake and decode ----------------------------------------------------------
rcli IDK.SNOWFLAKE COUNT 5 >"$T/sf"
[ "$(wc -l <"$T/sf")" -eq 5 ] || fail "IDK.SNOWFLAKE COUNT 5: $(cat "$T/sf")"
assert_increasing "$T/sf"
one=$(rcli IDK.SNOWFLAKE)
[[ "$one" =~ ^[0-9]+$ ]] || fail "IDK.SNOWFLAKE: $one"
rcli IDK.DECODE "$one" >"$T/dec"
grep -qx time_ms "$T/dec" && grep -qx worker "$T/dec" && grep -qx sequence "$T/dec" ||
  fail "IDK.DECODE: $(cat "$T/dec")"
want=$(curl -fsS "http://127.0.0.1:$PORT/v1/decode/$one" | jq -r .time_ms)
grep -qx "$want" "$T/dec" || fail "IDK.DECODE time_ms differs from HTTP's $want"
out=$(rcli IDK.DECODE -5)
[[ "$out" == ERR* ]] || fail "IDK.DECODE -5: $out"
pass "IDK.SNOWFLAKE COUNT 5 increasing, IDK.DECODE agrees with /v1/decode"

# 50 pipelined batches of 10,000: each spans ticks, so the generator asks the loop to
# retry (it never sleeps on the loop); the answers still come in order, increasing
/usr/bin/python3 - "$RPORT" >"$T/batches" <<'PY'
import sys, redis
r = redis.Redis(port=int(sys.argv[1]))
p = r.pipeline(transaction=False)
for _ in range(50):
    p.execute_command("IDK.SNOWFLAKE", "COUNT", "10000")
for batch in p.execute():
    for i in batch:
        print(i)
PY
[ "$(wc -l <"$T/batches")" = 500000 ] || fail "50 x IDK.SNOWFLAKE COUNT 10000: $(wc -l <"$T/batches") IDs"
assert_increasing "$T/batches"
pass "50 pipelined IDK.SNOWFLAKE COUNT 10000: 500,000 increasing IDs, in order"

# --- RESP3 ---------------------------------------------------------------------------
rcli -3 HELLO 3 >"$T/hello"
grep -q 'proto' "$T/hello" && grep -q idkeeper "$T/hello" || fail "HELLO 3: $(cat "$T/hello")"
# a map in RESP3: redis-cli -3 prints "1# key => value"
rcli -3 --no-raw IDK.DECODE "$one" >"$T/dec3"
grep -q '"time_ms" => (integer)' "$T/dec3" || fail "IDK.DECODE under RESP3 is not a map: $(cat "$T/dec3")"
out=$(rcli HELLO 4)
[[ "$out" == NOPROTO* ]] || fail "HELLO 4: $out"
pass "HELLO 3 switches to RESP3 (IDK.DECODE answers a map); HELLO 4 is NOPROTO"

# --- connection commands ------------------------------------------------------------
[ "$(rcli PING)" = PONG ] || fail PING
[ "$(rcli ECHO hi)" = hi ] || fail ECHO
[ "$(rcli SELECT 0)" = OK ] || fail "SELECT 0"
[[ "$(rcli SELECT 1)" == ERR* ]] || fail "SELECT 1"
[ "$(rcli COMMAND COUNT)" -ge 17 ] || fail "COMMAND COUNT"
rcli COMMAND DOCS incr | grepq summary || fail "COMMAND DOCS incr"
rcli INFO | grepq '^redis_version:' || fail "INFO"
for cmd in CLIENT COMMAND; do
  [ "$(rcli "$cmd" BOGUS)" = "ERR unknown subcommand or wrong number of arguments for 'BOGUS'. Try $cmd HELP." ] ||
    fail "$cmd BOGUS: $(rcli "$cmd" BOGUS)"
done
printf 'CLIENT SETNAME worker-7\nCLIENT GETNAME\nCLIENT INFO\n' | rcli >"$T/client"
grep -qx worker-7 "$T/client" && grep -q 'name=worker-7' "$T/client" || fail "CLIENT: $(cat "$T/client")"
printf 'FOO bar baz\nPING\n' | rcli >"$T/unk"
grep -q "^ERR unknown command 'FOO', with args beginning with: 'bar' 'baz'" "$T/unk" ||
  fail "unknown command: $(cat "$T/unk")"
grep -qx PONG "$T/unk" || fail "the connection is not usable after an unknown command"
pass "PING ECHO SELECT COMMAND INFO CLIENT; an unknown command answers ERR and the connection goes on"

# --- inline commands through nc -------------------------------------------------------
# stdin stays open until the server's close: nc shuts its sending side down at the end
# of stdin, and a client gone while INCR seq waits for its commit is answered nothing
{ printf 'PING\r\nINCR seq\r\nECHO "a b"\r\nQUIT\r\n'; sleep 3; } | timeout 20 nc 127.0.0.1 "$RPORT" >"$T/nc" || true
[ "$(tr -d '\r' <"$T/nc" | tr '\n' '|')" = '+PONG|:17|$3|a b|+OK|' ] ||
  fail "inline commands through nc: $(od -c "$T/nc" | head)"
pass "inline commands through nc (telnet style), QUIT closes"

# --- metrics per command ----------------------------------------------------------------
curl -fsS "http://127.0.0.1:$PORT/metrics" >"$T/metrics"
grep -q 'ik_resp_commands_total{command="incr",result="ok"}' "$T/metrics" || fail "no incr metric"
grep -q 'ik_resp_commands_total{command="unknown",result="error"} 1' "$T/metrics" ||
  fail "unknown command not counted: $(grep resp_commands "$T/metrics")"
pass "per-command metrics in /metrics"

# --- redis-benchmark --------------------------------------------------------------------
redis-benchmark -p "$RPORT" -n 200000 -c 20 -q INCR seg >"$T/bench.out" 2>"$T/bench.err" ||
  fail "redis-benchmark INCR seg failed: $(cat "$T/bench.err")"
grep -q 'requests per second' "$T/bench.out" || fail "redis-benchmark: $(cat "$T/bench.out")"
! grep -qiE 'error|warning' "$T/bench.out" "$T/bench.err" || fail "redis-benchmark: $(cat "$T/bench.out" "$T/bench.err")"
redis-benchmark -p "$RPORT" -n 20000 -c 20 -q INCR seq >"$T/bench2.out" 2>&1 || fail "redis-benchmark INCR seq"
! grep -qiE 'error' "$T/bench2.out" || fail "redis-benchmark INCR seq: $(cat "$T/bench2.out")"
n=$(rcli INCR seq)
[ "$n" = $((17 + 20000 + 1)) ] || fail "sequence after 20000 INCRs: $n, want $((17 + 20001))"
pass "redis-benchmark: 200,000 INCR seg and 20,000 INCR seq without an error; the sequence has no gap"

# --- AUTH without a token: what Redis 7 answers with no password set ----------------
# (docs/resp.md): its default user has none, so AUTH default X and HELLO 3 AUTH default
# X are OK, AUTH X alone is an error, and another user is WRONGPASS. The same
# commands go to a real redis-server and to idkeeper; the kinds of answer must agree.
rport=$(free_port)
redis-server --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$T" >"$T/redis.out" 2>&1 &
IK_PIDS+=($!)
wait_until 30 redis-cli -p "$rport" PING >/dev/null 2>&1 || fail "redis-server did not start: $(cat "$T/redis.out")"
# kind PORT CMD...: "ok", or the error's first word
kind() {
  local out
  out=$(redis-cli -p "$1" "${@:2}" 2>&1 | head -n 1)
  case $out in
    "(error) "*) out=${out#(error) } && echo "${out%% *}" ;;
    [A-Z]*" "*) [[ $out =~ ^(ERR|WRONGPASS|NOAUTH|NOPROTO)\  ]] && echo "${out%% *}" || echo ok ;;
    *) echo ok ;;
  esac
}
for cmd in "AUTH default x" "AUTH x" "AUTH bob x" "HELLO 3 AUTH default x" "HELLO 2 AUTH default x" "HELLO 3 AUTH bob x"; do
  # shellcheck disable=SC2086 # the words of the command
  want=$(kind "$rport" $cmd) got=$(kind "$RPORT" $cmd)
  [ "$want" = "$got" ] || fail "no token, $cmd: redis-server answers $want, idkeeper $got"
  log "no token, $cmd: $got, as redis-server"
done
[ "$(kind "$RPORT" HELLO 3 AUTH default x)" = ok ] || fail "HELLO 3 AUTH default x is not OK"
pass "no token: AUTH and HELLO AUTH answer as Redis 7 with no password (AUTH default X: OK)"

# --- AUTH -------------------------------------------------------------------------------------
echo -n s3cret >"$T/token"
name=b
resp_serve b "${coord[@]}" --http-token-file "$T/token" || fail "server b did not start"
out=$(rcli INCR seq)
[[ "$out" == NOAUTH* ]] || fail "INCR before AUTH: $out"
[[ "$(rcli -a wrong --no-auth-warning INCR seq 2>&1)" == *WRONGPASS* ]] || fail "a wrong password"
n=$(rcli -a s3cret --no-auth-warning INCR seq)
[[ "$n" =~ ^[0-9]+$ ]] || fail "INCR after AUTH: $n"
[ "$(rcli --user default --pass s3cret --no-auth-warning PING)" = PONG ] || fail "AUTH default s3cret"
out=$(rcli -3 HELLO 3 2>&1 || true)
[[ "$out" == *NOAUTH* ]] || fail "HELLO 3 without AUTH: $out"
rcli -3 --no-raw -a s3cret --no-auth-warning IDK.DECODE "$one" | grepq '"worker" =>' || fail "HELLO 3 AUTH ..."
pass "a token: NOAUTH before AUTH, WRONGPASS, AUTH [default] TOKEN, HELLO 3 AUTH"
