/* recipe_etcd.c: locks and elections on etcd by etcd's own concurrency recipe
 * (client/v3/concurrency: Mutex and Election), so that `etcdctl lock NAME` and
 * `etcdctl elect NAME` contend on the same keys as idkeeper (docs/etcd.md,
 * "etcdctl interop"; docs/recipes.md).
 *
 * A lock at PATH is the key prefix PREFIX + PATH (without its leading '/') + "/";
 * each contender puts the key PREFIX/PATH/LEASEHEX (its lease id in lowercase
 * hex, as etcd's sessions name theirs) on a lease of its own, by a txn that
 * compares its create_revision with 0: an empty value for a mutex, the
 * participant's proposal for an election's latch. Contenders are ordered by
 * create_revision; a contender holds once no key of the prefix has a smaller one,
 * and until then watches the deletion of the newest key created before its own,
 * then looks again. The fencing token is our key's create_revision, which grows
 * across the whole cluster. Read-write locks are not in etcd's recipe: refused.
 *
 * Each lock has its own lease (as each etcdctl process has a session), granted at
 * the acquire and revoked at the release (which deletes the key). While it waits,
 * the acquire keeps the lease alive itself, a keepalive every quarter of the TTL
 * between slices of its watch. Once it holds, the hold monitor
 * (src/lib/recipes/hold.h) decides whether the grant stands, from this file's
 * evidence: the lease's last proof (proof_of_grant), a keepalive per probe (its
 * send time, and the TTL it answers; without a TTL, the lease is gone), and a
 * watch of our own key on a thread of the grant, which tells the key's deletion
 * (by hand, or by a revoke of our lease) at once.
 *
 *   IDLE --etcd_acquire--> WAITING: a lease (queue_lease), our key (queue_key)
 *   WAITING --no older key in a read made after ours existed (RE2)--> HELD
 *   WAITING --an older key: its deletion watched, the lease kept (wait_turn)--> WAITING
 *   WAITING --our lease gone, or our key gone (a lapse, by hand)--> WAITING with a
 *             new lease or key, at the back of the queue (as a zk:// waiter
 *             whose node went)
 *   WAITING --etcd failed or did not answer (a leader killed, the store down)-->
 *             WAITING again after a pause, until the deadline (fail: its last words)
 *   WAITING --refused for good (permission, login), timeout, cancel--> IDLE (our
 *             lease revoked, which deletes our key)
 *   HELD --etcd_release (our key's watch stopped, the lease revoked)--> IDLE
 *
 * Invariants
 *   RE1. A grant's proof is the send time of the lease's last keepalive (or grant)
 *        answered with a TTL: etcd deletes our key no sooner than a TTL after it,
 *        so no other contender can hold before then.
 *   RE2. A grant is decided on a linearizable read made after our key exists: no
 *        key of the prefix created before ours is left, and ours is still there.
 *   RE3. A waiter gives up only at its deadline, a cancel, or a refusal for good;
 *        an error or silence of etcd is waited out, as a holder waits it out.
 */
#include "etcd_handle.h"
#include "internal.h"
#include "recipe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PAUSE_MAX_MS 1000 /* the longest pause before a waiter tries etcd again */

typedef struct etcd_lock {
    ik_lock base;
    char pfx[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 8];  /* PREFIX PATH/ */
    char key[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 32]; /* pfx + LEASEHEX */
    int cancel;              /* __atomic: sticky until an acquire consumes it */
    ik__etcd_stop wait_stop; /* a cancel ends the waiter's watch at once */

    pthread_mutex_t mu;  /* guards what follows */
    ik_hold_state state; /* IDLE, WAITING or HELD */
    int64_t fence, lease, ttl_ms;
    ik__lease_proof proof; /* RE1: the lease's last keepalive or grant with a TTL */
    char why[160];
    ik__etcd_stop own_stop; /* the held grant's watch of our key */
    int watching;
    pthread_t watcher;
} etcd_lock;

static int etcd_lock_init(ik_lock *base)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    if (base->kind == IK__LOCK_READ || base->kind == IK__LOCK_WRITE) return IK_EINVAL;
    if (base->sema_layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    const char *part = base->kind == IK__LOCK_SEMQ   ? "/locks/"
                       : base->kind == IK__LOCK_SEMA ? "/leases/"
                                                     : "/";
    snprintf(lk->pfx, sizeof lk->pfx, "%s%s%s", b->prefix, base->path + 1, part);
    pthread_mutex_init(&lk->mu, NULL);
    ik__etcd_stop_init(&lk->wait_stop);
    ik__etcd_stop_init(&lk->own_stop);
    lk->state = IK_HOLD_IDLE;
    return IK_OK;
}

