/* segment.c: Leaf-style segment IDs: two blocks per tag, the next one preloaded.
 *
 * Each tag in use has a current block [next, end) and, once preload_at of the
 * current block is used, a loader thread takes the next block from the store (a
 * durable advance of the tag's max_id). A request is served from the blocks under
 * the tag's mutex; it waits for the store only when both blocks are empty, and then
 * its answer comes through its callback, in arrival order (FIFO behind other
 * waiters).
 *
 * Invariants
 *   SG1. Every block handed to this allocator was taken by one durable advance, so
 *       no other allocator (here or on another server) holds any of its IDs.
 *   SG2. Blocks of one tag are loaded one at a time, each above the one before (the
 *       store's max_id only grows), and are consumed in load order; so the IDs of
 *       one tag increase within this allocator, across calls and threads.
 *   SG3. An ID leaves a block at most once: `next` only moves forward under the mutex.
 *   SG4. A tag holds at most two blocks, and no block is dropped while it has IDs
 *       left: a waiter that needs more than the blocks hold takes them all (its IDs
 *       accumulate in the waiter) before the loader takes the next block, so a new
 *       block always finds the current one or the next one empty.
 *
 * Tag map: a fixed array of buckets with chains that only grow (entries are freed at
 * destroy), read without a lock. Only tags the store confirmed exist get an entry;
 * a request for an unknown name goes to the loader as a probe, so random names cost
 * no memory once answered.
 *
 * Fork (fork.c): the blocks of an allocator copied into a fork()'s child are the
 * parent's, which goes on handing them out: every call on the copy refuses with
 * IK_EFORKED, and its destroy leaves it as it is (no loader to stop, the parent's
 * waiters to be answered by the parent, a mutex perhaps held for ever).
 *
 * Block size (docs/guarantees.md promise 3, Leaf's rule): the first block of a tag is the tag's
 * step; after that a block loaded less than grow_below_ms after the one before doubles (up to
 * max_step), one loaded more than shrink_above_ms after halves (not below the step).
 */
#include "backend.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUCKETS 256
#define MAX_PROBES 256

typedef struct seg_waiter seg_waiter;
struct seg_waiter {
    seg_waiter *next;
    size_t n;
    ik_ids_cb cb;
    void *ctx;
    int64_t deadline_ns; /* monotonic */
    int64_t *ids;        /* the IDs taken so far (the head waiter only), or NULL */
    size_t got;          /* how many */
};

typedef struct seg_block {
    int64_t start, next, end;
} seg_block;

typedef struct seg_tag seg_tag;
struct seg_tag {
    _Atomic(seg_tag *) hnext; /* bucket chain */
    seg_tag *qnext;           /* loader queue */
    seg_tag *pnext;           /* probe list (while probe) */
    char name[IK_TAG_NAME_MAX + 1];
    int probe; /* not confirmed yet: not in the map */

    pthread_mutex_t mu; /* guards everything below */
    seg_block cur, nxt;
    int have_nxt;
    int loading; /* queued for, or in, the loader */
    int64_t min_step, step;
    int64_t last_load_ns; /* monotonic time of the latest load (0: none) */
    seg_waiter *wait_head, *wait_tail;
    uint64_t issued; /* IDs handed out by this server */
    char last_error[96];
};

struct ik_segment {
    unsigned fork_gen; /* the process generation it was made in (fork.c) */
    ik_coord *c;
    char app[65];
    ik_segment_options o;
    _Atomic(seg_tag *) buckets[BUCKETS];
    pthread_mutex_t map_mu; /* serialises inserts and the probe list */
    seg_tag *probes;        /* probes in flight, linked by pnext */
    int nprobes;

    pthread_mutex_t q_mu;
    pthread_cond_t q_cv;
    seg_tag *q_head, *q_tail;
    int stop;
    pthread_t loader;
};

void ik_segment_options_init(ik_segment_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->preload_at = 0.1;
    o->max_step = 1000000;
    o->grow_below_ms = 15 * 60 * 1000;
    o->shrink_above_ms = 30 * 60 * 1000;
    o->wait_ms = 3000;
}

static uint32_t hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % BUCKETS;
}

