/* sequence.c: strictly increasing, gap-free sequence IDs with group commit.
 *
 * Requests queue per tag. One committer thread takes, for a tag, every request
 * queued so far, advances the tag's max_id in the store by their total in one
 * durable write, and hands each request its consecutive slice of the range, in
 * arrival order. Requests that arrive while that write is in flight wait for the
 * next one: under load each write carries many requests, so throughput grows with
 * concurrency while latency stays about one store write.
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
 *   SQ5. Nothing that can fail comes between a write's acknowledgement and its
 *       answers: the buffer they are handed in is allocated before the write, so a
 *       range the store recorded is never dropped unanswered by this process.
 *
 * A request's life (edges name the functions; the arrow under s->mu):
 *
 *   ik_sequence_next --> QUEUED --commit_tag takes the queue--> IN WRITE --write
 *                          |                                    ends--> cb called
 *                          +--ik_sequence_cancel--> WITHDRAWN (freed, cb never called)
 *
 * Threads: ik_sequence_next() and ik_sequence_cancel() from any thread; callbacks
 * run on the committer.
 *
 * Fork (fork.c): a copy in a fork()'s child has no committer, and its queued
 * requests are the parent's to answer: every call on it refuses with IK_EFORKED,
 * and its destroy leaves it as it is.
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
};

struct ik_sequence {
    unsigned fork_gen; /* the process generation it was made in (fork.c) */
    ik_coord *c;
    char app[65];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    seq_tag *tags; /* tags with queued requests */
    seq_tag *ready_head, *ready_tail;
    int stop;
    pthread_t committer;
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
    if (ik__coord_forked(c)) return IK_EFORKED;
    if (!app) app = "default";
    if (ik__app_name_check(app, NULL, 0) != 0) return IK_EINVAL;
    ik_sequence *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    s->fork_gen = ik__fork_gen();
    s->c = c;
    snprintf(s->app, sizeof s->app, "%s", app);
    const char *cyc = getenv("IDKEEPER_BENCH_CYCLE"); /* benchmarks only */
    s->timed = cyc && *cyc && strcmp(cyc, "0") != 0;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pthread_create(&s->committer, NULL, committer, s)) {
        pthread_cond_destroy(&s->cv);
        pthread_mutex_destroy(&s->mu);
        free(s);
        return IK_ESYS(EAGAIN);
    }
    *out = s;
    return IK_OK;
}

int ik_sequence_next(ik_sequence *s, const char *tag, size_t n, ik_ids_cb cb, void *ctx)
{
    if (!s || !cb || n == 0 || n > 10000000 || ik_tag_name_check(tag, NULL, 0)) return IK_EINVAL;
    if (ik__forked(s->fork_gen)) return IK_EFORKED;
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
    if (!t->ready) {
        t->ready = 1;
        t->rnext = NULL;
        if (s->ready_tail)
            s->ready_tail->rnext = t;
        else
            s->ready_head = t;
        s->ready_tail = t;
        pthread_cond_signal(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
    return IK_PENDING;
}

int ik_sequence_cancel(ik_sequence *s, const char *tag, ik_ids_cb cb, void *ctx)
{
    if (!s || !tag || !cb) return IK_EINVAL;
    if (ik__forked(s->fork_gen)) return IK_EFORKED;
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
        rc = IK_OK; /* t stays on the ready list; an empty queue commits nothing */
        break;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* Removes t from s->tags and frees it (caller holds mu; t has no requests). */
static void drop_tag(ik_sequence *s, seq_tag *t)
{
    for (seq_tag **pp = &s->tags; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    free(t);
}

/* Commits every request of t queued now, in one write; answers them. Nothing when
 * every queued request was withdrawn. The answers' buffer is taken before the write
 * (SQ5): an allocation that fails answers the batch IK_ENOMEM with nothing
 * committed. */
static void commit_tag(ik_sequence *s, seq_tag *t)
{
    pthread_mutex_lock(&s->mu);
    seq_req *batch = t->head;
    t->head = t->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    if (!batch) return;

    int64_t total = 0, t0 = s->timed ? ik__mono_ns() : 0;
    size_t most = 1; /* every request asks for 1 or more */
    for (seq_req *r = batch; r; r = r->next) {
        total += (int64_t)r->n;
        if (r->n > most) most = r->n;
        if (s->timed) s->t_reqs++, s->t_wait_ns += t0 - r->at_ns;
    }
    int64_t *ids = malloc(most * sizeof *ids);
    int64_t first = 0;
    int rc =
        ids ? ik__tag_advance(s->c, s->app, t->name, IK_TAG_SEQUENCE, total, &first) : IK_ENOMEM;
    int64_t t1 = s->timed ? ik__mono_ns() : 0;

    for (seq_req *r = batch, *nx; r; r = nx) {
        nx = r->next;
        if (rc == 0) {
            for (size_t i = 0; i < r->n; i++)
                ids[i] = first + (int64_t)i;
            first += (int64_t)r->n;
        }
        r->cb(r->ctx, rc, rc ? NULL : ids, rc ? 0 : r->n);
        free(r);
    }
    free(ids);
    if (s->timed) {
        s->t_batches++;
        s->t_write_ns += t1 - t0;
        s->t_answer_ns += ik__mono_ns() - t1;
    }
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
        pthread_mutex_unlock(&s->mu);
        commit_tag(s, t);
        pthread_mutex_lock(&s->mu);
        /* requests that came during the write: the tag is back on the ready list */
        if (!t->head && !t->ready) drop_tag(s, t);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

int ik_sequence_next_wait(ik_sequence *s, const char *tag, size_t n, int64_t *ids)
{
    if (!ids) return IK_EINVAL;
    ik__ids_waiter w;
    ik__ids_waiter_init(&w, ids);
    return ik__ids_waiter_finish(&w, ik_sequence_next(s, tag, n, ik__ids_waiter_cb, &w));
}

void ik_sequence_destroy(ik_sequence *s)
{
    if (!s || ik__forked(s->fork_gen)) return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->committer, NULL);
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
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}
