#!/usr/bin/env bash
# Installs what idkeeper needs from Debian's packages, and nothing else. Idempotent:
# it only calls apt-get when a package is missing. Used by `make run` and `make test`.
#   scripts/install-deps.sh build   what building and running the daemon needs
#   scripts/install-deps.sh deb     that, plus what `make deb` needs
#   scripts/install-deps.sh test    all of it, plus what the test suite and benchmarks need
set -euo pipefail

build_pkgs=(
  build-essential cmake pkg-config
  libuv1-dev          # event loop of the daemon
  libhttp-parser-dev  # HTTP/1.1 request parsing
  libinih-dev         # config file (INI)
  libsqlite3-dev      # durable counters on local:
  libzookeeper-mt-dev # ZooKeeper C client for zk://
  libssl-dev          # libcrypto's SHA-1 for ZooKeeper digest ACLs
  libsystemd-dev      # sd_notify: ready only once the worker slot is held
  scdoc               # the man pages
)
deb_pkgs=(
  debhelper dpkg-dev fakeroot # dpkg-buildpackage with dh (make deb)
  lintian             # make deb checks the packages
  libcmocka-dev       # the unit tests debian/rules runs (unless nocheck)
)
test_pkgs=(
  libcmocka-dev       # unit test framework
  clang libclang-rt-14-dev # libFuzzer and sanitizers
  zookeeper default-jre-headless # a real ZooKeeper server for the tests
  faketime libfaketime # clock steps on real processes
  curl jq bc procps psmisc iproute2
  python3-kazoo       # kazoo interop helper
  libcurator-recipes-java libcurator-framework-java # Curator interop helper
  wrk nginx-light hyperfine # benchmarks and their peer
  man-db systemd python3 # t_packaging, t_man: man -l, systemd-analyze, a notify socket
)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  deb) want+=("${deb_pkgs[@]}") ;;
  test) want+=("${deb_pkgs[@]}" "${test_pkgs[@]}") ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
