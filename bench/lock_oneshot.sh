#!/usr/bin/env bash
# lock_oneshot.sh [BUILD_DIR]: `idkeeper lock --coord URI /x -- true` as a whole
# command (a process per job: a cron line, a deploy step), next to its peers on the
# same stores in the same run, with hyperfine (`make deps-bench`):
#   - etcd (Debian's etcd 3.4, one member of its own on loopback, its WAL fsynced on
#     every write): idkeeper against `etcdctl lock /y true` (etcd-client, the Go
#     client's concurrency.Mutex) on the same member;
#   - ZooKeeper (Debian's 3.8, standalone, forceSync=yes, full JIT): idkeeper
#     against the reference builds in REFS.
# Both servers are pinned to SERVER_CPU (0) and hyperfine, with the commands it runs,
# to LOAD_CPU (1), as the figures of docs/BENCHMARKS.md's one-shot section were
# taken. ROUNDS rounds (3), each one hyperfine run per store with every command of
# that store in a row (idkeeper, peer, references, ...), so that the machine's load
# falls on all of them alike; each round starts with the load average.
# Settings: RUNS_ETCD (20), RUNS_ZK (40), WARMUP (3), ROUNDS (3),
# REFS ("NAME=BINARY ...": other idkeeper builds to run beside this one, e.g.
# "main=/tmp/main/build/idkeeper 0.4.0=/tmp/v040/build/idkeeper"; a build without
# etcd:// is run on zk:// only), CONTAIN (the --contain given to every idkeeper:
# default none given, i.e. auto).
set -euo pipefail
source "$(dirname "$0")/test_libs.sh" # here, build, IK_BIN; the tests' lib.sh and etcd.sh
export ZK_JAVA_OPTS="" ZK_FORCE_SYNC=yes
source "$here/../tests/integration/zk.sh"
RUNS_ETCD=${RUNS_ETCD:-20}
RUNS_ZK=${RUNS_ZK:-40}
WARMUP=${WARMUP:-3}
ROUNDS=${ROUNDS:-3}
scpu=${SERVER_CPU:-0}
lcpu=${LOAD_CPU:-1}
command -v hyperfine >/dev/null || fail "no hyperfine (make deps-bench)"

etcd_own one
ETCD_PORT=${ETCD_PORT_OF[one]}
zk_start_standalone
taskset -a -cp "$scpu" "${ETCD_PID_OF[one]}" >/dev/null
taskset -a -cp "$scpu" "${ZK_PID[1]}" >/dev/null
E="etcd://127.0.0.1:$ETCD_PORT"
Z=$(zk_uri bench)
contain=()
[ -n "${CONTAIN:-}" ] && contain=(--contain "$CONTAIN")

# the builds: this one, then REFS; a build that has no etcd:// is left out of etcd's
names=(idkeeper) bins=("$IK_BIN")
for r in ${REFS:-}; do
  names+=("${r%%=*}")
  bins+=("${r#*=}")
done
has_etcd() { "$1" lock --coord "$E" /probe -- true >/dev/null 2>&1; }

# one hyperfine run of NAME=COMMAND pairs: prints "NAME median mean min max cpu" (ms;
# cpu: the mean of user + system time of the command and its children, which the
# machine's load does not inflate as it does the wall-clock figures)
hf() { # RUNS NAME CMD [NAME CMD ...]
  local runs=$1
  shift
  local args=() labels=()
  while (($#)); do
    labels+=("$1")
    args+=(-n "$1" "$2")
    shift 2
  done
  taskset -c "$lcpu" hyperfine -N -w "$WARMUP" -r "$runs" --export-json "$T/hf.json" "${args[@]}" >/dev/null 2>"$T/hf.err" ||
    { cat "$T/hf.err" >&2; fail "hyperfine failed"; }
  /usr/bin/python3 - "$T/hf.json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    ms = lambda v: "%.1f" % (v * 1000)
    print(r["command"], ms(r["median"]), ms(r["mean"]), ms(r["min"]), ms(r["max"]),
          ms(r["user"] + r["system"]))
PY
}

ec=(env ETCDCTL_API=3 etcdctl --endpoints="127.0.0.1:$ETCD_PORT" lock /y true)
echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p') one member and ZooKeeper $(zk_4lw 1 srvr | sed -n 's/^Zookeeper version: \([^-,]*\).*/\1/p') standalone (forceSync=yes) on loopback, pinned to CPU $scpu; hyperfine and the commands on CPU $lcpu; $(nproc) cores"
echo "builds: $(for i in "${!names[@]}"; do printf '%s=%s ' "${names[$i]}" "${bins[$i]}"; done)${contain[*]:+; ${contain[*]}}"
echo "figures: median, mean, min, max in ms of hyperfine's runs; cpu: mean user + system ms"
for ((round = 1; round <= ROUNDS; round++)); do
  echo "## round $round, load $(cut -d' ' -f1-3 /proc/loadavg)"
  pairs=()
  for i in "${!names[@]}"; do
    has_etcd "${bins[$i]}" || continue
    pairs+=("${names[$i]}-etcd" "${bins[$i]} lock ${contain[*]} --coord $E /x -- true")
    ((i == 0)) && pairs+=(etcdctl "${ec[*]}")
  done
  hf "$RUNS_ETCD" "${pairs[@]}" | sed 's/^/etcd  /'
  pairs=()
  for i in "${!names[@]}"; do
    pairs+=("${names[$i]}-zk" "${bins[$i]} lock ${contain[*]} --coord $Z /x -- true")
  done
  hf "$RUNS_ZK" "${pairs[@]}" | sed 's/^/zk    /'
done
