# sql_vanish.sh: a lock holder whose host vanishes without a FIN or RST must not
# keep its SQL session lock for hours (bash, sourced by t_pg_lock_vanished.sh and
# t_mysql_lock_vanished.sh after lib.sh; docs/sql.md "Session settings",
# docs/hazards.md).
#
# The holder's "host" is a network namespace of its own, joined to this one by a
# veth pair (iproute2): `idkeeper lock` runs inside it and reaches the database at
# the host end's address, which the test's own server listens on besides loopback.
# Once it holds the lock, its host vanishes: the namespace's end of the link goes
# down (the database's packets to it are lost, none come back, not even ARP), and
# then the holder and its CMD are killed -9, so that the FIN of their close never
# leaves. Before the session limits, the database kept the session, and the lock,
# until its own TCP keepalive gave up (PostgreSQL: 2 h by default) or wait_timeout
# ended it (MariaDB: 8 h). Now the session ends about a TTL (--lease-ttl) after
# the holder's last packet (docs/sql.md): a second `idkeeper lock` from this host
# must get the lock within VH_BOUND_MS of the cut, and the dead session must be gone
# from the database's own list (pg_stat_activity / the process list).
#
# Two steps, the server started in between (it must listen on the address):
#   vh_net_up            the namespace and the link; sets VH_HOST_ADDR (this end,
#                        the database's) and VH_NS_ADDR (the holder's)
#   vh_run               the test; the caller sets VH_URI_NS (the database at
#                        VH_HOST_ADDR), VH_URI (at 127.0.0.1) and defines
#                        vh_lock_session (prints the id of the session from
#                        VH_NS_ADDR that holds the lock /vanish, nothing if none),
#                        vh_alive ID (0 if session ID is still in the database) and
#                        vh_sessions (prints the sessions from VH_NS_ADDR, one a
#                        line); VH_ALL_GONE=1: every session of the dead host must be
#                        gone too, not only the lock's
#   vh_mysql_up NAME     vh_net_up, then a MariaDB of the test's own listening on
#                        both addresses, its user allowed from VH_NS_ADDR, and a
#                        database NAME: sets DB (mysql.sh sourced before)
# Everything (the namespace, its processes, the link) goes in a cleanup, pass or fail.
VH_TTL_MS=${VH_TTL_MS:-6000}
# The documented bound is about a TTL after the holder's last packet (docs/sql.md):
# checked with a TTL and 15 s of headroom for a loaded machine. Before the fix the
# lock stayed for hours, so any bound in seconds tells them apart.
VH_BOUND_MS=${VH_BOUND_MS:-$((2 * VH_TTL_MS + 15000))}
VH_NS=ik-vanish-$$
VH_LINK=ikv$$h # this end (interface names: at most 15 bytes)
VH_PEER=ikv$$n # the namespace's end
VH_HOST_ADDR='' VH_NS_ADDR=''

vh_net_down() {
  local p
  if ip netns list 2>/dev/null | grep -q "^$VH_NS\b"; then
    for p in $(ip netns pids "$VH_NS" 2>/dev/null); do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
    ip netns del "$VH_NS" 2>/dev/null
  fi
  # deleting the namespace frees its end of the pair only later: delete ours, both go
  ip link del "$VH_LINK" 2>/dev/null
  return 0
}

vh_net_up() {
  [ "$(id -u)" = 0 ] || fail "sql_vanish.sh needs root (a network namespace and a veth pair)"
  command -v ip >/dev/null || fail "no ip (apt-get install iproute2)"
  IK_CLEANUPS+=(vh_net_down)
  # a /30 of 10.225.0.0/16 chosen by the pid, one not in use here
  local try n o3 o4
  for try in 0 1 2 3 4 5 6 7; do
    n=$((($$ + try * 977) % 16384))
    o3=$((n / 64)) o4=$((n % 64 * 4))
    VH_HOST_ADDR=10.225.$o3.$((o4 + 1)) VH_NS_ADDR=10.225.$o3.$((o4 + 2))
    ip -4 -o addr show | grep -qE " 10\.225\.$o3\.$((o4 + 1))/| 10\.225\.$o3\.$((o4 + 2))/" || break
    VH_HOST_ADDR=
  done
  [ -n "$VH_HOST_ADDR" ] || fail "no free /30 in 10.225.0.0/16"
  ip netns add "$VH_NS" || fail "ip netns add $VH_NS failed"
  ip link add "$VH_LINK" type veth peer name "$VH_PEER" || fail "ip link add (veth) failed"
  ip link set "$VH_PEER" netns "$VH_NS" || fail "could not move $VH_PEER into $VH_NS"
  ip addr add "$VH_HOST_ADDR/30" dev "$VH_LINK" || fail "ip addr add $VH_HOST_ADDR failed"
  ip link set "$VH_LINK" up || fail "ip link set $VH_LINK up failed"
  ip netns exec "$VH_NS" ip addr add "$VH_NS_ADDR/30" dev "$VH_PEER" || fail "ip addr add $VH_NS_ADDR failed"
  ip netns exec "$VH_NS" ip link set "$VH_PEER" up || fail "ip link set $VH_PEER up failed"
  ip netns exec "$VH_NS" ip link set lo up
  log "the holder's host: namespace $VH_NS, $VH_NS_ADDR, the database at $VH_HOST_ADDR"
}

