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

vh_net_up
my_start --bind-address="127.0.0.1,$VH_HOST_ADDR"
my_sql -e "CREATE USER '$MDB_USER'@'$VH_NS_ADDR' IDENTIFIED BY '$MDB_PASSWORD';
  GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'$VH_NS_ADDR'" || fail "could not create the holder's user"
DB=$(my_db vanish)
VH_URI=mysql://$MDB_USER@127.0.0.1:$MY_PORT/$DB
VH_URI_NS=mysql://$MDB_USER@$VH_HOST_ADDR:$MY_PORT/$DB

vh_sessions() {
  my_sql -e "SELECT ID, COMMAND, TIME FROM information_schema.PROCESSLIST WHERE HOST LIKE '$VH_NS_ADDR:%'"
}
vh_lock_session() { # the GET_LOCK of /vanish (docs/recipes.md: ik/lock:PATH), held from there
  my_sql -e "SELECT ID FROM information_schema.PROCESSLIST
    WHERE ID = IS_USED_LOCK('ik/lock:/vanish') AND HOST LIKE '$VH_NS_ADDR:%'"
}
vh_alive() { [ "$(my_sql -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $1")" != 0 ]; }
# Only the lock's session has wait_timeout: the pooled connection that the holder
# opened the store with holds nothing and stays until the server's global
# wait_timeout (docs/sql.md "Session settings"); logged, not required gone.
VH_ALL_GONE=0
vh_run
