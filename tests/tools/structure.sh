#!/usr/bin/env bash
# structure.sh BUILD_DIR: the tree's shape rules (issue 11, STYLE.md), checked on the
# build (test "structure" in make test):
#   1. no call cycle, of any length, among the object files of src/lib, nor among
#      those of src/server (tests/tools/callcycles.py: each object's undefined symbols
#      against the others' defined ones). Only the objects of the sources in the tree
#      now count, never a stale one left in the build directory by a removed file.
#   2. no file in src/lib over 1,100 lines.
#   3. http_parser named only in src/server/reqparse.* among the daemon's and the
#      library's files (one file to touch for the daemon's move to llhttp; the CLI's
#      HTTP client, src/cli/httpc.c, parses answers with it on its own).
# Prints every finding and exits 1 if there is one.
set -uo pipefail
build=$(cd "${1:?usage: structure.sh BUILD_DIR}" && pwd)
src=${IK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ik-structure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bad=0
no() { echo "structure: FAIL: $*" >&2; bad=1; }

# layer NAME SRCDIR OBJDIR: links the objects of SRCDIR's *.c (from OBJDIR) into
# $tmp/NAME for callcycles.py.
layer() {
  local name=$1 sdir=$2 odir=$3 f o
  mkdir -p "$tmp/$name"
  for f in "$sdir"/*.c; do
    o=$odir/$(basename "$f").o
    [ -f "$o" ] || { no "no object $o for $f (build first)"; continue; }
    ln -s "$o" "$tmp/$name/$(basename "$f").o"
  done
}
layer lib "$src/src/lib" "$build/CMakeFiles/ik_obj.dir/src/lib"
layer server "$src/src/server" "$build/CMakeFiles/idkeeper.dir/src/server"
for l in lib server; do
  /usr/bin/python3 "$src/tests/tools/callcycles.py" "$tmp/$l" || no "call cycles among the objects of src/$l (above)"
done

for f in "$src"/src/lib/*; do
  n=$(wc -l <"$f")
  ((n <= 1100)) || no "src/lib/$(basename "$f") has $n lines (at most 1,100)"
done

hits=$(grep -rl 'http_parser' "$src/src/server" "$src/src/lib" | grep -v '/src/server/reqparse\.[ch]$' | sed "s|^$src/||")
[ -z "$hits" ] || no "http_parser named outside src/server/reqparse.*: $(echo $hits)"

((bad == 0)) && echo "structure: no call cycle in src/lib or src/server, no src/lib file over 1,100 lines, http_parser only in reqparse.*"
exit $bad
