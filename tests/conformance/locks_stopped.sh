#!/usr/bin/env bash
# labels: recipes
# timeout: 180
# A frozen holder (docs/guarantees.md promise 21; docs/recipes.md, "CMD's process
# tree"): SIGSTOP of the `idkeeper lock` (or `elect`) process only, not of its
# guardian nor of CMD, past its lease (on zk:// its session timeout). Its CMD is a
# worker that ignores SIGTERM and appends "A PID TIME" to a file every 20 ms. The
# store expires the grant and another process (B) takes it, appending "B PID TIME";
# but the guardian, which does not freeze with idkeeper, holds the deadline: at the
# end of the trust window with no newer proof it stops CMD's tree itself (SIGTERM,
# SIGKILL after the grace), before the store can hand the grant on. So no A line
# follows B's, and the guardian says why on stderr. Once woken, A says it lost the
# grant ("lost the lock at /stop (...)") and exits 125; the two grants' fencing tokens strictly increase.
# Before, A's CMD ran on beside B's until A was woken (the guardian had no deadline):
# under a seeded fault loop on zk:// the next CMD started 1.4 s before the frozen
# holder's CMD ended.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start

cat >"$T/worker" <<'SH'
#!/usr/bin/env bash
enable -f /usr/lib/bash/sleep sleep 2>/dev/null || true
trap '' TERM
echo "$IDKEEPER_FENCE" >"$2.fence"
while :; do
  echo "$1 $$ $EPOCHREALTIME" >>"$2"
  sleep 0.02
done
SH
chmod +x "$T/worker"

case_frozen() {
  local tool=$1 hb="$T/hb.$1" coord a b rc=0
  coord=$(conf_coord "stop$tool")
  : >"$hb"
  if [ "$tool" = lock ]; then
    "$IK_BIN" lock --coord "$coord" "${CONF_SERVE_ARGS[@]}" /stop -- "$T/worker" A "$hb" 2>"$hb.a.err" &
  else
    "$IK_BIN" elect --coord "$coord" "${CONF_SERVE_ARGS[@]}" --once --id A /stop -- "$T/worker" A "$hb" \
      2>"$hb.a.err" &
  fi
  a=$!
  IK_PIDS+=($a)
  wait_until 10 test -s "$hb.fence" || fail "$tool: A did not get the grant: $(cat "$hb.a.err")"
  local b_cmd='echo "$IDKEEPER_FENCE" >"$0.bfence"; echo "B $$ $EPOCHREALTIME" >>"$0"; sleep 0.5'
  if [ "$tool" = lock ]; then
    "$IK_BIN" lock --coord "$coord" "${CONF_SERVE_ARGS[@]}" /stop -- bash -c "$b_cmd" "$hb" 2>"$hb.b.err" &
  else
    "$IK_BIN" elect --coord "$coord" "${CONF_SERVE_ARGS[@]}" --once --id B /stop -- bash -c "$b_cmd" "$hb" \
      2>"$hb.b.err" &
  fi
  b=$!
  IK_PIDS+=($b)

  kill -STOP $a
  local t0=$SECONDS limit_s
  log "$tool: A (fence $(cat "$hb.fence")) frozen, its guardian and CMD not"
  limit_s=$((($(conf_lock_free_ms) + 12000) / 1000))
  wait_until $limit_s test -s "$hb.bfence" || fail "$tool: B did not get the grant within $limit_s s of A's freeze"
  log "$tool: B got the grant $((SECONDS - t0)) s after A froze (fence $(cat "$hb.bfence"))"
  wait $b || fail "$tool: B failed: $(cat "$hb.b.err")"
  local after
  after=$(awk '$1 == "B" && b == "" { b = $3; next } b != "" && $1 == "A" { n++; last = $3 }
               END { if (n) printf "%d heartbeats of A after B started, the last %.0f ms after", n, (last - b) * 1000 }' "$hb")
  [ -z "$after" ] || fail "$tool: $after"
  [ -z "$(pgrep -f -- "^bash $T/worker A $hb\$")" ] || fail "$tool: A's CMD still runs while A is frozen"
  grepq 'still stands came within its safe window' "$hb.a.err" ||
    fail "$tool: A's guardian did not say why it stopped CMD: $(cat "$hb.a.err")"

  kill -CONT $a
  wait $a || rc=$?
  [ $rc = 125 ] || fail "$tool: A exited $rc after waking, not 125 (lost): $(cat "$hb.a.err")"
  # the guardian acted first; idkeeper, woken, says the loss in its own words too
  grepq -E "^idkeeper: $tool: lost (the lock|leadership) at /stop " "$hb.a.err" ||
    fail "$tool: A did not say it lost the grant after waking: $(cat "$hb.a.err")"
  (($(cat "$hb.bfence") > $(cat "$hb.fence"))) ||
    fail "$tool: fences do not increase: A $(cat "$hb.fence"), B $(cat "$hb.bfence")"
  pass "$tool: A frozen: its guardian stopped CMD before B held (the last A line $(awk '$1 == "A" { a = $3 } $1 == "B" { printf "%.0f", ($3 - a) * 1000; exit }' "$hb") ms before B's first); A exited 125; fences $(cat "$hb.fence") < $(cat "$hb.bfence")"
}

case_frozen lock
case_frozen elect
