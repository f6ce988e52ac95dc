#!/usr/bin/env bash
# labels: prometheus zk
# needs: zk
# timeout: 240
# processors: 2
# The alert rules that ship with the package (dist/prometheus/idkeeper.rules.yml,
# docs/operations.md), run by a real Prometheus (Debian's package) on a loopback
# port with a fresh data dir:
# - `make install` (cmake --install) puts them in share/idkeeper/prometheus/;
#   promtool check rules passes on them and on the test's copy, made from them with
#   every `for:` at 2 s (nothing else changed);
# - Prometheus scrapes two daemons every second: z1 on a ZooKeeper of this test's
#   own, with a bearer token (--http-token-file; its /metrics answers 401 without
#   it), and l1 on local:, without a token, its worker range one slot wide;
# - at first: both targets up, no IdkeeperNotReady nor IdkeeperLeaseInDoubt; l1's
#   range is full (IdkeeperWorkerRangeFull fires for l1), and a sequence range
#   refused after its commit (?ids=number above 2^53) is a gap (IdkeeperSequenceGap
#   fires for l1, tag big);
# - ZooKeeper stopped (SIGSTOP): IdkeeperNotReady and IdkeeperLeaseInDoubt fire for
#   z1 (read from /api/v1/alerts), never for l1;
# - ZooKeeper running again (SIGCONT): both clear;
# - l1's clock (libfaketime's, from a file) stepped back 10 s: a request is refused,
#   /v1/events says the clock went back, IdkeeperClockRefusals fires for l1.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

for p in /usr/bin/prometheus /usr/bin/promtool; do
  [ -x "$p" ] || fail "no $p (apt-get install prometheus; scripts/install-deps.sh test)"
done
# 1. the rules, as `make install` puts them (cmake --install into a scratch DESTDIR):
# the shipped file, and the test's copy with short `for:`
DESTDIR=$T/dest cmake --install "$IK_BUILD" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail "$T/install.log")"
RULES=$(find "$T/dest" -path '*/share/idkeeper/prometheus/idkeeper.rules.yml')
[ -n "$RULES" ] || fail "cmake --install put no share/idkeeper/prometheus/idkeeper.rules.yml"
cmp -s "$RULES" "$IK_SRC/dist/prometheus/idkeeper.rules.yml" || fail "the installed rules differ from dist/prometheus/"
promtool check rules "$RULES" >"$T/check.out" 2>&1 || fail "promtool check rules $RULES: $(cat "$T/check.out")"
sed -E 's/^( +for: ).*$/\12s/' "$RULES" >"$T/rules.yml"
n_for=$(grep -cE '^ +for: ' "$RULES")
[ "$(grep -cE '^ +for: 2s$' "$T/rules.yml")" = "$n_for" ] || fail "the test's rules did not get every for: at 2s"
diff <(grep -vE '^ +for: ' "$RULES") <(grep -vE '^ +for: ' "$T/rules.yml") >/dev/null ||
  fail "the test's rules differ from the shipped ones beyond for:"
promtool check rules "$T/rules.yml" >"$T/check2.out" 2>&1 || fail "promtool check rules (test copy): $(cat "$T/check2.out")"
pass "promtool check rules: the shipped file and its copy with for: 2s ($n_for for: lines)"