static void set_state(etcd_lock *lk, ik_hold_state s, const char *why)
{
    pthread_mutex_lock(&lk->mu);
    lk->state = s;
    snprintf(lk->why, sizeof lk->why, "%s", why);
    pthread_mutex_unlock(&lk->mu);
}

/* Whether a failed call was refused for good, so that the same call fails again:
 * permission denied, the login refused, a request etcd finds malformed, a cluster
 * the hazard rules refuse (RE3: everything else is waited out). */
static int for_good(int e, const ik__etcd_answer *a)
{
    if (e == IK_EUNSAFE || e == IK_ENOMEM) return 1;
    return e == IK_ESTORE && (a->err_code == 3 || a->err_code == 7 || a->err_code == 16);
}

/* etcd's "requested lease not found": the lease is gone (expired or revoked). */
static int lease_not_found(const ik__etcd_answer *a)
{
    return a->err_code == 5 && strstr(a->err, "lease") != NULL;
}

/* One keepalive of the lease id, waited for timeout_ms at most: 1 and *proof (the
 * lease lives, RE1), 0 (it is gone), or an ik_error with why (a for_good one in
 * *final). */
static int keepalive(ik__etcd_backend *b, int64_t id, int64_t timeout_ms, ik__lease_proof *proof,
                     int *final, char *why, size_t why_len)
{
    ik__etcd_answer a = {0};
    int64_t sent = ik__mono_ns();
    int e = ik__etcd_lease_keepalive(b->gw, id, timeout_ms, &a, why, why_len);
    *final = e && for_good(e, &a);
    int gone = e ? lease_not_found(&a) : a.ttl <= 0;
    if (!e && a.ttl > 0) *proof = (ik__lease_proof){sent, a.ttl * 1000};
    ik__etcd_answer_free(&a);
    if (gone) return 0;
    return e ? e : 1;
}

/* Revokes the lease id (which deletes every key on it), bounded by wait_ms. */
static void revoke(ik__etcd_backend *b, const char *key, int64_t id)
{
    if (!id) return;
    ik__etcd_answer a = {0};
    char why[300];
    int e = ik__etcd_lease_revoke(b->gw, id, b->wait_ms, &a, why, sizeof why);
    int gone = lease_not_found(&a);
    ik__etcd_answer_free(&a);
    if (e && !gone) /* not revoked: the key goes at the TTL */
        ik__logf("etcd lock %s: the revoke of its lease went unanswered (%s): its key lapses "
                 "at the TTL",
                 key, why);
}

/* ------------------------------------------------------------------------------
 * Acquiring: the edges of WAITING (the header's diagram), one function each. One
 * attempt's state lives in an acquire.
 */
typedef struct acquire {
    etcd_lock *lk;
    ik__etcd_backend *b;
    int64_t timeout_ms, deadline; /* deadline: ik__mono_ms, INT64_MAX for none */
    int64_t rev;                  /* our key's create_revision; 0: not put (yet) */
    int64_t next_keep;            /* ik__mono_ns when the lease's next keepalive is due */
    int failing;                  /* etcd failures in a row: the pause, one log line */
    int final;                    /* the last failure was for good */
    char why[400];                /* the last failure's words, etcd's where it gave some */
} acquire;

enum { STEP_AGAIN = 1, STEP_HELD = 2, STEP_FAILED = 3 };

/* How long one call of the wait may wait for etcd: three times the backend's call
 * wait, cut to the deadline. */
static int64_t call_ms(const acquire *a)
{
    int64_t ms = a->b->wait_ms * 3;
    if (a->deadline != INT64_MAX) {
        int64_t left = a->deadline - ik__mono_ms();
        if (left < ms) ms = left > 1 ? left : 1;
    }
    return ms;
}

/* A failed call of step what: its words in a->why, for good or to be waited out. */
static int failed(acquire *a, int e, int final, const char *what, const char *why)
{
    a->final = final || e == IK_ENOMEM;
    snprintf(a->why, sizeof a->why, "%s: %s", what, why);
    return e == IK_ENOMEM ? e : STEP_FAILED;
}

/* WAITING: a lease of the lock's own (none, or the last one gone). */
static int queue_lease(acquire *a)
{
    etcd_lock *lk = a->lk;
    ik__etcd_answer r = {0};
    char why[300] = "";
    int64_t sent = ik__mono_ns();
    int e = ik__etcd_lease_grant(a->b->gw, a->b->ttl_ms / 1000, call_ms(a), &r, why, sizeof why);
    int final = e && for_good(e, &r);
    int64_t id = r.id, ttl = r.ttl;
    ik__etcd_answer_free(&r);
    if (!e && (id == 0 || ttl <= 0)) {
        snprintf(why, sizeof why, "etcd granted no lease (ID %" PRId64 ", TTL %" PRId64 ")", id,
                 ttl);
        e = IK_ESTORE;
    }
    if (e) return failed(a, e, final, "granting the lock's lease", why); /* unanswered: it lapses */
    pthread_mutex_lock(&lk->mu);
    lk->lease = id;
    lk->ttl_ms = ttl * 1000;
    lk->proof = (ik__lease_proof){sent, ttl * 1000};
    snprintf(lk->key, sizeof lk->key, "%s%" PRIx64, lk->pfx, (uint64_t)id);
    pthread_mutex_unlock(&lk->mu);
    a->rev = 0;
    a->next_keep = sent + ttl * 1000 / 4 * INT64_C(1000000);
    return STEP_AGAIN;
}

