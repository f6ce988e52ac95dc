/* backend_redis_tags.c: tags on Redis (redis://): a tag's counter is an integer key
 * advanced with INCRBY (holding the last ID taken, max_id - 1, as an INCR counter
 * does, so an app that numbers with INCR on that key shares it), beside a hash of
 * ours with the tag's kind, start, step and description (redis_scripts.c has the
 * scripts and the key layout; docs/redis.md how to adopt an existing key).
 *
 * Invariants
 *   RT1. A counter only goes up: creating a tag on an existing integer key keeps it
 *       (or raises it to start - 1), and an advance whose counter key is missing
 *       refuses (IK_ESTORE) rather than start again from 0.
 *   RT2. An advance is handed out only once the script's answer was read and, with
 *       --redis-wait-replicas N, WAIT counted N replicas; otherwise IK_EINDOUBT and
 *       the range (if it was recorded) is never handed out.
 *   RT3. Every advance carries this backend object's next write number SEQ; the
 *       script refuses a SEQ not above the last one run for the tag by its writer
 *       (the writer key tagw/TAG/NONCE, PX WRITER_TTL_MS from its last write,
 *       keeps it as "last") and records "SEQ VALUE" in the key's ring of the
 *       writer's last TAG_KEPT advances of the tag, raising the key's "floor" to
 *       the SEQ it pushes out. So once a later advance of the tag by the same
 *       writer ran, a write in doubt of that writer either ran (its SEQ is in the
 *       ring, or at or below the floor) or never will.
 *   RT3a. A writer is a lane, not the object: NONCE is this object's 30 random
 *       hex digits and the lane's number in 2 more, and each advance holds a lane
 *       of its own for its whole call (lane_get .. lane_put), taking its SEQ only
 *       once it holds it. So a lane's SEQs reach Redis in increasing order, one
 *       advance after another, and two committers of one coord (two ik_sequence,
 *       or a sequence's batches beside a segment's refills) never make each
 *       other's writes "not above the last one run" (refused: a 503 without a
 *       fault) nor settle each other's doubts. A free lane with doubts of the tag
 *       is preferred by the tag's next advance, which carries them (RT4).
 *   RT4. The doubts of a tag by one lane (at most TAG_KEPT, oldest first) are all
 *       carried by the tag's next advance on that lane, which reads each one's own
 *       SEQ in the ring before taking its slot, and are all settled by the first
 *       one that runs: a SEQ found is a recorded range, logged "tag gap tag=T
 *       first=A count=K" at its exact first ID; a SEQ not found, above the floor,
 *       of a doubt younger than DOUBT_TRUST_NS (the writer key cannot have expired
 *       since), never ran and never will ("tag doubt settled"); anything else
 *       cannot be placed and is logged "tag gap tag=T first=? count=K", as is the
 *       oldest doubt of a tag and lane that would hold more than TAG_KEPT. No
 *       doubt ends without a line.
 *   RT5. At close no later advance will carry the doubts still kept, so the stop
 *       settles them (ik__redis_settle, the seam's settle: ik_coord_settle, and
 *       close for what is left): per tag and lane one script,
 *       TAG_SETTLE, that raises the writer key's "last" to a SEQ above every one
 *       sent (so a write still on its way can no longer run: RT3's refusal) and
 *       reads each doubt's SEQ in the ring, settled as in RT4. A tag whose script
 *       gets no answer by the settle's deadline, or is not sent (the checks refuse
 *       the store: the fence is a write, and coord.c runs them once more first), logs
 *       each doubt as
 *       "tag gap tag=T first=? count=K why=maybe_recorded", before the close
 *       returns (the daemon's last step after SIGTERM, so before the process
 *       exits).
 *
 *   RT6. Each create and advance carries its own evidence (ik__redis_script's
 *       proof). An advance that ran under unsafe evidence hands nothing out: its
 *       exact range is logged "tag gap ... why=store_unsafe" and the call answers
 *       IK_EUNSAFE (503, -TRYAGAIN). A counter key with a TTL is refused at create
 *       and at every advance, before anything is written: it would expire and an
 *       app's INCR would start it again at 1.
 *
 * A doubt's life (edges name the functions):
 *
 *   advance answers IK_EINDOUBT --keep_doubts--> KEPT --take_doubts (next advance)-->
 *     CARRIED --script ran (code 0): settle--> logged: a gap, settled, or first=?
 *        |--script not run, or its answer lost: keep_doubts--> KEPT
 *   KEPT --a tag's TAG_KEPT+1-th doubt, or no memory: keep_doubts--> logged first=?
 *   KEPT --stop: ik__redis_settle, TAG_SETTLE answered--> logged as by settle
 *        |--no answer by the deadline, or the store refused--> logged first=?
 *
 * Threads: any; each call takes its own connection from the pool (redis_conn.c);
 * the doubts are under t->mu.
 */
