#!/usr/bin/env bash
# labels: mysql recipes
# timeout: 180
# A lock holder whose host vanishes without a FIN or RST, on MariaDB: its session,
# and the GET_LOCK, end when the lock session's wait_timeout (--lease-ttl, in s)
# runs out after its last ping (docs/sql.md "Session settings"), not 8 h later (the
# server's default). tests/integration/sql_vanish.sh says how. A server of this
# test's own: it listens on the veth address too.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/sql_vanish.sh"
source "$(dirname "$0")/mysql.sh"

vh_mysql_up vanish
VH_URI=mysql://$MDB_USER@127.0.0.1:$MY_PORT/$DB
VH_URI_NS=mysql://$MDB_USER@$VH_HOST_ADDR:$MY_PORT/$DB

vh_sessions() {
  my_sql -e "SELECT ID, COMMAND, TIME FROM information_schema.PROCESSLIST WHERE HOST LIKE '$VH_NS_ADDR:%'"
}
vh_lock_session() { # the GET_LOCK of /vanish (docs/recipes.md: ik/DB/lock:PATH), held from there
  my_sql -e "SELECT ID FROM information_schema.PROCESSLIST
    WHERE ID = IS_USED_LOCK('ik/$DB/lock:/vanish') AND HOST LIKE '$VH_NS_ADDR:%'"
}
vh_alive() { [ "$(my_sql -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $1")" != 0 ]; }
# Every session has wait_timeout, not only the lock's: the pooled connection that
# the holder opened the store with, idle since, must be gone too (docs/sql.md
# "Session settings"), not left until the server's global wait_timeout (8 h).
VH_ALL_GONE=1
vh_run
