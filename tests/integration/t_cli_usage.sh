#!/usr/bin/env bash
# labels: cli
# timeout: 120
# The CLI without a server: help for every command, usage errors (exit 2, one line
# naming the source of the bad value), decode and its layout expiry, version.
source "$(dirname "$0")/lib.sh"
cd "$T"

# ---- help for every command --------------------------------------------------
"$IK_BIN" help >"$T/help" || fail "idkeeper help failed"
cmds=$(awk '/^Commands:/ { f = 1; next } f && /^  [a-z]/ { print $1 } f && /^$/ { exit }' "$T/help")
for c in serve next decode workers version help; do
  grep -qx "$c" <<<"$cmds" || fail "idkeeper help does not list $c"
done
for c in $cmds; do
  "$IK_BIN" help "$c" >"$T/h1" || fail "idkeeper help $c failed"
  "$IK_BIN" "$c" --help >"$T/h2" || fail "idkeeper $c --help failed"
  head -n 1 "$T/h1" | grepq "^usage: idkeeper $c" || fail "help $c: no usage line: $(head -n 1 "$T/h1")"
  [ "$(wc -l <"$T/h1")" -ge 3 ] || fail "help $c is too short"
  cmp -s "$T/h1" "$T/h2" || fail "idkeeper help $c and idkeeper $c --help differ"
done
"$IK_BIN" --help | grepq '^Commands:' || fail "idkeeper --help lists no commands"
# every option shown has its environment variable and a default where it has one
"$IK_BIN" serve --help >"$T/h"
for o in coord app http identity worker-range layout epoch slot-choice slot-wait max-batch max-backward \
         zk-session-timeout zk-auth threads max-header-bytes idle-timeout read-timeout \
         max-connections http-token-file shutdown-timeout quiet config; do
  grep -q -- "--$o" "$T/h" || fail "serve --help lacks --$o"
  env=IDKEEPER_$(tr 'a-z-' 'A-Z_' <<<"$o")
  grep -q "$env" "$T/h" || fail "serve --help lacks $env"
done
grep -q 'default local:./idkeeper-data, IDKEEPER_COORD' "$T/h" || fail "serve --help: no default for --coord"
pass "help for every command"

# ---- usage errors: exit 2, one line, the source named ----------------------------
expect_fail 2 "no command" "$IK_BIN"
expect_fail 2 "unknown command 'frobnicate'" "$IK_BIN" frobnicate
expect_fail 2 "unknown option --nope" "$IK_BIN" serve --nope
expect_fail 2 "--count is not an option of serve" "$IK_BIN" serve --count 3
expect_fail 2 "--max-batch: 0 is out of range" "$IK_BIN" serve --max-batch 0
expect_fail 2 "--max-batch: 'many' is not a number" "$IK_BIN" serve --max-batch=many
expect_fail 2 "--app needs a value" "$IK_BIN" serve --app
expect_fail 2 "unexpected argument 'now'" "$IK_BIN" serve now
expect_fail 2 "--http" "$IK_BIN" serve --http localhost
expect_fail 2 "--coord" "$IK_BIN" serve --coord nosuch:backend
expect_fail 2 "--worker-range" "$IK_BIN" serve --worker-range 9-2
expect_fail 2 "--slot-choice: 'first' is not one of random|lowest" "$IK_BIN" serve --slot-choice first
expect_fail 2 "--count: 'abc' is not a number" "$IK_BIN" next --count abc
expect_fail 2 "unknown ID kind 'bogus'" "$IK_BIN" next bogus
expect_fail 2 "segment needs a TAG" "$IK_BIN" next segment
expect_fail 2 "--server" "$IK_BIN" next --server https://example.com
expect_fail 2 "layout from --layout: " "$IK_BIN" decode --layout bits=1/2/3 1
expect_fail 2 "--layout: " "$IK_BIN" decode --layout bits=x 1
expect_fail 2 "--app: 'a b' is not an app name" "$IK_BIN" workers --app 'a b'
expect_fail 2 "unknown command 'nosuch'" "$IK_BIN" help nosuch
expect_fail 2 "--max N is required" "$IK_BIN" semaphore --coord "local:$T/sem" /x -- true
expect_fail 2 "--max: 0 is out of range 1..10000" "$IK_BIN" semaphore --max 0 /x -- true
expect_fail 2 "--semaphore-layout: 'zk' is not one of curator|kazoo" "$IK_BIN" semaphore --max 1 --semaphore-layout zk /x -- true
expect_fail 2 "--list takes one PATH and no command" "$IK_BIN" semaphore --coord "local:$T/sem" --list /x -- true
expect_fail 2 "--max is not an option of lock" "$IK_BIN" lock --max 2 /x -- true
expect_fail 2 "--semaphores: an empty item" "$IK_BIN" serve --semaphores /a,,/b
expect_fail 2 "IDKEEPER_MAX_BATCH: 'lots' is not a number" env IDKEEPER_MAX_BATCH=lots "$IK_BIN" serve
expect_fail 2 "IDKEEPER_COUNT: 0 is out of range" env IDKEEPER_COUNT=0 "$IK_BIN" next