#include "internal.h"
#include "redis_conn.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define KEY_MAX 512
#define TAG_TIMEOUT_MS 5000 /* one counter call waits this long for its answer */
/* Advances of a tag the writer key keeps, and doubts of a tag this object keeps. */
#define TAG_KEPT 16
#define WRITER_TTL_MS 600000 /* the writer key's TTL, from its last write */
/* A doubt older than this may have outlived the writer key (a tenth of the TTL
 * spares the difference between Redis's clock rate and ours). */
#define DOUBT_TRUST_NS ((int64_t)WRITER_TTL_MS * 900000)
#define LANES 64 /* advances in progress at once, at most (RT3a) */

/* One write in doubt. */
typedef struct tag_doubt {
    uint64_t seq;     /* its write number */
    int64_t delta;    /* the IDs it asked for */
    int64_t sent_ns;  /* ik__mono_ns() before it was sent */
    ik_tag_kind kind; /* of the advance */
} tag_doubt;

/* The writes of one (app, tag) in doubt, by seq (oldest first), until an advance of
 * the tag settles them. */
typedef struct tag_doubts {
    struct tag_doubts *next;
    char app[80], tag[IK_TAG_NAME_MAX + 1];
    int lane; /* the writer (RT3a) that sent them */
    int n;
    tag_doubt d[TAG_KEPT];
} tag_doubts;

struct ik__redis_tags {
    pthread_mutex_t mu;
    pthread_cond_t lane_cv;
    char nonce[33]; /* 30 random hex digits are ours; a lane's writer adds its own 2 */
    uint64_t seq;
    uint64_t lanes_busy; /* bit L: lane L is held by an advance (RT3a) */
    tag_doubts *doubts;
};

int ik__redis_tags_new(struct ik__redis_tags **out)
{
    struct ik__redis_tags *t = calloc(1, sizeof *t);
    if (!t) return IK_ENOMEM;
    unsigned char r[16];
    if (ik__random_bytes(r, sizeof r)) {
        free(t);
        return IK_ESTORE;
    }
    for (int i = 0; i < 16; i++)
        snprintf(t->nonce + 2 * i, 3, "%02x", r[i]);
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->lane_cv, NULL);
    *out = t;
    return IK_OK;
}

