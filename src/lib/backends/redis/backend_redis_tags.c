/* backend_redis_tags.c: tags on Redis (redis://): a tag's counter is an integer key
 * advanced with INCRBY (holding the last ID taken, max_id - 1, as an INCR counter
 * does, so an app that numbers with INCR on that key shares it), beside a hash of
 * ours with the tag's kind, start, step and description (redis_scripts.c has the
 * scripts and the key layout; docs/redis.md how to adopt an existing key). This
 * file advances a tag; backend_redis_tagmeta.c, under it, creates and reads one.
 *
 * Invariants
 *   RT1. A counter only goes up: creating a tag on an existing integer key keeps it
 *       (or raises it to start - 1), and an advance whose counter key is missing
 *       refuses (IK_ESTORE) rather than start again from 0.
 *   RT2. An advance is handed out only once the script's answer was read and, with
 *       --redis-wait-replicas N, WAIT counted N replicas; otherwise IK_EINDOUBT and
 *       the range (if it was recorded) is never handed out.
 *   RT3. Every advance carries the doubt engine's write id SEQ (counters/doubt.c)
 *       and is sent as its writer, a lane of the tag (WRITER: the engine's 32 hex
 *       digits). The script refuses a SEQ not above the last one run for the tag by
 *       that writer (the writer key tagw/TAG/WRITER, PX IK__DOUBT_KEPT_MS from its
 *       last write, keeps it as "last") and records "SEQ VALUE" in the key's ring of
 *       the writer's last IK__DOUBT_LANE_MAX advances of the tag, raising the key's
 *       "floor" to the SEQ it pushes out. One advance at a time writes as a writer
 *       (the engine's lanes), so a writer's SEQs reach Redis in increasing order, and
 *       once a later advance by the same writer ran, a write in doubt of that writer
 *       either ran (its SEQ is in the ring, or at or below the floor) or never will.
 *   RT4. The doubts the engine hands an advance (those of its writer, oldest first)
 *       ride in its script, which reads each one's SEQ in the ring before taking its
 *       slot; the first one that runs reports them all (evidence_of): a SEQ found is
 *       a recorded range at its exact first ID; one not found, above the floor, is
 *       absent from a ring that reaches back to it; at or below the floor, the ring
 *       no longer reaches it. The script's refusal of lower SEQs ends any send still
 *       on its way. The engine decides (its trust horizon stands for the writer key's
 *       TTL) and logs each.
 *   RT5. At the stop, the engine's settle (tag_settle) runs per tag and writer one
 *       script, TAG_SETTLE, that raises the writer key's "last" to the engine's
 *       fencing SEQ, above every one sent (so a write still on its way can no longer
 *       run: RT3's refusal), and reads each doubt's SEQ in the ring, reported as in
 *       RT4. A script not answered by the deadline reports nothing (logged
 *       "first=?"); the engine sends nothing through a store its checks refuse.
 *
 *   RT6. Each create and advance carries its own evidence (ik__redis_script's
 *       proof). An advance that ran under unsafe evidence hands nothing out: its
 *       exact range is logged "tag gap ... why=store_unsafe" and the call answers
 *       IK_EUNSAFE (503, -TRYAGAIN). A counter key with a TTL is refused at create
 *       and at every advance, before anything is written: it would expire and an
 *       app's INCR would start it again at 1.
 *
 * Threads: any; each call takes its own connection from the pool (redis_conn.c).
 */
#include "internal.h"
#include "redis_conn.h"

#include <errno.h>
#include <stdarg.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Advances of a tag a writer key's ring keeps (backend.h's IK__DOUBT_LANE_MAX), and the
 * writer key's TTL from its last write (IK__DOUBT_KEPT_MS): the record the engine's
 * rule counts on. */
#define RING IK__DOUBT_LANE_MAX

/* The writer key of writer (the engine's lane, RT3) on (app, name) into out
 * (IK__REDIS_KEY_MAX): tagw/TAG/WRITER. */
static void writer_key(ik__redis_client *rc, const char *app, const char *name, const char *writer,
                       char *out)
{
    char sub[IK_TAG_NAME_MAX + 48];
    snprintf(sub, sizeof sub, "tagw/%s/%s", name, writer);
    ik__redis_key(rc, app, sub, out, IK__REDIS_KEY_MAX);
}

/* What a script answered of doubt d (RT4): found, the value its SEQ recorded ("" if
 * the ring does not hold it; NULL: no answer for it), and floor, the ring's floor. */
