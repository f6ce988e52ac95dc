/* backend_redis_slots.c: worker slots on Redis (redis://): a key per slot holding
 * the holder's random token and identity with a TTL, taken with SET NX PX and kept
 * by a script that extends the TTL only while the key holds our token; the time
 * record in a key of its own, written only by those scripts while the slot is ours
 * (redis_scripts.c has them and the key layout; docs/redis.md the failure model).
 *
 * Invariants
 *   R1. A slot is taken only by SET NX inside the acquire script: two callers racing
 *       for one slot cannot both win, and the record is read (and raised to the new
 *       holder's first ceiling) in the same atomic step, before anything is issued.
 *   R2. slot_persist reports success only for a renewal whose answer was read: the
 *       key then lives until at least the server's time of running it + TTL, which
 *       is after our send time, so it reports the monotonic send time and the TTL
 *       as the lease's proof; core/lease.c claims 2/3 of the TTL from the send (the
 *       third left over absorbs clock rate differences and the time a stopped
 *       process needs to notice; docs/redis.md, "The safe window").
 *   R3. A renewal or release whose token no longer matches writes nothing: a holder
 *       that lost its slot never touches the next holder's record.
 *   R4. An answer lost (timeout, connection dropped) is IK_EINDOUBT: the lease keeps
 *       the deadline of the last answered renewal and stops issuing at it.
 *   R5. Take, renewal and release go out only on a hazard-checked connection while
 *       no store hazard is refused (ik__redis_get_write); else IK_EUNSAFE, nothing
 *       sent, and the lease stops issuing at once (docs/hazards.md).
 *   R6. Each of them carries its own evidence (ik__redis_script's proof): a take
 *       answered with unsafe evidence is released at once and never granted
 *       (give_back), a renewal answered so extends nothing and is IK_EUNSAFE, so
 *       the lease stops issuing at once (docs/hazards.md, "What rides with each
 *       write").
 *
 * Threads: any; each call takes its own connection from the pool (redis_conn.c).
 */
#include "internal.h"
#include "redis_conn.h"

#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_MAX 512

/* A held slot (the opaque handle of ik__slot_grant). */
typedef struct redis_slot {
    char token[33];
    char slot_key[KEY_MAX], record_key[KEY_MAX];
    uint32_t worker;
} redis_slot;

/* How long one slot call waits for its answer: a third of the TTL (100 ms at
 * least), so that a renewal answered late still leaves the proof of the one before
 * it time to run. */
static int64_t answer_wait_ms(const ik__redis_client *rc)
{
    int64_t w = ik__proof_slack_ms(rc->lease_ttl_ms);
    return w < 100 ? 100 : w;
}

/* How long a take waits for its answer: longer than a renewal (2 s at least), since
 * nothing is issued on it before it is answered, and a take given up on a Redis that
 * stalls for a second would turn a refusal naming the holders into "no answer".
 * The lease it proves still runs from its send time. */
static int64_t take_wait_ms(const ik__redis_client *rc)
{
    int64_t w = answer_wait_ms(rc);
    return w < 2000 ? 2000 : w;
}

/* Strict decimal int64 from a reply string; 0 if absent or malformed. */
static int64_t num_of(const char *s)
{
    if (!s) return 0;
    char *e;
    long long v = strtoll(s, &e, 10);
    return *e ? 0 : (int64_t)v;
}

/* One slot as the store shows it. */
typedef struct slot_view {
    uint32_t worker;
    int held;
    char value[512]; /* the slot key: "TOKEN PID HOST IDENTITY" */
    int64_t record_ms, since_ms;
    char holder[256]; /* the record's last holder */
} slot_view;

/* The identity and "pid P, host H" of a slot key's value. */
static void split_value(const char *v, char *ident, size_t il, char *detail, size_t dl)
{
    char tok[64] = "", pid[32] = "", host[128] = "";
    int off = 0;
    if (sscanf(v, "%63s %31s %127s %n", tok, pid, host, &off) >= 3 && off > 0) {
        snprintf(ident, il, "%s", v + off);
        snprintf(detail, dl, "pid %s, host %s", pid, host);
    } else {
        snprintf(ident, il, "?");
        if (detail) detail[0] = '\0';
    }
}

/* Reads the app's slots (every worker ever taken, in [lo, hi]) into *out, sorted
 * by worker. 0, IK_ENOMEM, or IK_ESTORE with why. */