static void tags_free(struct ik__redis_tags *t)
{
    if (!t) return;
    while (t->doubts) {
        tag_doubts *g = t->doubts;
        t->doubts = g->next;
        free(g);
    }
    pthread_cond_destroy(&t->lane_cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

/* The writer key of lane on (app, name) into out (KEY_MAX): tagw/TAG/NONCE, NONCE
 * our 30 hex digits and the lane's 2 (the key's form is the one before lanes). */
static void writer_key(ik__redis_client *rc, const struct ik__redis_tags *t, const char *app,
                       const char *name, int lane, char *out)
{
    char sub[IK_TAG_NAME_MAX + 48];
    snprintf(sub, sizeof sub, "tagw/%s/%.30s%02x", name, t->nonce, (unsigned)lane & 0xff);
    ik__redis_key(rc, app, sub, out, KEY_MAX);
}

/* RT3a: a lane of its own for an advance of (app, name): a free one with doubts of
 * the tag kept (its advance carries them), else the lowest free; waits while all
 * are held. */
static int lane_get(struct ik__redis_tags *t, const char *app, const char *name)
{
    pthread_mutex_lock(&t->mu);
    while (t->lanes_busy == UINT64_MAX)
        pthread_cond_wait(&t->lane_cv, &t->mu);
    int lane = -1;
    for (tag_doubts *g = t->doubts; g && lane < 0; g = g->next)
        if (!(t->lanes_busy >> g->lane & 1) && !strcmp(g->app, app) && !strcmp(g->tag, name))
            lane = g->lane;
    for (int i = 0; lane < 0 && i < LANES; i++)
        if (!(t->lanes_busy >> i & 1)) lane = i;
    t->lanes_busy |= (uint64_t)1 << lane;
    pthread_mutex_unlock(&t->mu);
    return lane;
}

static void lane_put(struct ik__redis_tags *t, int lane)
{
    pthread_mutex_lock(&t->mu);
    t->lanes_busy &= ~((uint64_t)1 << lane);
    pthread_cond_signal(&t->lane_cv);
    pthread_mutex_unlock(&t->mu);
}

static void keys_of(ik__redis_client *rc, const char *app, const char *name, char *meta,
                    char *counter)
{
    char sub[IK_TAG_NAME_MAX + 8];
    snprintf(sub, sizeof sub, "tag/%s", name);
    ik__redis_key(rc, app, sub, meta, KEY_MAX);
    ik__redis_counter_key(rc, app, name, counter, KEY_MAX);
}

static int parse_i64(const char *s, int64_t *v)
{
    if (!s || !*s) return -1;
    char *e;
    errno = 0;
    long long x = strtoll(s, &e, 10);
    if (*e || errno) return -1;
    *v = (int64_t)x;
    return 0;
}

int ik__redis_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    char meta[KEY_MAX], counter[KEY_MAX], index[KEY_MAX];
    keys_of(rc, app, t->name, meta, counter);
    ik__redis_key(rc, app, "tags", index, sizeof index);
    char start[24], step[24], now[24], before[24];
    snprintf(start, sizeof start, "%" PRId64, t->start);
    snprintf(step, sizeof step, "%" PRId64, t->step);
    snprintf(now, sizeof now, "%" PRId64, t->update_time_ms);
    snprintf(before, sizeof before, "%" PRId64, t->max_id - 1);
    const char *keys[] = {meta, counter, index};
    const char *args[] = {t->name, ik_tag_kind_name(t->kind), start, step, t->description, now,
                          before};
    int e = IK_OK;
    redisContext *ctx = ik__redis_get_write(rc, TAG_TIMEOUT_MS, &e, why, why_len);
    if (!ctx) return e;
    redisReply *r = NULL;
    e = ik__redis_script(rc, ctx, IK__RS_TAG_CREATE, 3, keys, 7, args, 1, &r, NULL, why, why_len);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e == IK_EINDOUBT)
        e = ik__fail(IK_ESTORE, why, why_len, "tag %s: no answer from redis (it may exist now)",
                     t->name);
    if (e == IK_EUNSAFE) { /* RT6: it ran, but Redis may lose it */
        char inner[400];
        snprintf(inner, sizeof inner, "%s", why);
        e = ik__fail(IK_EUNSAFE, why, why_len,
                     "tag %s: written under a setting that can lose it (it may exist now): %s",
                     t->name, inner);
    }
    if (e) {
        if (r) freeReplyObject(r);
        return e;
    }
    long long code = r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
                             r->element[0]->type == REDIS_REPLY_INTEGER
                         ? r->element[0]->integer
                         : -100;
    if (code == -1)
        e = ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
    else if (code == -2)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s holds a %s, not an integer counter: pick another tag "
                     "name, or remove the key",
                     t->name, counter,
                     r->elements > 1 && r->element[1]->type == REDIS_REPLY_STRING
                         ? r->element[1]->str
                         : "value of another type");
    else if (code == -3)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s holds a string that is not an integer", t->name, counter);
    else if (code == -4)
        e = ik__fail(IK_ESTORE, why, why_len,
                     "tag %s: the key %s has a TTL: when it expires, an INCR starts it again "
                     "at 1 and IDs repeat; PERSIST it first (docs/redis.md, Adopting a key)",
                     t->name, counter);
    else if (code != 0)
        e = ik__fail(IK_ESTORE, why, why_len, "tag %s: the create script answered oddly", t->name);
    freeReplyObject(r);
    return e;
}

