#!/usr/bin/env bash
# Installs what idkeeper needs from Debian's packages, and nothing else. Idempotent:
# it only calls apt-get when a package is missing. Used by `make run` and `make test`.
#   scripts/install-deps.sh build   what building and running the daemon needs
#   scripts/install-deps.sh deb     that, plus what `make deb` needs
#   scripts/install-deps.sh lint    what the format check and the lint need
#   scripts/install-deps.sh check   what building needs, plus the lint's and the unit
#                                   tests' (what `make test` needs before its first
#                                   test: scripts/make-test.sh)
#   scripts/install-deps.sh test    all of it, plus what the test suite needs
#   scripts/install-deps.sh bench   that, plus what the benchmarks need (make bench)
#   scripts/install-deps.sh fetch GROUP
#                                   downloads what GROUP lacks, with what it brings,
#                                   into IK_APT_ARCHIVES and installs nothing; takes
#                                   no lock, so it runs beside another install (make
#                                   test fetches the test packages while the build
#                                   packages install: scripts/make-test.sh)
# IK_APT_ARCHIVES: the directory an install takes its packages from (and downloads
# the rest into) instead of /var/cache/apt/archives.
set -euo pipefail

fetch=
if [ "${1:-}" = fetch ]; then
  fetch=1
  shift
fi

build_pkgs=(
  build-essential cmake pkg-config
  ninja-build         # the build tool under CMake: less CPU than make's recursion
  libuv1-dev          # event loop of the daemon
  libhttp-parser-dev  # HTTP/1.1 request parsing
  libinih-dev         # config file (INI)
  libjansson-dev      # the CLI's JSON
  libsqlite3-dev      # durable counters on local:
  libzookeeper-mt-dev # ZooKeeper C client for zk://
  libpq-dev           # PostgreSQL's libpq for postgresql://
  libhiredis-dev      # Redis C client for redis://
  libcurl4-openssl-dev # HTTP(S) to etcd's v3 JSON gateway for etcd:// (with jansson)
  libmariadb-dev      # MariaDB Connector/C for mysql://
  libssl-dev          # libcrypto's SHA-1 for ZooKeeper digest ACLs
  libsystemd-dev      # sd_notify: ready only once the worker slot is held
  scdoc               # the man pages
)
deb_pkgs=(
  debhelper dpkg-dev fakeroot # dpkg-buildpackage with dh (make deb)
  lintian             # make deb checks the packages
  libcmocka-dev       # the unit tests debian/rules runs (unless nocheck)
)
lint_pkgs=(
  clang-format clang-tidy cppcheck # make format-check, make lint
)
check_pkgs=(
  "${lint_pkgs[@]}"
  libcmocka-dev       # unit test framework
)
test_pkgs=(
  clang libclang-rt-14-dev # libFuzzer and sanitizers
  zookeeper default-jre-headless # a real ZooKeeper server for the tests
  faketime libfaketime # clock steps on real processes
  curl jq bc procps psmisc
  iproute2            # ip netns and veth: a lock holder's host that vanishes (tests/integration/sql_vanish.sh)
  bash-builtins       # bash's own sleep for the wait loops (tests/integration/lib.sh)
  strace              # t_local_sequence_fsync_order: each sequence ID leaves after its commit's fsync
  python3-kazoo       # kazoo interop helper
  libcurator-recipes-java libcurator-framework-java # Curator interop helper
  chromium chromium-driver python3-selenium # the status page's browser tests
  man-db systemd python3 # t_packaging, t_man: man -l, systemd-analyze, a notify socket
  redis-tools python3-redis netcat-openbsd # RESP clients: redis-cli, redis-benchmark, redis-py, nc
  postgresql python3-psycopg2 # postgresql:// tests (tests/fixtures/postgres.sh), Leaf's statements
  pgbouncer           # a pooler in front of PostgreSQL (t_pg_pgbouncer: transaction mode refused, session mode served)
  redis-server        # the RESP benchmark's peer, and the real Redis of the redis:// tests
  mariadb-server python3-pymysql # mysql://: a throwaway MariaDB (tests/fixtures/mariadb.sh), Leaf's statements from Python
  etcd-server etcd-client # etcd://: a throwaway etcd (tests/fixtures/etcd.sh) and etcdctl, for interop
  python3-etcd3       # etcd://: the Python client's lock, a peer of the lock benchmark
  prometheus          # promtool checks the shipped alert rules; a real Prometheus runs them (t_prometheus_alerts)
  spin                # the model of the hold rule (tests/model/hold.pml), checked in make test
  valgrind            # callgrind: the instruction-count guard (tests/integration/t_instructions.sh)
)
bench_pkgs=(
  wrk nginx-light hyperfine # the benchmarks' load and their peer (not the test suite's)
)

