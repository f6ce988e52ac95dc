#!/usr/bin/env bash
# labels: postgresql sql security
# timeout: 120
# fixtures: postgres
# A password given in a postgresql:// URI's query under a percent-encoded key
# (?%70assword=...: libpq decodes the key and uses it) is a password like
# ?password=... (docs/configuration.md, "Passwords in a URI"): it is given to libpq
# apart, and neither the server's log, /v1/status, the status page, nor a CLI
# output or error shows it. Every redaction decodes a query key before it compares
# it (rules.h: ik__uri_query_password), and so does the reading of the password.
source "$(dirname "$0")/lib.sh"
source "$IK_FIXTURE_POSTGRES/env"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
unset IDKEEPER_PASSWORD
P=$PG_SHARED_PORT
PW='Sq7kEy9vQ'
U=pwkey_$$
pg_psql "$P" postgres "CREATE ROLE $U LOGIN PASSWORD '$PW'" >/dev/null
pg_psql "$P" postgres "CREATE DATABASE $U OWNER $U" >/dev/null
outs=()
for key in '%70assword' 'pass%77ord' '%50ASSWORD'; do
  n=${#outs[@]}
  URI="postgresql://$U@127.0.0.1:$P/$U?application_name=ik&$key=$PW"
  rc=0
  "$IK_BIN" tags list --coord "$URI" >"$T/list$n.out" 2>&1 || rc=$?
  outs+=("$T/list$n.out")
  "$IK_BIN" check --coord "$URI" >"$T/check$n.out" 2>&1 || true
  outs+=("$T/check$n.out")
  if [ "$key" = '%70assword' ]; then
    [ $rc -eq 0 ] || fail "tags list with ?$key= exited $rc: $(cat "$T/list$n.out")"
    serve_on a --coord "$URI" || fail "no server with ?$key=: $(tail -n 5 "$T/a.log")"
    curl -fsS "http://127.0.0.1:$PORT/v1/status" >"$T/status.out" || fail "no /v1/status"
    curl -fsS "http://127.0.0.1:$PORT/" >"$T/page.out" || fail "no status page"
    grep -q "$U" "$T/status.out" || fail "/v1/status does not name the store: $(head -c 300 "$T/status.out")"
    kill -TERM "${SERVER_PID[a]}"
    wait "${SERVER_PID[a]}" || fail "a exited $? after SIGTERM: $(tail -n 5 "$T/a.log")"
    outs+=("$T/a.log" "$T/status.out" "$T/page.out")
  fi
done
if grep -lF -- "$PW" "${outs[@]}" >"$T/hits"; then
  f=$(head -n 1 "$T/hits")
  fail "the password in $(tr '\n' ' ' <"$T/hits"): $(grep -m 1 -F -- "$PW" "$f" | head -c 300)"
fi
pass "no password in ${#outs[@]} outputs (log, status, page, CLI) with an encoded query key"