/* The tag's hash fields and counter, read in one round trip. */
static int read_tag(ik__redis_client *rc, redisContext *ctx, const char *app, const char *name,
                    ik_tag_info *out)
{
    char meta[KEY_MAX], counter[KEY_MAX];
    keys_of(rc, app, name, meta, counter);
    redisAppendCommand(ctx, "HMGET %s kind start step description update_time", meta);
    redisAppendCommand(ctx, "GET %s", counter);
    redisReply *h = NULL, *g = NULL;
    int e = IK_OK;
    if (redisGetReply(ctx, (void **)&h) != REDIS_OK || redisGetReply(ctx, (void **)&g) != REDIS_OK)
        e = IK_EINDOUBT; /* the connection is broken; a read changes nothing */
    else if (h->type != REDIS_REPLY_ARRAY || h->elements != 5)
        e = IK_ESTORE; /* WRONGTYPE: the key is not our hash */
    else if (h->element[0]->type != REDIS_REPLY_STRING)
        e = IK_ENOTFOUND;
    if (!e) {
        memset(out, 0, sizeof *out);
        snprintf(out->name, sizeof out->name, "%s", name);
        if (ik_tag_kind_parse(h->element[0]->str, &out->kind)) e = IK_ESTORE;
        parse_i64(h->element[1]->str, &out->start);
        parse_i64(h->element[2]->str, &out->step);
        if (h->element[3]->type == REDIS_REPLY_STRING)
            snprintf(out->description, sizeof out->description, "%s", h->element[3]->str);
        parse_i64(h->element[4]->str, &out->update_time_ms);
        int64_t v;
        if (g->type == REDIS_REPLY_STRING && parse_i64(g->str, &v) == 0 && v < INT64_MAX)
            out->max_id = v + 1;
        else
            e = IK_ESTORE; /* the counter is gone or not an integer */
    }
    if (h) freeReplyObject(h);
    if (g) freeReplyObject(g);
    return e;
}

int ik__redis_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    char why[300];
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, TAG_TIMEOUT_MS, &e, why, sizeof why);
    if (!ctx) return e;
    e = read_tag(rc, ctx, app, name, out);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    return e == IK_EINDOUBT ? IK_ESTORE : e;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ik_tag_info *)a)->name, ((const ik_tag_info *)b)->name);
}