static void evidence_of(const ik__doubt *d, const redisReply *found, uint64_t floor,
                        ik__doubt_evidence *e)
{
    int64_t x;
    memset(e, 0, sizeof *e);
    e->read = 1;
    e->first = -1;
    e->moved = 1; /* the script refuses every SEQ up to the one that ran (RT3) */
    if (found && found->type == REDIS_REPLY_STRING && found->len > 0) {
        e->held = 1;
        if (!ik__redis_parse_i64(found->str, &x)) {
            e->first = x - d->delta + 1;
            snprintf(e->what, sizeof e->what, "its SEQ is in the writer key's ring");
        } else {
            e->code = "maybe_recorded";
            snprintf(e->what, sizeof e->what,
                     "a write whose answer was lost recorded them, but its record is not a "
                     "number");
        }
    } else if (!found || found->type != REDIS_REPLY_STRING) {
        snprintf(e->what, sizeof e->what, "the script that reads it answered oddly");
    } else {
        e->intact = 1;
        e->reaches = d->wid > floor;
        snprintf(e->what, sizeof e->what,
                 e->reaches
                     ? "its SEQ is not in the writer key's ring"
                     : "later writes of the tag pushed its SEQ out of the writer key's ring");
    }
}

/* The evidence of w's carried doubts from a script's answer r, whose element at
 * `at` holds the floor and the next ones each doubt's record. */
static void evidence_all(ik__tag_write *w, const redisReply *r, size_t at)
{
    uint64_t floor = 0;
    if (r->elements > at && r->element[at]->type == REDIS_REPLY_STRING)
        floor = strtoull(r->element[at]->str, NULL, 10);
    for (size_t i = 0; i < (size_t)w->n_carried; i++)
        evidence_of(&w->carried[i], at + 1 + i < r->elements ? r->element[at + 1 + i] : NULL, floor,
                    &w->ev[i]);
}

/* The write ids of w's carried doubts, space-separated, into out (RING * 22). */
static void carried_seqs(const ik__tag_write *w, char *out, size_t len)
{
    out[0] = '\0';
    for (int i = 0, at = 0; i < w->n_carried && (size_t)at < len; i++)
        at += snprintf(out + at, len - (size_t)at, "%s%" PRIu64, i ? " " : "", w->carried[i].wid);
}

/* A write of this call that ran but is not handed out (RT2, RT6): its range from the
 * script's counter value (element 1), for the engine to log with code. */
static void own_landed(ik__tag_write *w, const redisReply *r, const char *code, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static void own_landed(ik__tag_write *w, const redisReply *r, const char *code, const char *fmt,
                       ...)
{
    int64_t v;
    ik__doubt_evidence *o = &w->own_ev;
    o->read = o->held = 1; /* its own answer: it ran */
    o->first = -1;
    o->code = code;
    if (r && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING &&
        !ik__redis_parse_i64(r->element[1]->str, &v))
        o->first = v - w->own.delta + 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->what, sizeof o->what, fmt, ap);
    va_end(ap);
}

