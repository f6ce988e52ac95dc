#!/usr/bin/env bash
# labels: nosan
# resource_lock: compile
# idkeeper.pc, installed (cmake --install into a scratch DESTDIR), is enough to build
# a program against libidkeeper both ways: shared (pkg-config --libs) and static
# (pkg-config --static --libs, against a tree that has only libidkeeper.a, so the link
# needs exactly the private dependencies the .pc names: Requires.private for the
# modules that ship a .pc, Libs.private for zookeeper_mt, which does not).
# (nosan: a sanitizer build's library would need the sanitizer's flags to link.)
source "$(dirname "$0")/lib.sh"

command -v pkg-config >/dev/null || fail "pkg-config missing"
D=$T/dest
DESTDIR=$D cmake --install "$IK_BUILD" >"$T/install.log" 2>&1 || fail "cmake --install: $(tail "$T/install.log")"
pc=$(find "$D" -name idkeeper.pc | head -n 1)
[ -n "$pc" ] || fail "no idkeeper.pc installed"
! grep -qE '^Libs\.private:.*-l(sqlite3|crypto)\b' "$pc" || fail "idkeeper.pc hard-codes -l flags for modules that have a .pc: $(grep private "$pc")"
grep -qE '^Requires\.private:.*\bsqlite3\b' "$pc" || fail "idkeeper.pc does not require sqlite3 privately: $(grep private "$pc")"
pcdir=$(dirname "$pc")
libdir=$(dirname "$pcdir")

cat >"$T/hello.c" <<'C'
#include <idkeeper.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    char why[256];
    ik_coord_options o;
    ik_coord *c = NULL;
    ik_coord_options_init(&o);
    if (argc < 2 || ik_coord_open(argv[1], &o, &c, why, sizeof why) != 0) return 1;
    ik_coord_close(c);
    printf("%s\n", ik_version());
    return strcmp(ik_version(), IK_VERSION_STRING) != 0;
}
C
pkc() { PKG_CONFIG_SYSROOT_DIR=$1 PKG_CONFIG_PATH=$2 pkg-config "${@:3}"; }

# shellcheck disable=SC2046 # lists of flags
cc -o "$T/hello-shared" "$T/hello.c" $(pkc "$D" "$pcdir" --cflags --libs idkeeper) 2>"$T/cc.err" ||
  fail "shared build: $(cat "$T/cc.err")"
LD_LIBRARY_PATH=$libdir "$T/hello-shared" "local:$T/d1" >"$T/out" || fail "hello-shared failed"
LD_LIBRARY_PATH=$libdir ldd "$T/hello-shared" | grepq "$libdir/libidkeeper.so" || fail "hello-shared does not use the installed .so"

S=$T/static
rel=${libdir#"$D"}
mkdir -p "$S$rel/pkgconfig" "$S$(dirname "$(dirname "$rel")")/include"
inc=$(find "$D" -name idkeeper.h | head -n 1)
cp "$inc" "$S${inc#"$D"}" 2>/dev/null || { mkdir -p "$(dirname "$S${inc#"$D"}")"; cp "$inc" "$S${inc#"$D"}"; }
cp "$libdir/libidkeeper.a" "$S$rel/"
cp "$pc" "$S$rel/pkgconfig/"
# shellcheck disable=SC2046
cc -o "$T/hello-static" "$T/hello.c" $(pkc "$S" "$S$rel/pkgconfig" --static --cflags --libs idkeeper) 2>"$T/cc.err" ||
  fail "static build ($(pkc "$S" "$S$rel/pkgconfig" --static --libs idkeeper)): $(cat "$T/cc.err")"
"$T/hello-static" "local:$T/d2" >"$T/out" || fail "hello-static failed"
! ldd "$T/hello-static" | grepq libidkeeper || fail "hello-static links libidkeeper.so"
# Without --static the same static link fails: the private dependencies are needed.
# shellcheck disable=SC2046
if cc -o "$T/hello-nostatic" "$T/hello.c" $(pkc "$S" "$S$rel/pkgconfig" --cflags --libs idkeeper) 2>/dev/null; then
  fail "a static link without --static succeeded: the test proves nothing about the private dependencies"
fi
pass "a program builds and runs against the installed idkeeper.pc, shared and static ($(pkc "$S" "$S$rel/pkgconfig" --static --libs idkeeper))"
