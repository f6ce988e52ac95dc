# sql_hazards_run.sh: an SQL store turning unsafe under a running server, and the
# database's clock stepped under it (bash, sourced by t_mysql_hazards_run.sh and
# t_pg_hazards_run.sh after lib.sh; docs/hazards.md, "MySQL and MariaDB" and
# "PostgreSQL"). The caller starts a database server of its own whose clock is
# libfaketime's, offset by what the file $DBCLOCK says (read at every call), and sets
#   URI          a fresh database on it
#   UNSAFE_SET   a command that makes a durability setting unsafe at run time
#   UNSAFE_UNSET a command that puts it back
#   UNSAFE_NAME  the setting as the hazard row names it ("synchronous_commit is off")
#
# 1. `idkeeper check` exits 0 on the server as started.
# 2. UNSAFE_SET under a running server: `idkeeper check` exits 5 naming the setting;
#    within the hazard interval (a third of --lease-ttl 6000: 2 s) + 2 s the server's
#    sequence requests answer 503 store_unsafe and /readyz fails, both naming it;
#    after UNSAFE_UNSET, check exits 0 and the server serves again within as long.
# 3. The database clock stepped forward by 13 s (over twice the lease TTL, so the slot's
#    expiry, which runs on that clock, has passed for everyone) while a holds worker
#    0 of a one-worker range and b waits for it: a's next check finds the database
#    clock ahead of its CLOCK_BOOTTIME by more than the margin, logs it, and its lease
#    goes in doubt (/readyz names "database clock"); afterwards the fleet serves
#    worker 0 again (a, or b once a's slot passes to it), and no snowflake ID was
#    issued twice by a and b together. `idkeeper check` compares the database
#    clock over its own two reads (open, then the check), a few ms apart: it shows
#    the row ok unless the step falls between them; a step is a running server's to
#    see.
# 4. A step of 2.5 s more under the holder (less than the TTL minus two renewals): its
#    lease goes in doubt (/readyz names the database clock), then is held again on
#    the same slot; no ID twice.
# --lease-ttl 6000, not less: in part 4 the step (2.5 s) must stay 2.5 s short of
# the slot's expiry, or a renewal late by load would find the slot expired
TTL=6000
HZ_LIMIT_MS=4000 # the hazard interval (6000 / 3) + 2 s

"$IK_BIN" check --coord "$URI" >"$T/check0.out" 2>&1 || fail "idkeeper check on the server as started: $(cat "$T/check0.out")"
grep -Eq '^database clock .* ok +-$' "$T/check0.out" || fail "check shows no database clock row: $(cat "$T/check0.out")"
pass "idkeeper check: exit 0 on the server as started"

"$IK_BIN" tags add q --kind sequence --coord "$URI" >/dev/null || fail "tags add q"
serve_on a --coord "$URI" --lease-ttl $TTL --worker-range 0-0 || fail "a: $(tail -n 5 "$T/a.log")"
PA=$PORT
base=http://127.0.0.1:$PA
: >"$T/seq.ids"
seq_get() {
  local code
  code=$(ik_http "$base/v1/sequence/q?format=text" "$T/seq.body")
  [ "$code" != 200 ] || cat "$T/seq.body" >>"$T/seq.ids"
  echo "$code"
}

# ---- 2. a durability setting turned unsafe at run time --------------------------------
[ "$(seq_get)" = 200 ] || fail "no sequence ID before $UNSAFE_NAME"
$UNSAFE_SET
mono_ms t0
rc=0
"$IK_BIN" check --coord "$URI" >"$T/check1.out" 2>/dev/null || rc=$?
[ "$rc" = 5 ] || fail "idkeeper check exited $rc with $UNSAFE_NAME: $(cat "$T/check1.out")"
grep -q "${UNSAFE_NAME% is *}.*refused" "$T/check1.out" || fail "check does not name it refused: $(cat "$T/check1.out")"
# both_refused: sequence 503 and /readyz failing, each time noted (ms after t0) when seen
seq503='' rz503=''
both_refused() {
  local el=$(($(mono_ms) - t0))
  if [ -z "$seq503" ] && [ "$(seq_get)" = 503 ]; then seq503=$el; fi
  if [ -z "$rz503" ] && [ "$(ik_http "$base/readyz" "$T/readyz.body")" = 503 ]; then rz503=$el; fi
  [ -n "$seq503" ] && [ -n "$rz503" ]
}
wait_until "$((HZ_LIMIT_MS / 1000))" both_refused ||
  fail "$UNSAFE_NAME: sequence 503 after ${seq503:-never} ms, /readyz failing after ${rz503:-never} ms: not both within $HZ_LIMIT_MS ms"
