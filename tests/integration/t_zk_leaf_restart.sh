#!/usr/bin/env bash
# labels: zk release
# timeout: 300
# fixtures: zk
# Leaf servers restarted beside idkeeper servers (docs/migration-from-leaf.md, "Safe
# by default"; docs/zookeeper.md, "A Leaf fleet"). A Leaf server whose start-up
# checks fail starts anyway on the number cached in its workerID.properties and
# writes no heartbeat (tests/interop/leaf_helper.py, after the catch of Leaf's
# SnowflakeZookeeperHolder.init), so nothing in ZooKeeper can fence it: an idkeeper
# server issues only on a number no Leaf server has held, unless told otherwise. The
# IDs of every issuer are decoded (worker) and compared (none twice).
#   1. The default. A Leaf server on 10.1.0.1:8080 (host A) runs as number N1, writes
#      its cache, is stopped and gone. An idkeeper server on that identity refuses at
#      once, naming the node and --leaf-takeover (the Leaf server then restarted
#      would start on N1 from its cache beside it). The Leaf server restarted takes
#      N1 by its node. An idkeeper server on a fresh identity, 10.1.0.2:8080, gets a
#      new number N2; host A, renumbered 10.1.0.2, starts a Leaf server on that
#      identity: the node's timestamp is ahead, so it starts on its cached N1
#      without a heartbeat, and N2 stays the idkeeper server's alone.
#   2. Held. The idkeeper server stops (SIGTERM); a Leaf server on host B as
#      10.1.0.2:8080 takes N2 by its node once its clock passes the record, and
#      caches it; it is stopped. The idkeeper server started again on 10.1.0.2:8080
#      refuses: a Leaf server wrote the node since idkeeper did. The Leaf server
#      restarted has N2 alone.
#   3. The explicit take-over, with the runbook's steps: a Leaf server on
#      10.1.0.3:8080 (host C) runs as N3; it is stopped, checked gone, and its
#      workerID.properties removed; `serve --leaf-takeover 10.1.0.3:8080` takes N3
#      once the last heartbeat is 5 s old, its IDs above the Leaf server's. The Leaf
#      server started again refuses to start (timestamp ahead, no cache). The
#      idkeeper server restarted without the flag takes N3 at once (the number is
#      its own now).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

zk_start_standalone
source "$(dirname "$0")/leaf.sh"
URI=$(zk_uri "$ZK_CHROOT")

# outcome NAME PORT SECS: waits until the server NAME has exited ("exited") or holds
# its number and is ready ("held"); prints which ("none" after SECS)
outcome() {
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    alive "${SERVER_PID[$1]}" || { echo exited; return 0; }
    [ "$(status_of "$2" .lease.state 2>/dev/null)" = held ] && { echo held; return 0; }
    sleep 0.1
  done
  echo none
}

# leaf_gone NAME: SIGTERM, then waits until the process is gone (the runbook's "check
# it is gone")
leaf_gone() {
  kill -TERM "${LEAF_PID[$1]}"
  wait "${LEAF_PID[$1]}" || true
  alive "${LEAF_PID[$1]}" && fail "Leaf helper $1 still runs"
  return 0
}

# record_of WORKER: the node's timestamp, as `idkeeper workers --leaf-name` reads it
record_of() {
  "$IK_BIN" workers --coord "$URI" --leaf-name fleet --json |
    jq -r --argjson w "$1" '.slots[] | select(.worker == $w) | .record_ms'
}

# clock_past MS: the wall clock is past MS
clock_past() { (($(now_ms) > $1)); }

# another node first: a Leaf server's first start on an empty path uses number 0
now_ms now
leaf_tool seq /snowflake/fleet/forever/10.9.9.9:1- "{\"ip\":\"10.9.9.9\",\"port\":\"1\",\"timestamp\":$now}" >/dev/null

# ---- 1. the default --------------------------------------------------------------
leaf_start la fleet 10.1.0.1:8080 A
n1=$(leaf_worker la) || fail "la did not start: $(cat "$T/la.log")"
leaf_from_cache la && fail "la started from a cache on its first start"
[ "$(cat "$(leaf_cache_file fleet 8080 A)")" = "workerID=$n1" ] || fail "la's workerID.properties: $(cat "$(leaf_cache_file fleet 8080 A)")"
wait_until 10 ids_at_least "$T/la.ids" 2000 || fail "la issued too few IDs"
leaf_gone la
mv "$T/la.ids" "$T/la1.ids"

