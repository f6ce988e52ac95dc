/* doubt.c: the doubt engine, the one place where counter writes whose answer was
 * lost are kept, carried, settled and logged, for every backend (docs/architecture.md,
 * "Doubts"; docs/guarantees.md, promise 7 and 13).
 *
 * A write is in doubt when it was sent and no answer says whether it landed: its
 * range is never handed out (the caller gets IK_EINDOUBT), and the range may or may
 * not be recorded in the store. Each write carries a writer id and a write id, and
 * the store keeps a record of them (Redis and etcd: a ring of the writer's last
 * write ids and first IDs; SQL: the writer's commit mark; ZooKeeper: the writer
 * table in the node). A backend reads that record and reports what it holds, its
 * evidence (backend.h's ik__doubt_evidence); this file decides, and owns everything
 * else:
 *
 *   D1. Write ids. Every advance carries a new write id, increasing over the coord.
 *   D2. Recording before sending. The advance's write is described (ik__tag_write's
 *       own) before the backend is called; whatever the call answers, the write ends
 *       either handed out (0), certainly not done (an error), with the fate its
 *       evidence decides (ik__tag_write's own_ev, D7), or kept as a doubt
 *       (IK_EINDOUBT).
 *   D3. Lanes. A tag has up to ops->tag_lanes writers at once; each advance holds a
 *       lane (its writer id) for the whole call, so one writer's writes reach the
 *       store one after another, and two committers of one coord never take each
 *       other's writes for their own. A free lane with doubts of the tag is taken
 *       first: its advance carries them to the store, which settles them.
 *   D4. The table. A tag's lane keeps at most IK__DOUBT_LANE_MAX doubts, oldest
 *       first; the oldest of one more is logged as a possible gap (D5) and forgotten.
 *   D5. Every fate is logged here, and only here: landed, a gap at its exact range
 *       ("tag gap tag=T first=A count=K why=answer_lost", through ik__tag_gap, which
 *       also counts it for the metrics); not landed, "tag doubt settled"; unknown, a
 *       gap "why=maybe_recorded", at the place it would have where the write fixed
 *       it (the doubt's first: a version-checked write), else "first=?". No doubt
 *       ends without a line.
 *   D6. The stop (ik__doubts_settle): the advances in flight end first (by the stop's
 *       deadline, when the coord's cut ends them), then each tag's lane with doubts
 *       gets one tag_settle, unless the store's checks refuse it or the deadline has
 *       passed: then each doubt is logged as a possible gap with that reason, and
 *       nothing is sent. What is still open after it is logged the same way.
 *   D7. One rule decides every fate (ik__doubt_judge), from the evidence alone, in
 *       this order: the write's pair held (its own answer said it ran, or the
 *       store's record has it): LANDED, a gap, handed out only where it is an own
 *       write read back within its call, trusted; a write of ours landed at its
 *       version (fenced): NOT_LANDED; the record not whole: UNKNOWN; its version not
 *       moved on: pending, kept until a write fences it (at the stop: UNKNOWN); the
 *       record not reaching back to it, or the write older than the trust horizon
 *       (IK__DOUBT_TRUST_MS, by our clock or the store's): UNKNOWN; else NOT_LANDED.
 *       No backend decides a fate or keeps a horizon of its own.
 *
 * Threads: any. One mutex guards the table; no I/O is done under it.
 */
#include "backend.h"
#include "doubt.h"
#include "internal.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KEPT IK__DOUBT_LANE_MAX /* doubts of one tag's lane (D4) */
#define BUCKETS 64              /* of the tag table */

/* The open doubts of one lane of one tag, oldest (lowest wid) first. */
typedef struct lane_doubts {
    struct lane_doubts *next;
    int lane;
    int n;
    ik__doubt d[KEPT];
} lane_doubts;

/* One tag the coord has advanced. */
typedef struct tag_entry {
    struct tag_entry *next;
    char app[IK__APP_NAME_MAX + 1];
    char tag[IK_TAG_NAME_MAX + 1];
    uint64_t busy; /* bit L: lane L is held by an advance or the stop (D3) */
    lane_doubts *open;
    char why[300]; /* the store's words of its last advance, if that failed */
} tag_entry;

struct ik__doubts {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a lane was put back */
    char nonce[31];    /* 30 random hex digits: this coord's part of every writer id */
    uint64_t wid;      /* the last write id given (D1) */
    int n_open;        /* doubts kept */
    int in_flight;     /* advances between lane_get and lane_put */
    tag_entry *bucket[BUCKETS];
};

