#!/usr/bin/env bash
# labels: resp counters local
# timeout: 180
# A sequence ID reaches its client only after the batch that recorded it was
# fsynced (docs/guarantees.md promise 4, docs/sequence.md "Group commit"), seen
# from outside the process: the daemon runs under `strace -f`, pipelining clients
# draw sequence IDs through the RESP door (where answers of a batch are written
# together at the end of the loop's turn), and the trace is read in its own order:
#   - each commit line (--log-sequence-commits: one a request, written by the
#     committer once the store acknowledged its batch's advance) comes after an
#     fdatasync (or fsync) of SQLite's write-ahead log that returned after the last
#     write to that log;
#   - every ID written to a client socket lies in a range whose commit line came
#     before that write started.
# The checker is also given the trace with its log syncs removed, and with its
# commit lines removed, and must refuse both: a checker that cannot fail proves
# nothing.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/resp.sh"
command -v strace >/dev/null || fail "strace missing: run scripts/install-deps.sh test"

coord=(--coord "local:$T/data")
"$IK_BIN" tags add q --kind sequence "${coord[@]}" >/dev/null
real=$IK_BIN
cat >"$T/traced" <<EOF
#!/bin/sh
ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" exec strace -f -qq -s 4096 -o "$T/trace" -e trace=openat,pwrite64,write,writev,fdatasync,fsync,close -- "$real" "\$@"
EOF
chmod +x "$T/traced"
IK_BIN=$T/traced
resp_serve a "${coord[@]}" --threads 1 --log-sequence-commits || fail "server did not start: $(tail -n 5 "$T/a.log")"
IK_BIN=$real
# strace killed by the cleanup would leave its tracee running: stop that too
traced_stop() { pkill -KILL -P "${SERVER_PID[a]}" -x idkeeper 2>/dev/null || true; }
IK_CLEANUPS+=(traced_stop)

# 4 clients, 8 commands pipelined each: batches of many requests
redis-benchmark -p "$RPORT" -c 4 -P 8 -n 4000 -q INCR q >"$T/bench.out" 2>&1 || fail "redis-benchmark: $(cat "$T/bench.out")"
[ "$(rcli INCR q)" = 4001 ] || fail "after 4,000 INCRs the next ID is not 4001"
pid=$(pgrep -P "${SERVER_PID[a]}" -x idkeeper) || fail "no idkeeper under strace"
kill -TERM "$pid"
wait "${SERVER_PID[a]}" || fail "server did not exit 0"

cat >"$T/check.py" <<'PY'
import re, sys
# strace -f lines: "PID call(args) = rc", or "PID call(args <unfinished ...>" then
# "PID <... call resumed>...) = rc". A write counts where it started; a sync where it
# returned 0. One process: its threads share one table of descriptors.
files = {}          # fd -> path, for files opened by name
pending = {}        # (pid, call) -> fd of a call not yet returned
wal_dirty = False   # the log was written to since its last sync
synced = False      # ... and a sync of it has returned at all
logged = []         # committed ranges [first, first + count)
answers, bad = 0, []
def sync_done(fd):
    global wal_dirty, synced
    if files.get(fd, '').endswith('-wal'):
        wal_dirty, synced = False, True
for line in open(sys.argv[1], errors='replace'):
    line = line.rstrip('\n')
    m = re.match(r'^(\d+)\s+<\.\.\. (\w+) resumed>.*= (-?\d+)', line)
    if m:
        fd = pending.pop((m.group(1), m.group(2)), None)
        if m.group(2) in ('fdatasync', 'fsync') and m.group(3) == '0' and fd is not None:
            sync_done(fd)
        continue
    m = re.match(r'^(\d+)\s+(\w+)\((.*)$', line)
    if not m:
        continue
    pid, call, rest = m.groups()
    if call == 'openat':
        o = re.search(r'"([^"]+)".*\)\s+= (\d+)$', rest)
        if o:
            files[o.group(2)] = o.group(1)
        continue
    f = re.match(r'(\d+)', rest)
    if not f:
        continue
    fd = f.group(1)
    if rest.endswith('<unfinished ...>'):
        pending[(pid, call)] = fd
    if call == 'close':
        files.pop(fd, None)
    elif call == 'pwrite64' and files.get(fd, '').endswith('-wal'):
        wal_dirty, synced = True, False
    elif call in ('fdatasync', 'fsync'):
        if re.search(r'\)\s+= 0$', rest):
            sync_done(fd)
    elif call == 'write' and fd == '2':
        c = re.search(r'sequence tag=q first=(\d+) count=(\d+)', rest)
        if c:
            if wal_dirty or not synced:
                bad.append('the commit line of first=%s came before its log was synced' % c.group(1))
            logged.append((int(c.group(1)), int(c.group(2))))
    elif call in ('write', 'writev') and int(fd) > 2 and fd not in files:
        for v in re.findall(r':(\d+)\\r\\n', rest):
            answers += 1
            if not any(a <= int(v) < a + n for a, n in logged):
                bad.append('ID %s was written to a client before its commit line' % v)
if bad:
    print('%d violations, the first: %s' % (len(bad), '; '.join(bad[:3])))
    sys.exit(1)
if answers < 4000 or len(logged) < 2:
    print('the trace shows %d answers and %d commit lines: too few to judge' % (answers, len(logged)))
    sys.exit(1)
print('%d answers, each written after the sync of its commit (%d commit lines)' % (answers, len(logged)))
PY

# the checker must refuse the same trace without its syncs of the log, and without
# its commit lines
grep -vE '^[0-9]+ +(fdatasync|fsync)\(|<\.\.\. (fdatasync|fsync) resumed>' "$T/trace" >"$T/trace.nosync"
grep -v 'sequence tag=q first=' "$T/trace" >"$T/trace.nocommit"
for v in nosync nocommit; do
  if /usr/bin/python3 "$T/check.py" "$T/trace.$v" >"$T/$v.out"; then
    fail "the checker passed the trace without its ${v#no}s: $(cat "$T/$v.out")"
  fi
done
out=$(/usr/bin/python3 "$T/check.py" "$T/trace") || fail "$out"
pass "$out; the checker refuses the trace without its syncs ($(cut -c1-90 "$T/nosync.out")...) and without its commit lines ($(cut -c1-80 "$T/nocommit.out")...)"