static seg_tag *map_find(ik_segment *s, const char *name)
{
    seg_tag *t = atomic_load_explicit(&s->buckets[hash(name)], memory_order_acquire);
    for (; t; t = atomic_load_explicit(&t->hnext, memory_order_acquire))
        if (!strcmp(t->name, name)) return t;
    return NULL;
}

static seg_tag *tag_new(const char *name, int probe)
{
    seg_tag *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->probe = probe;
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

static void tag_free(seg_tag *t)
{
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static void enqueue(ik_segment *s, seg_tag *t)
{
    pthread_mutex_lock(&s->q_mu);
    t->qnext = NULL;
    if (s->q_tail)
        s->q_tail->qnext = t;
    else
        s->q_head = t;
    s->q_tail = t;
    pthread_cond_signal(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
}

static int64_t avail(const seg_tag *t)
{
    return (t->cur.end - t->cur.next) + (t->have_nxt ? t->nxt.end - t->nxt.next : 0);
}

/* Takes n IDs from the blocks (caller holds mu and checked avail >= n). */
static void take(seg_tag *t, size_t n, int64_t *ids)
{
    size_t i = 0;
    t->issued += n;
    while (i < n) {
        if (t->cur.next == t->cur.end) { /* switch to the preloaded block */
            t->cur = t->nxt;
            t->have_nxt = 0;
            memset(&t->nxt, 0, sizeof t->nxt);
        }
        while (i < n && t->cur.next < t->cur.end)
            ids[i++] = t->cur.next++;
    }
    if (t->cur.next == t->cur.end && t->have_nxt) {
        t->cur = t->nxt;
        t->have_nxt = 0;
        memset(&t->nxt, 0, sizeof t->nxt);
    }
}

/* Whether the next block should load now (caller holds mu). */
static int wants_load(const ik_segment *s, const seg_tag *t)
{
    if (t->loading || t->have_nxt) return 0;
    int64_t size = t->cur.end - t->cur.start;
    return size <= 0 || (double)(t->cur.next - t->cur.start) >= s->o.preload_at * (double)size;
}

static void add_waiter(seg_tag *t, seg_waiter *w)
{
    w->next = NULL;
    if (t->wait_tail)
        t->wait_tail->next = w;
    else
        t->wait_head = w;
    t->wait_tail = w;
}

static int64_t mono_ns(void)
{
    return ik__mono_ns();
}

void *ik__segment_loader(void *arg);

int ik_segment_create(ik_coord *c, const char *app, const ik_segment_options *o, ik_segment **out)
{
    if (!c || !out) return IK_EINVAL;
    if (ik__coord_forked(c)) return IK_EFORKED;
    if (!app) app = "default";
    if (ik__app_name_check(app, NULL, 0) != 0) return IK_EINVAL;
    ik_segment_options opts; /* the caller's, as far as its size goes; defaults beyond */
    ik_segment_options_init(&opts);
    if (o && ik__options_copy(&opts, sizeof opts, o, "ik_segment_options", NULL, 0))
        return IK_EINVAL;
    ik_segment *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    s->fork_gen = ik__fork_gen();
    s->c = c;
    snprintf(s->app, sizeof s->app, "%s", app);
    s->o = opts;
    if (s->o.preload_at <= 0 || s->o.preload_at > 1) s->o.preload_at = 0.1;
    if (s->o.max_step < 1) s->o.max_step = 1000000;
    if (s->o.wait_ms < 1) s->o.wait_ms = 3000;
    pthread_mutex_init(&s->map_mu, NULL);
    pthread_mutex_init(&s->q_mu, NULL);
    ik__cond_init_mono(&s->q_cv);
    if (pthread_create(&s->loader, NULL, ik__segment_loader, s)) {
        free(s);
        return IK_ESYS(EAGAIN);
    }
    *out = s;
    return IK_OK;
}

int ik_segment_next(ik_segment *s, const char *tag, size_t n, int64_t *ids, ik_ids_cb cb, void *ctx)
{
    if (!s || !ids || !cb || n == 0 || n > 10000000 || ik_tag_name_check(tag, NULL, 0))
        return IK_EINVAL;
    if (ik__forked(s->fork_gen)) return IK_EFORKED;
    seg_tag *t = map_find(s, tag);
    if (t) {
        pthread_mutex_lock(&t->mu);
        if (!t->wait_head && avail(t) >= (int64_t)n) {
            take(t, n, ids);
            int load = wants_load(s, t);
            if (load) t->loading = 1;
            pthread_mutex_unlock(&t->mu);
            if (load) enqueue(s, t);
            return IK_OK;
        }
        /* both blocks empty (or others wait already): wait for the loader */
        seg_waiter *w = malloc(sizeof *w);
        if (!w) {
            pthread_mutex_unlock(&t->mu);
            return IK_ENOMEM;
        }
        *w = (seg_waiter){NULL, n, cb, ctx, mono_ns() + s->o.wait_ms * 1000000, NULL, 0};
        add_waiter(t, w);
        int load = !t->loading;
        t->loading = 1;
        pthread_mutex_unlock(&t->mu);
        if (load) enqueue(s, t);
        return IK_PENDING;
    }

    /* unknown here: probe the store (joining a probe in flight for the same name) */
    seg_waiter *w = malloc(sizeof *w);
    if (!w) return IK_ENOMEM;
    *w = (seg_waiter){NULL, n, cb, ctx, mono_ns() + s->o.wait_ms * 1000000, NULL, 0};
    pthread_mutex_lock(&s->map_mu);
    if (map_find(s, tag)) { /* confirmed meanwhile: retry the fast way */
        pthread_mutex_unlock(&s->map_mu);
        free(w);
        return ik_segment_next(s, tag, n, ids, cb, ctx);
    }
    seg_tag *p;
    for (p = s->probes; p && strcmp(p->name, tag); p = p->pnext) {
    }
    if (p) {
        pthread_mutex_lock(&p->mu);
        add_waiter(p, w);
        pthread_mutex_unlock(&p->mu);
        pthread_mutex_unlock(&s->map_mu);
        return IK_PENDING;
    }
    if (s->nprobes >= MAX_PROBES) { /* busy: try again (503), not out of memory */
        pthread_mutex_unlock(&s->map_mu);
        free(w);
        return IK_EBUSY;
    }
    if (!(p = tag_new(tag, 1))) {
        pthread_mutex_unlock(&s->map_mu);
        free(w);
        return IK_ENOMEM;
    }
    add_waiter(p, w);
    p->loading = 1;
    p->pnext = s->probes;
    s->probes = p;
    s->nprobes++;
    pthread_mutex_unlock(&s->map_mu);
    enqueue(s, p);
    return IK_PENDING;
}

/* ---- the loader ---------------------------------------------------------------- */

typedef struct done_item {
    seg_waiter *w;
    int status;
    int64_t *ids;
} done_item;

/* Serves waiters from the blocks, fails the expired ones, and collects the answers
 * (callbacks run after mu is released). Caller holds t->mu. Returns the count. */
static size_t serve_waiters(seg_tag *t, int fail_status, int64_t now, done_item *out, size_t cap)
{
    size_t k = 0;
    while (t->wait_head && k < cap) {
        seg_waiter *w = t->wait_head;
        int st;
        if (fail_status == 0 && !w->ids && !(w->ids = malloc(w->n * sizeof *w->ids))) {
            st = IK_ENOMEM;
        } else if (fail_status == 0) {
            int64_t have = avail(t), need = (int64_t)(w->n - w->got);
            if (have < need) { /* SG4: drain the blocks into the head waiter, load more */
                take(t, (size_t)have, w->ids + w->got);
                w->got += (size_t)have;
                break;
            }
            take(t, (size_t)need, w->ids + w->got);
            w->got = w->n;
            st = 0;
        } else if (fail_status != IK_ESTORE || now >= w->deadline_ns) {
            st = fail_status == IK_ESTORE ? IK_ETIMEDOUT : fail_status;
        } else {
            break;
        }
        t->wait_head = w->next;
        if (!t->wait_head) t->wait_tail = NULL;
        out[k++] = (done_item){w, st, w->ids};
        w->ids = NULL;
    }
    return k;
}

static void deliver(done_item *d, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        d[i].w->cb(d[i].w->ctx, d[i].status, d[i].status ? NULL : d[i].ids,
                   d[i].status ? 0 : d[i].w->n);
        free(d[i].ids);
        free(d[i].w);
    }
}

/* The size of the block to load now (caller holds mu). */
static int64_t next_step(const ik_segment *s, seg_tag *t, int64_t now)
{
    if (t->last_load_ns == 0 || t->step < t->min_step) return t->min_step;
    int64_t since_ms = (now - t->last_load_ns) / 1000000;
    int64_t step = t->step;
    if (since_ms < s->o.grow_below_ms)
        step = step * 2 <= s->o.max_step ? step * 2 : (step > s->o.max_step ? step : s->o.max_step);
    else if (since_ms >= s->o.shrink_above_ms)
        step = step / 2 >= t->min_step ? step / 2 : t->min_step;
    return step;
}

/* Removes probe t from the probe list (caller holds map_mu). */
static void unlink_probe(ik_segment *s, seg_tag *t)
{
    for (seg_tag **pp = &s->probes; *pp; pp = &(*pp)->pnext)
        if (*pp == t) {
            *pp = t->pnext;
            s->nprobes--;
            return;
        }
}

/* Loads one block for t (first confirming a probe's tag), answers the waiters it
 * can, and queues t again while waiters remain or the preload is still due. Lock
 * order: map_mu, then t->mu. */
static void load_one(ik_segment *s, seg_tag *t, int64_t *backoff_ms)
{
    int rc = IK_OK;
    if (t->probe) {
        ik_tag_info info;
        char why[500] = "";
        rc = ik_tag_read(s->c, s->app, t->name, &info, why, sizeof why);
        if (rc == IK_ESTORE && why[0]) ik__logf("tag %s: %s", t->name, why);
        if (rc == 0 && info.kind != IK_TAG_SEGMENT) rc = IK_EKIND;
        if (rc == 0) t->min_step = info.step;
    }
    int64_t now = mono_ns(), first = 0, step = 0;
    if (rc == 0) {
        pthread_mutex_lock(&t->mu);
        step = next_step(s, t, now);
        pthread_mutex_unlock(&t->mu);
        rc = ik__tag_advance(s->c, s->app, t->name, IK_TAG_SEGMENT, step, &first);
        now = mono_ns();
    }
    int store_down = rc == IK_ESTORE || rc == IK_EINDOUBT || rc == IK_ETIMEDOUT;
    int probe = t->probe;

    if (probe) pthread_mutex_lock(&s->map_mu);
    pthread_mutex_lock(&t->mu);
    if (rc == 0) {
        seg_block blk = {first, first, first + step};
        if (t->cur.next == t->cur.end)
            t->cur = blk;
        else {
            t->nxt = blk;
            t->have_nxt = 1;
        }
        t->step = step;
        t->last_load_ns = now;
        t->last_error[0] = '\0';
        *backoff_ms = 0;
    } else {
        snprintf(t->last_error, sizeof t->last_error, "%s", ik_strerror(rc));
    }
    /* a store that is down fails only the waiters whose time is up; a tag that is
     * gone, of the other kind or exhausted fails them all */
    int fail = rc == 0 ? 0 : store_down ? IK_ESTORE : rc;
    done_item done[64];
    size_t k;
    while ((k = serve_waiters(t, fail, now, done, 64)) == 64) {
        pthread_mutex_unlock(&t->mu);
        deliver(done, k);
        pthread_mutex_lock(&t->mu);
    }
    int again;
    if (rc == 0)
        again = t->wait_head != NULL || wants_load(s, t);
    else if (store_down)
        again = t->wait_head != NULL || (!probe && !t->have_nxt);
    else
        again = 0;
    t->loading = again;
    int drop = probe && (rc != 0 && !again);
    if (probe && rc == 0) { /* confirmed: the tag joins the map */
        unlink_probe(s, t);
        t->probe = 0;
        uint32_t h = hash(t->name);
        atomic_store_explicit(&t->hnext, atomic_load(&s->buckets[h]), memory_order_relaxed);
        atomic_store_explicit(&s->buckets[h], t, memory_order_release);
    } else if (drop) {
        unlink_probe(s, t);
    }
    pthread_mutex_unlock(&t->mu);
    if (probe) pthread_mutex_unlock(&s->map_mu);
    deliver(done, k);
    if (drop) {
        tag_free(t);
        return;
    }
    if (again) {
        if (rc != 0) {
            *backoff_ms = *backoff_ms ? (*backoff_ms * 2 > 1000 ? 1000 : *backoff_ms * 2) : 50;
            struct timespec ts = {0, (long)*backoff_ms * 1000000};
            nanosleep(&ts, NULL);
        }
        enqueue(s, t);
    }
}

void *ik__segment_loader(void *arg);
void *ik__segment_loader(void *arg)
{
    ik_segment *s = arg;
    int64_t backoff = 0;
    for (;;) {
        pthread_mutex_lock(&s->q_mu);
        while (!s->stop && !s->q_head)
            pthread_cond_wait(&s->q_cv, &s->q_mu);
        if (s->stop) {
            pthread_mutex_unlock(&s->q_mu);
            return NULL;
        }
        seg_tag *t = s->q_head;
        s->q_head = t->qnext;
        if (!s->q_head) s->q_tail = NULL;
        pthread_mutex_unlock(&s->q_mu);
        load_one(s, t, &backoff);
    }
}

static void fail_all(seg_tag *t)
{
    seg_waiter *w = t->wait_head;
    t->wait_head = t->wait_tail = NULL;
    while (w) {
        seg_waiter *nx = w->next;
        w->cb(w->ctx, IK_ECLOSED, NULL, 0);
        free(w->ids);
        free(w);
        w = nx;
    }
}

void ik_segment_destroy(ik_segment *s)
{
    if (!s || ik__forked(s->fork_gen)) return;
    pthread_mutex_lock(&s->q_mu);
    s->stop = 1;
    pthread_cond_broadcast(&s->q_cv);
    pthread_mutex_unlock(&s->q_mu);
    pthread_join(s->loader, NULL);
    for (int i = 0; i < BUCKETS; i++) {
        seg_tag *t = atomic_load(&s->buckets[i]);
        while (t) {
            seg_tag *nx = atomic_load(&t->hnext);
            fail_all(t);
            tag_free(t);
            t = nx;
        }
    }
    for (seg_tag *p = s->probes; p;) {
        seg_tag *nx = p->pnext;
        fail_all(p);
        tag_free(p);
        p = nx;
    }
    pthread_cond_destroy(&s->q_cv);
    pthread_mutex_destroy(&s->q_mu);
    pthread_mutex_destroy(&s->map_mu);
    free(s);
}

/* ---- blocking convenience and status -------------------------------------------- */

int ik_segment_next_wait(ik_segment *s, const char *tag, size_t n, int64_t *ids)
{
    ik__ids_waiter w;
    ik__ids_waiter_init(&w, ids);
    return ik__ids_waiter_finish(&w, ik_segment_next(s, tag, n, ids, ik__ids_waiter_cb, &w));
}

int ik_segment_status(ik_segment *s, ik_segment_tag_status **out, size_t *n_out)
{
    if (!s || !out || !n_out) return IK_EINVAL;
    if (ik__forked(s->fork_gen)) return IK_EFORKED;
    size_t n = 0, cap = 0;
    ik_segment_tag_status *v = NULL;
    for (int i = 0; i < BUCKETS; i++) {
        for (seg_tag *t = atomic_load_explicit(&s->buckets[i], memory_order_acquire); t;
             t = atomic_load_explicit(&t->hnext, memory_order_acquire)) {
            if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
                free(v);
                return IK_ENOMEM;
            }
            ik_segment_tag_status *o = &v[n++];
            memset(o, 0, sizeof *o);
            snprintf(o->name, sizeof o->name, "%s", t->name);
            pthread_mutex_lock(&t->mu);
            o->cur_next = t->cur.next;
            o->cur_end = t->cur.end;
            if (t->have_nxt) {
                o->next_start = t->nxt.start;
                o->next_end = t->nxt.end;
            }
            o->step = t->step;
            o->loading = t->loading;
            o->issued = t->issued;
            snprintf(o->last_error, sizeof o->last_error, "%s", t->last_error);
            pthread_mutex_unlock(&t->mu);
        }
    }
    *out = v;
    *n_out = n;
    return IK_OK;
}
