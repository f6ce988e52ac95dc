# etcd.sh: etcd helpers for the integration tests and the conformance suite (sourced
# after lib.sh). Real etcd members (Debian's etcd-server), started with the flags of
# tests/fixtures/etcd_member.sh; etcdctl (etcd-client) to look at them from outside.
#
#   etcd_start                the test's etcd: the shared fixture's (IK_FIXTURE_ETCD,
#                             tests/fixtures/etcd.sh) under a key prefix of its own
#                             (ik-TEST-PID), else a one-member cluster of its own;
#                             sets ETCD_PORT and ETCD_PREFIX
#   etcd_own NAME             a one-member cluster of this test's own (one it may stop,
#                             kill or pause), data in $T/etcd-NAME; sets
#                             ETCD_PORT_OF[NAME]; waits until it serves
#   etcd_cluster3 NAME        a 3-member cluster of this test's own, members NAME0..2
#                             (ETCD_PORT_OF, ETCD_PID_OF, ETCD_PEER_OF); sets
#                             ETCD_ENDPOINTS (h:p,h:p,h:p); waits for a leader
#   etcd_learner NAME BASE    a learner added to the cluster etcd_cluster3 BASE made
#                             (etcdctl member add --learner), started as member NAME
#   etcd_kill NAME / etcd_restart NAME
#                             kill -9, and start again on the same ports and data
#   etcd_leader               the member NAME of etcd_cluster3 that leads now
#   etcd_uri NAME [HOSTS]     a fresh namespace: etcd://HOSTS/PREFIX/NAME (HOSTS:
#                             127.0.0.1:ETCD_PORT by default)
#   ectl [--endpoints=E] ARGS...  etcdctl (API 3) on the test's etcd
ETCD_PORT=
ETCD_PREFIX=
ETCD_ENDPOINTS=
declare -A ETCD_PORT_OF ETCD_PID_OF ETCD_PEER_OF ETCD_CLUSTER_OF ETCD_STATE_OF
# shellcheck source=../fixtures/etcd_member.sh
source "$IK_SRC/tests/fixtures/etcd_member.sh"

etcd_start() {
  if [ -n "${IK_FIXTURE_ETCD:-}" ]; then
    local env=$IK_FIXTURE_ETCD/env
    [ -r "$env" ] || fail "etcd: no $env: the shared etcd (fixture etcd) did not start; see the test fixture/etcd.start"
    # shellcheck disable=SC1090 # written by tests/fixtures/etcd.sh start
    source "$env"
    ETCD_PORT=$ETCD_SHARED_PORT
    ETCD_PREFIX=ik-$(basename "$0" .sh)${IK_STORE:+.$IK_STORE}-$$
    etcd_member_answers "$ETCD_PORT" ||
      fail "etcd: the shared etcd on port $ETCD_PORT (pid ${ETCD_SHARED_PID:-?}) does not answer"
    return
  fi
  etcd_own main
  ETCD_PORT=${ETCD_PORT_OF[main]}
  ETCD_PREFIX=ik-$$
}

_etcd_launch() {
  local name=$1 d=$T/etcd-$1
  # shellcheck disable=SC2046 # the member's flags, one word each
  etcd $(etcd_member_flags "$name" "$d/data" "${ETCD_PORT_OF[$name]}" "${ETCD_PEER_OF[$name]}" \
    "${ETCD_CLUSTER_OF[$name]}" "${ETCD_STATE_OF[$name]:-new}") >>"$T/etcd-$name.log" 2>&1 &
  ETCD_PID_OF[$name]=$!
  IK_PIDS+=($!)
}

_etcd_wait() {
  local name=$1 i
  for ((i = 0; i < 600; i++)); do
    etcd_member_answers "${ETCD_PORT_OF[$name]}" && return 0
    alive "${ETCD_PID_OF[$name]}" || break
    sleep 0.1
  done
  tail -n 20 "$T/etcd-$name.log" >&2
  fail "etcd $name did not serve on port ${ETCD_PORT_OF[$name]}"
}