p1=$(zk_free_port)
leaf_serve s1 "$p1" fleet 10.1.0.1:8080 --slot-wait 20000
o=$(outcome s1 "$p1" 30)
: >"$T/s1.ids"
if [ "$o" = held ]; then # the old way: a Leaf server's number taken after 5 s
  fetch_loop "$p1" "$T/s1.ids"
fi
leaf_start la fleet 10.1.0.1:8080 A
[ "$(leaf_worker la)" = "$n1" ] || fail "la restarted on another number: $(cat "$T/la.log")"
wait_until 10 ids_at_least "$T/la.ids" 2000 || fail "la issued too few IDs after its restart"
fetch_stop
leaf_gone la
mv "$T/la.ids" "$T/la2.ids"
ids_apart "$T/la1.ids" "$T/la2.ids" "$T/s1.ids"
[ "$o" = exited ] || fail "s1 on a Leaf server's identity: $o, not refused ($(tail -n 2 "$T/s1.log"))"
grepq -E "Leaf number $n1 is a Leaf server's \(node /.*/snowflake/fleet/forever/10\.1\.0\.1:8080-0*$n1 .*--leaf-takeover 10\.1\.0\.1:8080" "$T/s1.log" ||
  fail "s1's refusal does not name the node and the flag: $(grep -m1 cannot "$T/s1.log")"
grepq '^worker [0-9]* /' "$T/la.log" || fail "la did not restart by its node: $(cat "$T/la.log")"
pass "a Leaf server's identity is refused by default ($(grep -m1 -o 'Leaf number .*' "$T/s1.log" | cut -c1-120)...); the Leaf server restarted on $n1, no ID twice"

p2=$(zk_free_port)
leaf_serve s2 "$p2" fleet 10.1.0.2:8080
wait_held "$p2" 30 || fail "s2 not ready on a fresh identity: $(tail -n 3 "$T/s2.log")"
n2=$(status_of "$p2" .lease.worker)
((n2 != n1 && n2 != 0)) || fail "s2 took number $n2"
fetch_loop "$p2" "$T/s2.ids"
leaf_start lr fleet 10.1.0.2:8080 A # host A renumbered: its cache says n1
[ "$(leaf_worker lr)" = "$n1" ] || fail "lr did not start on its cached $n1: $(cat "$T/lr.log")"
leaf_from_cache lr || fail "lr did not start from its cache: $(cat "$T/lr.log")"
wait_until 10 ids_at_least "$T/lr.ids" 2000 || fail "lr issued too few IDs"
grepq '^beat' "$T/lr.log" && fail "lr wrote a heartbeat from its cache path"
leaf_gone lr
fetch_stop
[ "$(ids_workers "$T/s2.ids")" = "$n2" ] || fail "s2's IDs carry workers $(ids_workers "$T/s2.ids" | tr '\n' ' ')"
[ "$(ids_workers "$T/lr.ids")" = "$n1" ] || fail "lr's IDs carry workers $(ids_workers "$T/lr.ids" | tr '\n' ' ')"
ids_apart "$T/la1.ids" "$T/la2.ids" "$T/s1.ids" "$T/s2.ids" "$T/lr.ids"
pass "s2 took a new number $n2; a Leaf server on its identity started from its cache on $n1, beside it; no ID twice"

# ---- 2. a number idkeeper held, taken by a Leaf server -----------------------------
kill -TERM "${SERVER_PID[s2]}"
wait "${SERVER_PID[s2]}" || fail "s2 did not stop cleanly"
rec=$(record_of "$n2")
wait_until 10 clock_past "$rec" || fail "the clock never passed s2's record $rec"
leaf_start lb fleet 10.1.0.2:8080 B
[ "$(leaf_worker lb)" = "$n2" ] || fail "lb did not take s2's number $n2 by its node: $(cat "$T/lb.log")"
wait_grep '^beat' "$T/lb.log" 10 || fail "lb wrote no heartbeat"
leaf_gone lb
mv "$T/lb.ids" "$T/lb1.ids"
p3=$(zk_free_port)
leaf_serve s3 "$p3" fleet 10.1.0.2:8080 --slot-wait 20000
o=$(outcome s3 "$p3" 30)
: >"$T/s3.ids"
if [ "$o" = held ]; then fetch_loop "$p3" "$T/s3.ids"; fi
leaf_start lb fleet 10.1.0.2:8080 B
[ "$(leaf_worker lb)" = "$n2" ] || fail "lb restarted on another number: $(cat "$T/lb.log")"
wait_until 10 ids_at_least "$T/lb.ids" 2000 || fail "lb issued too few IDs after its restart"
fetch_stop
leaf_gone lb
ids_apart "$T/la1.ids" "$T/la2.ids" "$T/s1.ids" "$T/s2.ids" "$T/lr.ids" "$T/lb1.ids" "$T/lb.ids" "$T/s3.ids"
[ "$o" = exited ] || fail "s3 on a number a Leaf server took: $o, not refused ($(tail -n 2 "$T/s3.log"))"
grepq -E "Leaf number $n2 is a Leaf server's \(node /.*10\.1\.0\.2:8080-0*$n2 .*--leaf-takeover 10\.1\.0\.2:8080" "$T/s3.log" ||
  fail "s3's refusal does not name the node and the flag: $(grep -m1 cannot "$T/s3.log")"