static int scan(ik__redis_client *rc, const char *app, uint32_t lo, uint32_t hi, slot_view **out,
                size_t *n_out, char *why, size_t why_len)
{
    *out = NULL;
    *n_out = 0;
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, answer_wait_ms(rc) * 3, &e, why, why_len);
    if (!ctx) return e;
    char key[KEY_MAX];
    ik__redis_key(rc, app, "slots", key, sizeof key);
    redisReply *r = redisCommand(ctx, "SMEMBERS %s", key);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        e = ik__fail(IK_ESTORE, why, why_len, "cannot list slots: %s",
                     r && r->type == REDIS_REPLY_ERROR ? r->str : ctx->errstr);
        if (r) freeReplyObject(r);
        ik__redis_put(rc, ctx, 1);
        return e;
    }
    slot_view *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < r->elements && !e; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) continue;
        int64_t w = num_of(r->element[i]->str);
        if (w < lo || w > hi || w < 0) continue;
        if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
            e = IK_ENOMEM;
            break;
        }
        memset(&v[n], 0, sizeof v[n]);
        v[n++].worker = (uint32_t)w;
    }
    freeReplyObject(r);
    for (size_t i = 0; i < n && !e; i++) {
        char sk[KEY_MAX], rk[KEY_MAX], sub[32];
        snprintf(sub, sizeof sub, "slot/%" PRIu32, v[i].worker);
        ik__redis_key(rc, app, sub, sk, sizeof sk);
        snprintf(sub, sizeof sub, "record/%" PRIu32, v[i].worker);
        ik__redis_key(rc, app, sub, rk, sizeof rk);
        redisAppendCommand(ctx, "GET %s", sk);
        redisAppendCommand(ctx, "HMGET %s record_ms since_ms holder", rk);
    }
    for (size_t i = 0; i < n && !e; i++) {
        redisReply *g = NULL, *h = NULL;
        if (redisGetReply(ctx, (void **)&g) != REDIS_OK ||
            redisGetReply(ctx, (void **)&h) != REDIS_OK) {
            e = ik__fail(IK_ESTORE, why, why_len, "cannot read slots: %s", ctx->errstr);
        } else if (g->type == REDIS_REPLY_STRING) {
            v[i].held = 1;
            snprintf(v[i].value, sizeof v[i].value, "%s", g->str);
        }
        if (!e && h && h->type == REDIS_REPLY_ARRAY && h->elements == 3) {
            v[i].record_ms = num_of(h->element[0]->str);
            v[i].since_ms = num_of(h->element[1]->str);
            if (h->element[2]->type == REDIS_REPLY_STRING)
                snprintf(v[i].holder, sizeof v[i].holder, "%s", h->element[2]->str);
        }
        if (g) freeReplyObject(g);
        if (h) freeReplyObject(h);
    }
    ik__redis_put(rc, ctx, e != IK_OK);
    if (e) {
        free(v);
        return e;
    }
    for (size_t i = 1; i < n; i++) /* insertion sort: few, mostly sorted */
        for (size_t j = i; j > 0 && v[j - 1].worker > v[j].worker; j--) {
            slot_view t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = v;
    *n_out = n;
    return IK_OK;
}

/* "no free worker slot: all N slots of app A in LO-HI are held: 0 by x, ..." */
static void describe_holders(ik__redis_client *rc, const ik__slot_request *req, char *why,
                             size_t why_len)
{
    if (!why || why_len == 0) return;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    size_t len = (size_t)snprintf(why, why_len,
                                  "no free worker slot: all %" PRIu64 " slots of app %s in %" PRIu32
                                  "-%" PRIu32 " are held",
                                  range, req->app, req->worker_min, req->worker_max);
    if (len >= why_len) return;
    slot_view *v = NULL;
    size_t n = 0;
    char inner[160];
    if (scan(rc, req->app, req->worker_min, req->worker_max, &v, &n, inner, sizeof inner)) return;
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        total += v[i].held;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].held) continue;
        char ident[256], item[320];
        split_value(v[i].value, ident, sizeof ident, NULL, 0);
        snprintf(item, sizeof item, "%s%" PRIu32 " by %s", shown ? ", " : ": ", v[i].worker, ident);
        size_t il = strlen(item);
        if (len + il + 16 >= why_len) break;
        memcpy(why + len, item, il + 1);
        len += il;
        shown++;
    }
    if (shown < total && len + 16 < why_len)
        snprintf(why + len, why_len - len, " (+%zu more)", total - shown);
    free(v);
}

/* R6: a take answered with unsafe evidence (r, the acquire script's answer, freed
 * here): if it took a slot, releases it on ctx at once, its record left at the
 * take's (nothing was issued under it, and a record never goes below one a take
 * wrote). A release that fails leaves the key to lapse at its TTL. */