# 2. two daemons: z1 on its own ZooKeeper, with a token; l1 on local:, one slot wide
zk_start_standalone
ZK_SESSION_MS=4000
printf 'prom-token-7\n' >"$T/token"
declare -A PORT
PORT[z1]=$(zk_free_port)
PORT[l1]=$(zk_free_port)
zk_serve z1 "${PORT[z1]}" --worker-range 0-7 --threads 1 --http-token-file "$T/token"
# l1's clock is libfaketime's, offset by what $T/clock says (read at every call), so
# that step 7 can step it back under the running server
echo "+0" >"$T/clock"
faketime_bin "$T/ik-stepped" FAKETIME_TIMESTAMP_FILE="$T/clock" FAKETIME_NO_CACHE=1 FAKETIME_DONT_FAKE_MONOTONIC=1
IK_BIN=$T/ik-stepped start_server l1 "${PORT[l1]}" --coord "local:$T/data" --worker-range 0-0 --threads 1
for n in z1 l1; do wait_ready "${PORT[$n]}" || fail "$n not ready: $(tail -n 5 "$T/$n.log")"; done
[ "$(http_status "http://127.0.0.1:${PORT[z1]}/metrics")" = 401 ] || fail "z1's /metrics without the token is not 401"

# 3. Prometheus: scrape both every second, evaluate every second
PROM_PORT=$(zk_free_port)
cat >"$T/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files:
  - $T/rules.yml
scrape_configs:
  - job_name: z1
    authorization:
      type: Bearer
      credentials_file: $T/token
    static_configs:
      - targets: ['127.0.0.1:${PORT[z1]}']
  - job_name: l1
    static_configs:
      - targets: ['127.0.0.1:${PORT[l1]}']
EOF
promtool check config "$T/prometheus.yml" >"$T/check3.out" 2>&1 || fail "promtool check config: $(cat "$T/check3.out")"
mkdir -p "$T/prom"
/usr/bin/prometheus --config.file="$T/prometheus.yml" --storage.tsdb.path="$T/prom" \
  --web.listen-address="127.0.0.1:$PROM_PORT" --log.level=warn >"$T/prometheus.log" 2>&1 &
IK_PIDS+=($!)
PROM=http://127.0.0.1:$PROM_PORT
wait_until 60 curl -fsS -o /dev/null "$PROM/-/ready" || fail "Prometheus not ready: $(tail -n 5 "$T/prometheus.log")"

# Prometheus's answers, read at most about 3 times a second (it evaluates once a
# second): snap fetches /api/v1/alerts into $T/alerts.json, has reads it.
snap() {
  sleep 0.3 # let time pass: Prometheus is asked at most about 3 times a second
  curl -fsS "$PROM/api/v1/alerts" >"$T/alerts.json.new" && mv "$T/alerts.json.new" "$T/alerts.json"
}
# has JOB ALERT [STATE]: 0 if ALERT is active (or in STATE: pending, firing) for JOB.
has() {
  jq -e --arg j "$1" --arg a "$2" --arg s "${3:-}" \
    '[.data.alerts[] | select(.labels.job == $j and .labels.alertname == $a and ($s == "" or .state == $s))]
     | length > 0' "$T/alerts.json" >/dev/null
}
# both targets scraped and up (z1 with its token)
targets_up() {
  sleep 0.3 # let time pass: Prometheus is asked at most about 3 times a second
  curl -fsS "$PROM/api/v1/targets" | jq -e '[.data.activeTargets[] | select(.health == "up")] | length == 2' >/dev/null
}
wait_until 60 targets_up || fail "both targets not up in Prometheus: $(curl -sS "$PROM/api/v1/targets")"

# 4. at first: l1's full range and its gap fire; nothing about readiness or leases
curl -fsS -X POST "http://127.0.0.1:${PORT[l1]}/v1/tags" \
  -d '{"tag":"big","kind":"sequence","start":"9007199254740993"}' >/dev/null || fail "POST /v1/tags big"
[ "$(http_status "http://127.0.0.1:${PORT[l1]}/v1/sequence/big?count=3&ids=number")" = 400 ] ||
  fail "a sequence range above 2^53 asked as numbers is not 400"
first_fire() { snap && has l1 IdkeeperWorkerRangeFull firing && has l1 IdkeeperSequenceGap firing; }
wait_until 60 first_fire || fail "IdkeeperWorkerRangeFull and IdkeeperSequenceGap not firing for l1: $(cat "$T/alerts.json")"
jq -e '[.data.alerts[] | select(.labels.alertname == "IdkeeperSequenceGap")][0].labels
       | .tag == "big" and .why == "ids_too_large"' "$T/alerts.json" >/dev/null ||
  fail "the gap alert does not name tag big, why ids_too_large: $(cat "$T/alerts.json")"
jq -e '[.data.alerts[] | select(.labels.alertname == "IdkeeperWorkerRangeFull")][0].annotations.summary
       | test("Stop servers")' "$T/alerts.json" >/dev/null || fail "the range alert's summary says not what to do"
for n in z1 l1; do
  for a in IdkeeperNotReady IdkeeperLeaseInDoubt; do
    ! has "$n" "$a" || fail "$a is active for $n before anything failed: $(cat "$T/alerts.json")"
  done
done
pass "Prometheus scrapes both (z1 with its token); range and gap alerts fire for l1; no readiness or lease alert"

# 5. ZooKeeper stopped: z1's not-ready and lease alerts fire; l1's never (checked at
# every look)
kill -STOP "${ZK_PID[1]}"
log "ZooKeeper stopped (SIGSTOP)"
: >"$T/l1.active"
z1_fires() {
  snap || return 1
  for a in IdkeeperNotReady IdkeeperLeaseInDoubt; do has l1 "$a" && echo "$a" >>"$T/l1.active"; done
  has z1 IdkeeperNotReady firing && has z1 IdkeeperLeaseInDoubt firing
}
wait_until 60 z1_fires || fail "IdkeeperNotReady and IdkeeperLeaseInDoubt not both firing for z1: $(cat "$T/alerts.json")"
[ ! -s "$T/l1.active" ] || fail "alerts active for l1, whose store never stopped: $(sort -u "$T/l1.active")"
jq -e '[.data.alerts[] | select(.labels.job == "z1" and .labels.alertname == "IdkeeperNotReady")][0]
       .annotations.summary | test("/readyz")' "$T/alerts.json" >/dev/null ||
  fail "the not-ready alert's summary does not say where to look"
pass "ZooKeeper stopped: IdkeeperNotReady and IdkeeperLeaseInDoubt firing for z1, not for l1"

# 6. ZooKeeper again: both clear
kill -CONT "${ZK_PID[1]}"
log "ZooKeeper running again (SIGCONT)"
wait_ready "${PORT[z1]}" 60 || fail "z1 not ready again: $(tail -n 5 "$T/z1.log")"
z1_clear() { snap && ! has z1 IdkeeperNotReady && ! has z1 IdkeeperLeaseInDoubt; }
wait_until 60 z1_clear || fail "z1's alerts did not clear: $(cat "$T/alerts.json")"
pass "ZooKeeper running again: z1's not-ready and lease alerts cleared"

# 7. l1's clock stepped back 10 s just after an ID: its requests are refused (503
# clock_backward) until the clock has passed that ID's time again, its events say
# so, and IdkeeperClockRefusals fires for it
curl -fsS "http://127.0.0.1:${PORT[l1]}/v1/snowflake" >/dev/null || fail "no ID from l1"
echo "-10" >"$T/clock"
log "l1's clock stepped back 10 s"
code=$(http_status "http://127.0.0.1:${PORT[l1]}/v1/snowflake")
[ "$code" = 503 ] || fail "l1 answered $code, not 503, with its clock 10 s behind its last ID"
clock_event() {
  sleep 0.3 # let time pass: Prometheus is asked at most about 3 times a second
  curl -fsS "http://127.0.0.1:${PORT[l1]}/v1/events" |
    jq -e '[.events[] | select(.kind == "clock" and (.text | test("^clock went back [0-9]+ ms")))] | length > 0' >/dev/null
}
wait_until 20 clock_event || fail "no clock event on l1: $(curl -sS "http://127.0.0.1:${PORT[l1]}/v1/events")"
refusals() { snap && has l1 IdkeeperClockRefusals firing; }
wait_until 60 refusals || fail "IdkeeperClockRefusals not firing for l1: $(cat "$T/alerts.json")"
pass "l1's clock stepped back: 503, a clock event, IdkeeperClockRefusals firing for l1"
