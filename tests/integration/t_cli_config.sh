#!/usr/bin/env bash
# labels: cli
# timeout: 120
# Options on a real `serve`: the config file, the environment and the command line,
# in that order of precedence, as /v1/status shows them; a bad config starts nothing.
source "$(dirname "$0")/lib.sh"
cd "$T"

cat >"$T/idkeeper.ini" <<EOF
; shared by every command
coord = local:$T/data
app = file-app
layout = bits=41/10/12,unit=1ms

[serve]
max-batch = 77
worker-range = 5-6
slot-choice = lowest
quiet = yes

[next]
count = 4
EOF

# status PORT JQ: the server's /v1/status passes the jq test.
status_is() {
  curl -fsS "http://127.0.0.1:$1/v1/status" | jq -e "$2" >/dev/null ||
    fail "port $1: status fails '$2': $(curl -fsS "http://127.0.0.1:$1/v1/status")"
}

# 1. the file alone (named by IDKEEPER_CONFIG); [serve] keys and top-level keys
IDKEEPER_CONFIG="$T/idkeeper.ini" serve_on file || fail "server 'file' did not become ready"
p1=$PORT
status_is "$p1" '.app == "file-app" and .http.max_batch == 77 and .worker == 5'
status_is "$p1" ".backend == \"local:$T/data\""
pass "config file: app, max-batch, worker-range, slot-choice from the file"

# 2. the environment beats the file
IDKEEPER_CONFIG="$T/idkeeper.ini" IDKEEPER_APP=env-app IDKEEPER_MAX_BATCH=88 serve_on env || fail "server 'env' did not become ready"
p2=$PORT
status_is "$p2" '.app == "env-app" and .http.max_batch == 88 and .worker == 5'
pass "environment beats the file"

# 3. the command line beats both (--config given as a flag this time)
IDKEEPER_APP=env-app IDKEEPER_MAX_BATCH=88 serve_on flag --config "$T/idkeeper.ini" \
  --app flag-app --max-batch=99 || fail "server 'flag' did not become ready"
p3=$PORT
status_is "$p3" '.app == "flag-app" and .http.max_batch == 99'
pass "command line beats the environment"

# 4. the listen address itself from the environment
ok=
for try in 1 2 3 4 5; do
  p4=$(free_port)
  IDKEEPER_CONFIG="$T/idkeeper.ini" IDKEEPER_HTTP=127.0.0.1:$p4 IDKEEPER_APP=http-env \
    "$IK_BIN" serve --identity envhttp >"$T/envhttp.log" 2>&1 &
  pid=$!
  IK_PIDS+=($pid)
  for ((i = 0; i < 400; i++)); do
    ready_probe "$p4" && { ok=1; break; }
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -n "$ok" ] && break
  grep -q 'Address already in use' "$T/envhttp.log" || break
done
[ -n "$ok" ] || fail "IDKEEPER_HTTP was not honoured"
status_is "$p4" '.app == "http-env" and .identity == "envhttp"'
pass "IDKEEPER_HTTP"

# other commands read the same file: next its [next] section, workers the top level
IDKEEPER_SERVER=http://127.0.0.1:$p1 "$IK_BIN" next --config "$T/idkeeper.ini" >"$T/four"
[ "$(wc -l <"$T/four")" -eq 4 ] || fail "next did not take count = 4 from [next]: $(cat "$T/four")"
"$IK_BIN" workers --config "$T/idkeeper.ini" --json |
  jq -e '.app == "file-app" and ([.slots[] | select(.state == "held") | .holder] == ["file"])' >/dev/null ||
  fail "workers --config: $("$IK_BIN" workers --config "$T/idkeeper.ini")"
pass "next and workers read their parts of the same file"

# a bad config starts nothing: exit 2, one line naming file:line, nothing listens
p5=$(free_port)
sed 's/^max-batch = 77/max-batch = 0/' "$T/idkeeper.ini" >"$T/bad.ini"
rc=0
timeout 10 "$IK_BIN" serve --config "$T/bad.ini" --http 127.0.0.1:"$p5" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] || fail "serve with a bad config exited $rc: $(cat "$T/err")"
[ "$(wc -l <"$T/err")" -eq 1 ] || fail "not one line: $(cat "$T/err")"
grep -qF "idkeeper: serve: $T/bad.ini:7: max-batch: 0 is out of range" "$T/err" || fail "$(cat "$T/err")"
printf 'app = x\nhttp-port = 1\n' >"$T/typo.ini"
rc=0
timeout 10 "$IK_BIN" serve --config "$T/typo.ini" --http 127.0.0.1:"$p5" 2>"$T/err" || rc=$?
[ "$rc" -eq 2 ] && grep -qF "$T/typo.ini:2: unknown key 'http-port'" "$T/err" || fail "typo: rc=$rc $(cat "$T/err")"
(exec 3<>/dev/tcp/127.0.0.1/"$p5") 2>/dev/null && fail "a refused serve listens on $p5"
pass "a bad config file starts nothing and names file:line"
