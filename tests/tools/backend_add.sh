#!/usr/bin/env bash
# backend_add.sh [SRC]: docs/architecture.md's "Adding a backend" list, tried by
# adding a backend (test "structure/backend_add" in make test). In a scratch copy of
# the tree it adds clone:DIR, a copy of local: under another scheme (its folder
# src/lib/backends/clone/, its symbols and URIs renamed), touching only the files the
# list names for a backend without a client library or a server (NAME, SCHEME:
# clone; no FIXTURE): its ik_backend() line, its conformance hooks (local:'s, with
# local:'s skips), its note (local:'s, its tree renamed), its section of
# docs/hazards.md and its line in README.md. Then:
#   1. the copy's changed files outside the new folder (git status of the scratch
#      tree, printed) are among those the list names, at most 8 with the folder;
#   2. the copy configures and builds with -Werror, with no backend but local: and
#      clone: (IK_BACKENDS_DEFAULT=OFF, the fastest build that has both);
#   3. in that build: structure (the folder rules, the trees of the notes, the docs
#      that restate the code), the registry's unit test (every backend's
#      uri_examples through coord.c), clone: named by `idkeeper version` and
#      `serve --help`, the same conformance groups registered as on local: (its
#      skips come with its store file), and the groups slots_time and cli on it.
# A file the list does not name that a new backend needs (a test's hand-written
# list of the backends, a doc generated from the rows, a group that names a
# store) fails step 1 or step 3. Prints the diff's file list, and every finding.
set -uo pipefail
src=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ik-backend-add.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
bad=0
no() { echo "backend_add: FAIL: $*" >&2; bad=1; }
t=$tmp/tree

# the tree as it is, uncommitted changes included, without build output
mkdir -p "$t"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -co --exclude-standard -z |
    while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
    tar cf - --null -T -) | tar xf - -C "$t"
else
  (cd "$src" && tar cf - --exclude='./build*' .) | tar xf - -C "$t"
fi
cd "$t" || exit 1
if ! { git init -q . && git add -A && git -c user.name=t -c user.email=t@t commit -qm base; }; then
  echo "backend_add: no scratch repository" >&2
  exit 1
fi

