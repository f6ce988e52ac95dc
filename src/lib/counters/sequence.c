/* sequence.c: strictly increasing, gap-free sequence IDs with group commit.
 *
 * Requests queue per tag. A committer thread takes, for a tag, every request
 * queued so far, advances the tag's max_id in the store by their total in one
 * durable write, and hands each request its consecutive slice of the range, in
 * arrival order. Requests that arrive while that write is in flight wait for the
 * next one: under load each write carries many requests, so throughput grows with
 * concurrency while latency stays about one store write. Where the store places a
 * write before it commits (SQL's row lock), the next write of the tag is sent then,
 * and waits in the store while the first commits (docs/sequence.md, "Two writes in
 * flight").
 *
 * Invariants
 *   SQ1. An ID is handed out only after the write that advanced max_id past it was
 *       acknowledged as durable (the backend's tag_advance returned 0).
 *   SQ2. The ranges of one write are handed out whole: [first, first + total) is
 *       split among that write's requests without a hole, so across the fleet the IDs
 *       of a tag form one contiguous run, except for ranges whose requests were lost
 *       with a dying server (committed, never answered).
 *   SQ3. A write whose outcome is unknown (IK_EINDOUBT) hands out nothing; its range,
 *       if it was recorded, stays unused. The backend resolves doubt where it can
 *       (see zookeeper.md); a residual gap is reported in the logs.
 *   SQ4. A request withdrawn by ik_sequence_cancel() is in no write: the committer
 *       takes a tag's queue whole under s->mu, so a request is either still queued
 *       (and cancel unlinks it) or in the batch of a write (and cancel does not find
 *       it). A batch left empty by cancels writes nothing.
 *   SQ5. Up to s->depth writes of a tag are in flight (the backend's tag_in_flight),
 *       and a write is sent only once the tag's write before it is placed (the
 *       backend's placed call, or its return): the store orders the tag's writes as
 *       they were taken, so a later write's range lies above an earlier one's, or
 *       takes its place if the earlier one did not land.
 *   SQ6. A tag's writes are answered in the order they were taken (answered counts
 *       them): every range a committer hands out lies above the ones it handed out
 *       before, and a write behind one in doubt waits for that doubt's answer.
 *
 * A request's life (edges name the functions; the arrows under s->mu):
 *
 *   ik_sequence_next --> QUEUED --commit_tag takes the queue--> IN WRITE --placed-->
 *                          |           (SQ5)                       PLACED --write ends,
 *                          |                                       its turn (SQ6)--> cb called
 *                          +--ik_sequence_cancel--> WITHDRAWN (freed, cb never called)
 *
 * A tag is on the ready list while a write of it may start (ready_if_due): it has
 * requests queued, fewer than s->depth writes in flight, and none of them unplaced.
 *
 * Threads: ik_sequence_next() and ik_sequence_cancel() from any thread; callbacks
 * run on a committer (s->depth of them), one write's after another's in SQ6's order.
 */
#include "backend.h"
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct seq_req seq_req;
struct seq_req {
    seq_req *next;
    size_t n;
    ik_ids_cb cb;
    void *ctx;
    int64_t at_ns; /* IDKEEPER_BENCH_CYCLE: when it was queued (0: not timed) */
};

typedef struct seq_tag seq_tag;
struct seq_tag {
    seq_tag *next; /* s->tags */
    char name[IK_TAG_NAME_MAX + 1];
    seq_req *head, *tail;
    int ready; /* on s->ready list */
    seq_tag *rnext;
    int writing;       /* writes taken and not yet answered (SQ5) */
    int unplaced;      /* the newest of them is not placed yet: no write may follow */
    uint64_t taken;    /* writes taken so far: the next one's turn (SQ6) */
    uint64_t answered; /* writes answered so far: whose turn it is */
};

/* One write on its way, for the backend's placed call. */
typedef struct seq_write {
    ik_sequence *s;
    seq_tag *t;
    int placed;
} seq_write;

#define DEPTH_MAX 2 /* writes of one tag in flight at once (SQ5): a third waits anyway */

struct ik_sequence {
    ik_coord *c;
    char app[65];
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a tag is ready, or stop */
    pthread_cond_t turn; /* a write was answered (SQ6) */
    seq_tag *tags;       /* tags with queued requests or writes in flight */
    seq_tag *ready_head, *ready_tail;
    int stop;
    int depth; /* writes of a tag in flight at once, and committer threads (SQ5) */
    pthread_t committer[DEPTH_MAX];
    /* IDKEEPER_BENCH_CYCLE (benchmarks only, docs/sequence.md): the committer's
     * time, logged at destroy: requests and their ns queued before a batch took
     * them; batches, their ns in the store's write and in the callbacks */
    int timed;
    int64_t t_reqs, t_wait_ns, t_batches, t_write_ns, t_answer_ns;
};