printf 'app = ok\n\n[serve]\ncord = local:x\n' >"$T/typo.ini"
expect_fail 2 "$T/typo.ini:4: unknown key 'cord'" "$IK_BIN" serve --config "$T/typo.ini"
printf '[serve]\nmax-batch = 0\n' >"$T/bad.ini"
expect_fail 2 "$T/bad.ini:2: max-batch: 0 is out of range" env IDKEEPER_CONFIG="$T/bad.ini" "$IK_BIN" serve
printf '[server]\napp = x\n' >"$T/sect.ini"
expect_fail 2 "$T/sect.ini:1: unknown section [server]" "$IK_BIN" serve --config "$T/sect.ini"
expect_fail 2 "--config $T/missing.ini" "$IK_BIN" serve --config "$T/missing.ini"

# a layout that runs out within 10 years is refused before anything starts
port=$(free_port)
expect_fail 2 "layout from --layout (bits=35/10/18," timeout 10 "$IK_BIN" serve --http 127.0.0.1:"$port" --layout bits=35/10/18
expect_fail 2 "max-batch" timeout 10 "$IK_BIN" serve --http 127.0.0.1:"$port" --max-batch 0
(exec 3<>/dev/tcp/127.0.0.1/"$port") 2>/dev/null && fail "something listens on $port after refused starts"
[ ! -e "$T/idkeeper-data" ] || fail "a refused serve created its data directory"
# kazoo's layout off zk://: refused once the store is open (CMD's container may be
# said first, where the host gives none: not one line there)
rc=0
"$IK_BIN" semaphore --coord "local:$T/sem" --max 1 --semaphore-layout kazoo /x -- touch "$T/ran" 2>"$T/err" || rc=$?
[ $rc = 2 ] && grepq 'semaphore-layout kazoo is a ZooKeeper layout' "$T/err" && [ ! -e "$T/ran" ] ||
  fail "--semaphore-layout kazoo on local: exited $rc: $(cat "$T/err")"
pass "usage errors exit 2 with one line naming the source"

# ---- the store's password: read from its file, never shown ----------------------
expect_fail 2 "cannot read the password file $T/nope" "$IK_BIN" workers --password-file "$T/nope"
: >"$T/empty-pw"
expect_fail 2 "the password file $T/empty-pw is empty" "$IK_BIN" tags list --password-file "$T/empty-pw"
head -c 1100 /dev/zero | tr '\0' x >"$T/long-pw"
expect_fail 2 "longer than 1023 bytes" "$IK_BIN" workers --password-file "$T/long-pw"
grep -q xxxx "$T/err" && fail "a long password file's text was shown: $(cat "$T/err")"
# a URI with a password in it: every message shows it without (a scheme no build has,
# so the check fails before any backend)
uri='nosuch://ik:Sup3rSecret@db:5432/ids?password=Sup3rSecret2'
for cmd in "workers --coord $uri" "tags list --coord $uri" "lock --coord $uri /p -- true"; do
  # shellcheck disable=SC2086 # the command's words
  "$IK_BIN" $cmd >"$T/out" 2>"$T/err" && fail "$cmd on an unknown scheme succeeded"
  grep -q Sup3rSecret "$T/err" && fail "${cmd%% *} showed the password: $(cat "$T/err")"
  grep -qF "nosuch://ik:***@db:5432/ids?password=***" "$T/err" ||
    fail "${cmd%% *}: the URI is not shown without its password: $(cat "$T/err")"