int ik__doubts_new(ik__doubts **out)
{
    unsigned char r[15];
    /* a writer id another coord could guess would let it settle our writes as its
     * own: no randomness is an error, never a clock seed */
    if (ik__random_bytes(r, sizeof r)) return IK_ESTORE;
    ik__doubts *d = calloc(1, sizeof *d);
    if (!d) return IK_ENOMEM;
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(d->nonce + 2 * i, 3, "%02x", r[i]);
    pthread_mutex_init(&d->mu, NULL);
    ik__cond_init_mono(&d->cv);
    *out = d;
    return IK_OK;
}

/* The entry of (app, tag), made if absent (NULL: no memory). Caller holds mu. */
static tag_entry *entry_of(ik__doubts *d, const char *app, const char *tag)
{
    tag_entry **head = &d->bucket[ik__tag_hash(app, tag) % BUCKETS];
    for (tag_entry *e = *head; e; e = e->next)
        if (!strcmp(e->tag, tag) && !strcmp(e->app, app)) return e;
    tag_entry *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    snprintf(e->app, sizeof e->app, "%s", app);
    snprintf(e->tag, sizeof e->tag, "%s", tag);
    e->next = *head;
    *head = e;
    return e;
}

/* ---- the rule (D7) ---------------------------------------------------------------- */

#define MAYBE "a write whose answer was lost may have recorded them: "

void ik__doubt_judge(const ik__doubt *x, const ik__doubt_evidence *e, int64_t now_ns, int at_stop,
                     ik__doubt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->first = -1;
    const char *what = e->what;
    int64_t ours_ms = (now_ns - x->sent_ns) / 1000000;
    if (!e->read) {
        v->fate = IK__DOUBT_OPEN; /* nothing read: nothing said */
    } else if (e->held) {
        v->fate = IK__DOUBT_LANDED;
        v->first = e->first >= 0 ? e->first : x->first;
        v->code = e->code;
        snprintf(v->why, sizeof v->why, "%s%s",
                 e->code ? "" : "the write whose answer was lost landed: ",
                 *what ? what : "its write id is in the store's record");
    } else if (e->fenced) {
        v->fate = IK__DOUBT_NOT_LANDED;
        snprintf(v->why, sizeof v->why,
                 "the write whose answer was lost did not land, and never will: a later write "
                 "of ours landed at the version it was made at (%s)",
                 what);
    } else if (!e->intact) {
        v->fate = IK__DOUBT_UNKNOWN;
        snprintf(v->why, sizeof v->why, MAYBE "the store's record of its writer is not whole (%s)",
                 what);
    } else if (!e->moved) { /* pending: the version it was made at is still the store's */
        v->fate = at_stop ? IK__DOUBT_UNKNOWN : IK__DOUBT_OPEN;
        snprintf(v->why, sizeof v->why,
                 MAYBE "it may land yet, and nothing fences it at the stop (%s)", what);
    } else if (!e->reaches) {
        v->fate = IK__DOUBT_UNKNOWN;
        snprintf(v->why, sizeof v->why,
                 MAYBE "the store's record no longer reaches back to it (%s)", what);
    } else if (ours_ms >= IK__DOUBT_TRUST_MS || e->age_ms >= IK__DOUBT_TRUST_MS) {
        v->fate = IK__DOUBT_UNKNOWN;
        snprintf(v->why, sizeof v->why,
                 MAYBE "it is older than the store is trusted to keep its record (%s)", what);
    } else {
        v->fate = IK__DOUBT_NOT_LANDED;
        snprintf(v->why, sizeof v->why,
                 "the write whose answer was lost did not land, and never will (%s)", what);
    }
}

/* ik__tag_write's judge: the rule, now, during an advance. */
static ik__doubt_fate judge_now(const ik__doubt *x, const ik__doubt_evidence *e)
{
    ik__doubt_verdict v;
    ik__doubt_judge(x, e, ik__mono_ns(), 0, &v);
    return v.fate;
}

/* ---- the lines (D5) ------------------------------------------------------------ */

