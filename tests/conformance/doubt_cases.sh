# shellcheck shell=bash
# doubt_cases.sh: a sequence write left in doubt through the fault proxy, for the
# conformance groups tags_doubt_term, close_refused and shutdown_unreachable
# (sourced after lib.sh and conf.sh, once conf_store_start ran).
#
#   doubt_setup [TAG KIND JSON]  the fault proxy in front of the counters' store
#                             (VIA: the same store through it), and the tag (by
#                             default the sequence tag orders from 1; JSON: the
#                             tag's other fields, as add_tag takes them), made by a
#                             server s0 that then stops
#   doubt_get NAME COUNT      one request; its IDs appended to $T/ids (0), or 1
#   doubt_stored N            the store's max_id for orders is N (read around the proxy)
#   doubt_serve NAME [ARGS]   a server through the proxy with ARGS, 5 IDs answered
#                             one at a time. Patient (conf_patient_args: a long
#                             session or lease), so that it does not reconnect past
#                             a held answer, and settle its write within the call,
#                             before the proxy goes down.
# Sourcing this file sets the counters' store (conf_counters) and sources
# tests/tools/counters.sh, here rather than in a function so that its declares stay
# global.
conf_counters
# shellcheck source=../tools/counters.sh
source "$IK_SRC/tests/tools/counters.sh"

doubt_setup() {
  conf_proxy_start || fail "no proxy in front of $IK_STORE"
  VIA=$(conf_proxy_coord data)
  PORT[s0]=$(free_port)
  start_server s0 "${PORT[s0]}" --coord "$DATA" --threads 1 --quiet "${SERVE_ARGS[@]}"
  wait_ready "${PORT[s0]}" 60 || fail "s0 not ready in 60 s: $(tail -n 5 "$T/s0.log")"
  add_tag s0 "${1:-orders}" "${2:-sequence}" "${3:-,\"start\":1}"
  stop_clean s0
  : >"$T/ids"
}

doubt_get() {
  local body
  body=$(curl -fsS -m 120 "$(url "$1")/v1/sequence/orders?count=$2&format=text" 2>/dev/null) || return 1
  echo "$body" | sed '/^$/d' >>"$T/ids"
}

doubt_stored() { [ "$(conf_counter_raw "$DATA" orders)" = "$1" ]; }

doubt_serve() {
  local name=$1 i
  shift
  PORT[$name]=$(free_port)
  # shellcheck disable=SC2046 # the options' words
  start_server "$name" "${PORT[$name]}" --coord "$VIA" --threads 1 "${SERVE_ARGS[@]}" "$@" $(conf_patient_args)
  wait_ready "${PORT[$name]}" 60 || fail "$name not ready: $(tail -n 5 "$T/$name.log")"
  for i in 1 2 3 4 5; do doubt_get "$name" 1 || fail "$name: request $i failed before any fault"; done
}