done
IDKEEPER_COORD='nosuch://ik:Sup3rSecret@db/ids' "$IK_BIN" serve >"$T/out" 2>"$T/err" && fail "serve on an unknown scheme started"
grep -q Sup3rSecret "$T/err" && fail "serve showed the password: $(cat "$T/err")"
grep -qF "nosuch://ik:***@db/ids" "$T/err" || fail "serve: the URI is not shown without its password: $(cat "$T/err")"
pass "the store's password: from its file, never shown"

# ---- decode ---------------------------------------------------------------------
# The default layout: 41 bits of ms from 1288834974657 run out 2^41 ms later.
end_ms=$((1288834974657 + (1 << 41)))
end_iso=$(date -u -d "@$((end_ms / 1000))" +%Y-%m-%dT%H:%M:%S).$(printf '%03d' $((end_ms % 1000)))Z
"$IK_BIN" decode --expiry >"$T/exp" || fail "decode --expiry failed"
grep -q "expires=$end_iso expires_ms=$end_ms " "$T/exp" || fail "decode --expiry: $(cat "$T/exp"), want $end_iso"
grep -q "expires=2080-07-10T" "$T/exp" || fail "the default layout should run out on 2080-07-10: $(cat "$T/exp")"
"$IK_BIN" decode >"$T/exp2" && cmp -s "$T/exp" "$T/exp2" || fail "decode without IDs should print the expiry"
"$IK_BIN" decode --expiry --json | jq -e ".expires_ms == $end_ms" >/dev/null || fail "decode --expiry --json"
# 10 ms ticks last ten times longer
"$IK_BIN" decode --expiry --layout unit=10ms | grepq 'expires=2707-' || fail "unit=10ms expiry: $("$IK_BIN" decode --expiry --layout unit=10ms)"

# A composed ID: tick 426767463562 (2024-05-13T12:13:58.219Z), worker 3, sequence 5.
id=$(( (426767463562 << 22) | (3 << 12) | 5 ))
out=$("$IK_BIN" decode "$id")
[ "$out" = "id=$id time=2024-05-13T12:13:58.219Z time_ms=1715602438219 worker=3 sequence=5" ] ||
  fail "decode $id: $out"
"$IK_BIN" decode --json "$id" "$id" | jq -se "length == 2 and .[0].id == \"$id\" and .[0].worker == 3 and .[0].sequence == 5 and .[0].time_ms == 1715602438219" >/dev/null ||
  fail "decode --json: $("$IK_BIN" decode --json "$id")"
printf '%s\n\n%s\n' "$id" "$id" | "$IK_BIN" decode - | grep -c "worker=3" | grepq -x 2 || fail "decode - (stdin)"
# another layout, from the environment
lid=$(( (1000 << 24) | (7 << 16) | 9 ))
IDKEEPER_LAYOUT=bits=39/8/16,epoch=1600000000000 "$IK_BIN" decode "$lid" |
  grep -q "time_ms=1600000001000 worker=7 sequence=9" || fail "decode with IDKEEPER_LAYOUT"
expect_fail 1 "'12ab' is not an ID" "$IK_BIN" decode "$id" 12ab
expect_fail 1 "is not an ID" "$IK_BIN" decode -- -5
expect_fail 1 "is not an ID" "$IK_BIN" decode 9223372036854775808
pass "decode and expiry"

# ---- version ----------------------------------------------------------------------
"$IK_BIN" version >"$T/v" || fail "version failed"
for lib in idkeeper libidkeeper libuv sqlite http_parser; do
  grep -q "^$lib [0-9(]" "$T/v" || fail "version lacks $lib: $(cat "$T/v")"
done
# the backends of the build (t_man holds them to the man pages and serve --help)
grep -qx "backend local:DIR" "$T/v" || fail "version lists no local: backend: $(cat "$T/v")"
grep -q "^libuv $(pkg-config --modversion libuv 2>/dev/null || echo)" "$T/v" || fail "libuv version: $(cat "$T/v")"
"$IK_BIN" --version | cmp -s - "$T/v" || fail "--version differs from version"
pass "version"

# ---- next without a server ----------------------------------------------------------
port=$(free_port)
expect_fail 1 "cannot connect to 127.0.0.1:$port" "$IK_BIN" next --server "http://127.0.0.1:$port"
pass "next without a server"