static void give_back(ik__redis_client *rc, redisContext *ctx, const char *app, redis_slot *s,
                      redisReply *r)
{
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[0]->integer >= 0 &&
        r->element[2]->type == REDIS_REPLY_STRING && !ctx->err) {
        char sub[32], sk[KEY_MAX], rk[KEY_MAX], why[300];
        snprintf(sub, sizeof sub, "slot/%lld", r->element[0]->integer);
        ik__redis_key(rc, app, sub, sk, sizeof sk);
        snprintf(sub, sizeof sub, "record/%lld", r->element[0]->integer);
        ik__redis_key(rc, app, sub, rk, sizeof rk);
        const char *keys[] = {sk, rk};
        const char *args[] = {s->token, r->element[2]->str};
        redisReply *rr = NULL;
        int e = ik__redis_script(rc, ctx, IK__RS_RELEASE, 2, keys, 2, args, 0, &rr, NULL, why,
                                 sizeof why);
        ik__logf("worker slot %lld of app %s was taken under an unsafe store setting: %s, never "
                 "granted (docs/hazards.md, Redis)",
                 r->element[0]->integer, app,
                 e == IK_OK || e == IK_EUNSAFE ? "released" : "left to lapse at its TTL");
        if (rr) freeReplyObject(rr);
    }
    if (r) freeReplyObject(r);
}

int ik__redis_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                           char *why, size_t why_len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    unsigned char rnd[24];
    if (ik__random_bytes(rnd, sizeof rnd))
        return ik__fail(IK_ESTORE, why, why_len, "no randomness for a slot token");
    redis_slot *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    for (int i = 0; i < 16; i++)
        snprintf(s->token + 2 * i, 3, "%02x", rnd[i]);
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1, r64;
    memcpy(&r64, rnd + 16, sizeof r64);
    char host[128] = "?", value[700], base[KEY_MAX], lo[16], hi[16], ttl[24], off[24], rec[24],
         since[24];
    gethostname(host, sizeof host - 1);
    for (char *c = host; *c; c++)
        if (*c == ' ') *c = '_';
    snprintf(value, sizeof value, "%s %d %s %s", s->token, (int)getpid(), host, req->identity);
    ik__redis_key(rc, req->app, "", base, sizeof base);
    snprintf(lo, sizeof lo, "%" PRIu32, req->worker_min);
    snprintf(hi, sizeof hi, "%" PRIu32, req->worker_max);
    snprintf(ttl, sizeof ttl, "%" PRId64, rc->lease_ttl_ms);
    snprintf(off, sizeof off, "%" PRIu64, r64 % range);
    snprintf(rec, sizeof rec, "%" PRId64, req->new_record_ms);
    int64_t since_ms = ik__wall_ms();
    snprintf(since, sizeof since, "%" PRId64, since_ms);
    const char *args[] = {
        base, lo,  hi,    req->identity, value, ttl, req->choice == IK_SLOT_LOWEST ? "1" : "0",
        off,  rec, since, s->token};
    int e = IK_OK;
    redisContext *ctx = ik__redis_get_write(rc, take_wait_ms(rc), &e, why, why_len);
    if (!ctx) {
        free(s);
        return e;
    }
    int64_t sent = ik__mono_ns();
    redisReply *r = NULL;
    e = ik__redis_script(rc, ctx, IK__RS_ACQUIRE, 0, NULL, 11, args, 0, &r, NULL, why, why_len);
    if (e == IK_EUNSAFE) { /* R6: taken under unsafe evidence: released, never granted */
        give_back(rc, ctx, req->app, s, r);
        ik__redis_put(rc, ctx, 0);
        free(s);
        return e;
    }
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e == IK_EINDOUBT) /* maybe taken: the key expires by itself after the TTL */
        e = ik__fail(IK_ESTORE, why, why_len, "no answer to a slot take (it lapses by itself)");
    if (!e && (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
               r->element[0]->type != REDIS_REPLY_INTEGER))
        e = ik__fail(IK_ESTORE, why, why_len, "the slot script answered something unexpected");
    if (!e && r->element[0]->integer < 0) {
        freeReplyObject(r);
        free(s);
        describe_holders(rc, req, why, why_len);
        return IK_ENOSLOT;
    }
    if (!e && (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING ||
               r->element[2]->type != REDIS_REPLY_STRING))
        e = ik__fail(IK_ESTORE, why, why_len, "the slot script answered something unexpected");
    if (e) {
        if (r) freeReplyObject(r);
        free(s);
        return e;
    }
    s->worker = (uint32_t)r->element[0]->integer;
    char sub[32];
    snprintf(sub, sizeof sub, "slot/%" PRIu32, s->worker);
    ik__redis_key(rc, req->app, sub, s->slot_key, sizeof s->slot_key);
    snprintf(sub, sizeof sub, "record/%" PRIu32, s->worker);
    ik__redis_key(rc, req->app, sub, s->record_key, sizeof s->record_key);
    memset(out, 0, sizeof *out);
    out->worker = s->worker;
    out->old_record_ms = num_of(r->element[1]->str);
    out->record_ms = num_of(r->element[2]->str);
    out->since_ms = since_ms;
    out->proof = (ik__lease_proof){sent, rc->lease_ttl_ms};
    out->handle = s;
    freeReplyObject(r);
    pthread_mutex_lock(&rc->mu);
    memcpy(rc->last_token, s->token, sizeof rc->last_token);
    pthread_mutex_unlock(&rc->mu);
    return IK_OK;
}