int ik__redis_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n_out)
{
    ik__redis_client *rc = &ik__redis_backend_of(be)->rc;
    *out = NULL;
    *n_out = 0;
    char why[300], index[KEY_MAX];
    int e = IK_OK;
    redisContext *ctx = ik__redis_get(rc, TAG_TIMEOUT_MS, &e, why, sizeof why);
    if (!ctx) return e;
    ik__redis_key(rc, app, "tags", index, sizeof index);
    redisReply *r = redisCommand(ctx, "SMEMBERS %s", index);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r) freeReplyObject(r);
        ik__redis_put(rc, ctx, 1);
        return IK_ESTORE;
    }
    ik_tag_info *v = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < r->elements && !e; i++) {
        if (r->element[i]->type != REDIS_REPLY_STRING) continue;
        if (ik_tag_name_check(r->element[i]->str, NULL, 0)) continue;
        if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
            e = IK_ENOMEM;
            break;
        }
        int g = read_tag(rc, ctx, app, r->element[i]->str, &v[n]);
        if (g == 0)
            n++;
        else if (g != IK_ENOTFOUND)
            e = g;
    }
    freeReplyObject(r);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    if (e) {
        free(v);
        return e == IK_EINDOUBT ? IK_ESTORE : e;
    }
    if (n) qsort(v, n, sizeof *v, by_name);
    *out = v;
    *n_out = n;
    return IK_OK;
}

/* Takes every doubt of (app, name) out of t into d (room for TAG_KEPT), oldest
 * first; returns how many. */
static int take_doubts(struct ik__redis_tags *t, const char *app, const char *name, int lane,
                       tag_doubt *d)
{
    int n = 0;
    pthread_mutex_lock(&t->mu);
    for (tag_doubts **pp = &t->doubts; *pp; pp = &(*pp)->next) {
        tag_doubts *g = *pp;
        if (g->lane == lane && !strcmp(g->app, app) && !strcmp(g->tag, name)) {
            n = g->n;
            memcpy(d, g->d, (size_t)n * sizeof *d);
            *pp = g->next;
            free(g);
            break;
        }
    }
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* Logs the gap of a range that cannot be placed (RT4): never silently. */
#define MAYBE_RECORDED "a write whose answer was lost may have recorded them, "
static void log_unplaced(const char *app, const char *name, const tag_doubt *d, const char *why)
{
    ik__tag_gap(app, name, d->kind, -1, d->delta, "maybe_recorded", "%s", why);
}

/* Keeps the n doubts d of (app, name) for the tag's next advance, among those kept
 * already, by seq. A tag that would hold more than TAG_KEPT loses its oldest, and
 * one that cannot (no memory) the new ones: each logged as a gap of unknown place. */
static void keep_doubts(struct ik__redis_tags *t, const char *app, const char *name, int lane,
                        const tag_doubt *d, int n)
{
    if (n == 0) return;
    tag_doubt out[TAG_KEPT + 1];
    int nout = 0;
    pthread_mutex_lock(&t->mu);
    tag_doubts *g = t->doubts;
    while (g && (g->lane != lane || strcmp(g->app, app) || strcmp(g->tag, name)))
        g = g->next;
    if (!g && (g = calloc(1, sizeof *g)) != NULL) {
        snprintf(g->app, sizeof g->app, "%s", app);
        snprintf(g->tag, sizeof g->tag, "%s", name);
        g->lane = lane;
        g->next = t->doubts;
        t->doubts = g;
    }
    for (int i = 0; i < n; i++) {
        if (!g) {
            out[nout++] = d[i];
            continue;
        }
        int at = g->n;
        while (at > 0 && g->d[at - 1].seq > d[i].seq)
            at--;
        if (g->n == TAG_KEPT) {
            if (at == 0) { /* older than all it holds: this one goes */
                out[nout++] = d[i];
                continue;
            }
            out[nout++] = g->d[0];
            memmove(g->d, g->d + 1, (size_t)(at - 1) * sizeof *g->d);
            g->d[at - 1] = d[i];
            continue;
        }
        memmove(g->d + at + 1, g->d + at, (size_t)(g->n - at) * sizeof *g->d);
        g->d[at] = d[i];
        g->n++;
    }
    pthread_mutex_unlock(&t->mu);
    char why[160];
    snprintf(why, sizeof why, MAYBE_RECORDED "and %d later writes of the tag are in doubt too",
             TAG_KEPT);
    for (int i = 0; i < nout; i++)
        log_unplaced(app, name, &out[i],
                     g ? why : MAYBE_RECORDED "and there was no memory to keep its doubt");
}

/* Settles doubt d (RT4) from what the advance just run answered: found, the value
 * its SEQ recorded ("" if the ring does not hold it; NULL: no answer for it), and
 * floor, the ring's floor before. */
static void settle(const char *app, const char *name, const tag_doubt *d, const redisReply *found,
                   uint64_t floor, int64_t now_ns)
{
    int64_t v;
    if (found && found->type == REDIS_REPLY_STRING && found->len > 0) {
        if (!parse_i64(found->str, &v))
            ik__tag_gap(app, name, d->kind, v - d->delta + 1, d->delta, "answer_lost",
                        "a write whose answer was lost was recorded");
        else
            log_unplaced(
                app, name, d,
                "a write whose answer was lost recorded them, but its record is not a number");
    } else if (!found || found->type != REDIS_REPLY_STRING) {
        log_unplaced(app, name, d, MAYBE_RECORDED "and the advance that settles it answered oddly");
    } else if (d->seq <= floor) {
        char why[160];
        snprintf(why, sizeof why,
                 MAYBE_RECORDED "and %d later writes of the tag pushed its record out", TAG_KEPT);
        log_unplaced(app, name, d, why);
    } else if (now_ns - d->sent_ns >= DOUBT_TRUST_NS) {
        log_unplaced(app, name, d, MAYBE_RECORDED "and its record may have expired since");
    } else {
        ik__logf("tag doubt settled tag=%s count=%" PRId64
                 " (app %s): the write whose answer was lost was not recorded and never will be",
                 name, d->delta, app);
    }
}

static int advance_on(ik__redis_backend *b, const char *app, const char *name, ik_tag_kind kind,
                      int64_t delta, int lane, int64_t *first);

int ik__redis_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first)
{
    int64_t delta = w->own.delta;
    ik__redis_backend *b = ik__redis_backend_of(be);
    int lane = lane_get(b->tags, app, name); /* RT3a */
    int e = advance_on(b, app, name, kind, delta, lane, first);
    lane_put(b->tags, lane);
    return e;
}

