# shellcheck shell=bash
# hazards_cases.sh: what a server shows of its store's checks (docs/hazards.md), for
# the conformance group check.sh and t_zk_hazards_ensemble (sourced after lib.sh).
#
#   hazards_views_agree N CHECK_JSON   the server on PORT is ready to serve: its
#       /v1/status says store.safe with no why and lists the same checks and verdicts
#       as CHECK_JSON (`idkeeper check --json` on the same store); its status page
#       shows N ok rows; its /metrics has ik_store_refused_checks 0 and N ok
#       ik_store_hazard lines. Fails the test otherwise.
hazards_views_agree() {
  local n=$1 json=$2 rows m
  http_get "http://127.0.0.1:$PORT/v1/status" >"$T/status.json" || fail "status"
  jq -e '.store.safe == true and .store.why == ""' "$T/status.json" >/dev/null ||
    fail "status.store: $(jq -c .store "$T/status.json")"
  jq -c '[.checks[] | [.check, .verdict]] | sort' "$json" >"$T/want"
  jq -c '[.store.hazards[] | [.check, .verdict]] | sort' "$T/status.json" >"$T/got"
  cmp -s "$T/want" "$T/got" || fail "/v1/status's checks $(cat "$T/got") differ from check's $(cat "$T/want")"
  http_get "http://127.0.0.1:$PORT/" >"$T/page.html" || fail "status page"
  rows=$(grep -c '^<tr class="v-ok"><td>' "$T/page.html" || true)
  [ "$rows" = "$n" ] || fail "the status page shows $rows ok checks, not $n"
  http_get "http://127.0.0.1:$PORT/metrics" >"$T/metrics" || fail "metrics"
  grepq '^ik_store_refused_checks 0$' "$T/metrics" || fail "ik_store_refused_checks is not 0"
  m=$(grep -c '^ik_store_hazard{check="[^"]*",verdict="ok"} 1$' "$T/metrics" || true)
  [ "$m" = "$n" ] || fail "/metrics has $m ok ik_store_hazard lines, not $n"
}