int ik__redis_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    int64_t delta = w->own.delta;
    char meta[IK__REDIS_KEY_MAX], counter[IK__REDIS_KEY_MAX], writer[IK__REDIS_KEY_MAX], why[400];
    ik__redis_tag_keys(rc, app, name, meta, counter);
    writer_key(rc, app, name, w->writer, writer);
    char dl[24], now[24], limit[24], seqs[24], doubts[RING * 22 + 1], ring[8], ttl[16];
    snprintf(dl, sizeof dl, "%" PRId64, delta);
    snprintf(now, sizeof now, "%" PRId64, ik__wall_ms());
    snprintf(limit, sizeof limit, "%" PRId64, INT64_MAX - 1 - delta);
    snprintf(seqs, sizeof seqs, "%" PRIu64, w->own.wid);
    carried_seqs(w, doubts, sizeof doubts); /* RT4: all of the writer's */
    snprintf(ring, sizeof ring, "%d", RING);
    snprintf(ttl, sizeof ttl, "%d", IK__DOUBT_KEPT_MS);
    const char *keys[] = {meta, counter, writer};
    const char *args[] = {ik_tag_kind_name(kind), dl, now, limit, seqs, doubts, ring, ttl};
    int e = IK_OK, waited = 0;
    /* IK_EUNSAFE: a store hazard is refused (docs/hazards.md), nothing sent */
    redisContext *ctx = ik__redis_get_write(rc, IK__REDIS_TAG_TIMEOUT_MS, &e, why, sizeof why);
    if (!ctx) {
        ik__redis_log_limited(rc, "tag %s: %s", name, why);
        snprintf(w->why, sizeof w->why, "%s", why);
        return e;
    }
    redisReply *r = NULL;
    ik__test_hold(rc->test_hold); /* tests only: the write began, its evidence not read */
    e = ik__redis_script(rc, ctx, IK__RS_TAG_ADVANCE, 3, keys, 8, args, 1, &r, &waited, why,
                         sizeof why);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e) snprintf(w->why, sizeof w->why, "%s", why); /* the store's words */
    long long code = -100;
    if ((!e || e == IK_EUNSAFE) && r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        code = r->element[0]->integer;
    if (code == 0) evidence_all(w, r, 2); /* RT4: it ran, so it read every doubt it carried */
    if (e == IK_EUNSAFE) {                /* RT6: ran under unsafe evidence: never handed out */
        if (code == 0) own_landed(w, r, "store_unsafe", "%s", why);
        ik__redis_log_limited(rc, "tag %s: %s", name, why);
        if (r) freeReplyObject(r);
        return IK_EUNSAFE;
    }
    if (e == IK_EINDOUBT) { /* RT2: maybe recorded: never handed out, the engine keeps it */
        ik__redis_log_limited(rc, "tag %s: an advance is in doubt: %s", name, why);
        if (r) freeReplyObject(r);
        return IK_EINDOUBT;
    }
    if (code == 0 && waited < rc->wait_replicas) { /* RT2: recorded, but not replicated */
        own_landed(w, r, "not_replicated", "recorded, but WAIT counted %d of %d replicas in time",
                   waited, rc->wait_replicas);
        freeReplyObject(r);
        return IK_EINDOUBT;
    }
    if (e) {
        ik__redis_log_limited(rc, "tag %s: %s", name, why);
        if (r) freeReplyObject(r);
        return e;
    }
    int64_t v = 0;
    switch (code) {
    case 0:
        if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING &&
            !ik__redis_parse_i64(r->element[1]->str, &v)) {
            *first = v - delta + 1;
            e = IK_OK;
        } else { /* recorded, but where? */
            own_landed(w, r, "maybe_recorded",
                       "a write recorded them, but its answer held no counter value");
            e = IK_EINDOUBT;
        }
        break;
    case -1:
        e = IK_ENOTFOUND;
        break;
    case -2:
        e = IK_EKIND;
        break;
    case -3:
        e = IK_ERANGE;
        break;
    case -4:
        ik__redis_log_limited(rc,
                              "tag %s: its counter key %s is gone (deleted, or lost by a "
                              "restart of Redis without its append-only file): not issuing; "
                              "restore it above every ID handed out (docs/redis.md)",
                              name, counter);
        e = IK_ESTORE;
        break;
    case -5:
    case -6:
        ik__redis_log_limited(rc,
                              "tag %s: its counter key %s holds %s, not an integer: not "
                              "issuing (docs/redis.md)",
                              name, counter,
                              code == -5 && r->elements > 1 &&
                                      r->element[1]->type == REDIS_REPLY_STRING
                                  ? r->element[1]->str
                                  : "a string");
        e = IK_ESTORE;
        break;
    case -8:
        ik__redis_log_limited(rc,
                              "tag %s: its counter key %s has a TTL: not issuing, since when "
                              "it expires INCR starts it again at 1 and IDs repeat; PERSIST it "
                              "(docs/redis.md, Adopting a key)",
                              name, counter);
        e = IK_ESTORE;
        break;
    default: /* -7: a later write of this writer ran first; this one did not */
        e = IK_ESTORE;
        break;
    }
    freeReplyObject(r);
    return e;
}

/* RT5: the stop's settle of one tag's doubts by one writer: TAG_SETTLE, fenced by
 * w->own.wid, by deadline_ns (mono ns); what it cannot decide stays OPEN. */
void ik__redis_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                          int64_t deadline_ns)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    char writer[IK__REDIS_KEY_MAX], why[400];
    writer_key(rc, app, name, w->writer, writer);
    char seqs[24], doubts[RING * 22 + 1], ring[8], ttl[16];
    snprintf(seqs, sizeof seqs, "%" PRIu64, w->own.wid); /* above every one sent */
    carried_seqs(w, doubts, sizeof doubts);
    snprintf(ring, sizeof ring, "%d", RING);
    snprintf(ttl, sizeof ttl, "%d", IK__DOUBT_KEPT_MS);
    const char *keys[] = {writer};
    const char *args[] = {seqs, doubts, ring, ttl};
    int64_t left_ms = (deadline_ns - ik__mono_ns()) / 1000000;
    if (left_ms <= 0) return;
    int e = IK_OK;
    redisReply *r = NULL;
    /* a write (the fence): nothing is sent while a store hazard is refused */
    redisContext *ctx = ik__redis_get_write(rc, left_ms, &e, why, sizeof why);
    if (ctx) {
        e = ik__redis_script(rc, ctx, IK__RS_TAG_SETTLE, 1, keys, 4, args, 0, &r, NULL, why,
                             sizeof why);
        ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    }
    if (!e && r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        evidence_all(w, r, 0);
    if (r) freeReplyObject(r);
}
