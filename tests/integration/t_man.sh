#!/usr/bin/env bash
# labels: docs nosan
# The man pages cannot drift from the code: idkeeper(1) has a section for every
# command of src/cli/commands.h naming every option `idkeeper CMD --help` lists, and
# an entry (with its variable) for every option of the table in src/cli/options.c
# and for every store option of this build (the backends' own, in a section of their
# own that the commands' sections name);
# both name every backend of the registry, as `idkeeper version` and `serve --help` do;
# idkeeper.conf(5) lists every option as a key; both render with `man -l` without a
# warning; and the packaged config file (debian/idkeeper.conf) shows every option of
# serve, commented out, and is a file idkeeper reads.
source "$(dirname "$0")/lib.sh"

command -v man >/dev/null || fail "man missing (apt-get install man-db)"
M=$IK_BUILD/man
[ -f "$M/idkeeper.1" ] && [ -f "$M/idkeeper.conf.5" ] ||
  fail "no man pages in $M: the build did not find scdoc (apt-get install scdoc)"

for page in idkeeper.1 idkeeper.conf.5; do
  w=$(MANWIDTH=80 man --warnings -l "$M/$page" 2>&1 >/dev/null)
  [ -z "$w" ] || fail "man -l $page warns: $w"
done
pass "man -l renders idkeeper(1) and idkeeper.conf(5) without warnings"

# The troff as plain text, one source line per line: font escapes and \- dropped, so
# line breaks and hyphenation of the rendering cannot hide or fake a match.
plain() { sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\(.*//' "$1"; }
plain "$M/idkeeper.1" >"$T/man1.txt"
plain "$M/idkeeper.conf.5" >"$T/man5.txt"

# The backends: both pages and `serve --help` name every backend of this build, as
# the registry lists them (the "backend FORM" lines of `idkeeper version`, from
# src/lib/coord.c; the pages get them at build time, man/backends.cmake).
mapfile -t forms < <("$IK_BIN" version | sed -n 's/^backend //p')
((${#forms[@]} >= 1)) || fail "idkeeper version lists no backend: $("$IK_BIN" version)"
help=$("$IK_BIN" help serve | tr -s ' \n' ' ')
sed 's/\\&//g' "$T/man1.txt" >"$T/man1.bare" # "\&" (scdoc's after a period) dropped
sed 's/\\&//g' "$T/man5.txt" >"$T/man5.bare"
for f in "${forms[@]}"; do
  for page in 1 5; do
    grep -qF -- "$f" "$T/man$page.bare" || fail "the man page ($page) does not name the backend $f"
  done
  grep -qF -- "$f" <<<"$help" || fail "idkeeper help serve does not name the backend $f: $help"
done
pass "idkeeper(1), idkeeper.conf(5) and serve --help name the ${#forms[@]} backends of idkeeper version"

# Every option of the table: an entry "--name ... (IDKEEPER_ID)" in OPTIONS, a key in (5).
n=0
while read -r id name; do
  grep -qE -- "^--$name( |$).*\(IDKEEPER_$id\)" "$T/man1.txt" ||
    fail "idkeeper(1) has no OPTIONS entry '--$name ... (IDKEEPER_$id)' (src/cli/options.c row $id)"
  grep -qx -- "$name" "$T/man5.txt" || fail "idkeeper.conf(5) does not list the key '$name'"
  n=$((n + 1))
done < <(sed -n 's/^ *ROW(\([A-Z_]*\), "\([a-z-]*\)".*/\1 \2/p' "$IK_SRC/src/cli/options.c")
((n >= 30)) || fail "read only $n options from src/cli/options.c: has the table's format changed?"
pass "all $n options of src/cli/options.c are in idkeeper(1) (with their variable) and idkeeper.conf(5)"

# The store options, the backends' own (src/cli/store_flags.c): each of this build's
# has its entry in OPTIONS, "Store options" (man/backends.cmake writes them at build
# time from `idkeeper help store-options`), and its key in (5).
"$IK_BIN" help store-options | sed -n 's/^--\([a-z0-9-]*\) .* (\(IDKEEPER_[A-Z0-9_]*\))$/\1 \2/p' >"$T/store"
[ -s "$T/store" ] || fail "idkeeper help store-options lists no option: $("$IK_BIN" help store-options)"
sed -n '/^\.SS Store options$/,/^\.S[SH] /p' "$T/man1.txt" >"$T/man1.store"
while read -r name var; do
  grep -qE -- "^--$name( |$).*\($var\)" "$T/man1.store" ||
    fail "idkeeper(1), Store options, has no entry '--$name ... ($var)'"
  grep -qx -- "$name" "$T/man5.txt" || fail "idkeeper.conf(5) does not list the store option '$name'"
done <"$T/store"
pass "the $(wc -l <"$T/store") store options of this build are in idkeeper(1) and idkeeper.conf(5)"

# Every command: a section in (1) whose Options line names what the command takes.
cmds=$(sed -n 's/^ *X(\([a-z]*\), IK_OPTS_[A-Z]*).*/\1/p' "$IK_SRC/src/cli/commands.h")
[ "$(wc -w <<<"$cmds")" -ge 9 ] || fail "read only '$cmds' from src/cli/commands.h"
for c in $cmds; do
  grep -qx "\.SS $c" "$T/man1.txt" || fail "idkeeper(1) has no section for the command $c"
  sed -n "/^\.SS $c\$/,/^\.S[SH] /p" "$T/man1.txt" | sed '1d;$d' >"$T/sec.$c"
  opts=$("$IK_BIN" help "$c" | sed -n 's/^  --\([a-z-]*\).*/\1/p' | grep -vx help || true)
  for o in $opts; do
    # a store option is named by "the store options" (their own section)
    grep -q "^$o " "$T/store" && grep -q "the store options" "$T/sec.$c" && continue
    grep -q -- "--$o\b" "$T/sec.$c" || fail "idkeeper(1), section $c, does not name --$o (idkeeper help $c lists it)"
  done
done
pass "idkeeper(1) has a section for each command ($(wc -w <<<"$cmds")), naming the options each takes"

# The packaged config file: every option of serve, commented out with '; ', and valid.
C=$IK_SRC/debian/idkeeper.conf
for o in $("$IK_BIN" help serve | sed -n 's/^  --\([a-z-]*\).*/\1/p' | grep -vxE 'help|config'); do
  grep -q "^$o " "$T/store" && continue # the backends' own: the file points to their list
  grep -qE "^;$o =" "$C" || fail "debian/idkeeper.conf does not show the serve option $o (as ';$o = ...')"
done
grep -q "idkeeper help store-options" "$C" || fail "debian/idkeeper.conf does not say where the store options are listed"
! grep -qE '^[a-z]' "$C" || fail "debian/idkeeper.conf sets a key; it should only show them: $(grep -E '^[a-z]' "$C")"
"$IK_BIN" decode --config "$C" --expiry >/dev/null 2>"$T/err" || fail "idkeeper refuses debian/idkeeper.conf: $(cat "$T/err")"
pass "debian/idkeeper.conf shows every serve option, commented out, and idkeeper reads it"
