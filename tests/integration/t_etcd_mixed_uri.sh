#!/usr/bin/env bash
# labels: etcd hazards
# timeout: 120
# A URI that lists members of two clusters (docs/hazards.md, etcd: "another cluster
# answers"): etcd://A,B where A and B are one-member clusters of their own. The open
# fixes the cluster id of the first endpoint that answers; B would show only at a
# failover to it, where every write is then refused. Before, `idkeeper check` judged
# A alone (its row cluster ok) and serve started. Now the open and check ask every
# listed endpoint alone: check shows the row cluster refused, naming B's endpoint,
# and serve refuses to start; the URI with A alone serves.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/etcd.sh"
etcd_own a
etcd_own b
A=127.0.0.1:${ETCD_PORT_OF[a]}
B=127.0.0.1:${ETCD_PORT_OF[b]}
rc=0
"$IK_BIN" check --coord "etcd://$A,$B/mix" >"$T/check.out" 2>&1 || rc=$?
grep -E '^cluster' "$T/check.out" | grep -q refused ||
  fail "check on etcd://A,B (exit $rc) does not refuse the row cluster: $(cat "$T/check.out")"
grep -E '^cluster' "$T/check.out" | grep -q "$B" || fail "the row does not name B's endpoint: $(grep -E '^cluster' "$T/check.out")"
((rc != 0)) || fail "check on two clusters exited 0"
pass "check on two clusters exits $rc: $(grep -E '^cluster' "$T/check.out" | tr -s ' ')"
rc=0
timeout 30 "$IK_BIN" serve --coord "etcd://$A,$B/mix" --http "127.0.0.1:$(free_port)" >"$T/serve.out" 2>&1 || rc=$?
((rc != 0 && rc != 124)) || fail "serve on etcd://A,B exited $rc (124: it served): $(tail -n 3 "$T/serve.out")"
grep -q 'cluster' "$T/serve.out" || fail "serve's refusal (exit $rc) does not name the cluster: $(tail -n 3 "$T/serve.out")"
pass "serve on two clusters refused (exit $rc): $(grep -m1 'cluster' "$T/serve.out" | cut -c1-200)"
serve_on one --coord "etcd://$A/mix" || fail "serve on A alone: $(tail -n 5 "$T/one.log")"
pass "A alone serves"
