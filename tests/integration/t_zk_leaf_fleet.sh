#!/usr/bin/env bash
# labels: zk release
# timeout: 300
# fixtures: zk
# A Meituan Leaf snowflake fleet replaced one server at a time
# (docs/migration-from-leaf.md; docs/zookeeper.md, "A Leaf fleet"). Leaf servers are
# tests/interop/leaf_helper.py, which follows Leaf's SnowflakeZookeeperHolder and
# SnowflakeIDGenImpl line by line (random 0-99 sequence start each millisecond).
#   1. Two idkeeper servers and two Leaf helpers on one leaf.name, all issuing for
#      LEAF_RUN_S (60) s: four distinct numbers, none 0 (the first idkeeper server
#      found the forever path empty), each helper started after an idkeeper server
#      got a number nobody held, and no ID twice across the four.
#      `idkeeper workers --leaf-name` lists the four, ours by session, the helpers
#      live, and last the lowest number a new node can get, with at most how many
#      are left to 1023.
#   2. A Leaf helper replaced by the runbook's take-over (docs/migration-from-leaf.md):
#      stopped, checked gone, its workerID.properties removed, then an idkeeper
#      server started on its identity with --leaf-takeover and its clock 2 s behind
#      (libfaketime): it takes the helper's number, issues only once the helper's
#      last heartbeat is 5 s old, and every ID of its lies above the helper's last:
#      no ID repeats across the switch.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/zk.sh"

LEAF_RUN_S=${LEAF_RUN_S:-60}
zk_start_standalone
source "$(dirname "$0")/leaf.sh"

# ---- 1. four issuers ----------------------------------------------------------
pa=$(zk_free_port)
leaf_serve a "$pa" fleet "127.0.0.1:$pa"
wait_held "$pa" 30 || fail "a not ready: $(tail -n 3 "$T/a.log")"
wa=$(status_of "$pa" .lease.worker)
((wa != 0)) || fail "a took number 0 on an empty forever path (a Leaf first start uses 0 whatever its suffix)"
leaf_start l1 fleet 10.0.0.1:8080
w1=$(leaf_worker l1) || fail "l1 did not start: $(cat "$T/l1.log")"
pb=$(zk_free_port)
leaf_serve b "$pb" fleet "127.0.0.1:$pb"
wait_held "$pb" 30 || fail "b not ready: $(tail -n 3 "$T/b.log")"
wb=$(status_of "$pb" .lease.worker)
leaf_start l2 fleet 10.0.0.2:8080
w2=$(leaf_worker l2) || fail "l2 did not start: $(cat "$T/l2.log")"
nums=$(printf '%s\n' "$wa" "$w1" "$wb" "$w2" | sort -u | wc -l)
((nums == 4)) || fail "numbers not distinct: a=$wa l1=$w1 b=$wb l2=$w2"
log "numbers: a=$wa l1=$w1 b=$wb l2=$w2; issuing for ${LEAF_RUN_S} s"
fetch_loop "$pa" "$T/a.ids"
fetch_loop "$pb" "$T/b.ids"
sleep "$LEAF_RUN_S"
fetch_stop
"$IK_BIN" workers --coord "$(zk_uri "$ZK_CHROOT")" --leaf-name fleet >"$T/workers.txt"
kill -TERM "${LEAF_PID[l1]}" "${LEAF_PID[l2]}"
wait "${LEAF_PID[l1]}" "${LEAF_PID[l2]}" || true
for n in a b l1 l2; do
  c=$(wc -l <"$T/$n.ids")
  ((c > 1000)) || fail "$n issued only $c IDs in ${LEAF_RUN_S} s"
  [ "$(ids_workers "$T/$n.ids")" = "$(case $n in a) echo "$wa" ;; b) echo "$wb" ;; l1) echo "$w1" ;; l2) echo "$w2" ;; esac)" ] ||
    fail "$n's IDs carry workers $(ids_workers "$T/$n.ids" | tr '\n' ' ')"
done
cat "$T"/{a,b,l1,l2}.ids >"$T/all.ids"
assert_unique "$T/all.ids"
# `idkeeper workers --leaf-name` lists the four: ours by session, the helpers live
for w in "$wa" "$wb"; do
  grepq -E "^$w +held .*idkeeper session 0x" "$T/workers.txt" || fail "workers does not show $w as ours: $(cat "$T/workers.txt")"
done
for w in "$w1" "$w2"; do
  grepq -E "^$w +held +10\.0\.0\.[12]:8080 .*leaf: live" "$T/workers.txt" || fail "workers does not show $w as a live Leaf: $(cat "$T/workers.txt")"
done
# the last row: the lowest number a new node can get (one above the highest in use)
# and at most how many are left to Leaf's 1023
next=$(tail -n 1 "$T/workers.txt" | awk '{print $1}')
top=$(printf '%s\n' "$wa" "$w1" "$wb" "$w2" | sort -n | tail -n 1)
((next == top + 1)) || fail "workers' last row is $next, not $((top + 1)): $(tail -n 1 "$T/workers.txt")"
tail -n 1 "$T/workers.txt" | grepq -E "^$next +free +- .*leaf: a new node gets this number or a higher one; at most $((1024 - next)) left to 1023" ||
  fail "workers' last row does not say what is left: $(tail -n 1 "$T/workers.txt")"
pass "4 issuers for ${LEAF_RUN_S} s, numbers $wa $w1 $wb $w2, $(wc -l <"$T/all.ids") IDs, none twice; next number $next, $((1024 - next)) left"

# ---- 2. a Leaf server's number taken over, clock 2 s behind -------------------
rm -f "$T/l1.ids"
leaf_start l3 fleet 10.0.0.3:8080
w3=$(leaf_worker l3) || fail "l3 did not start: $(cat "$T/l3.log")"
wait_until 20 leaf_beats l3 2 || fail "l3 wrote no heartbeat: $(tail -n 3 "$T/l3.log")"
kill -TERM "${LEAF_PID[l3]}" # the runbook: stop it, check it is gone, remove its cache
wait "${LEAF_PID[l3]}" || true
alive "${LEAF_PID[l3]}" && fail "l3 still runs"
rm "$(leaf_cache_file fleet 8080 10.0.0.3)"
now_ms t_stop
leaf_last=$(ids_time_max "$T/l3.ids")
faketime_bin "$T/ik-behind" -2s
pc=$(zk_free_port)
IK_BIN=$T/ik-behind leaf_serve c "$pc" fleet 10.0.0.3:8080 --leaf-takeover 10.0.0.3:8080 --slot-wait 30000
wait_held "$pc" 40 || fail "c never took l3's number: $(tail -n 3 "$T/c.log")"
now_ms t_held
wc_=$(status_of "$pc" .lease.worker)
((wc_ == w3)) || fail "c took number $wc_, not l3's $w3"
grepq -E 'may still be alive|ahead of this clock' "$T/c.log" ||
  fail "c did not say it waited for l3's heartbeat to age"
(( t_held - t_stop >= 2000 )) || fail "c held l3's number $((t_held - t_stop)) ms after l3 stopped" 
fetch_ids "$pc" 20000 "$T/c.ids" || fail "c refused IDs: $IK_HTTP_CODE"
cat "$T/l3.ids" "$T/c.ids" >"$T/switch.ids"
assert_unique "$T/switch.ids"
ids_time_check "$T/c.ids" "$leaf_last"
pass "c (clock 2 s behind) took l3's number $w3 $((t_held - t_stop)) ms after l3 stopped; its IDs all above l3's last ($leaf_last), none repeated"
