# ports.sh: free loopback ports for the tests, their servers and the fixtures (sourced).
#
# ik_free_port [LIST]: a loopback port nothing listens on now, below the kernel's
# ephemeral range (so no outgoing connection can be holding it). With LIST (a file),
# never one listed there before, and the port is appended to it: callers that run it
# in a subshell ($(ik_free_port "$T/.ports")) still get distinct ports.
ik_free_port() {
  local lo hi p list=${1:-}
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  ((lo > 12000)) || lo=32768
  while :; do
    p=$((10000 + RANDOM % (lo - 10000)))
    if [ -n "$list" ] && grep -qx "$p" "$list" 2>/dev/null; then continue; fi
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && continue
    if [ -n "$list" ]; then echo "$p" >>"$list"; fi
    echo "$p"
    return 0
  done
}