# --- the backend: its folder -------------------------------------------------
# "clone" is as long as "local", so the URI code's lengths stay right.
mkdir src/lib/backends/clone
for f in src/lib/backends/local/*; do
  b=$(basename "$f")
  sed -e 's/ik__backend_local_/ik__backend_clone_/g; s/ik__recipe_local_/ik__recipe_clone_/g' \
    -e 's/ik__local_/ik__clone_/g; s/backend_local/backend_clone/g; s/recipe_local/recipe_clone/g' \
    -e 's/BACKEND_LOCAL_/BACKEND_CLONE_/g; s/"local:/"clone:/g; s/"local"/"clone"/g' \
    -e 's/a local URI/a clone URI/g' \
    "$f" >"src/lib/backends/clone/${b/local/clone}"
done
# --- outside it: the list's files, in its order --------------------------------
# 1. cmake/backends.cmake: one line
sed -i 's/^ik_backends_done()$/ik_backend(CLONE SCHEME clone TITLE Clone DIRS clone)\n&/' cmake/backends.cmake
# 2. its conformance hooks, with local:'s skips
sed -e 's/local:/clone:/g; s|stores/local.sh|stores/clone.sh|' tests/conformance/stores/local.sh \
  >tests/conformance/stores/clone.sh
# 3. its note, with the tree of its folder
sed -e 's|src/lib/backends/local/  local:DIR|src/lib/backends/clone/  clone:DIR|' \
  -e 's/backend_local/backend_clone/g; s/recipe_local/recipe_clone/g' docs/local.md >docs/clone.md
# 4. its section of docs/hazards.md
printf '\n## clone: (local:, under another scheme)\n\nAs local: (above).\n' >>docs/hazards.md
# 5. its line in README.md's first list
sed -i '0,/(`local:DIR`)/s//(`local:DIR`, or its clone, `clone:DIR`, docs\/clone.md)/' README.md

# --- 1. the files touched ---------------------------------------------------------
touched=$(git status --porcelain --untracked-files=all | cut -c4- | sort)
outside=$(echo "$touched" | grep -v '^src/lib/backends/clone/')
echo "backend_add: the diff's files:"
echo "$touched" | sed 's/^/  /'
# the list's files: the bold paths of its numbered items, NAME, SCHEME and FIXTURE
# filled in (no FIXTURE: clone: has no server)
listed=$(sed -n '/^## Adding a backend$/,/^## /p' "$src/docs/architecture.md" |
  sed -n '/^Outside it/,/^Nothing else/p' | grep -o '\*\*`[^`]*`\*\*' | tr -d '*`' |
  sed 's/NAME/clone/; s/SCHEME/clone/' | sort -u)
[ -n "$listed" ] || no "no numbered list of files under \"Adding a backend\" in docs/architecture.md"
while read -r f; do
  [ -n "$f" ] || continue
  echo "$listed" | grep -qxF "$f" ||
    no "adding clone: touched $f, which docs/architecture.md's \"Adding a backend\" list does not name"
done <<<"$outside"
n=$(($(echo "$outside" | grep -c .) + 1))
echo "backend_add: $n files with the folder (at most 8): $(echo $outside) src/lib/backends/clone/"
((n <= 8)) || no "adding clone: touched $n files with its folder, more than 8"

# --- 2. the build ----------------------------------------------------------------------
b=$t/build
if ! cmake -S "$t" -B "$b" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIK_WERROR=ON \
  -DIK_BACKENDS_DEFAULT=OFF -DIK_WITH_CLONE=ON >"$tmp/cmake.log" 2>&1; then
  tail -30 "$tmp/cmake.log" >&2
  no "the tree with clone: does not configure"
elif ! cmake --build "$b" -j"$(nproc)" --target idkeeper test_coord_registry \
  >"$tmp/build.log" 2>&1; then
  grep -E 'error|warning' "$tmp/build.log" | head -30 >&2
  no "the tree with clone: does not build with -Werror"
else
  # --- 3. its tests ----------------------------------------------------------------
  IK_SRC=$t bash "$t/tests/tools/structure.sh" "$b" >"$tmp/structure.log" 2>&1 || {
    cat "$tmp/structure.log" >&2
    no "structure fails on the tree with clone:"
  }
  "$b/tests/test_coord_registry" >"$tmp/registry.log" 2>&1 || {
    tail -20 "$tmp/registry.log" >&2
    no "test_coord_registry fails with clone:"
  }
  # the whole output first: grep -q leaves early, and a SIGPIPE would fail the pipe
  out=$("$b/idkeeper" version 2>&1)
  grep -q 'clone:' <<<"$out" || no "idkeeper version does not name clone: ($(echo $out))"
  out=$("$b/idkeeper" serve --help 2>&1)
  grep -q 'clone:' <<<"$out" || no "serve --help does not name clone: (the rows' lists)"
  # its groups are local:'s, skips included: the store file carries them
  groups() { (cd "$b" && ctest -N -R "^conformance/.*\\.$1\$" | sed -n "s|.*conformance/\\(.*\\)\\.$1\$|\\1|p"); }
  [ "$(groups clone)" = "$(groups local)" ] && [ -n "$(groups clone)" ] ||
    no "clone: registers the conformance groups $(echo $(groups clone)), local: $(echo $(groups local))"
  (cd "$b" && ctest -R '^conformance/(slots_time|cli)\.clone$' --output-on-failure \
    >"$tmp/conf.log" 2>&1) || {
    tail -40 "$tmp/conf.log" >&2
    no "the conformance groups slots_time and cli fail on clone:"
  }
  grep -q 'conformance/cli.clone .*Passed' "$tmp/conf.log" &&
    grep -q 'conformance/slots_time.clone .*Passed' "$tmp/conf.log" ||
    no "the conformance groups slots_time and cli did not both run and pass on clone:"
fi
((bad == 0)) && echo "backend_add: clone: added with the $n files of docs/architecture.md's list; it builds with -Werror, its conformance groups are local:'s, and structure, the registry's test and the groups slots_time and cli pass on it"
exit $bad
