/* redis_scripts.c: the Lua scripts every redis:// write runs as, in one place,
 * so that what a write checks and what it changes can be read together. Each runs
 * atomically on the server (nothing interleaves), and Redis 7 replicates and logs
 * its effects, not the script. redis_conn.c loads them (SCRIPT LOAD) and runs them
 * (EVALSHA); docs/redis.md has the key layout.
 *
 * Numbers: Lua holds numbers as doubles, exact to 2^53. Time records (Unix ms) fit;
 * counters may not, so counter values travel as strings and are compared as
 * decimal strings (lt below), never turned into Lua numbers.
 *
 * Keys: BASE = PREFIX + "idkeeper/" + APP + "/".
 *   BASE slot/W        string "TOKEN PID HOST IDENTITY", PX the lease TTL: the holder
 *   BASE record/W      hash record_ms, since_ms, holder: the time record (no TTL)
 *   BASE identities    hash IDENTITY -> W: the slot each identity took last
 *   BASE slots         set of the workers ever taken (workers listing)
 *   BASE tag/TAG       hash kind, start, step, description, update_time
 *   BASE tags          set of the app's tag names
 *   BASE tagw/TAG/N    hash, PX 10 min from its last write: the advances of tag TAG
 *                      by the backend object whose nonce is N (settles lost answers):
 *                      last (the highest SEQ run, or TAG_SETTLE's fence), n (advances run), wI for
 * I in 0..RING-1 ("SEQ VALUE" of advance number n, I = n mod RING: the last RING advances), floor
 * (the highest SEQ pushed out of the ring; absent: none) counter key        string, an integer: the
 * last ID taken (max_id - 1); see ik__redis_counter_key
 */
#include "redis_conn.h"

/* lt(a, b): a < b for canonical decimal integer strings (an optional '-'). */
#define LUA_LT                                                                                     \
    "local function lt(a, b)\n"                                                                    \
    "  local na, nb = string.sub(a, 1, 1) == '-', string.sub(b, 1, 1) == '-'\n"                    \
    "  if na ~= nb then return na end\n"                                                           \
    "  if na then a, b = string.sub(b, 2), string.sub(a, 2) end\n"                                 \
    "  if #a ~= #b then return #a < #b end\n"                                                      \
    "  return a < b\n"                                                                             \
    "end\n"

/* ACQUIRE. ARGV: BASE, LO, HI, IDENTITY, VALUE (the slot key's), TTL_MS, LOWEST
 * (1: lowest free, else from a random start), OFFSET (the random start, 0..HI-LO),
 * NEW_RECORD_MS, SINCE_MS, TOKEN. The identity's last slot first if free, then the
 * range; a slot is taken by SET NX PX, and its time record is read before the
 * record is raised to max(found, NEW_RECORD_MS). Returns {W, FOUND, RECORD} or {-1}
 * when every slot of the range is held. */
static const char acquire[] =
    "local base, lo, hi = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])\n"
    "local ident, val, ttl = ARGV[4], ARGV[5], ARGV[6]\n"
    "local lowest, off = ARGV[7] == '1', tonumber(ARGV[8])\n"
    "local newrec, since = tonumber(ARGV[9]), ARGV[10]\n"
    "local function take(w)\n"
    "  local k = base .. 'slot/' .. w\n"
    "  if not redis.call('SET', k, val, 'NX', 'PX', ttl) then return nil end\n"
    "  local rk = base .. 'record/' .. w\n"
    "  local old = tonumber(redis.call('HGET', rk, 'record_ms') or '0') or 0\n"
    "  local rec = math.max(old, newrec)\n"
    "  redis.call('HSET', rk, 'record_ms', string.format('%d', rec), 'since_ms', since,\n"
    "             'holder', ident)\n"
    "  redis.call('HSET', base .. 'identities', ident, w)\n"
    "  redis.call('SADD', base .. 'slots', w)\n"
    "  return {w, string.format('%d', old), string.format('%d', rec)}\n"
    "end\n"
    "local n = hi - lo + 1\n"
    "local s = tonumber(redis.call('HGET', base .. 'identities', ident) or '')\n"
    "if s and s >= lo and s <= hi then\n"
    "  local r = take(s)\n"
    "  if r then return r end\n"
    "end\n"
    "for i = 0, n - 1 do\n"
    "  local w = lo + i\n"
    "  if not lowest then w = lo + (off + i) % n end\n"
    "  local r = take(w)\n"
    "  if r then return r end\n"
    "end\n"
    "return {-1}\n";

