#!/usr/bin/env bash
# labels: mysql
# timeout: 180
# The durability check (docs/guarantees.md promise 23, docs/sql.md "Durability"): a MariaDB that
# acknowledges commits it can lose in a crash is refused, with the setting named,
# unless --allow-unsafe-store is given (then it serves, and logs why):
#   innodb_flush_log_at_trx_commit = 2 (and 0)
#   sync_binlog = 0 with the binary log on
# and accepted once the setting is 1. A server of its own: it changes global
# settings and restarts the server with the binary log on.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/mysql.sh"
my_start --innodb-flush-log-at-trx-commit=2
U=$(my_uri dur)

# refused_serve WHAT: serve exits non-zero, in one line naming WHAT
refused_serve() {
  local rc=0 port
  port=$(free_port)
  timeout 60 "$IK_BIN" serve --coord "$U" --http 127.0.0.1:"$port" --identity d >"$T/serve.log" 2>&1 || rc=$?
  [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "serve on $1 exited $rc: $(cat "$T/serve.log")"
  [ "$(grep -c . "$T/serve.log")" -eq 1 ] || fail "serve said: $(cat "$T/serve.log")"
  grep -q "$1" "$T/serve.log" || fail "the refusal does not name $1: $(cat "$T/serve.log")"
  grep -q -- "--allow-unsafe-store" "$T/serve.log" || fail "the refusal does not say how to override: $(cat "$T/serve.log")"
  log "refused: $(cat "$T/serve.log")"
}

stop_server() { kill -TERM "${SERVER_PID[$1]}"; wait "${SERVER_PID[$1]}" || fail "$1 did not exit 0"; }

refused_serve "innodb_flush_log_at_trx_commit is 2"
my_sql -e "SET GLOBAL innodb_flush_log_at_trx_commit = 0"
refused_serve "innodb_flush_log_at_trx_commit is 0"
expect_fail 1 "innodb_flush_log_at_trx_commit is 0" "$IK_BIN" tags add t --kind sequence --coord "$U"
pass "innodb_flush_log_at_trx_commit 2 and 0: refused by serve and the CLI, naming the setting"

serve_on u --coord "$U" --allow-unsafe-store || fail "serve --allow-unsafe-store did not start"
grep -q "innodb_flush_log_at_trx_commit is 0.*allow-unsafe-store" "$T/u.log" || fail "no log line says what was allowed"
fetch_ids "$PORT" 10 "$T/ids.u"
stop_server u
pass "--allow-unsafe-store: serves, and logs the setting it accepted"

my_sql -e "SET GLOBAL innodb_flush_log_at_trx_commit = 1"
serve_on ok --coord "$U" || fail "serve refused innodb_flush_log_at_trx_commit = 1"
stop_server ok
pass "innodb_flush_log_at_trx_commit = 1 (binary log off): accepted"

# the binary log on (a replica or a failover reads it): sync_binlog must be 1
my_kill TERM
my_restart --log-bin="$T/mariadb/binlog" --sync-binlog=0 --server-id=1
refused_serve "sync_binlog is 0 (binary log on)"
my_sql -e "SET GLOBAL sync_binlog = 1"
serve_on ok2 --coord "$U" || fail "serve refused sync_binlog = 1"
stop_server ok2
pass "binary log on: sync_binlog 0 refused, 1 accepted"
