#!/usr/bin/env bash
# labels: counters
# timeout.local: 180
# timeout.zk: 180
# fixtures.zk: zk
# A restarted server never hands out an ID at or below one handed out before the
# restart (docs/guarantees.md promises 3, 4), for segment and sequence tags on local: or zk://
# (IK_STORE), after kill -9 and after SIGTERM, with a second server serving the same
# tags meanwhile. Segment: the rest of the block in memory is lost; the first block
# after the restart is a fresh advance of the store (on zk://, version-checked).
# Sequence: the server holds no state; every range is a fresh advance. On zk://,
# after kill -9 the old ZooKeeper session outlives the process (4 s): the restarted
# server works on a new one, since nothing of a tag depends on a session.
source "$(dirname "$0")/../integration/lib.sh"
source "$(dirname "$0")/conf.sh"
conf_store_start
conf_counters
source "$IK_SRC/tests/tools/counters.sh"

fleet 2
add_tag s1 seg segment ',"start":100,"step":1000'
add_tag s1 seq sequence ',"start":7'

# get SERVER OUT: 50 segment IDs (Leaf route and /v1) and 50 sequence IDs of SERVER.
get() {
  local u
  u=$(url "$1")
  for _ in $(seq 10); do http_get "$u/api/segment/get/seg"; echo; done >>"$2.seg"
  http_get "$u/v1/segment/seg?count=40&format=text" >>"$2.seg"
  http_get "$u/v1/sequence/seq?count=25&format=text" >>"$2.seq"
  curl -fsS -H 'Accept: text/plain' "$u/v1/sequence/seq?count=25" >>"$2.seq"
}

for how in KILL TERM; do
  rm -f "$T"/before.* "$T"/after.*
  get s1 "$T/before"
  get s2 "$T/before"
  get s1 "$T/before"
  if [ $how = KILL ]; then
    kill -KILL "${SERVER_PID[s1]}"
    wait "${SERVER_PID[s1]}" 2>/dev/null || true
  else
    stop_clean s1
  fi
  restart_server s1
  get s1 "$T/after"
  for kind in seg seq; do
    "${IDCHECK[@]}" above "$T/before.$kind" "$T/after.$kind" >"$T/check" ||
      fail "$kind after SIG$how: an ID at or below one handed out before"
    "${IDCHECK[@]}" unique "$T/before.$kind" "$T/after.$kind" >/dev/null || fail "$kind: duplicate"
    "${IDCHECK[@]}" increasing "$T/after.$kind" >/dev/null || fail "$kind: not increasing"
    pass "$kind after SIG$how and restart: $(cat "$T/check")"
  done
done

for s in s1 s2; do stop_clean $s; done
pass "clean exits"
