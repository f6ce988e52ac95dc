# test_libs.sh: sourced first by the benchmarks that start the test suite's own
# servers (etcd, ZooKeeper: tests/integration/*.sh), with the caller's arguments
# still its own: the build directory is the caller's $1 (default build/), IK_BIN
# that build's daemon unless set, and tests/integration/lib.sh and etcd.sh sourced.
# Sets here (the bench directory), build, IK_BIN, IK_BUILD and IK_SRC.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
IK_BIN=${IK_BIN:-$build/idkeeper}
IK_BUILD=$build
IK_SRC=$(cd "$here/.." && pwd)
export IK_BIN IK_BUILD IK_SRC
# shellcheck source=../tests/integration/lib.sh
source "$here/../tests/integration/lib.sh"
# shellcheck source=../tests/integration/etcd.sh
source "$here/../tests/integration/etcd.sh"
