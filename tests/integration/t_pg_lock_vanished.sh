#!/usr/bin/env bash
# labels: postgresql sql recipes
# timeout: 180
# A lock holder whose host vanishes without a FIN or RST, on PostgreSQL: its
# session, and the advisory lock, end about a TTL after its last packet (the
# server's tcp_keepalives_*, tcp_user_timeout and the lock session's
# idle_session_timeout, derived from --lease-ttl: docs/sql.md "Session settings"),
# not 2 h later (the server's default keepalive). tests/integration/sql_vanish.sh
# says how. A server of this test's own: it listens on the veth address too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sql_vanish.sh"
IK_PG_LIB=1 source "$IK_SRC/tests/fixtures/postgres.sh"
export IDKEEPER_PASSWORD=$PG_TEST_PASSWORD

vh_net_up
own_stop() { pg_own_stop "$T/pg"; }
IK_CLEANUPS+=(own_stop)
pg_own_init "$T/pg" || fail "initdb failed"
cat >>"$T/pg/pgdata/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1,$VH_HOST_ADDR'
CONF
echo "host all all $VH_NS_ADDR/32 scram-sha-256" >>"$T/pg/pgdata/pg_hba.conf"
for try in 1 2 3; do
  PG_PORT=$(ik_free_port)
  pg_own_up "$T/pg" "$PG_PORT" && break
  grep -q 'could not bind' "$T/pg/pg.log" 2>/dev/null || fail "PostgreSQL did not start: $(tail -n 5 "$T/pg/pg.log")"
  ((try < 3)) || fail "PostgreSQL found no free port"
done
VH_URI=$(pg_new_db "$PG_PORT" vanish)
VH_URI_NS=postgresql://$PG_TEST_USER@$VH_HOST_ADDR:$PG_PORT/vanish

vh_sessions() {
  pg_psql "$PG_PORT" postgres "SELECT pid, state, query FROM pg_stat_activity WHERE client_addr = '$VH_NS_ADDR'"
}
vh_lock_session() { # the session from the holder's address granted an advisory lock
  pg_psql "$PG_PORT" postgres "SELECT a.pid FROM pg_locks l JOIN pg_stat_activity a USING (pid)
    WHERE l.locktype = 'advisory' AND l.granted AND a.client_addr = '$VH_NS_ADDR' LIMIT 1"
}
vh_alive() { [ "$(pg_psql "$PG_PORT" postgres "SELECT count(*) FROM pg_stat_activity WHERE pid = $1")" != 0 ]; }
VH_ALL_GONE=1 # every session has the server's keepalives (docs/sql.md)
vh_run