vh_run() {
  "$IK_BIN" lock --coord "$VH_URI" --timeout 0 /vanish -- true 2>"$T/probe.err" ||
    fail "a lock from this host failed before the test: $(cat "$T/probe.err")"
  # the holder, in its namespace; CMD writes its pid and its fencing token
  ip netns exec "$VH_NS" "$IK_BIN" lock --coord "$VH_URI_NS" --lease-ttl "$VH_TTL_MS" /vanish -- \
    sh -c 'echo $$ >"$0/cmd.pid"; echo "$IDKEEPER_FENCE" >"$0/held"; exec sleep 600' "$T" \
    >"$T/holder.out" 2>"$T/holder.err" &
  local holder=$!
  IK_PIDS+=("$holder")
  wait_until 60 test -s "$T/held" || fail "the holder did not get /vanish: $(cat "$T/holder.err")"
  local fence1 cmd lsid
  fence1=$(cat "$T/held")
  # CMD's pid out here (it may run in a PID namespace of its own: docs/recipes.md)
  cmd=$(host_pid "$holder" "$(cat "$T/cmd.pid")") || fail "the holder's CMD not found"
  IK_PIDS+=("$cmd")
  lsid=$(vh_lock_session)
  [ -n "$lsid" ] || fail "no session from $VH_NS_ADDR holds /vanish: the holder does not reach the database through its namespace"
  log "the holder (pid $holder, fence $fence1) holds /vanish on session $lsid, from $VH_NS_ADDR"
  sleep 1 # let time pass: a few of its pings (every 500 ms) pass: its session is idle between them

  # the host vanishes: its link goes, then its processes, whose FINs never leave
  ip netns exec "$VH_NS" ip link set "$VH_PEER" down || fail "could not cut the holder's link"
  local cut now
  mono_ms cut
  kill -KILL "$holder" "$cmd" 2>/dev/null
  wait "$holder" 2>/dev/null || true
  [ "$(vh_lock_session)" = "$lsid" ] ||
    fail "the dead holder's session $lsid was gone at once: a FIN or RST reached the database, the host did not vanish"
  log "the holder's host vanished (link down, holder and CMD killed -9); its session $lsid still holds /vanish"

  "$IK_BIN" lock --coord "$VH_URI" --lease-ttl "$VH_TTL_MS" --timeout "$VH_BOUND_MS" /vanish -- \
    sh -c 'echo "$IDKEEPER_FENCE" >"$0/got"' "$T" 2>"$T/waiter.err" &
  local waiter=$! gone='' rc=0
  IK_PIDS+=("$waiter")
  while alive "$waiter"; do
    mono_ms now
    if [ -z "$gone" ] && ! vh_alive "$lsid"; then
      gone=$((now - cut))
      log "the dead holder's session $lsid left the database $gone ms after the cut"
    fi
    sleep 0.2
  done
  wait "$waiter" || rc=$?
  mono_ms now
  local took=$((now - cut))
  if ((rc == 124)); then
    fail "the second lock still waited $took ms after the holder's host vanished (--lease-ttl $VH_TTL_MS, bound $VH_BOUND_MS ms); the dead session $lsid from $VH_NS_ADDR $([ "$(vh_lock_session)" = "$lsid" ] && echo "still holds /vanish" || echo "holds nothing"); sessions from there: $(vh_sessions | tr '\n' ';')"
  fi
  ((rc == 0)) || fail "the second lock exited $rc: $(cat "$T/waiter.err")"
  [ -s "$T/got" ] || fail "the second lock's CMD did not run"
  local fence2
  fence2=$(cat "$T/got")
  ((fence2 > fence1)) || fail "the second grant's fence $fence2 is not above the dead holder's $fence1"
  # the lock did not free at once: nothing the holder sent closed its session, the
  # database's own limit did (each of them is 2/3 of the TTL or more after the last
  # ping, which came at most 500 ms before the cut)
  ((took >= VH_TTL_MS / 3)) ||
    fail "the lock freed $took ms after the cut, before any of the session limits (--lease-ttl $VH_TTL_MS): the host did not vanish"
  ! vh_alive "$lsid" || fail "the second lock holds /vanish, but the dead holder's session $lsid is still in the database"
  local left
  if [ "${VH_ALL_GONE:-0}" = 1 ]; then
    # the other sessions end by the server's keepalives, the lock's by its idle limit:
    # each about a TTL after the last packet, in either order, all within the bound
    no_sessions() { [ -z "$(vh_sessions)" ]; }
    mono_ms now
    wait_until "$(((VH_BOUND_MS - (now - cut)) / 1000 + 1))" no_sessions ||
      fail "sessions of the dead host are still in the database $VH_BOUND_MS ms after the cut: $(vh_sessions | tr '\n' ';')"
  elif left=$(vh_sessions) && [ -n "$left" ]; then
    log "left in the database from the dead host, holding no lock: $(echo "$left" | tr '\n' ';')"
  fi
  local when="with the grant"
  [ -z "$gone" ] || when="$gone ms after the cut"
  pass "the second lock got /vanish $took ms after the holder's host vanished (--lease-ttl $VH_TTL_MS, bound $VH_BOUND_MS ms; fence $fence1 -> $fence2); the dead lock session left the database $when"
}

vh_mysql_up() {
  vh_net_up
  my_start --bind-address="127.0.0.1,$VH_HOST_ADDR"
  my_sql -e "CREATE USER '$MDB_USER'@'$VH_NS_ADDR' IDENTIFIED BY '$MDB_PASSWORD';
    GRANT ALL PRIVILEGES ON *.* TO '$MDB_USER'@'$VH_NS_ADDR'" || fail "could not create the vanishing host's user"
  DB=$(my_db "$1")
}
