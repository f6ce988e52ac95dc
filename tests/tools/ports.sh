# ports.sh: free loopback ports for the tests, their servers and the fixtures (sourced).
#
# ik_free_port [LIST]: a loopback port nothing listens on now, below the kernel's
# ephemeral range (so no outgoing connection can be holding it), and claimed for this
# test until it ends. With LIST (a file), never one listed there before, and the port
# is appended to it: callers that run it in a subshell ($(ik_free_port "$T/.ports"))
# still get distinct ports.
#
# The claim: ctest runs tests in parallel, and a port that nothing listens on yet is
# free to every test that looks until the first server binds it. Two tests that
# picked one port had one server fail to bind and the test read the other test's
# server (a conformance run once counted 7 distinct slots among 8 servers that way).
# So a pick is claimed as a symlink IK_PORT_DIR/PORT whose target is the claiming
# shell's pid ($$, which a subshell shares with its script), under one flock(1) for
# every test: a port claimed by a live test is never picked again, and a claim whose
# test has ended (killed mid-run too) is simply taken over, so nothing cleans up.
IK_PORT_DIR=${IK_PORT_DIR:-${TMPDIR:-/tmp}/idkeeper-test-ports}
ik_free_port() {
  [ -d "$IK_PORT_DIR" ] || { mkdir -p "$IK_PORT_DIR" && chmod 1777 "$IK_PORT_DIR"; } || return 1
  { flock 9 && _ik_claim_port "${1:-}"; } 9>>"$IK_PORT_DIR/.lock"
}

_ik_claim_port() {
  local lo hi p owner list=$1
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
  ((lo > 12000)) || lo=32768
  while :; do
    p=$((10000 + RANDOM % (lo - 10000)))
    if [ -n "$list" ] && grep -qx "$p" "$list" 2>/dev/null; then continue; fi
    owner=$(readlink "$IK_PORT_DIR/$p" 2>/dev/null) || owner=
    # claimed by a test that runs (this one included: an earlier pick of its own)
    if [ -n "$owner" ] && kill -0 "$owner" 2>/dev/null; then continue; fi
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null && continue
    ln -sfn "$$" "$IK_PORT_DIR/$p" || return 1
    if [ -n "$list" ]; then echo "$p" >>"$list"; fi
    echo "$p"
    return 0
  done
}