static void log_fate(const char *app, const char *tag, const ik__doubt *x,
                     const ik__doubt_verdict *v)
{
    int64_t first = v->first >= 0 ? v->first : x->first;
    switch (v->fate) {
    case IK__DOUBT_LANDED:
        ik__tag_gap(app, tag, x->kind, first, x->delta,
                    v->code      ? v->code
                    : first >= 0 ? "answer_lost"
                                 : "maybe_recorded",
                    "%s", v->why[0] ? v->why : "a write whose answer was lost was recorded");
        break;
    case IK__DOUBT_NOT_LANDED: {
        char at[40] = ""; /* where it would have been, where the write fixed it */
        if (x->first >= 0) snprintf(at, sizeof at, " first=%" PRId64, x->first);
        ik__logf("tag doubt settled tag=%s%s count=%" PRId64 " (app %s): %s", tag, at, x->delta,
                 app,
                 v->why[0] ? v->why
                           : "the write whose answer was lost was not recorded and never will be");
        break;
    }
    case IK__DOUBT_UNKNOWN: /* at the place it would have, where the write fixed it */
        ik__tag_gap(app, tag, x->kind, x->first, x->delta, v->code ? v->code : "maybe_recorded",
                    "%s",
                    v->why[0] ? v->why : "a write whose answer was lost may have recorded them");
        break;
    case IK__DOUBT_OPEN:
        break;
    }
}

/* The own write of an advance, its answer lost, read back within the call as landed
 * and handed out (ik__tag_write's own_ev). */
static void log_reread(const char *app, const char *tag, const ik__doubt *x,
                       const ik__doubt_verdict *v)
{
    ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64 " (app %s): %s", tag,
             v->first >= 0 ? v->first : x->first, x->delta, app,
             v->why[0] ? v->why : "the write whose answer was lost landed: handed out");
}

/* A doubt that will never be read again: a gap of unknown place, with why. */
static void log_unplaced(const char *app, const char *tag, const ik__doubt *x, const char *why)
{
    /* as log_fate's UNKNOWN, with why whole: a refusal's reason alone can fill a
     * verdict's why */
    ik__tag_gap(app, tag, x->kind, x->first, x->delta, "maybe_recorded",
                "a write whose answer was lost may have recorded them, %s", why);
}

/* ---- lanes (D3) and the table (D4) ----------------------------------------------- */

static uint64_t lanes_mask(const ik__backend *be)
{
    int n = be->ops->tag_lanes;
    if (n < 1) n = 1;
    return n >= 64 ? UINT64_MAX : ((uint64_t)1 << n) - 1;
}

/* Takes a lane of e for an advance (D3) and moves its doubts into carried (at most
 * KEPT); returns the lane, its doubts' count in *n. Caller holds mu. */
static int lane_take(ik__doubts *d, tag_entry *e, uint64_t all, ik__doubt *carried, int *n)
{
    while ((e->busy & all) == all)
        pthread_cond_wait(&d->cv, &d->mu);
    int lane = -1;
    lane_doubts **pp = &e->open, *g = NULL;
    for (; *pp; pp = &(*pp)->next)
        if (!(e->busy >> (*pp)->lane & 1)) {
            g = *pp;
            lane = g->lane;
            *pp = g->next;
            break;
        }
    for (int i = 0; lane < 0; i++)
        if (!(e->busy >> i & 1)) lane = i;
    e->busy |= (uint64_t)1 << lane;
    d->in_flight++;
    *n = 0;
    if (g) {
        *n = g->n;
        memcpy(carried, g->d, (size_t)g->n * sizeof *g->d);
        d->n_open -= g->n;
        free(g);
    }
    return lane;
}

/* Puts lane back with the doubts keep[0..n) still open (D4), and wakes a waiter.
 * What the table cannot hold goes into out (*nout), to be logged by the caller. */
static void lane_put(ik__doubts *d, tag_entry *e, int lane, const ik__doubt *keep, int n,
                     ik__doubt *out, int *nout, int *nomem)
{
    *nout = 0;
    *nomem = 0;
    lane_doubts *g = NULL;
    if (n > 0) {
        for (g = e->open; g && g->lane != lane; g = g->next)
            ;
        if (!g && (g = calloc(1, sizeof *g)) != NULL) {
            g->lane = lane;
            g->next = e->open;
            e->open = g;
        }
    }
    for (int i = 0; i < n; i++) {
        if (!g) {
            out[(*nout)++] = keep[i];
            *nomem = 1;
            continue;
        }
        int at = g->n;
        while (at > 0 && g->d[at - 1].wid > keep[i].wid)
            at--;
        if (g->n == KEPT) { /* the oldest goes: this one, or the table's */
            if (at == 0) {
                out[(*nout)++] = keep[i];
                continue;
            }
            out[(*nout)++] = g->d[0];
            memmove(g->d, g->d + 1, (size_t)(at - 1) * sizeof *g->d);
            g->d[at - 1] = keep[i];
            continue;
        }
        memmove(g->d + at + 1, g->d + at, (size_t)(g->n - at) * sizeof *g->d);
        g->d[at] = keep[i];
        g->n++;
        d->n_open++;
    }
    e->busy &= ~((uint64_t)1 << lane);
    d->in_flight--;
    pthread_cond_broadcast(&d->cv);
}