static void *committer(void *arg);

int ik_sequence_create(ik_coord *c, const char *app, ik_sequence **out)
{
    if (!c || !out) return IK_EINVAL;
    if (!app) app = "default";
    if (ik__app_name_check(app, NULL, 0) != 0) return IK_EINVAL;
    ik_sequence *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    s->c = c;
    snprintf(s->app, sizeof s->app, "%s", app);
    const char *cyc = getenv("IDKEEPER_BENCH_CYCLE"); /* benchmarks only */
    s->timed = cyc && *cyc && strcmp(cyc, "0") != 0;
    int depth = ik__coord_backend(c)->ops->tag_in_flight;
    s->depth = depth < 1 ? 1 : depth > DEPTH_MAX ? DEPTH_MAX : depth;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->turn, NULL);
    for (int i = 0; i < s->depth; i++) {
        if (pthread_create(&s->committer[i], NULL, committer, s) == 0) continue;
        s->depth = i; /* those started stop at once: no request was queued */
        ik_sequence_destroy(s);
        return IK_ESYS(EAGAIN);
    }
    *out = s;
    return IK_OK;
}

/* Puts t on the ready list if a write of it may start now (SQ5). Caller holds mu. */
static void ready_if_due(ik_sequence *s, seq_tag *t)
{
    if (t->ready || !t->head || t->writing >= s->depth || t->unplaced) return;
    t->ready = 1;
    t->rnext = NULL;
    if (s->ready_tail)
        s->ready_tail->rnext = t;
    else
        s->ready_head = t;
    s->ready_tail = t;
    pthread_cond_signal(&s->cv);
}

int ik_sequence_next(ik_sequence *s, const char *tag, size_t n, ik_ids_cb cb, void *ctx)
{
    if (!s || !cb || n == 0 || n > 10000000 || ik_tag_name_check(tag, NULL, 0)) return IK_EINVAL;
    seq_req *r = malloc(sizeof *r);
    if (!r) return IK_ENOMEM;
    *r = (seq_req){NULL, n, cb, ctx, s->timed ? ik__mono_ns() : 0};
    pthread_mutex_lock(&s->mu);
    if (s->stop) {
        pthread_mutex_unlock(&s->mu);
        free(r);
        return IK_ECLOSED;
    }
    seq_tag *t;
    for (t = s->tags; t && strcmp(t->name, tag); t = t->next) {
    }
    if (!t) {
        t = calloc(1, sizeof *t);
        if (!t) {
            pthread_mutex_unlock(&s->mu);
            free(r);
            return IK_ENOMEM;
        }
        snprintf(t->name, sizeof t->name, "%s", tag);
        t->next = s->tags;
        s->tags = t;
    }
    if (t->tail)
        t->tail->next = r;
    else
        t->head = r;
    t->tail = r;
    ready_if_due(s, t);
    pthread_mutex_unlock(&s->mu);
    return IK_PENDING;
}