void ik__redis_session_desc(ik__backend *be, char *buf, size_t len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    pthread_mutex_lock(&rc->mu);
    if (rc->last_token[0])
        snprintf(buf, len, "token %.8s", rc->last_token);
    else if (len)
        buf[0] = '\0';
    pthread_mutex_unlock(&rc->mu);
}

int ik__redis_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                           int64_t *written_ms)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    redis_slot *s = handle;
    char ttl[24], rec[24], why[300];
    snprintf(ttl, sizeof ttl, "%" PRId64, rc->lease_ttl_ms);
    snprintf(rec, sizeof rec, "%" PRId64, record_ms);
    const char *keys[] = {s->slot_key, s->record_key};
    const char *args[] = {s->token, ttl, rec};
    int e = IK_OK;
    redisContext *ctx = ik__redis_get_write(rc, answer_wait_ms(rc), &e, why, sizeof why);
    if (!ctx) return e == IK_EUNSAFE ? e : IK_EINDOUBT; /* not sent: unproven, maybe still ours */
    int64_t sent = ik__mono_ns();
    redisReply *r = NULL;
    e = ik__redis_script(rc, ctx, IK__RS_RENEW, 2, keys, 3, args, 0, &r, NULL, why, sizeof why);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e && e != IK_EUNSAFE) {
        if (r) freeReplyObject(r);
        return IK_EINDOUBT; /* R4 */
    }
    int64_t got = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    if (got < 0) return IK_ELOST; /* R3: expired, or someone else's now */
    if (e) return e;              /* R6: proves nothing; the lease stops at once */
    if (got == 0) return IK_EINDOUBT;
    *written_ms = got;
    *proof = (ik__lease_proof){sent, rc->lease_ttl_ms};
    return IK_OK;
}

int ik__redis_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    redis_slot *s = handle;
    if (!s) return IK_OK;
    char rec[24], why[300];
    snprintf(rec, sizeof rec, "%" PRId64, record_ms);
    const char *keys[] = {s->slot_key, s->record_key};
    const char *args[] = {s->token, rec};
    /* no hazard re-check of its own (one round trip less at a stop on a slow store):
     * a release only lowers our record and drops our key, so the last verdicts
     * decide; while one is refused nothing is sent and the slot frees at its TTL */
    int e = ik__hazards_refused(rc->hz, why, sizeof why);
    redisContext *ctx = e ? NULL : ik__redis_get(rc, answer_wait_ms(rc), &e, why, sizeof why);
    if (ctx) {
        redisReply *r = NULL;
        e = ik__redis_script(rc, ctx, IK__RS_RELEASE, 2, keys, 2, args, 0, &r, NULL, why,
                             sizeof why);
        ik__redis_put(rc, ctx, e == IK_EINDOUBT);
        if (e == IK_EUNSAFE) e = IK_OK; /* it ran: a lost release lapses at the TTL */
        if (!e && r->type == REDIS_REPLY_INTEGER && r->integer < 0) e = IK_ELOST;
        if (r) freeReplyObject(r);
    }
    free(s);
    return e;
}

void ik__redis_slot_forget(ik__backend *be, void *handle)
{
    free(handle);
}

int ik__redis_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    slot_view *v = NULL;
    size_t n = 0;
    char why[200];
    int e = scan(rc, app, 0, UINT32_MAX, &v, &n, why, sizeof why);
    if (e) return e;
    ik_slot_info *o = n ? calloc(n, sizeof *o) : NULL;
    if (n && !o) {
        free(v);
        return IK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        o[i].worker = v[i].worker;
        o[i].held = v[i].held;
        o[i].record_ms = v[i].record_ms;
        if (v[i].held) {
            split_value(v[i].value, o[i].holder, sizeof o[i].holder, o[i].detail,
                        sizeof o[i].detail);
            o[i].since_ms = v[i].since_ms;
        } else {
            snprintf(o[i].holder, sizeof o[i].holder, "%s", v[i].holder);
        }
    }
    free(v);
    *out = o;
    *n_out = n;
    return IK_OK;
}