etcd_own() {
  local name=$1
  mkdir -p "$T/etcd-$name"
  ETCD_PORT_OF[$name]=$(ik_free_port "$T/.ports")
  ETCD_PEER_OF[$name]=$(ik_free_port "$T/.ports")
  ETCD_CLUSTER_OF[$name]="$name=http://127.0.0.1:${ETCD_PEER_OF[$name]}"
  _etcd_launch "$name"
  _etcd_wait "$name"
}

etcd_cluster3() {
  local base=$1 i cluster=
  for i in 0 1 2; do
    mkdir -p "$T/etcd-$base$i"
    ETCD_PORT_OF[$base$i]=$(ik_free_port "$T/.ports")
    ETCD_PEER_OF[$base$i]=$(ik_free_port "$T/.ports")
    cluster+=${cluster:+,}$base$i=http://127.0.0.1:${ETCD_PEER_OF[$base$i]}
  done
  ETCD_ENDPOINTS=
  for i in 0 1 2; do
    ETCD_CLUSTER_OF[$base$i]=$cluster
    _etcd_launch "$base$i"
    ETCD_ENDPOINTS+=${ETCD_ENDPOINTS:+,}127.0.0.1:${ETCD_PORT_OF[$base$i]}
  done
  for i in 0 1 2; do _etcd_wait "$base$i"; done
  ETCD_PORT=${ETCD_PORT_OF[${base}0]}
  ETCD_PREFIX=ik-$$
}

etcd_learner() {
  local name=$1 base=$2
  mkdir -p "$T/etcd-$name"
  ETCD_PORT_OF[$name]=$(ik_free_port "$T/.ports")
  ETCD_PEER_OF[$name]=$(ik_free_port "$T/.ports")
  # etcd refuses a member add ("unhealthy cluster") until its members have been
  # connected for its health interval (5 s)
  wait_until 20 ectl --endpoints="127.0.0.1:${ETCD_PORT_OF[${base}0]}" member add "$name" --learner \
    --peer-urls="http://127.0.0.1:${ETCD_PEER_OF[$name]}" >"$T/etcd-$name.add" 2>&1 ||
    fail "etcd: member add --learner $name: $(tail -n 1 "$T/etcd-$name.add")"
  ETCD_CLUSTER_OF[$name]="${ETCD_CLUSTER_OF[${base}0]},$name=http://127.0.0.1:${ETCD_PEER_OF[$name]}"
  ETCD_STATE_OF[$name]=existing
  _etcd_launch "$name"
  local i
  for ((i = 0; i < 300; i++)); do # a learner answers a status, not a linearizable range
    curl -fsS -m 2 -X POST "http://127.0.0.1:${ETCD_PORT_OF[$name]}/v3/maintenance/status" -d '{}' 2>/dev/null |
      grep -q '"cluster_id"' && return 0
    sleep 0.1
  done
  fail "etcd learner $name did not serve"
}

etcd_kill() {
  kill -KILL "${ETCD_PID_OF[$1]}" 2>/dev/null || true
  while alive "${ETCD_PID_OF[$1]}"; do sleep 0.02; done
}

etcd_restart() {
  _etcd_launch "$1"
  _etcd_wait "$1"
}

# etcd_leader: the name of the member that leads now (of those ETCD_PORT_OF knows),
# waiting up to 10 s for one; from each member's own status through the gateway,
# whose ids are strings (etcdctl's JSON has them as numbers, which jq rounds)
_etcd_leader_now() {
  local n
  for n in "${!ETCD_PORT_OF[@]}"; do
    alive "${ETCD_PID_OF[$n]:-}" || continue
    curl -fsS -m 2 -X POST "http://127.0.0.1:${ETCD_PORT_OF[$n]}/v3/maintenance/status" -d '{}' 2>/dev/null |
      jq -e '.leader == .header.member_id' >/dev/null && { echo "$n"; return 0; }
  done
  return 1
}
etcd_leader() { wait_until 10 _etcd_leader_now; }

etcd_uri() {
  echo "etcd://${2:-127.0.0.1:$ETCD_PORT}/$ETCD_PREFIX/$1"
}

ectl() {
  if [[ ${1:-} == --endpoints=* ]]; then
    ETCDCTL_API=3 etcdctl --dial-timeout=3s "$@"
  else
    ETCDCTL_API=3 etcdctl --dial-timeout=3s --endpoints="127.0.0.1:$ETCD_PORT" "$@"
  fi
}