int ik_sequence_cancel(ik_sequence *s, const char *tag, ik_ids_cb cb, void *ctx)
{
    if (!s || !tag || !cb) return IK_EINVAL;
    int rc = IK_ENOTFOUND;
    pthread_mutex_lock(&s->mu);
    seq_tag *t;
    for (t = s->tags; t && strcmp(t->name, tag); t = t->next) {
    }
    seq_req *prev = NULL;
    for (seq_req *r = t ? t->head : NULL; r; prev = r, r = r->next) {
        if (r->cb != cb || r->ctx != ctx) continue;
        if (prev) {
            prev->next = r->next;
        } else {
            t->head = r->next;
        }
        if (t->tail == r) t->tail = prev;
        free(r);
        rc = IK_OK; /* t stays where it is; an empty queue commits nothing */
        break;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Removes t from s->tags and frees it once nothing refers to it any more: no
 * request queued, no write in flight, not on the ready list. Caller holds mu. */
static void drop_if_idle(ik_sequence *s, seq_tag *t)
{
    if (t->head || t->writing || t->ready) return;
    for (seq_tag **pp = &s->tags; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    free(t);
}

/* The backend's placed call (SQ5): the next write of the tag may be sent now. */
static void on_placed(void *arg)
{
    seq_write *w = arg;
    pthread_mutex_lock(&w->s->mu);
    w->placed = 1;
    w->t->unplaced = 0;
    ready_if_due(w->s, w->t);
    pthread_mutex_unlock(&w->s->mu);
}

/* Hands each request of batch its slice of [first, first + total) if rc is 0, else
 * rc; frees the batch. */
static void answer(seq_req *batch, int rc, int64_t first)
{
    int64_t *ids = NULL;
    size_t cap = 0;
    for (seq_req *r = batch, *nx; r; r = nx) {
        nx = r->next;
        int st = rc;
        if (rc == 0) {
            if (r->n > cap) {
                free(ids);
                cap = r->n;
                ids = malloc(cap * sizeof *ids);
            }
            if (ids) {
                for (size_t i = 0; i < r->n; i++)
                    ids[i] = first + (int64_t)i;
            } else {
                st = IK_ENOMEM; /* the range stays unused: a gap, never a duplicate */
                cap = 0;
            }
            first += (int64_t)r->n;
        }
        r->cb(r->ctx, st, st ? NULL : ids, st ? 0 : r->n);
        free(r);
    }
    free(ids);
}

/* One write of t: takes every request queued now (nothing when every one was
 * withdrawn), advances the store by their total, and answers them in the tag's turn
 * (SQ5, SQ6). Called and returns with mu held. */
static void commit_tag(ik_sequence *s, seq_tag *t)
{
    seq_req *batch = t->head;
    t->head = t->tail = NULL;
    if (!batch) {
        drop_if_idle(s, t);
        return;
    }
    uint64_t turn = t->taken++;
    t->writing++;
    t->unplaced = 1;
    seq_write w = {s, t, 0};
    pthread_mutex_unlock(&s->mu);

    int64_t total = 0, reqs = 0, wait_ns = 0, t0 = s->timed ? ik__mono_ns() : 0;
    for (seq_req *r = batch; r; r = r->next) {
        total += (int64_t)r->n;
        reqs++;
        wait_ns += s->timed ? t0 - r->at_ns : 0;
    }
    int64_t first = 0;
    int rc = ik__tag_advance(s->c, s->app, t->name, IK_TAG_SEQUENCE, total, on_placed, &w, &first);
    int64_t t1 = s->timed ? ik__mono_ns() : 0;

    pthread_mutex_lock(&s->mu);
    if (!w.placed) t->unplaced = 0; /* the write ended: it is its own place (SQ5) */
    ready_if_due(s, t);
    while (t->answered != turn)
        pthread_cond_wait(&s->turn, &s->mu);
    pthread_mutex_unlock(&s->mu);
    answer(batch, rc, first);
    pthread_mutex_lock(&s->mu);
    t->answered++;
    t->writing--;
    pthread_cond_broadcast(&s->turn);
    if (s->timed) {
        s->t_reqs += reqs;
        s->t_wait_ns += wait_ns;
        s->t_batches++;
        s->t_write_ns += t1 - t0;
        s->t_answer_ns += ik__mono_ns() - t1;
    }
    ready_if_due(s, t);
    drop_if_idle(s, t);
}

static void *committer(void *arg)
{
    ik_sequence *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (!s->stop && !s->ready_head)
            pthread_cond_wait(&s->cv, &s->mu);
        if (s->stop) break;
        seq_tag *t = s->ready_head;
        s->ready_head = t->rnext;
        if (!s->ready_head) s->ready_tail = NULL;
        t->ready = 0;
        commit_tag(s, t);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int ik_sequence_next_wait(ik_sequence *s, const char *tag, size_t n, int64_t *ids)
{
    ik__ids_waiter w;
    ik__ids_waiter_init(&w, ids);
    return ik__ids_waiter_finish(&w, ik_sequence_next(s, tag, n, ik__ids_waiter_cb, &w));
}

void ik_sequence_destroy(ik_sequence *s)
{
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->depth; i++) /* each ends its write first (SQ6) */
        pthread_join(s->committer[i], NULL);
    if (s->timed && s->t_batches)
        ik__logf("sequence batches: %" PRId64 " requests in %" PRId64 " batches (%.1f each), "
                 "queued %.0f us before their batch, the store's write %.0f us, the answers "
                 "handed on %.0f us a batch",
                 s->t_reqs, s->t_batches, (double)s->t_reqs / (double)s->t_batches,
                 (double)s->t_wait_ns / (double)s->t_reqs / 1000.0,
                 (double)s->t_write_ns / (double)s->t_batches / 1000.0,
                 (double)s->t_answer_ns / (double)s->t_batches / 1000.0);
    for (seq_tag *t = s->tags, *tn; t; t = tn) {
        tn = t->next;
        for (seq_req *r = t->head, *rn; r; r = rn) {
            rn = r->next;
            r->cb(r->ctx, IK_ECLOSED, NULL, 0);
            free(r);
        }
        free(t);
    }
    pthread_cond_destroy(&s->turn);
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
