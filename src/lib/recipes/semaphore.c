/* semaphore.c: counting semaphores over any backend (docs/recipes.md, "Semaphores";
 * docs/guarantees.md promise 28): a queue and a lease, two locks of the backend's own
 * protocol on one PATH (recipe.h: IK__LOCK_SEMQ and IK__LOCK_SEMA). This file names
 * no backend.
 *
 * A contender joins the queue, a mutex of the store's own kind, fair and herd-free as
 * its locks are. The queue's holder is the one contender that waits for a lease: the
 * lease's acquire takes one once fewer than max are held, waiting for one to be given
 * back while none is; then the holder leaves the queue. So leases go out in order of
 * arrival, and a lease given back wakes one waiter, the queue's holder (Curator's
 * InterProcessSemaphoreV2 and kazoo's Semaphore run the same algorithm, whose layouts
 * the zk:// backend joins).
 *
 *   IDLE --ik_semaphore_acquire: the stored max checked (check_max)--> QUEUED
 *   QUEUED --the queue's grant (ik__lock_acquire)--> HEAD
 *   HEAD --a lease (the lease's acquire), the queue given back--> HELD
 *   HEAD --the queue found lost (IK_ELOST), the queue given back--> QUEUED
 *   QUEUED, HEAD --timeout, cancel, error (the queue given back)--> IDLE
 *   HELD, IN_DOUBT, LOST --ik_semaphore_release--> IDLE
 *
 * Both grants go to the hold monitor (recipe.c): the lease's, which the caller is told
 * of as a lock's, and the queue's while its holder waits, so that the monitor's probes
 * keep the queue's session, etcd lease or database connection alive for as long as
 * the wait lasts. The queue has no callbacks: a queue lost while its holder waits
 * costs only the order (SE1), and the lease's acquire finds it and queues again.
 *
 * Invariants
 *   SE1. A lease is taken only by the queue's holder, and the store itself refuses a
 *        lease to a holder whose queue grant is gone, in the round trip that takes it
 *        (zk://: a multi that checks the queue node; etcd://: a txn that compares the
 *        queue key), or the lease is a slot that excludes by itself (SQL's session
 *        locks, local:'s flocks): the max holds even when the queue does not.
 *   SE2. A stored max other than the handle's is refused (IK_ECONFLICT, both named)
 *        before the queue is joined, at the handle's first acquire that finds one:
 *        two limits never count on one semaphore.
 */
#include "internal.h"
#include "recipe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

struct ik_semaphore {
    ik_lock *queue, *lease;
    int64_t max;
    int acquiring;      /* __atomic: an acquire runs (the state is WAITING) */
    int max_checked;    /* the acquiring thread's: the stored max was found ours */
    pthread_mutex_t mu; /* guards why */
    char why[200];      /* the last acquire's failure in the store's words, or the max
                           refused */
};

void ik_semaphore_options_init(ik_semaphore_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
}

int ik_semaphore_create(ik_coord *c, const char *path, const ik_semaphore_options *o,
                        ik_semaphore **out)
{
    ik_semaphore_options opts;
    ik_semaphore_options_init(&opts);
    if (!c || !out || !path || !o) return IK_EINVAL;
    if (ik__options_copy(&opts, sizeof opts, o, "ik_semaphore_options", NULL, 0)) return IK_EINVAL;
    if (opts.max < 1 || opts.max > IK_SEMAPHORE_MAX_LEASES) return IK_EINVAL;
    if (opts.layout != IK_SEMAPHORE_CURATOR && opts.layout != IK_SEMAPHORE_KAZOO) return IK_EINVAL;
    char norm[IK__RECIPE_PATH_MAX + 2];
    int rc = ik__recipe_path(path, norm, sizeof norm, NULL, 0);
    if (rc) return rc;
    if (strlen(norm) > IK__SEMA_PATH_MAX) return IK_EINVAL;
    const ik__recipe_ops *ops = ik__coord_backend(c)->ops->recipe;
    if (!ops || !ops->sema_max) return IK_EURI;
    ik_semaphore *s = calloc(1, sizeof *s);
    if (!s) return IK_ENOMEM;
    s->max = opts.max;
    rc = ik__lock_new(c, norm, IK__LOCK_SEMQ, NULL, NULL, NULL, opts.data, opts.max, opts.layout,
                      &s->queue);
    if (rc == 0)
        rc = ik__lock_new(c, norm, IK__LOCK_SEMA, opts.on_change, opts.on_proof, opts.ctx,
                          opts.data, opts.max, opts.layout, &s->lease);
    if (rc) {
        if (s->queue) ik__lock_free(s->queue);
        free(s);
        return rc;
    }
    s->lease->sema_queue = s->queue;
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return IK_OK;
}