/* WAITING: our key, if absent (etcd's Mutex.Lock and Election.Campaign), and the
 * contenders in the same txn: none older, and we hold at once (RE2: the read is
 * made after our key exists). A txn whose answer was lost is sent again: its
 * compare finds our key then, and its failure branch reads it. */
static int queue_key(acquire *a)
{
    etcd_lock *lk = a->lk;
    ik_lock *base = &lk->base;
    const char *val = base->kind == IK__LOCK_LATCH && base->data ? base->data : "";
    ik__etcd_txn *t = ik__etcd_txn_new();
    int e = t ? IK_OK : IK_ENOMEM;
    if (!e) e = ik__etcd_txn_cmp(t, lk->key, "CREATE", "EQUAL", 0, NULL);
    if (!e) e = ik__etcd_txn_put(t, 1, lk->key, val, lk->lease);
    if (!e) e = ik__etcd_txn_get(t, 1, lk->pfx, 1); /* every contender, after ours */
    if (!e) e = ik__etcd_txn_get(t, 0, lk->key, 0);
    if (!e) e = ik__etcd_txn_get(t, 0, lk->pfx, 1);
    ik__etcd_answer r = {0};
    char why[300] = "";
    if (!e) e = ik__etcd_txn_run(a->b->gw, t, call_ms(a), &r, why, sizeof why);
    ik__etcd_txn_free(t);
    if (e) {
        int final = for_good(e, &r), gone = lease_not_found(&r);
        ik__etcd_answer_free(&r);
        if (gone) { /* our lease lapsed before the key went on it: a new one */
            pthread_mutex_lock(&lk->mu);
            lk->lease = 0;
            pthread_mutex_unlock(&lk->mu);
            return STEP_AGAIN;
        }
        return failed(a, e, final, "putting the lock's key", why);
    }
    /* success: [put, range of the prefix]; failure: [our key, range of the prefix] */
    int64_t rev = r.succeeded ? r.revision : 0;
    for (size_t i = 0; i < r.n_kvs && !r.succeeded; i++)
        if (r.kvs[i].resp == 0) rev = r.kvs[i].create_revision;
    int first = rev != 0;
    for (size_t i = 0; i < r.n_kvs; i++)
        if (r.kvs[i].resp == 1 && r.kvs[i].create_revision < rev) first = 0;
    ik__etcd_answer_free(&r);
    if (!rev) {
        snprintf(why, sizeof why, "etcd showed no revision of %s", lk->key);
        return failed(a, IK_ESTORE, 0, "putting the lock's key", why);
    }
    a->rev = rev;
    return first ? STEP_HELD : STEP_AGAIN;
}

/* WAITING: the lease kept alive while we wait (a wait may outlast a TTL): a
 * keepalive when due. Gone (it lapsed while etcd was out of reach, or was revoked
 * by hand): a new lease and key, at the back of the queue. Unanswered for a whole
 * TTL: it may have lapsed; a new one too (the old one revoked where we can, so that
 * its key, if it lives, does not keep us behind ourselves). */
static int keep_lease(acquire *a)
{
    etcd_lock *lk = a->lk;
    int64_t now = ik__mono_ns();
    if (now < a->next_keep) return STEP_AGAIN;
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->lease;
    ik__lease_proof p = lk->proof;
    pthread_mutex_unlock(&lk->mu);
    char why[300] = "";
    int final = 0;
    ik__lease_proof q = p;
    int k = keepalive(a->b, id, call_ms(a), &q, &final, why, sizeof why);
    if (k == 1) {
        pthread_mutex_lock(&lk->mu);
        lk->proof = q;
        pthread_mutex_unlock(&lk->mu);
        a->next_keep = q.sent_mono_ns + q.term_ms / 4 * INT64_C(1000000);
        return STEP_AGAIN;
    }
    int lapsed = k == 0 || ik__mono_ns() >= p.sent_mono_ns + p.term_ms * INT64_C(1000000);
    if (!lapsed) return failed(a, k, final, "keeping the lock's lease alive", why);
    if (k != 0) revoke(a->b, lk->key, id);
    ik__logf("etcd lock %s: its lease %s while it waited: queueing again with a new one",
             lk->base.path, k == 0 ? "expired" : "may have lapsed (etcd did not answer)");
    pthread_mutex_lock(&lk->mu);
    lk->lease = 0;
    pthread_mutex_unlock(&lk->mu);
    return STEP_AGAIN;
}

