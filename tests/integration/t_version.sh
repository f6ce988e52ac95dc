#!/usr/bin/env bash
# labels: docs
# The version is written once, in include/idkeeper.h (IK_VERSION_MAJOR/MINOR/PATCH);
# everything else must agree with it: `idkeeper version`, ik_version(), the CMake
# project, the .so file name, idkeeper.pc, the man pages, debian/changelog (the
# package's version, which dpkg reads from there and nowhere else) and the top entry
# of NEWS. The soname is the ABI version IK_SOVERSION, written once in CMakeLists.txt;
# the library's SONAME, its file name and the Debian library package agree with it.
source "$(dirname "$0")/lib.sh"

h=$IK_SRC/include/idkeeper.h
v=$(sed -n 's/^#define IK_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$h" | paste -sd.)
[[ "$v" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "no MAJOR.MINOR.PATCH in $h (got '$v')"
minor_patch=${v#*.}
so=$(sed -n 's/^set(IK_SOVERSION \([0-9][0-9]*\))$/\1/p' "$IK_SRC/CMakeLists.txt")
[[ "$so" =~ ^[0-9]+$ ]] || fail "CMakeLists.txt sets no IK_SOVERSION (got '$so')"
log "include/idkeeper.h: $v"
! grep -qE '^#define IK_VERSION_STRING +"' "$h" || fail "$h writes IK_VERSION_STRING as a literal: a second copy"

got=$("$IK_BIN" version | head -n 2 | tr '\n' ' ')
[ "$got" = "idkeeper $v libidkeeper $v " ] || fail "idkeeper version prints '$got'"
[ "$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$IK_BUILD/CMakeCache.txt")" = "$v" ] || fail "CMake's project version differs"
lib=$IK_BUILD/libidkeeper.so.$so.$minor_patch
[ -e "$lib" ] || fail "no $lib: $(ls "$IK_BUILD"/libidkeeper.so*)"
soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = "libidkeeper.so.$so" ] || fail "SONAME $soname, not libidkeeper.so.$so"
pkgs=$(sed -n 's/^Package: \(libidkeeper[0-9][0-9]*\)$/\1/p' "$IK_SRC/debian/control")
[ "$pkgs" = "libidkeeper$so" ] || fail "debian/control's library package is '$pkgs', the soname libidkeeper.so.$so"
grep -q "^Depends: libidkeeper$so (= " "$IK_SRC/debian/control" || fail "libidkeeper-dev does not depend on libidkeeper$so"
inst=$(cd "$IK_SRC/debian" && ls libidkeeper[0-9]*.install)
[ "$inst" = "libidkeeper$so.install" ] || fail "debian/ has '$inst', not libidkeeper$so.install"
grep -qx "Version: $v" "$IK_BUILD/idkeeper.pc" || fail "idkeeper.pc: $(grep '^Version' "$IK_BUILD/idkeeper.pc")"
for m in idkeeper.1 idkeeper.conf.5; do
  [ -f "$IK_BUILD/man/$m" ] || fail "no $IK_BUILD/man/$m (scdoc missing?)"
  grep -q "^\.TH .*\"idkeeper $v\"" "$IK_BUILD/man/$m" || fail "$m: $(grep '^\.TH' "$IK_BUILD/man/$m")"
done
deb=$(sed -n '1s/^idkeeper (\([^)]*\)).*/\1/p' "$IK_SRC/debian/changelog")
[ "${deb%%-*}" = "$v" ] || fail "debian/changelog's top entry is $deb, the header says $v (add a changelog entry: dch -v $v)"
news=$(sed -n '1s/^idkeeper \([0-9.]*\) .*/\1/p' "$IK_SRC/NEWS")
[ "$news" = "$v" ] || fail "NEWS starts with version '$news', the header says $v"
pass "version $v agrees: idkeeper version, ik_version(), CMake, SONAME libidkeeper.so.$so (package libidkeeper$so), idkeeper.pc, man pages, debian/changelog, NEWS"