want=("${build_pkgs[@]}")
case "${1:-build}" in
  build) ;;
  lint) want=("${lint_pkgs[@]}") ;;
  deb) want+=("${deb_pkgs[@]}") ;;
  check) want+=("${check_pkgs[@]}") ;;
  test | bench)
    want+=("${deb_pkgs[@]}" "${check_pkgs[@]}" "${test_pkgs[@]}")
    [ "$1" = test ] || want+=("${bench_pkgs[@]}")
    ;;
  *) echo "install-deps: unknown group '$1' (build, deb, lint, check, test or bench)" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ -n "$fetch" ]; then
  [ -n "${IK_APT_ARCHIVES:-}" ] || { echo "install-deps: fetch needs IK_APT_ARCHIVES" >&2; exit 2; }
  # Only on package lists updated by this run (IK_APT_STAMP): on older ones it could
  # download versions the install, which updates them first, would not take.
  if [ -n "${IK_APT_STAMP:-}" ] && [ ! -e "$IK_APT_STAMP" ]; then
    echo "install-deps: fetch: the package lists were not updated in this run; nothing fetched" >&2
    exit 0
  fi
  mkdir -p "$IK_APT_ARCHIVES/partial"
  # What an install would unpack, by name and version, from a simulation (no lock,
  # no root); then apt-get download (no lock either) into the archive directory,
  # under the names an install looks for there. Four downloads at once, each a
  # quarter of the packages: apt fetches from one mirror over one connection, and
  # four took the test packages' 194 MB in 8 s here, against 17 s for one.
  mapfile -t debs < <(apt-get -s -q install --no-install-recommends "${missing[@]}" |
    sed -n 's/^Inst \([^ ]*\) \(\[[^]]*\] \)\?(\([^ ]*\) .*/\1=\3/p')
  [ ${#debs[@]} -gt 0 ] || exit 0
  echo "install-deps: fetching ${#debs[@]} packages into $IK_APT_ARCHIVES" >&2
  cd "$IK_APT_ARCHIVES"
  pids=()
  for ((q = 0; q < 4; q++)); do
    part=()
    for ((i = q; i < ${#debs[@]}; i += 4)); do part+=("${debs[i]}"); done
    [ ${#part[@]} -eq 0 ] || { apt-get -qq -o APT::Sandbox::User=root download "${part[@]}" & pids+=($!); }
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  exit $rc
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# Installing a server package (zookeeper, nginx, redis-server, mariadb, postgresql, pgbouncer, prometheus,
# etcd-server)
# must not start the system's own service: the tests start their own, on loopback
# ports with fresh data. Where no policy-rc.d is in place, one that refuses every
# start stands for the length of the install.
policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  policy=/usr/sbin/policy-rc.d
  printf '#!/bin/sh\n# idkeeper install-deps: no service starts during this install\nexit 101\n' |
    $SUDO tee "$policy" >/dev/null
  $SUDO chmod 755 "$policy"
  trap '$SUDO rm -f "$policy"' EXIT
fi
# Another apt-get may hold the lock (an unattended upgrade): wait for it.
apt=($SUDO apt-get -o DPkg::Lock::Timeout=600 -qq)
if [ -n "${IK_APT_ARCHIVES:-}" ]; then
  mkdir -p "$IK_APT_ARCHIVES/partial"
  apt+=(-o "Dir::Cache::Archives=$IK_APT_ARCHIVES/")
fi
# IK_APT_STAMP (scripts/make-test.sh): a file that says the package lists were updated
# moments ago, by an earlier call of the same run; made once they are.
if [ -z "${IK_APT_STAMP:-}" ] || [ ! -e "$IK_APT_STAMP" ]; then
  "${apt[@]}" update
  [ -z "${IK_APT_STAMP:-}" ] || touch "$IK_APT_STAMP"
fi
"${apt[@]}" install -y --no-install-recommends "${missing[@]}" >/dev/null