/* WAITING: a deletion of key (of a key with the prefix key, prefix = 1) from
 * revision from on watched, until it comes, the lease's next keepalive is due, the
 * deadline, or a cancel: STEP_AGAIN (look again), IK_ECLOSED, or STEP_FAILED. */
static int watch_slice(acquire *a, const char *key, int prefix, int64_t from, const char *what)
{
    etcd_lock *lk = a->lk;
    int64_t now = ik__mono_ms();
    int64_t left = a->deadline == INT64_MAX ? INT64_MAX : a->deadline - now;
    int64_t keep = a->next_keep / 1000000 - now;
    int64_t slice = left < keep ? left : keep;
    if (slice <= 0) return STEP_AGAIN;
    char why[300] = "";
    int e =
        ik__etcd_watch_delete(a->b->gw, key, prefix, from, slice, &lk->wait_stop, why, sizeof why);
    if (e == IK_ECLOSED) return __atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST) ? e : STEP_AGAIN;
    if (e == IK_OK || e == IK_ETIMEDOUT || e == IK_ESTORE) return STEP_AGAIN; /* look again */
    return failed(a, e, 0, what, why);
}

/* WAITING: whether our turn came (RE2: no older key, ours still there, both seen in
 * linearizable reads made after ours existed); else the deletion of the newest
 * older key watched, until it goes or the lease's next keepalive is due. Our key
 * gone (deleted by hand, or its lease): put again, at the back of the queue. */
static int wait_turn(acquire *a)
{
    etcd_lock *lk = a->lk;
    ik__etcd_answer r = {0};
    char why[300] = "";
    int e =
        ik__etcd_range(a->b->gw, lk->pfx, 1, -1, a->rev - 1, 1, call_ms(a), &r, why, sizeof why);
    if (e) {
        int final = for_good(e, &r);
        ik__etcd_answer_free(&r);
        return failed(a, e, final, "reading the lock's contenders", why);
    }
    char prev[sizeof lk->key] = "";
    if (r.n_kvs > 0) snprintf(prev, sizeof prev, "%s", r.kvs[0].key);
    int64_t at = r.revision;
    ik__etcd_answer_free(&r);
    if (!prev[0]) { /* none older: ours still there? */
        e = ik__etcd_range(a->b->gw, lk->key, 0, 0, 0, 1, call_ms(a), &r, why, sizeof why);
        if (e) {
            int final = for_good(e, &r);
            ik__etcd_answer_free(&r);
            return failed(a, e, final, "reading the lock's key", why);
        }
        int there = r.n_kvs == 1 && r.kvs[0].create_revision == a->rev;
        ik__etcd_answer_free(&r);
        if (there) return STEP_HELD;
        ik__logf("etcd lock %s: its key %s went while it waited: queueing again", lk->base.path,
                 lk->key);
        a->rev = 0;
        return STEP_AGAIN;
    }
    if (a->timeout_ms == 0) {
        snprintf(a->why, sizeof a->why, "held by another");
        return IK_EBUSY;
    }
    return watch_slice(a, prev, 0, at, "watching the contender ahead");
}

/* ------------------------------------------------------------------------------
 * A semaphore's lease (kind SEMA), taken by the holder of the semaphore's queue (an
 * etcd lock of this file at PATH/locks/, recipes/semaphore.c): keys PATH/leases/
 * LEASEHEX, each on its holder's own lease, counted; one is put, by a txn that
 * compares the queue's key with the one its holder put (SE1 in semaphore.c: a
 * holder whose queue key went, with its lease or by hand, puts none), while fewer
 * than max are there; else the deletions under PATH/leases/ are watched (the queue's
 * holder is the only one that watches them: a lease given back wakes one waiter).
 */

/* The queue's key and its create_revision (the queue's fence), if its holder holds. */
static int queue_key_of(const etcd_lock *lk, char *key, size_t len, int64_t *rev)
{
    etcd_lock *q = (etcd_lock *)lk->base.sema_queue;
    pthread_mutex_lock(&q->mu);
    int held = q->state == IK_HOLD_HELD && q->fence > 0;
    snprintf(key, len, "%s", q->key);
    *rev = q->fence;
    pthread_mutex_unlock(&q->mu);
    return held;
}

/* WAITING (SEMA): the leases counted; ours put while fewer than max are held (a txn
 * that also finds our key, put by an earlier txn whose answer was lost), else the
 * deletion of a lease watched, until one goes or our lease's keepalive is due.
 * IK_ELOST once the queue's key is not the one its holder put. */