grep -q '"store_unsafe"' "$T/seq.body" && grep -q "$UNSAFE_NAME" "$T/seq.body" || fail "the 503 does not name $UNSAFE_NAME: $(cat "$T/seq.body")"
grep -q "store unsafe: $UNSAFE_NAME" "$T/readyz.body" || fail "/readyz does not name $UNSAFE_NAME: $(cat "$T/readyz.body")"
$UNSAFE_UNSET
"$IK_BIN" check --coord "$URI" >"$T/check2.out" 2>&1 || fail "idkeeper check after the setting was put back: $(cat "$T/check2.out")"
serving() { [ "$(seq_get)" = 200 ] && ready_probe "$PA"; }
wait_until "$((HZ_LIMIT_MS / 1000))" serving || fail "not serving again within $HZ_LIMIT_MS ms of the setting put back"
pass "$UNSAFE_NAME at run time: idkeeper check exit 5 naming it, sequence 503 after $seq503 ms, /readyz failing after $rz503 ms; put back: check exit 0, serving again"

# ---- 3. the database clock stepped forward -------------------------------------------
PB=$(free_port)
start_server b "$PB" --coord "$URI" --lease-ttl $TTL --worker-range 0-0 --slot-wait 120000
b_waits() { [ "$(ik_http "http://127.0.0.1:$PB/readyz" "$T/b.readyz")" = 503 ] && grep -q "free slot" "$T/b.readyz"; }
wait_until 20 b_waits || fail "b does not wait for a slot: $(tail -n 5 "$T/b.log")"
sleep 2 # let time pass: b is waiting for worker 0, a's (a's own renewals meanwhile)
probe a "$base/v1/snowflake?count=20&format=text" "$T/probe.stop" 0.02 &
IK_PIDS+=($!)
probe b "http://127.0.0.1:$PB/v1/snowflake?count=20&format=text" "$T/probe.stop" 0.02 &
IK_PIDS+=($!)
wait_until 20 probe_answered a 5 || fail "a answers its probe nothing before the step"
echo "+13" >"$DBCLOCK"
mono_ms stepped
log "database clock stepped 13 s forward"
# clock_named HOST_PORT LOG N: /readyz fails naming the database clock (rzclock: ms
# after the step), or LOG has more than N database clock lines (the doubt came and
# went between two polls, or the lease was lost first and the new take found the step)
rzclock=''
clock_named() {
  if [ "$(ik_http "http://127.0.0.1:$1/readyz" "$T/readyz.clock")" = 503 ] && grep -q "store unsafe: database clock" "$T/readyz.clock"; then
    rzclock=$(($(mono_ms) - stepped))
    return 0
  fi
  (($(grep -c "store hazard: .*database clock" "$2" || true) > $3))
}
wait_until "$((HZ_LIMIT_MS / 1000 + 2))" clock_named "$PA" "$T/a.log" 0 ||
  fail "a did not see the database clock step within $((HZ_LIMIT_MS + 2000)) ms: $(tail -n 5 "$T/a.log")"
wait_grep "store hazard: .*database clock" "$T/a.log" 2 || fail "a logged no database clock hazard: $(tail -n 5 "$T/a.log")"
log "a: $(grep -m1 "store hazard: .*database clock" "$T/a.log")"
# the fleet serves worker 0 again: a, or b
fleet_ready() { ready_probe "$PA" || ready_probe "$PB"; }
wait_until 30 fleet_ready || fail "neither a nor b serves 30 s after the step: a: $(tail -n 3 "$T/a.log") b: $(tail -n 3 "$T/b.log")"
mono_ms served
fleet_answers() { probe_answered a 10 "$served" || probe_answered b 10 "$served"; }
wait_until 20 fleet_answers || fail "the fleet answers its probes nothing after the step"
touch "$T/probe.stop"
cat "$T/a.ids" "$T/b.ids" >"$T/all.ids"
fetch_ids "$PB" 1000 "$T/all.ids" 2>/dev/null || true
fetch_ids "$PA" 1000 "$T/all.ids" 2>/dev/null || true
assert_unique "$T/all.ids"
grep -q "store hazard cleared: .*database clock" "$T/a.log" || log "a logged no clearing of the database clock row (yet)"
pass "database clock stepped +13 s: a logged it$([ -n "$rzclock" ] && echo ", /readyz 503 naming it after $rzclock ms"); afterwards a ready: $(ready_probe "$PA" && echo yes || echo no), b ready: $(ready_probe "$PB" && echo yes || echo no); $(wc -l <"$T/all.ids") snowflake IDs, none twice"
grep -h "lease\|store hazard" "$T/a.log" "$T/b.log" | tail -n 12 >&2
# ---- 4. a smaller step, under the holder: in doubt, then held again -------------------
# +2.5 s: more than a third of the TTL (the margin the slot lease keeps), and less
# than the TTL minus two renewal intervals (the one before the step, and the one the
# doubt withholds: 6000 - 2 x 500 ms), so the slot's expiry stays ahead of the stepped
# clock: the holder's lease goes in doubt (/readyz 503 naming the database clock),
# then the next check finds the clocks moving together and the lease is held again,
# same slot. (With --lease-ttl 3000, a step of 2 s here made the next renewal find
# the slot expired: lost, and taken again with the floor from the record.)
if ready_probe "$PA"; then HN=a HP=$PA; else HN=b HP=$PB; fi
n0=$(grep -c "store hazard: .*database clock" "$T/$HN.log" || true)
c0=$(grep -c "store hazard cleared: .*database clock" "$T/$HN.log" || true)
lost0=$(grep -c "lease lost" "$T/$HN.log" || true)
probe h2 "http://127.0.0.1:$HP/v1/snowflake?count=20&format=text" "$T/probe.stop2" 0.02 &
IK_PIDS+=($!)
wait_until 20 probe_answered h2 5 || fail "$HN answers its probe nothing before the step"
echo "+15.5" >"$DBCLOCK"
mono_ms stepped
log "database clock stepped 2.5 s more, under $HN (the holder)"
# /readyz itself must name it here: the doubt lasts until the next renewal, 500 ms
rzclock=''
wait_until "$((HZ_LIMIT_MS / 1000))" clock_named "$HP" /dev/null 0 && [ -n "$rzclock" ] ||
  fail "$HN's /readyz did not fail naming the database clock within $HZ_LIMIT_MS ms of a 2.5 s step: $(tail -n 3 "$T/$HN.log")"
wait_until "$((HZ_LIMIT_MS / 1000))" ready_probe "$HP" || fail "$HN not ready again within $HZ_LIMIT_MS ms of its doubt: $(tail -n 3 "$T/$HN.log")"
back=$(($(mono_ms) - stepped))
wait_until 20 probe_answered h2 5 $((stepped + back)) || fail "$HN answers its probe nothing once ready again"
touch "$T/probe.stop2"
(($(grep -c "store hazard: .*database clock" "$T/$HN.log") > n0)) || fail "$HN logged no database clock hazard"
(($(grep -c "store hazard cleared: .*database clock" "$T/$HN.log") > c0)) || fail "$HN logged no clearing"
[ "$(grep -c "lease lost" "$T/$HN.log" || true)" = "$lost0" ] || fail "$HN lost its lease on a 2.5 s step: $(tail -n 4 "$T/$HN.log")"
cat "$T/a.ids" "$T/b.ids" "$T/h2.ids" >"$T/all.ids"
fetch_ids "$HP" 1000 "$T/all.ids" || fail "$HN serves no snowflake IDs after the step"
assert_unique "$T/all.ids"
pass "database clock stepped +2.5 s more under $HN: /readyz 503 naming it after $rzclock ms, ready again after $back ms on the same slot; $(wc -l <"$T/all.ids") snowflake IDs, none twice"

"$IK_BIN" check --coord "$URI" >"$T/check3.out" 2>&1 || fail "idkeeper check after the step: $(cat "$T/check3.out")"
grep -Eq '^database clock .* ok +-$' "$T/check3.out" || fail "check's database clock row: $(cat "$T/check3.out")"
pass "idkeeper check after the step: exit 0, its database clock row ok (its own two reads, both after the step)"
