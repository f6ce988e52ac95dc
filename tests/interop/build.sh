# build.sh: builds the interop helpers at test time (sourced, bash; after lib.sh).
# Each is built once per build directory, in $INTEROP_OUT (IK_BUILD/interop), under a
# lock (the tests that need one run side by side), and again only when a source, or
# the libidkeeper.a it links, is newer than it.
#
#   interop_build_c          $INTEROP_OUT/ik_interop, from tests/interop/ik_interop.c
#                            against the build's libidkeeper.a (IK_BUILD), with its
#                            sanitizers
#   interop_build_java       CuratorHelper, with javac against Debian's Curator and
#                            ZooKeeper jars (CURATOR_CP), into $INTEROP_OUT/classes
#   interop_javac NAME CP    tests/interop/NAME.java, with javac on the class path CP,
#                            into $INTEROP_OUT/classes
#   "${IK_INTEROP[@]}" ARGS...   runs the C helper
#   "${CURATOR[@]}" ARGS...      runs the Java helper (quiet logging)
#   "${KAZOO[@]}" ARGS...        runs the Python helper with /usr/bin/python3
# (arrays, not functions: "$!" of a background function is a subshell, and a
# kill -9 must reach the helper itself)
#   interop_check_intervals FILE...  the "X ENTER EXIT ..." intervals of all the
#                            files never overlap; prints how many, how often the
#                            holder's kind (X) changed from one to the next (proof
#                            that they contended) and the closest hand-over
CURATOR_CP=/usr/share/java/curator-recipes.jar:/usr/share/java/curator-framework.jar:/usr/share/java/curator-client.jar:/usr/share/java/zookeeper.jar:/usr/share/java/zookeeper-jute.jar:/usr/share/java/guava.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar
INTEROP_SRC=${IK_SRC}/tests/interop

INTEROP_BUILD=${IK_BUILD:-$(dirname "$IK_BIN")}
INTEROP_OUT=$INTEROP_BUILD/interop

# _interop_build TARGET SOURCE... -- CMD...: unless TARGET is newer than every SOURCE,
# runs CMD (which makes TARGET), under the lock of INTEROP_OUT; false if CMD fails
_interop_build() {
  local target=$1 src=() lk rc=0 s
  shift
  while [ "$1" != -- ]; do src+=("$1") && shift; done
  shift
  mkdir -p "$INTEROP_OUT/classes"
  exec {lk}>"$INTEROP_OUT/.lock"
  flock "$lk"
  for s in "${src[@]}"; do
    if ! [ "$target" -nt "$s" ]; then
      "$@" || rc=$?
      break
    fi
  done
  exec {lk}>&-
  return "$rc"
}

interop_build_c() {
  [ -f "$INTEROP_BUILD/libidkeeper.a" ] || fail "no $INTEROP_BUILD/libidkeeper.a (IK_BUILD)"
  _interop_build "$INTEROP_OUT/ik_interop" "$INTEROP_SRC/ik_interop.c" "$INTEROP_BUILD/libidkeeper.a" -- \
    _interop_cc || fail "cannot build ik_interop (see $T/cc.log)"
}

# _interop_cc: compiles ik_interop with the build's sanitizers into this test's T, then
# moves it into place (a test that runs the helper meanwhile runs a whole one)
_interop_cc() {
  local san deps
  san=$(sed -n 's/^IK_SANITIZE:STRING=//p' "$INTEROP_BUILD/CMakeCache.txt" 2>/dev/null)
  # what libidkeeper.a needs, as the build's own idkeeper.pc says (its backends vary
  # with the build: hiredis, libpq, libmariadb...), less -L/-lidkeeper: the .a is named
  deps=$(PKG_CONFIG_PATH=$INTEROP_BUILD pkg-config --static --libs idkeeper) ||
    fail "pkg-config cannot read $INTEROP_BUILD/idkeeper.pc"
  deps=$(sed -e 's/-L[^ ]*//g' -e 's/-lidkeeper\b//g' <<<"$deps")
  # shellcheck disable=SC2086 # the linker's words
  cc -std=c11 -D_GNU_SOURCE -O2 -g ${san:+-fsanitize=$san -fno-omit-frame-pointer} \
    -I"$IK_SRC/include" "$INTEROP_SRC/ik_interop.c" "$INTEROP_BUILD/libidkeeper.a" $deps \
    -o "$T/ik_interop" 2>"$T/cc.log" && mv -f "$T/ik_interop" "$INTEROP_OUT/ik_interop"
}

# interop_javac NAME CP: tests/interop/NAME.java into $INTEROP_OUT/classes
interop_javac() {
  local j
  for j in ${2//:/ }; do
    [ -r "$j" ] || fail "missing $j (scripts/install-deps.sh test)"
  done
  command -v javac >/dev/null || fail "no javac (apt-get install default-jdk-headless)"
  _interop_build "$INTEROP_OUT/classes/$1.class" "$INTEROP_SRC/$1.java" -- \
    javac -nowarn -d "$INTEROP_OUT/classes" -cp "$2" "$INTEROP_SRC/$1.java" 2>"$T/javac.log" ||
    fail "javac $1.java failed: $(cat "$T/javac.log")"
}

interop_build_java() { interop_javac CuratorHelper "$CURATOR_CP"; }

IK_INTEROP=("$INTEROP_OUT/ik_interop")
CURATOR=(java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$INTEROP_OUT/classes:$CURATOR_CP"
  CuratorHelper)
KAZOO=(/usr/bin/python3 "$INTEROP_SRC/kazoo_helper.py")
/usr/bin/python3 -c 'import kazoo' 2>/dev/null || fail "no kazoo (apt-get install python3-kazoo)"

interop_check_intervals() {
  /usr/bin/python3 - "$@" <<'PY'
import sys
iv = []
for f in sys.argv[1:]:
    for line in open(f):
        p = line.split()
        if len(p) >= 3:
            iv.append((int(p[1]), int(p[2]), p[0]))
iv.sort()
bad = [(a, b) for a, b in zip(iv, iv[1:]) if b[0] < a[1]]
gap = min((b[0] - a[1] for a, b in zip(iv, iv[1:])), default=0)
who = {}
for _, _, w in iv:
    who[w] = who.get(w, 0) + 1
switches = sum(1 for a, b in zip(iv, iv[1:]) if a[2] != b[2])
print("%d intervals (%s), %d overlaps, %d switches between kinds, closest hand-over %.3f ms" % (
    len(iv), " ".join("%s=%d" % kv for kv in sorted(who.items())), len(bad), switches, gap / 1e6))
if bad:
    a, b = bad[0]
    print("first overlap: %s [%d, %d] and %s [%d, %d]" % (a[2], a[0], a[1], b[2], b[0], b[1]))
    sys.exit(1)
PY
}