/* The advance of ik__redis_tag_advance, as the writer of lane (RT3a). */
static int advance_on(ik__redis_backend *b, const char *app, const char *name, ik_tag_kind kind,
                      int64_t delta, int lane, int64_t *first)
{
    ik__redis_client *rc = &b->rc;
    char meta[KEY_MAX], counter[KEY_MAX], writer[KEY_MAX], why[400];
    keys_of(rc, app, name, meta, counter);
    writer_key(rc, b->tags, app, name, lane, writer);
    tag_doubt carried[TAG_KEPT];
    int nc = take_doubts(b->tags, app, name, lane, carried); /* RT4: all of the lane's */
    pthread_mutex_lock(&b->tags->mu);
    uint64_t seq = ++b->tags->seq;
    pthread_mutex_unlock(&b->tags->mu);
    char dl[24], now[24], limit[24], seqs[24], doubts[TAG_KEPT * 22 + 1] = "", ring[8], ttl[16];
    snprintf(dl, sizeof dl, "%" PRId64, delta);
    snprintf(now, sizeof now, "%" PRId64, ik__wall_ms());
    snprintf(limit, sizeof limit, "%" PRId64, INT64_MAX - 1 - delta);
    snprintf(seqs, sizeof seqs, "%" PRIu64, seq);
    for (int i = 0, at = 0; i < nc; i++)
        at += snprintf(doubts + at, sizeof doubts - (size_t)at, "%s%" PRIu64, i ? " " : "",
                       carried[i].seq);
    snprintf(ring, sizeof ring, "%d", TAG_KEPT);
    snprintf(ttl, sizeof ttl, "%d", WRITER_TTL_MS);
    const char *keys[] = {meta, counter, writer};
    const char *args[] = {ik_tag_kind_name(kind), dl, now, limit, seqs, doubts, ring, ttl};
    int e = IK_OK, waited = 0;
    /* IK_EUNSAFE: a store hazard is refused (docs/hazards.md), nothing sent */
    redisContext *ctx = ik__redis_get_write(rc, TAG_TIMEOUT_MS, &e, why, sizeof why);
    if (!ctx) {
        keep_doubts(b->tags, app, name, lane, carried, nc);
        ik__redis_log_limited(rc, "tag %s: %s", name, why);
        return e;
    }
    tag_doubt own = {seq, delta, ik__mono_ns(), kind};
    redisReply *r = NULL;
    e = ik__redis_script(rc, ctx, IK__RS_TAG_ADVANCE, 3, keys, 8, args, 1, &r, &waited, why,
                         sizeof why);
    ik__redis_put(rc, ctx, e == IK_EINDOUBT);
    long long code = -100;
    if ((!e || e == IK_EUNSAFE) && r && r->type == REDIS_REPLY_ARRAY && r->elements >= 1 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        code = r->element[0]->integer;
    if (code == 0) { /* RT4: it ran, so every doubt it carried is settled */
        uint64_t floor = 0;
        if (r->elements >= 3 && r->element[2]->type == REDIS_REPLY_STRING)
            floor = strtoull(r->element[2]->str, NULL, 10);
        int64_t now_ns = ik__mono_ns();
        for (size_t i = 0; i < (size_t)nc; i++)
            settle(app, name, &carried[i], 3 + i < r->elements ? r->element[3 + i] : NULL, floor,
                   now_ns);
    } else {
        keep_doubts(b->tags, app, name, lane, carried, nc); /* not settled yet */
    }
    if (e == IK_EUNSAFE) { /* RT6: ran under unsafe evidence: never handed out */
        int64_t v;
        if (code == 0 && r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING &&
            !parse_i64(r->element[1]->str, &v))
            ik__tag_gap(app, name, kind, v - delta + 1, delta, "store_unsafe", "%s", why);
        else if (code == 0)
            log_unplaced(app, name, &own, "recorded under unsafe store settings");
        ik__redis_log_limited(rc, "tag %s: %s", name, why);
        freeReplyObject(r);
        return IK_EUNSAFE;
    }
    if (e == IK_EINDOUBT || (code == 0 && waited < rc->wait_replicas)) {
        /* RT2: maybe (or surely, but not replicated) recorded: never handed out */
        if (code == 0 && waited < rc->wait_replicas) {
            int64_t v;
            if (r->elements >= 2 && r->element[1]->type == REDIS_REPLY_STRING &&
                !parse_i64(r->element[1]->str, &v))
                ik__tag_gap(app, name, kind, v - delta + 1, delta, "not_replicated",
                            "recorded, but WAIT counted %d of %d replicas in time", waited,
                            rc->wait_replicas);
            else
                log_unplaced(app, name, &own,
                             "a write recorded them, but its answer held no counter value");
        } else {
            keep_doubts(b->tags, app, name, lane, &own, 1);
            ik__redis_log_limited(rc, "tag %s: an advance is in doubt: %s", name, why);
        }
        if (r) freeReplyObject(r);
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
            !parse_i64(r->element[1]->str, &v)) {
            *first = v - delta + 1;
            e = IK_OK;
        } else { /* recorded, but where? */
            log_unplaced(app, name, &own,
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
    default: /* -7: an advance of this object with a later seq ran first; this one did not */
        e = IK_ESTORE;
        break;
    }
    freeReplyObject(r);
    return e;
}

/* RT5: one tag's doubts by one lane at close, settled by TAG_SETTLE by deadline_ns
 * (mono ns), or logged as gaps of unknown place; with refused set (the checks refuse
 * the store, or could not ask it: backend.h's settle), logged without a word to the
 * store. */
static void settle_at_close(ik__redis_backend *b, const tag_doubts *g, int64_t deadline_ns,
                            const char *refused)
{
    ik__redis_client *rc = &b->rc;
    char writer[KEY_MAX], why[400];
    snprintf(why, sizeof why, "%s", refused ? refused : "the deadline had passed");
    writer_key(rc, b->tags, g->app, g->tag, g->lane, writer);
    char seqs[24], doubts[TAG_KEPT * 22 + 1] = "", ring[8], ttl[16];
    snprintf(seqs, sizeof seqs, "%" PRIu64, ++b->tags->seq); /* above every one sent */
    for (int i = 0, at = 0; i < g->n; i++)
        at += snprintf(doubts + at, sizeof doubts - (size_t)at, "%s%" PRIu64, i ? " " : "",
                       g->d[i].seq);
    snprintf(ring, sizeof ring, "%d", TAG_KEPT);
    snprintf(ttl, sizeof ttl, "%d", WRITER_TTL_MS);
    const char *keys[] = {writer};
    const char *args[] = {seqs, doubts, ring, ttl};
    redisReply *r = NULL;
    int64_t left_ms = (deadline_ns - ik__mono_ns()) / 1000000;
    if (!refused && left_ms > 0) {
        int e = IK_OK;
        /* a write (the fence): nothing is sent while a store hazard is refused */
        redisContext *ctx = ik__redis_get_write(rc, left_ms, &e, why, sizeof why);
        if (ctx) {
            e = ik__redis_script(rc, ctx, IK__RS_TAG_SETTLE, 1, keys, 4, args, 0, &r, NULL, why,
                                 sizeof why);
            ik__redis_put(rc, ctx, e == IK_EINDOUBT);
        }
        if (e && r) {
            freeReplyObject(r);
            r = NULL;
        }
        if (r && (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
                  r->element[0]->type != REDIS_REPLY_STRING)) {
            snprintf(why, sizeof why, "the settling script answered oddly");
            freeReplyObject(r);
            r = NULL;
        }
    }
    if (!r) {
        char line[600];
        snprintf(line, sizeof line,
                 MAYBE_RECORDED "and it was still open at close, not settled (%s)", why);
        for (int i = 0; i < g->n; i++)
            log_unplaced(g->app, g->tag, &g->d[i], line);
        return;
    }
    uint64_t floor = strtoull(r->element[0]->str, NULL, 10);
    int64_t now_ns = ik__mono_ns();
    for (int i = 0; i < g->n; i++)
        settle(g->app, g->tag, &g->d[i], 1 + (size_t)i < r->elements ? r->element[1 + i] : NULL,
               floor, now_ns);
    freeReplyObject(r);
}

void ik__redis_settle(ik__backend *be, int64_t deadline_ns, const char *refused)
{
    ik__redis_backend *b = ik__redis_backend_of(be);
    if (!b->tags) return;
    pthread_mutex_lock(&b->tags->mu);
    tag_doubts *all = b->tags->doubts; /* RT5: no other call runs now */
    b->tags->doubts = NULL;
    pthread_mutex_unlock(&b->tags->mu);
    while (all) {
        tag_doubts *g = all;
        all = g->next;
        settle_at_close(b, g, deadline_ns, refused);
        free(g);
    }
}

int ik__redis_doubts(ik__backend *be)
{
    ik__redis_backend *b = ik__redis_backend_of(be);
    if (!b->tags) return 0;
    int n = 0;
    pthread_mutex_lock(&b->tags->mu);
    for (tag_doubts *g = b->tags->doubts; g; g = g->next)
        n += g->n;
    pthread_mutex_unlock(&b->tags->mu);
    return n;
}

void ik__redis_tags_close(ik__redis_backend *b)
{
    if (!b->tags) return;
    ik__redis_settle(&b->base, ik__mono_ns() + (int64_t)IK__SETTLE_MS * 1000000, NULL);
    tags_free(b->tags);
    b->tags = NULL;
}
