#!/usr/bin/env bash
# make-deb.sh [OUT]: builds the Debian packages (idkeeper, libidkeeper1,
# libidkeeper-dev) with dpkg-buildpackage in a copy of the tree under OUT (default
# build-deb/), so the source tree is never written to, then checks them with
# lintian: an error fails, warnings are printed. Used by `make deb` and by
# tests/integration/t_packaging.sh. JOBS (default: nproc) sets the build's parallelism;
# DEB_BUILD_OPTIONS is passed on (nocheck skips the unit tests of debian/rules).
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$src/build-deb}
jobs=${JOBS:-$(nproc)}
version=$(sed -n '1s/^idkeeper (\([^)]*\)).*/\1/p' "$src/debian/changelog")
[ -n "$version" ] || { echo "make-deb: no version in debian/changelog" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
tree="$out/idkeeper-$version"
mkdir -p "$tree"
# The work tree as it is (committed or not), without build directories or ignored files.
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard |
    tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$tree"
else
  (cd "$src" && tar --exclude='./build*' --exclude='./idkeeper-data' -cf - .) | tar -xf - -C "$tree"
fi

echo "make-deb: building idkeeper $version in $tree" >&2
# Not under the calling make's MAKEFLAGS: debhelper reads them as -j1, whatever parallel says.
(cd "$tree" && unset MAKEFLAGS MFLAGS MAKELEVEL && DEB_BUILD_OPTIONS="${DEB_BUILD_OPTIONS:-} parallel=$jobs" \
  dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1 || {
  tail -n 40 "$out/build.log" >&2
  echo "make-deb: dpkg-buildpackage failed; the whole log is $out/build.log" >&2
  exit 1
}
changes=$(ls "$out"/idkeeper_"$version"_*.changes)
echo "make-deb: lintian $changes" >&2
lintian --fail-on error --display-info "$changes" | tee "$out/lintian.log"
ls "$out"/*.deb