void ik_semaphore_destroy(ik_semaphore *s)
{
    if (!s) return;
    ik__lock_free(s->lease); /* the lease first: the queue is never held outside acquire */
    ik__lock_free(s->queue);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void set_why(ik_semaphore *s, const char *why)
{
    pthread_mutex_lock(&s->mu);
    snprintf(s->why, sizeof s->why, "%s", why);
    pthread_mutex_unlock(&s->mu);
}

/* SE2: the max stored with the semaphore, stored if none is, against ours, once per
 * handle (as kazoo checks it once per Semaphore: a stored max changes only when
 * removed by hand, docs/recipes.md). 0, or IK_ECONFLICT (both named) or the store's
 * error, with s->why set. */
static int check_max(ik_semaphore *s)
{
    if (s->max_checked) return IK_OK;
    char why[200] = "";
    int64_t stored = 0;
    int rc = s->lease->ops->sema_max(s->lease, &stored, why, sizeof why);
    if (rc) {
        char w[200];
        snprintf(w, sizeof w, "reading the semaphore's max: %s", why[0] ? why : ik_strerror(rc));
        set_why(s, w);
        return rc == IK_ENOMEM ? rc : IK_ESTORE;
    }
    if (stored == 0 || stored == s->max) {
        s->max_checked = 1;
        return IK_OK;
    }
    snprintf(why, sizeof why,
             "the semaphore at %s holds at most %" PRId64 " (the max stored with it), not %" PRId64
             ": every user of a semaphore must give the same max",
             s->lease->path, stored, s->max);
    set_why(s, why);
    return IK_ECONFLICT;
}

/* The time left of an acquire's timeout: -1 (none), 0 (try once), else at least 1. */
static int64_t left_of(int64_t timeout_ms, int64_t deadline)
{
    if (timeout_ms <= 0) return timeout_ms;
    int64_t left = deadline - ik__mono_ms();
    return left > 1 ? left : 1;
}

/* The failure of lk (the queue or the lease) in s->why, in the store's words. */
static void keep_why(ik_semaphore *s, ik_lock *lk, int rc)
{
    ik_hold_info hi;
    ik__lock_info(lk, &hi);
    set_why(s, hi.why[0] ? hi.why : ik_strerror(rc));
}

int ik_semaphore_acquire(ik_semaphore *s, int64_t timeout_ms, int64_t *fence)
{
    if (!s || timeout_ms < -1) return IK_EINVAL;
    /* a LOST lease is given back first, as ik_lock_acquire does */
    if (ik__hold_state(s->lease, NULL, 0) == IK_HOLD_LOST) ik__lock_release(s->lease);
    ik_hold_info hi;
    ik__lock_info(s->lease, &hi);
    if (hi.state != IK_HOLD_IDLE || __atomic_exchange_n(&s->acquiring, 1, __ATOMIC_SEQ_CST))
        return IK_EINVAL;
    set_why(s, "");
    int64_t deadline = timeout_ms > 0 ? ik__mono_ms() + timeout_ms : 0;
    int64_t f = 0;
    int rc = check_max(s);
    while (rc == 0) {
        rc = ik__lock_acquire(s->queue, left_of(timeout_ms, deadline), NULL); /* QUEUED */
        if (rc) {
            keep_why(s, s->queue, rc);
            break;
        }
        rc = ik__lock_acquire(s->lease, left_of(timeout_ms, deadline), &f); /* HEAD */
        if (rc) keep_why(s, s->lease, rc);
        ik__lock_release(s->queue);
        if (rc != IK_ELOST) break;
        ik__logf("semaphore %s: its queue was lost while it waited for a lease: queueing again",
                 s->lease->path);
        rc = 0;
    }
    if (rc == IK_ECLOSED) { /* the cancel the other lock did not consume goes too */
        s->queue->ops->cancel(s->queue, 0);
        s->lease->ops->cancel(s->lease, 0);
    }
    if (rc == IK_EBUSY && timeout_ms > 0) rc = IK_ETIMEDOUT; /* the last try of a wait */
    __atomic_store_n(&s->acquiring, 0, __ATOMIC_SEQ_CST);
    if (rc == 0 && fence) *fence = f;
    return rc;
}

int ik_semaphore_release(ik_semaphore *s)
{
    return s ? ik__lock_release(s->lease) : IK_EINVAL;
}

void ik_semaphore_cancel(ik_semaphore *s)
{
    if (!s) return;
    s->queue->ops->cancel(s->queue, 1);
    s->lease->ops->cancel(s->lease, 1);
}

void ik_semaphore_get_info(ik_semaphore *s, ik_hold_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    ik__lock_info(s->lease, out);
    int waiting = __atomic_load_n(&s->acquiring, __ATOMIC_SEQ_CST);
    if (out->state == IK_HOLD_IDLE && waiting) out->state = IK_HOLD_WAITING;
    pthread_mutex_lock(&s->mu);
    if (out->state == IK_HOLD_IDLE && s->why[0]) snprintf(out->why, sizeof out->why, "%s", s->why);
    pthread_mutex_unlock(&s->mu);
}

ik_hold_state ik_semaphore_state(ik_semaphore *s)
{
    ik_hold_info hi;
    ik_semaphore_get_info(s, &hi);
    return hi.state;
}

int64_t ik_semaphore_trusted_until(ik_semaphore *s)
{
    return s ? ik__lock_trusted_until(s->lease) : IK_EINVAL;
}

int ik_semaphore_holders(ik_coord *c, const char *path, ik_semaphore_layout layout, int64_t *max,
                         ik_semaphore_holder **out, size_t *n)
{
    if (!c || !path || !max || !out || !n) return IK_EINVAL;
    if (layout != IK_SEMAPHORE_CURATOR && layout != IK_SEMAPHORE_KAZOO) return IK_EINVAL;
    char norm[IK__RECIPE_PATH_MAX + 2];
    int rc = ik__recipe_path(path, norm, sizeof norm, NULL, 0);
    if (rc) return rc;
    if (strlen(norm) > IK__SEMA_PATH_MAX) return IK_EINVAL;
    ik__backend *be = ik__coord_backend(c);
    const ik__recipe_ops *ops = be->ops->recipe;
    if (!ops || !ops->sema_holders) return IK_EURI;
    *max = 0;
    *out = NULL;
    *n = 0;
    return ops->sema_holders(be, norm, layout, max, out, n);
}