static int sema_take(acquire *a)
{
    etcd_lock *lk = a->lk;
    char qkey[sizeof lk->key], why[300] = "";
    int64_t qrev = 0;
    if (!queue_key_of(lk, qkey, sizeof qkey, &qrev)) return IK_ELOST;
    ik__etcd_answer r = {0};
    int e = ik__etcd_range(a->b->gw, lk->pfx, 1, 1, 0, 0, call_ms(a), &r, why, sizeof why);
    if (e) {
        int final = for_good(e, &r);
        ik__etcd_answer_free(&r);
        return failed(a, e, final, "counting the semaphore's leases", why);
    }
    int64_t held = (int64_t)r.n_kvs, at = r.revision, ours = 0;
    for (size_t i = 0; i < r.n_kvs; i++)
        if (strcmp(r.kvs[i].key, lk->key) == 0) ours = r.kvs[i].create_revision;
    ik__etcd_answer_free(&r);
    if (ours) { /* put by a txn whose answer was lost */
        a->rev = ours;
        return STEP_HELD;
    }
    if (held < lk->base.sema_max) {
        ik__etcd_txn *t = ik__etcd_txn_new();
        e = t ? IK_OK : IK_ENOMEM;
        if (!e) e = ik__etcd_txn_cmp(t, qkey, "CREATE", "EQUAL", qrev, NULL);
        if (!e) e = ik__etcd_txn_cmp(t, lk->key, "CREATE", "EQUAL", 0, NULL);
        if (!e) e = ik__etcd_txn_put(t, 1, lk->key, lk->base.data, lk->lease);
        if (!e) e = ik__etcd_txn_get(t, 0, qkey, 0);
        if (!e) e = ik__etcd_txn_get(t, 0, lk->key, 0);
        if (!e) e = ik__etcd_txn_run(a->b->gw, t, call_ms(a), &r, why, sizeof why);
        ik__etcd_txn_free(t);
        if (e) {
            int final = for_good(e, &r), gone = lease_not_found(&r);
            ik__etcd_answer_free(&r);
            if (gone) { /* our lease lapsed: a new one */
                pthread_mutex_lock(&lk->mu);
                lk->lease = 0;
                pthread_mutex_unlock(&lk->mu);
                return STEP_AGAIN;
            }
            return failed(a, e, final, "putting the lease's key", why);
        }
        int64_t rev = r.succeeded ? r.revision : 0, queue_there = 0;
        for (size_t i = 0; i < r.n_kvs && !r.succeeded; i++) {
            if (r.kvs[i].resp == 0 && r.kvs[i].create_revision == qrev) queue_there = 1;
            if (r.kvs[i].resp == 1 && r.kvs[i].lease == lk->lease) rev = r.kvs[i].create_revision;
        }
        ik__etcd_answer_free(&r);
        if (rev) {
            a->rev = rev;
            return STEP_HELD;
        }
        return queue_there ? STEP_AGAIN : IK_ELOST;
    }
    if (a->timeout_ms == 0) {
        snprintf(a->why, sizeof a->why, "all %" PRId64 " leases are held", lk->base.sema_max);
        return IK_EBUSY;
    }
    return watch_slice(a, lk->pfx, 1, at + 1, "watching the semaphore's leases");
}

/* The max stored with the semaphore: its own key, PREFIX PATH (no lease), put with
 * lk's max where absent. */
static int etcd_sema_max(ik_lock *base, int64_t *stored, char *why, size_t why_len)
{
    ik__etcd_backend *b = ik__etcd_of(base->be);
    char key[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 8], mine[32];
    snprintf(key, sizeof key, "%s%s", b->prefix, base->path + 1);
    snprintf(mine, sizeof mine, "%" PRId64, base->sema_max);
    ik__etcd_txn *t = ik__etcd_txn_new();
    int e = t ? IK_OK : IK_ENOMEM;
    if (!e) e = ik__etcd_txn_cmp(t, key, "CREATE", "EQUAL", 0, NULL);
    if (!e) e = ik__etcd_txn_put(t, 1, key, mine, 0);
    if (!e) e = ik__etcd_txn_get(t, 0, key, 0);
    ik__etcd_answer r = {0};
    if (!e) e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &r, why, why_len);
    ik__etcd_txn_free(t);
    if (!e) {
        *stored = base->sema_max;
        if (!r.succeeded) {
            char *end = NULL;
            long long v = r.n_kvs ? strtoll(r.kvs[0].value, &end, 10) : 0;
            *stored = end && end != r.kvs[0].value && !*end && v > 0 ? v : 0;
        }
    }
    ik__etcd_answer_free(&r);
    return e;
}