/* RENEW. KEYS: slot, record. ARGV: TOKEN, TTL_MS, RECORD_MS. While the slot holds
 * TOKEN: extends its TTL and raises the record to max(record, RECORD_MS); returns
 * the record now stored. -1 when the slot is not ours (expired, or taken over). */
static const char renew[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v or string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return -1 end\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
    "local old = tonumber(redis.call('HGET', KEYS[2], 'record_ms') or '0') or 0\n"
    "local rec = math.max(old, tonumber(ARGV[3]))\n"
    "redis.call('HSET', KEYS[2], 'record_ms', string.format('%d', rec))\n"
    "return rec\n";

/* RELEASE. KEYS: slot, record. ARGV: TOKEN, RECORD_MS. While the slot holds TOKEN:
 * sets the record to RECORD_MS (a clean release may lower it, backend.h) and
 * deletes the slot; 1. -1 when the slot is not ours (nothing written). */
static const char release[] =
    "local v = redis.call('GET', KEYS[1])\n"
    "if not v or string.sub(v, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return -1 end\n"
    "redis.call('HSET', KEYS[2], 'record_ms', ARGV[2])\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 1\n";

/* TAG_CREATE. KEYS: meta, counter, index. ARGV: NAME, KIND, START, STEP, DESC, NOW,
 * START-1. {-1}: the tag exists; {-2, TYPE}: the counter key holds another type;
 * {-3}: it holds a string that is no integer; {-4}: it has a TTL (it would expire,
 * and an app's INCR start it again at 1); {0, VALUE}: made. An existing
 * integer counter is adopted: it only ever goes up (to START-1 if below). */
static const char tag_create[] =
    LUA_LT "if redis.call('EXISTS', KEYS[1]) == 1 then return {-1} end\n"
           "local t = redis.call('TYPE', KEYS[2]).ok\n"
           "if t ~= 'none' and t ~= 'string' then return {-2, t} end\n"
           "local cur = redis.call('GET', KEYS[2])\n"
           "if cur and not string.match(cur, '^%-?%d+$') then return {-3} end\n"
           "if cur and redis.call('PTTL', KEYS[2]) >= 0 then return {-4} end\n"
           "if not cur or lt(cur, ARGV[7]) then redis.call('SET', KEYS[2], ARGV[7]) end\n"
           "redis.call('HSET', KEYS[1], 'kind', ARGV[2], 'start', ARGV[3], 'step', ARGV[4],\n"
           "           'description', ARGV[5], 'update_time', ARGV[6])\n"
           "redis.call('SADD', KEYS[3], ARGV[1])\n"
           "return {0, redis.call('GET', KEYS[2])}\n";

/* TAG_ADVANCE. KEYS: meta, counter, writer (tagw/TAG/NONCE). ARGV: KIND, DELTA, NOW,
 * LIMIT (the highest value the counter may hold before: INT64_MAX - 1 - DELTA), SEQ
 * (this backend object's write number, increasing), DOUBTS (the SEQs of this
 * nonce's earlier advances of the tag in doubt, space-separated; may be empty),
 * RING (how many advances the writer key keeps), TTL_MS (the writer key's). {-1}: no
 * such tag; {-2}: of the other kind; {-3}: past LIMIT; {-4}: the counter key is
 * gone; {-5, TYPE}: it holds another type; {-6}: not an integer; {-7, LAST}: SEQ is
 * not above the last advance of this nonce (a late or overtaken write: not run);
 * {-8}: the counter key has a TTL (nothing written);
 * {0, VALUE, FLOOR, R1, ..., Rk}: advanced by INCRBY to VALUE and recorded as "SEQ
 * VALUE" in the writer key's ring; FLOOR is the ring's floor before ("0": none), and
 * Ri the VALUE the i-th SEQ of DOUBTS recorded, or "" if the ring does not hold it
 * (read before this advance takes its slot). Since the ring keeps every advance
 * above FLOOR, "" for a SEQ above FLOOR means it never ran, and LAST = SEQ means it
 * never will. */
static const char tag_advance[] = LUA_LT
    "local k = redis.call('HGET', KEYS[1], 'kind')\n"
    "if not k then return {-1} end\n"
    "if k ~= ARGV[1] then return {-2} end\n"
    "local w = KEYS[3]\n"
    "local last = redis.call('HGET', w, 'last')\n"
    "if last and not lt(last, ARGV[5]) then return {-7, last} end\n"
    "local t = redis.call('TYPE', KEYS[2]).ok\n"
    "if t == 'none' then return {-4} end\n"
    "if t ~= 'string' then return {-5, t} end\n"
    "local cur = redis.call('GET', KEYS[2])\n"
    "if not string.match(cur, '^%-?%d+$') then return {-6} end\n"
    "if redis.call('PTTL', KEYS[2]) >= 0 then return {-8} end\n"
    "if lt(ARGV[4], cur) then return {-3} end\n"
    "local ring = tonumber(ARGV[7])\n"
    "local out = {0, '', redis.call('HGET', w, 'floor') or '0'}\n"
    "if ARGV[6] ~= '' then\n"
    "  local f = {}\n"
    "  for i = 0, ring - 1 do f[#f + 1] = 'w' .. i end\n"
    "  local ws = redis.call('HMGET', w, unpack(f))\n"
    "  for d in string.gmatch(ARGV[6], '%d+') do\n"
    "    local v = ''\n"
    "    for i = 1, ring do\n"
    "      local e = ws[i]\n"
    "      if e and string.sub(e, 1, #d + 1) == d .. ' ' then v = string.sub(e, #d + 2) end\n"
    "    end\n"
    "    out[#out + 1] = v\n"
    "  end\n"
    "end\n"
    "redis.call('INCRBY', KEYS[2], ARGV[2])\n"
    "local v = redis.call('GET', KEYS[2])\n"
    "out[2] = v\n"
    "redis.call('HSET', KEYS[1], 'update_time', ARGV[3])\n"
    "local slot = 'w' .. (redis.call('HINCRBY', w, 'n', 1) % ring)\n"
    "local old = redis.call('HGET', w, slot)\n"
    "if old then redis.call('HSET', w, 'floor', string.match(old, '^%d+')) end\n"
    "redis.call('HSET', w, slot, ARGV[5] .. ' ' .. v, 'last', ARGV[5])\n"
    "redis.call('PEXPIRE', w, ARGV[8])\n"
    "return out\n";

/* TAG_SETTLE (at close: the doubts no later advance of this process will carry).
 * KEYS: writer (tagw/TAG/NONCE). ARGV: SEQ (above every write number this nonce
 * sent), DOUBTS (as TAG_ADVANCE's), RING, TTL_MS. Raises the writer key's "last" to
 * SEQ, so that no write of DOUBTS still on its way can run after this script (the
 * fence TAG_ADVANCE's {-7} keeps), and answers {FLOOR, R1, ..., Rk} as TAG_ADVANCE
 * does: "" for a SEQ above FLOOR means it never ran, and now never will. */
static const char tag_settle[] =
    LUA_LT "local w = KEYS[1]\n"
           "local last = redis.call('HGET', w, 'last')\n"
           "if not last or lt(last, ARGV[1]) then redis.call('HSET', w, 'last', ARGV[1]) end\n"
           "redis.call('PEXPIRE', w, ARGV[4])\n"
           "local ring = tonumber(ARGV[3])\n"
           "local out = {redis.call('HGET', w, 'floor') or '0'}\n"
           "local f = {}\n"
           "for i = 0, ring - 1 do f[#f + 1] = 'w' .. i end\n"
           "local ws = redis.call('HMGET', w, unpack(f))\n"
           "for d in string.gmatch(ARGV[2], '%d+') do\n"
           "  local v = ''\n"
           "  for i = 1, ring do\n"
           "    local e = ws[i]\n"
           "    if e and string.sub(e, 1, #d + 1) == d .. ' ' then v = string.sub(e, #d + 2) end\n"
           "  end\n"
           "  out[#out + 1] = v\n"
           "end\n"
           "return out\n";

const char *const ik__redis_lua[IK__RS_COUNT] = {
    [IK__RS_ACQUIRE] = acquire,         [IK__RS_RENEW] = renew,
    [IK__RS_RELEASE] = release,         [IK__RS_TAG_CREATE] = tag_create,
    [IK__RS_TAG_ADVANCE] = tag_advance, [IK__RS_TAG_SETTLE] = tag_settle,
};
