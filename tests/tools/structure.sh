#!/usr/bin/env bash
# structure.sh BUILD_DIR: the tree's shape rules (docs/architecture.md), checked on the
# build (test "structure" in make test):
#   1. no call cycle, of any length, among the files of src/lib, nor among those of
#      src/server (tests/tools/callcycles.py: each object's undefined symbols against
#      the others' defined ones), and in src/server none of calls and includes of its
#      headers together (a file is its x.c with its x.h: an inline function or a
#      struct in a header ties two files as a call does). src/lib's backend folders
#      still include their top file's header from the files below it (zk/, local/,
#      sql/, redis/: the top file's struct, a back arrow), so its includes are not
#      counted yet. Only the objects of the sources in the tree
#      now count, never a stale one left in the build directory by a removed file.
#   2. no file in src/lib over 1,100 lines.
#   3. http_parser named only in src/server/http/http_framing.* among all the C files
#      of the tree (git's tracked *.c and *.h; outside git, those under src, tests and
#      bench): the daemon, the CLI's HTTP client, the fuzz drivers and the test tools
#      reach the parser through http_framing.h, so a move to llhttp touches one file
#      pair.
#   4. zoo_multi and zoo_amulti called only in src/lib/backends/zk/zk_session.c: every multi of
#      the product goes through ik__zk_multi / ik__zk_amulti, which send none on a
#      handle whose session the client knows is dead (zk_session.c, invariant ZS4:
#      the client library aborts on one). Test tools may call them to show why.
#   5. no "SPEC N" in src/, include/ or tests/: code, messages and tests cite the
#      repository's own docs (docs/guarantees.md's numbered promises, or the
#      subsystem's note), never the contract kept outside the repository.
#   6. the folders of src/lib (docs/architecture.md, "Folders"; tests/tools/folders.py
#      calls): nothing outside backends/ calls into a backend folder but the registry
#      (coord.c), so core/ and counters/ call none; and no calls between backend
#      folders, but into a shared layer built with the caller's (pg/ and mysql/ into
#      sql/).
#   7. the folders of src/server (tests/tools/folders.py server): no call between the
#      front doors' folders (http/, resp/), none into one from the top of src/server
#      but server.c's and loop.c's, every file of a door's folder named for its
#      door, and no file name twice under src/.
#   8. docs/architecture.md's tree names every file under src/ (those of a backend
#      folder in the "Files" tree of the store's note, docs/NAME.md, instead), and
#      every file or folder under src/ they name exists (tests/tools/folders.py tree).
#   9. the docs that restate the code agree with it (tests/tools/docs_code.py): the
#      man page's route list is the HTTP route table; docs/testing.md's table of
#      conformance groups has a row per group, columns only of backends that run the
#      suite (local: and cmake/backends.cmake's, in order), "-" where the column's
#      store skips the group (a "# skips:" line of tests/conformance/stores/
#      SCHEME.sh), and cites current promise numbers of docs/guarantees.md.
#  10. the fate of a write in doubt is decided once, above the seam (docs/architecture.md,
#      "Doubts ⇄ backend"; counters/doubt.c's rule): no file under src/lib/backends
#      names the engine's verdict (ik__doubt_verdict), sets or returns a fate (a fate
#      field, "= IK__DOUBT_..." or "return IK__DOUBT_..."; comparing the engine's
#      answer to one is acting on it), reads a doubt's age (its sent_ns), or keeps a
#      trust horizon (an identifier with TRUST in it ending _MS, _NS or _S); and every
#      #define there of a ring, a kept count, a lane or a doubt names the engine's limit
#      (IK__DOUBT_...), never a number of its own.
#  11. the option parser's fuzz dictionaries (tests/fuzz/cli.dict, config.dict) name
#      every command and every row of the option table (tests/fuzz/dicts_check.py),
#      in each of its forms: a new option is fuzzed by name from the start.
#  12. no function of src/ over 120 lines but a short list of named exceptions, each
#      with its reason (tests/tools/funclen.py): a function follows its state diagram,
#      one function per edge (STYLE.md); an exception no longer over the limit fails
#      too, so the list stays true.
#  13. docs/architecture.md's "Adding a backend" list holds for every backend of the
#      tree (tests/tools/backend_list.py): each file it names is there for local: and
#      each ik_backend() line (its conformance hooks, its note's tree, its section of
#      docs/hazards.md, its URI in README.md, its fixture, its client's Debian package
#      in scripts/install-deps.sh and debian/control), and the list names no file the
#      check cannot hold. That the list is enough is the test structure/backend_add's
#      (tests/tools/backend_add.sh adds clone:, a copy of local:, through it alone).
# Prints every finding and exits 1 if there is one.
set -uo pipefail
build=$(cd "${1:?usage: structure.sh BUILD_DIR}" && pwd)
src=${IK_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ik-structure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bad=0
no() { echo "structure: FAIL: $*" >&2; bad=1; }

# layer NAME OBJDIR FILE...: links the objects of the sources FILE... (paths from
# the top of the tree; their objects in OBJDIR/PATH.o) into $tmp/NAME for
# callcycles.py.
layer() {
  local name=$1 odir=$2 f o
  shift 2
  mkdir -p "$tmp/$name"
  for f in "$@"; do
    o=$odir/$f.o
    [ -f "$o" ] || { no "no object $o for $f (build first)"; continue; }
    ln -s "$o" "$tmp/$name/$(basename "$f").o"
  done
}
# The library's sources this build compiles (CMakeLists.txt writes the list: a
# backend switched off has no objects), and those of the daemon.
[ -r "$build/ik_lib_sources.txt" ] || no "no $build/ik_lib_sources.txt (configure first)"
mapfile -t libsrc < <(grep . "$build/ik_lib_sources.txt" 2>/dev/null)
layer lib "$build/CMakeFiles/ik_obj.dir" "${libsrc[@]}"
layer server "$build/CMakeFiles/idkeeper.dir" $(cd "$src" && find src/server -name '*.c' | sort)
/usr/bin/python3 "$src/tests/tools/callcycles.py" "$tmp/lib" "$tmp/server:$src/src/server" ||
  no "call or include cycles among the files of src/lib or src/server (above)"

while read -r f; do
  n=$(wc -l <"$src/$f")
  ((n <= 1100)) || no "$f has $n lines (at most 1,100)"
done < <(cd "$src" && find src/lib -name '*.[ch]' | sort)

if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  cfiles=$(git -C "$src" ls-files -- '*.c' '*.h')
else
  cfiles=$(cd "$src" && find src tests bench -name '*.[ch]' | sort)
fi
hits=$(cd "$src" && echo "$cfiles" | grep -v '^src/server/http/http_framing\.[ch]$' | xargs -r grep -l 'http_parser' --)
[ -z "$hits" ] || no "http_parser named outside src/server/http/http_framing.* (use http_framing.h's ik__reqp_*, ik__httpresp_*, ik__http_lib_version): $(echo $hits)"

hits=$(cd "$src" && echo "$cfiles" | grep '^src/' | grep -v '^src/lib/backends/zk/zk_session\.c$' | xargs -r grep -lE '\<zoo_a?multi[[:space:]]*\(' --)
[ -z "$hits" ] || no "zoo_multi/zoo_amulti called outside src/lib/backends/zk/zk_session.c (use ik__zk_multi / ik__zk_amulti: invariant ZS4): $(echo $hits)"

hits=$(cd "$src" && grep -rnE 'SPEC [0-9]' src include tests)
[ -z "$hits" ] || no "a citation of the outside contract (cite docs/guarantees.md's promise N or the subsystem's doc instead):
$hits"

hits=$(cd "$src" && grep -rnE 'ik__doubt_verdict|(\.|->)fate\b|\bfate[[:space:]]*=[^=]|[^!=<>]=[[:space:]]*IK__DOUBT_(OPEN|LANDED|NOT_LANDED|UNKNOWN)\b|return[[:space:]]+IK__DOUBT_|(own|carried\[[^]]*\])\.sent_ns\b|\b[A-Z0-9_]*TRUST[A-Z0-9_]*_(MS|NS|S)\b' src/lib/backends)
hits+=$(cd "$src" && grep -rnE '^#define +[A-Z0-9_]*(RING|KEPT|LANE|DOUBT)[A-Z0-9_]*\b' src/lib/backends | grep -v 'IK__DOUBT_')
[ -z "$hits" ] || no "a fate decided, a doubt's age read, a trust horizon kept, or the engine's lane limit restated in a backend (report evidence: backend.h's ik__doubt_evidence; counters/doubt.c decides):
$hits"

/usr/bin/python3 "$src/tests/tools/folders.py" calls "$src" "$build" ||
  no "calls into a backend folder from outside it (above; docs/architecture.md, \"Folders\")"
/usr/bin/python3 "$src/tests/tools/folders.py" server "$src" "$build" ||
  no "the front doors' folders of src/server mixed (above; docs/architecture.md's tree)"
/usr/bin/python3 "$src/tests/tools/folders.py" tree "$src" ||
  no "docs/architecture.md's tree (and the store notes' \"Files\") and src/ disagree (above)"

/usr/bin/python3 "$src/tests/tools/docs_code.py" "$src" ||
  no "docs that restate the code disagree with it (above)"
/usr/bin/python3 "$src/tests/fuzz/dicts_check.py" "$src" ||
  no "the option parser's fuzz dictionaries miss options of the table (above)"
/usr/bin/python3 "$src/tests/tools/funclen.py" "$src" ||
  no "functions over 120 lines outside tests/tools/funclen.py's exceptions (above)"
/usr/bin/python3 "$src/tests/tools/backend_list.py" "$src" ||
  no "docs/architecture.md's Adding a backend list and the backends disagree (above)"

((bad == 0)) && echo "structure: no call cycle in src/lib, none of calls or includes in src/server, no src/lib file over 1,100 lines, no C file but src/server/http/http_framing.* names http_parser, every multi through zk_session.c, no fate decided or trust horizon kept below the seam, the folder rules of src/lib and src/server kept, the trees of docs/architecture.md and the store notes complete, the man page's routes and testing.md's group table current, the fuzz dictionaries naming every option, no function over 120 lines but the named exceptions, the Adding a backend list true of every backend"
exit $bad