pass "a number a Leaf server took from idkeeper is refused again by default; the Leaf server restarted has $n2 alone, no ID twice"

# ---- 3. the explicit take-over, with the runbook's steps ----------------------------
leaf_start lc fleet 10.1.0.3:8080 C
n3=$(leaf_worker lc) || fail "lc did not start: $(cat "$T/lc.log")"
wait_grep '^beat' "$T/lc.log" 10 || fail "lc wrote no heartbeat"
leaf_gone lc                            # runbook: stop it, check it is gone
rm "$(leaf_cache_file fleet 8080 C)"    # runbook: remove its workerID.properties
mv "$T/lc.ids" "$T/lc1.ids"
now_ms t_stop
p4=$(zk_free_port)
leaf_serve s4 "$p4" fleet 10.1.0.3:8080 --leaf-takeover 10.1.0.3:8080 --slot-wait 30000
wait_held "$p4" 40 || fail "s4 never took lc's number: $(tail -n 3 "$T/s4.log")"
now_ms t_held
[ "$(status_of "$p4" .lease.worker)" = "$n3" ] || fail "s4 took $(status_of "$p4" .lease.worker), not lc's $n3"
((t_held - t_stop >= 2000)) || fail "s4 held lc's number $((t_held - t_stop)) ms after lc stopped"
fetch_loop "$p4" "$T/s4.ids"
leaf_start lc fleet 10.1.0.3:8080 C
wait_until 30 not alive "${LEAF_PID[lc]}" || fail "lc runs beside s4: $(cat "$T/lc.log")"
grepq '^refused: .*init timestamp check error' "$T/lc.log" || fail "lc did not refuse as Leaf does: $(cat "$T/lc.log")"
wait_until 10 ids_at_least "$T/s4.ids" 2000 || fail "s4 issued too few IDs"
fetch_stop
ids_time_check "$T/s4.ids" "$(ids_time_max "$T/lc1.ids")"
kill -TERM "${SERVER_PID[s4]}"
wait "${SERVER_PID[s4]}" || fail "s4 did not stop cleanly"
"$IK_BIN" workers --coord "$URI" --leaf-name fleet | grepq -E "^$n3 +free +10\.1\.0\.3:8080 .*idkeeper's, no holder" ||
  fail "workers does not show $n3 as idkeeper's without a holder: $("$IK_BIN" workers --coord "$URI" --leaf-name fleet)"
p5=$(zk_free_port)
leaf_serve s5 "$p5" fleet 10.1.0.3:8080
wait_held "$p5" 20 || fail "s5 (no flag) did not take back its own number: $(tail -n 3 "$T/s5.log")"
[ "$(status_of "$p5" .lease.worker)" = "$n3" ] || fail "s5 took $(status_of "$p5" .lease.worker), not $n3"
fetch_ids "$p5" 5000 "$T/s5.ids" || fail "s5 refused IDs"
ids_time_check "$T/s5.ids" "$(ids_time_max "$T/s4.ids")"
ids_apart "$T/la1.ids" "$T/la2.ids" "$T/s1.ids" "$T/s2.ids" "$T/lr.ids" "$T/lb1.ids" "$T/lb.ids" "$T/s3.ids" "$T/lc1.ids" "$T/s4.ids" "$T/s5.ids"
pass "--leaf-takeover after the runbook's steps: s4 took $n3 $((t_held - t_stop)) ms after lc stopped; lc, restarted without its cache, refused to start; s5 took $n3 back without the flag; $(cat "$T"/*.ids | wc -l) IDs, no two issuers on one number at once"
