#!/usr/bin/env bash
# labels: etcd hazards
# timeout: 120
# The proof that rides with every write on etcd:// (docs/hazards.md, etcd, "What rides
# with each write"): every answer carries its cluster's id, which must be the one the
# open saw. A server serves on a one-member cluster A; A is killed and another,
# fresh cluster B is started on the same port (a DNS name or a load balancer that now
# points elsewhere): B answers every request, but with another cluster id, so the
# server trusts none of them: it stops issuing (503, /readyz fails), logs the two
# ids, and issues nothing under a slot of B's. Nothing of the app is written to B.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"
etcd_own a
port_a=${ETCD_PORT_OF[a]}
uri=etcd://127.0.0.1:$port_a/idk
port=$(free_port)
start_server s1 "$port" --coord "$uri" --lease-ttl 3000
wait_ready "$port" 20 || fail "s1 not ready on cluster a: $(tail -n 5 "$T/s1.log")"
http_get "http://127.0.0.1:$port/v1/snowflake?count=1" >/dev/null || fail "no ID from s1"
etcd_kill a
# cluster b: a new cluster behind the same client address. Its id derives from its
# members' peer URLs and token, so b's member listens for peers elsewhere (a cluster
# rebuilt with the same ones would have the same id: a wiped cluster, not another)
rm -rf "$T/etcd-a/data"
ETCD_PEER_OF[a]=$(ik_free_port "$T/.ports")
ETCD_CLUSTER_OF[a]="a=http://127.0.0.1:${ETCD_PEER_OF[a]}"
etcd_restart a
log "a fresh cluster on port $port_a"
wait_until 10 grep -q 'answered for cluster' "$T/s1.log" || fail "s1 did not notice the other cluster: $(tail -n 5 "$T/s1.log")"
wait_until 5 not ready_probe "$port" || fail "s1 still ready on another cluster"
st=$(http_status "http://127.0.0.1:$port/v1/snowflake?count=1")
[ "$st" = 503 ] || fail "an ID request answered $st on another cluster, not 503"
n=$(ectl --endpoints="127.0.0.1:$port_a" get --prefix idk/ --keys-only | grep -c . || true)
[ "$n" = 0 ] || fail "s1 wrote $n keys to the other cluster: $(ectl --endpoints="127.0.0.1:$port_a" get --prefix idk/ --keys-only)"
pass "another cluster behind the address: not trusted ($(grep -m1 -o 'answered for cluster [0-9a-f]*, not [0-9a-f]*' "$T/s1.log")); 503, not ready, nothing written there"