/* The lease keys under PREFIX PATH/leases/, in grant order. */
static int etcd_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout,
                             int64_t *max, ik_semaphore_holder **out, size_t *n)
{
    if (layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    ik__etcd_backend *b = ik__etcd_of(be);
    char key[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 16], why[300];
    snprintf(key, sizeof key, "%s%s", b->prefix, path + 1);
    ik__etcd_answer r = {0};
    int e = ik__etcd_range(b->gw, key, 0, 0, 0, 1, b->wait_ms * 3, &r, why, sizeof why);
    if (!e && r.n_kvs) *max = strtoll(r.kvs[0].value, NULL, 10);
    ik__etcd_answer_free(&r);
    if (e) return IK_ESTORE;
    snprintf(key, sizeof key, "%s%s/leases/", b->prefix, path + 1);
    e = ik__etcd_range(b->gw, key, 1, 1, 0, 0, b->wait_ms * 3, &r, why, sizeof why);
    if (e) {
        ik__etcd_answer_free(&r);
        return IK_ESTORE;
    }
    ik_semaphore_holder *v = r.n_kvs ? calloc(r.n_kvs, sizeof *v) : NULL;
    if (r.n_kvs && !v) e = IK_ENOMEM;
    for (size_t i = 0; v && i < r.n_kvs; i++) {
        snprintf(v[i].node, sizeof v[i].node, "%s", r.kvs[i].key);
        snprintf(v[i].data, sizeof v[i].data, "%s", r.kvs[i].value);
        v[i].fence = r.kvs[i].create_revision;
        snprintf(v[i].session, sizeof v[i].session, "lease %" PRIx64, (uint64_t)r.kvs[i].lease);
    }
    *n = v ? r.n_kvs : 0;
    *out = v;
    ik__etcd_answer_free(&r);
    return e;
}

/* One step of WAITING: STEP_AGAIN, STEP_HELD, STEP_FAILED (a->why), or an ik_error
 * that ends the wait. */
static int acquire_step(acquire *a)
{
    etcd_lock *lk = a->lk;
    pthread_mutex_lock(&lk->mu);
    int64_t lease = lk->lease;
    pthread_mutex_unlock(&lk->mu);
    if (!lease) return queue_lease(a);
    if (lk->base.kind == IK__LOCK_SEMA) {
        int rc = keep_lease(a);
        if (rc != STEP_AGAIN) return rc;
        pthread_mutex_lock(&lk->mu);
        lease = lk->lease;
        pthread_mutex_unlock(&lk->mu);
        return lease ? sema_take(a) : STEP_AGAIN;
    }
    if (!a->rev) return queue_key(a);
    int rc = keep_lease(a);
    if (rc != STEP_AGAIN) return rc;
    pthread_mutex_lock(&lk->mu);
    lease = lk->lease;
    pthread_mutex_unlock(&lk->mu);
    return lease ? wait_turn(a) : STEP_AGAIN;
}

/* After a failure to be waited out (RE3): a pause growing to PAUSE_MAX_MS, cut to
 * the deadline, and one log line for a run of them, in etcd's words. IK_ECLOSED on
 * a cancel, IK_ETIMEDOUT at the deadline, else STEP_AGAIN. */
static int pause_after_failure(acquire *a)
{
    etcd_lock *lk = a->lk;
    if (a->failing++ == 0)
        ik__logf("etcd lock %s: %s; trying again%s", lk->base.path, a->why,
                 a->deadline == INT64_MAX ? "" : " until the timeout");
    int64_t ms = 50 << (a->failing < 5 ? a->failing : 5);
    if (ms > PAUSE_MAX_MS) ms = PAUSE_MAX_MS;
    int64_t until = ik__mono_ms() + ms;
    if (until > a->deadline) until = a->deadline;
    while (ik__mono_ms() < until) {
        if (__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) return IK_ECLOSED;
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
    return STEP_AGAIN;
}

/* WAITING --timeout, cancel, refusal--> IDLE: our lease revoked (our key with it). */
static int give_up(acquire *a, int rc)
{
    etcd_lock *lk = a->lk;
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->lease;
    lk->lease = 0;
    pthread_mutex_unlock(&lk->mu);
    revoke(a->b, lk->key, id);
    if (rc == IK_ECLOSED) {
        set_state(lk, IK_HOLD_IDLE, "cancelled");
    } else if (rc == IK_ETIMEDOUT || rc == IK_EBUSY) {
        set_state(lk, IK_HOLD_IDLE, "timed out");
    } else {
        set_state(lk, IK_HOLD_IDLE, a->why);
    }
    return rc == IK_EINDOUBT ? IK_ESTORE : rc;
}

/* The held grant's watch of our key: its deletion (by hand, or a revoke or expiry of
 * our lease, which deletes it) told to the hold monitor at once. A broken stream is
 * read again: our key gone (or another's now) is the same news; a read that fails
 * is tried again after a pause (the probes prove or lose the grant meanwhile). */
static void *watch_own(void *arg)
{
    etcd_lock *lk = arg;
    ik__etcd_backend *b = ik__etcd_of(lk->base.be);
    pthread_mutex_lock(&lk->mu);
    char key[sizeof lk->key];
    snprintf(key, sizeof key, "%s", lk->key);
    int64_t rev = lk->fence;
    pthread_mutex_unlock(&lk->mu);
    int64_t from = rev + 1;
    const char *gone = NULL;
    while (!gone && !ik__etcd_stop_is(&lk->own_stop)) {
        char why[300];
        int e = ik__etcd_watch_delete(b->gw, key, 0, from, 3600000, &lk->own_stop, why, sizeof why);
        if (e == IK_OK) {
            gone = "the lock's etcd key was deleted (by hand, or its lease was revoked or "
                   "expired)";
        } else if (e != IK_ECLOSED && e != IK_ETIMEDOUT) {
            ik__etcd_answer r = {0};
            e = ik__etcd_range(b->gw, key, 0, 0, 0, 1, b->wait_ms * 3, &r, why, sizeof why);
            if (!e && !(r.n_kvs == 1 && r.kvs[0].create_revision == rev))
                gone = "the lock's etcd key is gone";
            else if (!e)
                from = r.revision + 1;
            ik__etcd_answer_free(&r);
            if (e) {
                struct timespec ts = {0, 200 * 1000000};
                nanosleep(&ts, NULL);
            }
        }
    }
    if (gone && !ik__etcd_stop_is(&lk->own_stop)) ik__hold_tell(&lk->base, IK__HOLD_GONE, gone);
    return NULL;
}

static int etcd_acquire(ik_lock *base, int64_t timeout_ms, int64_t *fence)
{
    etcd_lock *lk = (etcd_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_IDLE) return IK_EINVAL;
    ik__etcd_stop_set(&lk->wait_stop, 0);
    if (__atomic_exchange_n(&lk->cancel, 0, __ATOMIC_SEQ_CST)) return IK_ECLOSED;
    acquire a;
    memset(&a, 0, sizeof a);
    a.lk = lk;
    a.b = ik__etcd_of(base->be);
    a.timeout_ms = timeout_ms;
    a.deadline = timeout_ms <= 0 ? INT64_MAX : ik__mono_ms() + timeout_ms;
    set_state(lk, IK_HOLD_WAITING, "waiting");
    int rc;
    for (;;) {
        if (__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) {
            rc = IK_ECLOSED;
            break;
        }
        rc = acquire_step(&a);
        if (rc == STEP_FAILED) {
            if (a.final || timeout_ms == 0) { /* a try without waiting waits out nothing */
                rc = IK_ESTORE;
                break;
            }
            rc = pause_after_failure(&a);
        } else if (rc == STEP_AGAIN && a.failing) {
            a.failing = 0;
        }
        if (rc != STEP_AGAIN) break;
        if (timeout_ms > 0 && ik__mono_ms() >= a.deadline) {
            rc = a.failing ? IK_ESTORE : IK_ETIMEDOUT; /* etcd's words, not a turn not come */
            break;
        }
    }
    if (rc == IK_ECLOSED) __atomic_store_n(&lk->cancel, 0, __ATOMIC_SEQ_CST);
    if (rc != STEP_HELD) return give_up(&a, rc);
    pthread_mutex_lock(&lk->mu);
    lk->fence = a.rev;
    lk->state = IK_HOLD_HELD;
    snprintf(lk->why, sizeof lk->why, "granted");
    ik__etcd_stop_set(&lk->own_stop, 0);
    lk->watching = pthread_create(&lk->watcher, NULL, watch_own, lk) == 0;
    pthread_mutex_unlock(&lk->mu);
    if (fence) *fence = a.rev;
    return IK_OK;
}

static void etcd_proof_of_grant(ik_lock *base, ik__hold_evidence *out)
{
    etcd_lock *lk = (etcd_lock *)base;
    pthread_mutex_lock(&lk->mu);
    out->fact = IK__HOLD_STANDS;
    out->proof = lk->proof;
    pthread_mutex_unlock(&lk->mu);
}

/* The probe: one keepalive of the grant's lease (RE1). Its POST is not cut by the
 * stop: it touches nothing a release changes, and ends by the deadline. */
static void etcd_probe(ik_lock *base, int64_t deadline_ns, const int *stop, ik__hold_evidence *out)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->state == IK_HOLD_HELD ? lk->lease : 0;
    pthread_mutex_unlock(&lk->mu);
    int64_t left = (deadline_ns - ik__mono_ns()) / 1000000;
    out->fact = IK__HOLD_NO_ANSWER;
    if (!id || __atomic_load_n(stop, __ATOMIC_ACQUIRE) || left <= 0) {
        snprintf(out->why, sizeof out->why, "%s", id ? "no time left" : "released");
        return;
    }
    ik__lease_proof p;
    int final = 0;
    char why[300] = "";
    int k = keepalive(b, id, left, &p, &final, why, sizeof why);
    if (k == 1) {
        out->fact = IK__HOLD_STANDS;
        out->proof = p;
        pthread_mutex_lock(&lk->mu);
        if (lk->lease == id) lk->proof = p;
        pthread_mutex_unlock(&lk->mu);
    } else if (k == 0) {
        out->fact = IK__HOLD_GONE;
        snprintf(out->why, sizeof out->why,
                 "the lock's etcd lease expired or was revoked: its key is gone");
    } else {
        snprintf(out->why, sizeof out->why, "%s", why);
    }
}

/* HELD --etcd_release--> IDLE: our key's watch stopped (at once: its socket is
 * shut) and joined, then the lease revoked, which deletes our key. */
static void drop(etcd_lock *lk)
{
    ik__etcd_backend *b = ik__etcd_of(lk->base.be);
    ik__etcd_stop_set(&lk->own_stop, 1);
    pthread_mutex_lock(&lk->mu);
    int w = lk->watching;
    lk->watching = 0;
    pthread_mutex_unlock(&lk->mu);
    if (w) pthread_join(lk->watcher, NULL);
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->lease;
    lk->lease = 0;
    pthread_mutex_unlock(&lk->mu);
    revoke(b, lk->key, id);
}

static int etcd_release(ik_lock *base)
{
    etcd_lock *lk = (etcd_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_HELD) return IK_EINVAL;
    drop(lk);
    pthread_mutex_lock(&lk->mu);
    lk->state = IK_HOLD_IDLE;
    lk->fence = 0;
    snprintf(lk->why, sizeof lk->why, "released");
    pthread_mutex_unlock(&lk->mu);
    return IK_OK;
}

static void etcd_cancel(ik_lock *base, int on)
{
    etcd_lock *lk = (etcd_lock *)base;
    __atomic_store_n(&lk->cancel, on ? 1 : 0, __ATOMIC_SEQ_CST);
    ik__etcd_stop_set(&lk->wait_stop, on);
}

static void etcd_info(ik_lock *base, ik_hold_info *out)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    pthread_mutex_lock(&lk->mu);
    out->state = lk->state;
    out->fence = lk->state == IK_HOLD_HELD ? lk->fence : 0;
    snprintf(out->node, sizeof out->node, "%s", lk->state == IK_HOLD_IDLE ? "" : lk->key);
    if (lk->lease)
        snprintf(out->session, sizeof out->session, "lease %" PRIx64, (uint64_t)lk->lease);
    snprintf(out->why, sizeof out->why, "%s", lk->why);
    out->session_timeout_ms = b->ttl_ms;
    pthread_mutex_unlock(&lk->mu);
}