static void writer_of(const ik__doubts *d, int lane, char out[33])
{
    snprintf(out, 33, "%.30s%02x", d->nonce, (unsigned)lane & 0xff);
}

/* Decides w's carried doubts by their evidence (D7): logs the decided ones and
 * returns, in keep, the open ones with the own write appended if it is kept (D2,
 * D5). */
static int sort_fates(const char *app, const char *tag, const ik__tag_write *w, int own_kept,
                      ik__doubt *keep)
{
    int n = 0;
    int64_t now = ik__mono_ns();
    for (int i = 0; i < w->n_carried; i++) {
        ik__doubt_verdict v;
        ik__doubt_judge(&w->carried[i], &w->ev[i], now, 0, &v);
        if (v.fate == IK__DOUBT_OPEN)
            keep[n++] = w->carried[i];
        else
            log_fate(app, tag, &w->carried[i], &v);
    }
    if (own_kept) keep[n++] = w->own;
    return n;
}

/* Decides the advance's own write by what the backend learned of it beyond its
 * answer (D2, D7): rc, changed where the evidence decides the call (read back as
 * landed and trusted: IK_OK and *first, handed out; as never landing: IK_ESTORE);
 * *kept 1 if the engine keeps it as a doubt. */
static int own_fate(const char *app, const char *tag, const ik__tag_write *w, int rc,
                    int64_t *first, int *kept)
{
    ik__doubt_verdict v;
    ik__doubt_judge(&w->own, &w->own_ev, ik__mono_ns(), 0, &v);
    *kept = 0;
    if (v.fate == IK__DOUBT_LANDED && !v.code && (rc == IK_EINDOUBT || rc == IK_OK)) {
        snprintf(v.why, sizeof v.why, "the write whose answer was lost landed: handed out (%s)",
                 w->own_ev.what[0] ? w->own_ev.what : "read back within its call");
        log_reread(app, tag, &w->own, &v); /* read back within the call: handed out */
        *first = v.first;
        return IK_OK;
    }
    if (v.fate == IK__DOUBT_OPEN) {
        *kept = rc == IK_EINDOUBT;
        return rc;
    }
    log_fate(app, tag, &w->own, &v); /* never handed out */
    return v.fate == IK__DOUBT_NOT_LANDED && rc == IK_EINDOUBT ? IK_ESTORE : rc;
}

static void put_back(ik__doubts *d, tag_entry *e, const ik__tag_write *w, const ik__doubt *keep,
                     int n)
{
    ik__doubt out[KEPT + 1];
    int nout, nomem;
    pthread_mutex_lock(&d->mu);
    lane_put(d, e, w->lane, keep, n, out, &nout, &nomem);
    pthread_mutex_unlock(&d->mu);
    char why[120];
    snprintf(why, sizeof why, "and %d later writes of the tag are in doubt too", KEPT);
    for (int i = 0; i < nout; i++)
        log_unplaced(e->app, e->tag, &out[i],
                     nomem ? "and there was no memory to keep its doubt" : why);
}

int ik__doubts_advance(ik__doubts *d, ik__backend *be, const char *app, const char *name,
                       ik_tag_kind kind, int64_t delta, int64_t *first)
{
    ik__doubt carried[KEPT], keep[KEPT + 1];
    ik__doubt_evidence ev[KEPT];
    ik__tag_write w;
    memset(&w, 0, sizeof w);
    pthread_mutex_lock(&d->mu);
    tag_entry *e = entry_of(d, app, name);
    if (!e) {
        pthread_mutex_unlock(&d->mu);
        return IK_ENOMEM; /* nothing sent */
    }
    w.lane = lane_take(d, e, lanes_mask(be), carried, &w.n_carried);
    w.own = (ik__doubt){.wid = ++d->wid, .delta = delta, .first = -1, .kind = kind};
    pthread_mutex_unlock(&d->mu);
    writer_of(d, w.lane, w.writer);
    memset(ev, 0, sizeof ev);
    w.carried = carried;
    w.ev = ev;
    w.judge = judge_now;
    w.own.sent_ns = ik__mono_ns(); /* D2: described before it is sent */
    int rc = be->ops->tag_advance(be, app, name, kind, &w, first);
    int own_kept = 0;
    rc = own_fate(app, name, &w, rc, first, &own_kept);
    pthread_mutex_lock(&d->mu);
    snprintf(e->why, sizeof e->why, "%s", rc == IK_OK ? "" : w.why);
    pthread_mutex_unlock(&d->mu);
    put_back(d, e, &w, keep, sort_fates(app, name, &w, own_kept, keep));
    return rc;
}