static void etcd_lock_fini(ik_lock *base)
{
    etcd_lock *lk = (etcd_lock *)base;
    pthread_mutex_lock(&lk->mu);
    int had = lk->state == IK_HOLD_HELD || lk->lease != 0;
    pthread_mutex_unlock(&lk->mu);
    if (had) drop(lk);
    ik__etcd_stop_fini(&lk->own_stop);
    ik__etcd_stop_fini(&lk->wait_stop);
    pthread_mutex_destroy(&lk->mu);
}

/* The first contender's value (etcd's Election.Leader): the leader's proposal. */
static int etcd_leader(ik__backend *be, const char *path, char **id)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    char pfx[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 8];
    snprintf(pfx, sizeof pfx, "%s%s/", b->prefix, path + 1);
    ik__etcd_answer a = {0};
    char why[300];
    int e = ik__etcd_range(b->gw, pfx, 1, 1, 0, 1, b->wait_ms * 3, &a, why, sizeof why);
    if (e) return IK_ESTORE;
    e = IK_ENOTFOUND;
    if (a.n_kvs) {
        *id = strdup(a.kvs[0].value);
        e = *id ? IK_OK : IK_ENOMEM;
    }
    ik__etcd_answer_free(&a);
    return e;
}

const ik__recipe_ops ik__recipe_etcd_ops = {
    .scheme = "etcd",
    .lock_size = sizeof(etcd_lock),
    .lock_init = etcd_lock_init,
    .lock_fini = etcd_lock_fini,
    .acquire = etcd_acquire,
    .release = etcd_release,
    .cancel = etcd_cancel,
    .info = etcd_info,
    .leader = etcd_leader,
    .proof_of_grant = etcd_proof_of_grant,
    .probe = etcd_probe,
    .sema_max = etcd_sema_max,
    .sema_holders = etcd_sema_holders,
};