int ik__doubts_last_error(ik__doubts *d, const char *app, const char *name, char *why,
                          size_t why_len)
{
    if (why_len) why[0] = '\0';
    pthread_mutex_lock(&d->mu);
    tag_entry *e = d->bucket[ik__tag_hash(app, name) % BUCKETS];
    while (e && (strcmp(e->tag, name) || strcmp(e->app, app)))
        e = e->next;
    if (e && why_len) snprintf(why, why_len, "%s", e->why);
    pthread_mutex_unlock(&d->mu);
    return why_len && why[0];
}

int ik__doubts_open(ik__doubts *d)
{
    pthread_mutex_lock(&d->mu);
    int n = d->n_open + d->in_flight;
    pthread_mutex_unlock(&d->mu);
    return n;
}

/* Settles, or logs, the doubts of one tag's lane, which the stop holds (D6). */
static void settle_lane(ik__doubts *d, ik__backend *be, tag_entry *e, lane_doubts *g,
                        int64_t deadline_ns, const char *refused)
{
    ik__doubt_evidence ev[KEPT];
    memset(ev, 0, sizeof ev);
    ik__tag_write w;
    memset(&w, 0, sizeof w);
    w.lane = g->lane;
    writer_of(d, g->lane, w.writer);
    w.carried = g->d;
    w.n_carried = g->n;
    w.ev = ev;
    w.judge = judge_now;
    pthread_mutex_lock(&d->mu);
    w.own = (ik__doubt){.wid = ++d->wid, .first = -1}; /* a fence, where the store needs one */
    pthread_mutex_unlock(&d->mu);
    char hz[300];
    if (!refused && ik__hazards_refused(&be->hz, hz, sizeof hz) == IK_EUNSAFE) refused = hz;
    if (!refused && ik__mono_ns() < deadline_ns) {
        w.own.sent_ns = ik__mono_ns();
        be->ops->tag_settle(be, e->app, e->tag, &w, deadline_ns);
    }
    char why[400];
    snprintf(why, sizeof why, "and it was still open at close, not settled (%s)",
             refused ? refused : "no answer by the deadline");
    int64_t now = ik__mono_ns();
    for (int i = 0; i < g->n; i++) {
        ik__doubt_verdict v; /* D7 at the stop: a pending write is not fenced any more */
        ik__doubt_judge(&g->d[i], &ev[i], now, 1, &v);
        if (v.fate == IK__DOUBT_OPEN)
            log_unplaced(e->app, e->tag, &g->d[i], why);
        else
            log_fate(e->app, e->tag, &g->d[i], &v);
    }
}

void ik__doubts_settle(ik__doubts *d, ik__backend *be, int64_t deadline_ns, const char *refused)
{
    pthread_mutex_lock(&d->mu);
    while (d->in_flight > 0 && ik__mono_ns() < deadline_ns) { /* D6: they end first */
        struct timespec ts;
        ik__deadline_ts(&ts, (deadline_ns - ik__mono_ns()) / 1000000 + 1);
        pthread_cond_timedwait(&d->cv, &d->mu, &ts);
    }
    for (int b = 0; b < BUCKETS; b++) {
        for (tag_entry *e = d->bucket[b]; e; e = e->next) {
            lane_doubts **pp = &e->open;
            while (*pp) {
                lane_doubts *g = *pp;
                if (e->busy >> g->lane & 1) { /* still in flight past the deadline */
                    pp = &g->next;
                    continue;
                }
                *pp = g->next;
                e->busy |= (uint64_t)1 << g->lane; /* no advance of it meanwhile */
                d->n_open -= g->n;
                pthread_mutex_unlock(&d->mu);
                settle_lane(d, be, e, g, deadline_ns, refused);
                pthread_mutex_lock(&d->mu);
                e->busy &= ~((uint64_t)1 << g->lane);
                pthread_cond_broadcast(&d->cv);
                free(g);
                pp = &e->open; /* the list may have changed meanwhile */
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
}

void ik__doubts_free(ik__doubts *d)
{
    if (!d) return;
    for (int b = 0; b < BUCKETS; b++) {
        while (d->bucket[b]) {
            tag_entry *e = d->bucket[b];
            d->bucket[b] = e->next;
            while (e->open) { /* what the stop could not reach: never silently (D5) */
                lane_doubts *g = e->open;
                e->open = g->next;
                for (int i = 0; i < g->n; i++)
                    log_unplaced(e->app, e->tag, &g->d[i], "and it was still open at exit");
                free(g);
            }
            free(e);
        }
    }
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
}
