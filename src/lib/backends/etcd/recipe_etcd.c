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
 * acquire and revoked at release (which deletes the key), kept alive by the lock's
 * thread at a third of its TTL from the acquire on:
 *
 *   IDLE --etcd_acquire: grant, put, no older key--> HELD (fence: our create rev)
 *   IDLE --etcd_acquire: an older key--> WAITING --its deletion, none older--> HELD
 *   WAITING --timeout / cancel / lease gone--> IDLE (our key deleted, lease revoked)
 *   HELD --keepalive unanswered (keeper)--> IN_DOUBT          callback
 *   IN_DOUBT --keepalive answered with a TTL (keeper)--> HELD  callback
 *   HELD, IN_DOUBT --keepalive answered without a TTL (gone), or none answered
 *                    for 2/3 of the TTL (keeper)--> LOST       callback
 *   HELD, IN_DOUBT, LOST --etcd_release (keeper joined, revoke)--> IDLE
 *
 * Invariants
 *   RE1. HELD only while the lock's lease has a keepalive answered with a TTL
 *        within the last 2/3 of that TTL (counted from its send): etcd deletes our
 *        key no sooner than a TTL after it, so no other contender can hold yet.
 *   RE2. A grant is decided on a linearizable read made after our key exists: no
 *        key of the prefix created before ours is left, and ours is still there.
 *   RE3. No callback is made while lk->mu is held.
 */
#include "backend_etcd.h"
#include "internal.h"
#include "recipe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct etcd_lock {
    ik_lock base;
    char pfx[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 8];  /* PREFIX PATH/ */
    char key[IK__RECIPE_PATH_MAX + IK__ETCD_PREFIX_MAX + 32]; /* pfx + LEASEHEX */
    volatile int wake; /* __atomic: cancel, or the lease gone: a wait ends */
    int cancel;        /* __atomic: sticky until an acquire consumes it */

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;
    ik_hold_state state;
    int64_t fence, lease, ttl_ms;
    ik__lease_proof proof;
    int gone;
    char why[160];
    int keeping, stop;
    pthread_t keeper;
} etcd_lock;

static int etcd_lock_init(ik_lock *base)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    if (base->kind == IK__LOCK_READ || base->kind == IK__LOCK_WRITE) return IK_EINVAL;
    snprintf(lk->pfx, sizeof lk->pfx, "%s%s/", b->prefix, base->path + 1);
    pthread_mutex_init(&lk->mu, NULL);
    ik__cond_init_mono(&lk->cv);
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

/* The keeper: one keepalive every third of the TTL (every 200 ms while in doubt),
 * and the state the answers make (RE1). */
static void *keeper(void *arg)
{
    etcd_lock *lk = arg;
    ik__etcd_backend *b = ik__etcd_of(lk->base.be);
    int64_t period = lk->ttl_ms / 3;
    for (;;) {
        struct timespec ts;
        pthread_mutex_lock(&lk->mu);
        int doubt = lk->state == IK_HOLD_IN_DOUBT;
        ik__deadline_ts(&ts, doubt ? 200 : period);
        while (!lk->stop && pthread_cond_timedwait(&lk->cv, &lk->mu, &ts) != ETIMEDOUT) {
        }
        int stop = lk->stop;
        int64_t id = lk->lease;
        pthread_mutex_unlock(&lk->mu);
        if (stop) break;
        ik__etcd_answer a = {0};
        char why[300];
        int64_t sent = ik__mono_ns();
        int e = ik__etcd_lease_keepalive(b->gw, id, lk->ttl_ms / 3, &a, why, sizeof why);
        int64_t ttl = e ? -1 : a.ttl;
        if (!e) ik__etcd_answer_free(&a);
        pthread_mutex_lock(&lk->mu);
        ik_hold_state was = lk->state, now = was;
        const char *say = NULL;
        if (ttl > 0) {
            lk->proof = (ik__lease_proof){sent, ttl * 1000};
            if (was == IK_HOLD_IN_DOUBT) now = IK_HOLD_HELD, say = "etcd answers again";
        } else if (ttl == 0) {
            lk->gone = 1;
            __atomic_store_n(&lk->wake, 1, __ATOMIC_SEQ_CST);
            if (was == IK_HOLD_HELD || was == IK_HOLD_IN_DOUBT)
                now = IK_HOLD_LOST, say = "the lock's etcd lease expired: its key is gone";
        } else if (was == IK_HOLD_HELD || was == IK_HOLD_IN_DOUBT) {
            if (ik__mono_ns() >= ik__proof_until_ns(&lk->proof))
                now = IK_HOLD_LOST, say = "no keepalive answered for 2/3 of the lease TTL: the "
                                          "lock may be another's soon";
            else if (was == IK_HOLD_HELD)
                now = IK_HOLD_IN_DOUBT, say = "a keepalive of the lock's lease went unanswered: "
                                              "the lock may have been lost";
        }
        int tell = now != was && !lk->stop;
        if (tell) {
            lk->state = now;
            snprintf(lk->why, sizeof lk->why, "%s", say);
        }
        int end = lk->gone || now == IK_HOLD_LOST;
        int proved = ttl > 0 && !lk->stop && (now == IK_HOLD_HELD || now == IK_HOLD_IN_DOUBT);
        int64_t until = ik__proof_until_ns(&lk->proof);
        pthread_mutex_unlock(&lk->mu);
        if (tell) ik__lock_notify(&lk->base, now, say); /* RE3 */
        if (proved) ik__lock_proved(&lk->base, until);
        if (end) break;
    }
    return NULL;
}

/* Stops the keeper and revokes the lease (which deletes our key). */
static void drop(etcd_lock *lk)
{
    ik__etcd_backend *b = ik__etcd_of(lk->base.be);
    pthread_mutex_lock(&lk->mu);
    int k = lk->keeping;
    lk->stop = 1;
    pthread_cond_broadcast(&lk->cv);
    pthread_mutex_unlock(&lk->mu);
    if (k) pthread_join(lk->keeper, NULL);
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->gone ? 0 : lk->lease;
    lk->keeping = 0;
    lk->stop = 0;
    lk->lease = 0;
    lk->gone = 0;
    pthread_mutex_unlock(&lk->mu);
    if (id) {
        ik__etcd_answer a = {0};
        char why[300];
        int e = ik__etcd_lease_revoke(b->gw, id, b->wait_ms, &a, why, sizeof why);
        ik__etcd_answer_free(&a);
        if (e && e != IK_ESTORE) /* not revoked: the key goes at the TTL */
            ik__logf("etcd lock %s: the revoke of its lease went unanswered (%s): its key "
                     "lapses at the TTL",
                     lk->key, why);
    }
}

/* RE2: the newest key of the prefix created before rev: 1 and *older (its key) and
 * *at (the read's revision), 0 if there is none, or an error. */
static int older(ik__etcd_backend *b, etcd_lock *lk, int64_t rev, char *older_key, size_t len,
                 int64_t *at, char *why, size_t why_len)
{
    ik__etcd_answer a = {0};
    int e = ik__etcd_range(b->gw, lk->pfx, 1, -1, rev - 1, 1, b->wait_ms * 3, &a, why, why_len);
    if (e) return e;
    int found = a.n_kvs > 0;
    if (found) snprintf(older_key, len, "%s", a.kvs[0].key);
    *at = a.revision;
    ik__etcd_answer_free(&a);
    return found;
}

static int etcd_acquire(ik_lock *base, int64_t timeout_ms, int64_t *fence)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st == IK_HOLD_LOST) {
        drop(lk);
        set_state(lk, IK_HOLD_IDLE, "released after a loss");
    } else if (st != IK_HOLD_IDLE) {
        return IK_EINVAL;
    }
    if (__atomic_exchange_n(&lk->cancel, 0, __ATOMIC_SEQ_CST)) return IK_ECLOSED;
    __atomic_store_n(&lk->wake, 0, __ATOMIC_SEQ_CST);
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : ik__mono_ms() + timeout_ms;
    char why[400] = "";
    set_state(lk, IK_HOLD_WAITING, "waiting");
    /* our lease, and its keeper from now on (a wait may outlast a TTL) */
    ik__etcd_answer a = {0};
    int64_t sent = ik__mono_ns();
    int e = ik__etcd_lease_grant(b->gw, b->ttl_ms / 1000, b->wait_ms * 3, &a, why, sizeof why);
    if (e) {
        set_state(lk, IK_HOLD_IDLE, why);
        return e == IK_EUNSAFE ? e : IK_ESTORE;
    }
    pthread_mutex_lock(&lk->mu);
    lk->lease = a.id;
    lk->ttl_ms = a.ttl * 1000;
    lk->proof = (ik__lease_proof){sent, a.ttl * 1000};
    lk->gone = 0;
    lk->stop = 0;
    snprintf(lk->key, sizeof lk->key, "%s%" PRIx64, lk->pfx, (uint64_t)a.id);
    lk->keeping = pthread_create(&lk->keeper, NULL, keeper, lk) == 0;
    pthread_mutex_unlock(&lk->mu);
    ik__etcd_answer_free(&a);
    /* our key, if absent (etcd's Mutex.Lock and Election.Campaign) */
    const char *val = base->kind == IK__LOCK_LATCH && base->data ? base->data : "";
    ik__etcd_txn *t = ik__etcd_txn_new();
    e = t ? IK_OK : IK_ENOMEM;
    if (!e) e = ik__etcd_txn_cmp(t, lk->key, "CREATE", "EQUAL", 0, NULL);
    if (!e) e = ik__etcd_txn_put(t, 1, lk->key, val, lk->lease);
    if (!e) e = ik__etcd_txn_get(t, 1, lk->pfx, 1); /* every contender, after ours */
    if (!e) e = ik__etcd_txn_get(t, 0, lk->key, 0);
    if (!e) e = ik__etcd_txn_get(t, 0, lk->pfx, 1);
    if (!e) e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, sizeof why);
    ik__etcd_txn_free(t);
    int64_t rev = 0;
    int waited = 0, first = 0;
    if (!e) {
        /* success: [put, range of the prefix]; failure: [our key, range of the prefix] */
        if (a.succeeded) rev = a.revision;
        for (size_t i = 0; i < a.n_kvs && !a.succeeded; i++)
            if (a.kvs[i].resp == 0) rev = a.kvs[i].create_revision;
        first = rev != 0;
        for (size_t i = 0; i < a.n_kvs; i++)
            if (a.kvs[i].resp == 1 && a.kvs[i].create_revision < rev) first = 0;
        ik__etcd_answer_free(&a);
        if (!rev)
            e = ik__fail(IK_ESTORE, why, sizeof why, "etcd showed no revision of %s", lk->key);
    }
    /* wait for every older contender to go (etcd's waitDeletes); none older in the
     * txn's own read (RE2, made after our key existed): held at once */
    while (!e && !first) {
        char prev[sizeof lk->key];
        int64_t at = 0;
        int o = older(b, lk, rev, prev, sizeof prev, &at, why, sizeof why);
        if (o < 0) {
            e = o;
            break;
        }
        if (o == 0) break;
        waited = 1;
        int64_t left = deadline == INT64_MAX ? 3600000 : deadline - ik__mono_ms();
        if (left <= 0) {
            e = timeout_ms == 0 ? IK_EBUSY : IK_ETIMEDOUT;
            snprintf(why, sizeof why, "timed out");
            break;
        }
        e = ik__etcd_watch_delete(b->gw, prev, at, left, &lk->wake, why, sizeof why);
        if (e == IK_ESTORE) e = IK_OK; /* the stream broke: read again */
        if (e == IK_ETIMEDOUT && deadline == INT64_MAX) e = IK_OK;
        if (e == IK_ECLOSED) {
            pthread_mutex_lock(&lk->mu);
            int gone = lk->gone;
            pthread_mutex_unlock(&lk->mu);
            if (gone)
                e = ik__fail(IK_ESTORE, why, sizeof why,
                             "the lock's etcd lease expired while it waited");
            else
                __atomic_store_n(&lk->cancel, 0, __ATOMIC_SEQ_CST);
        }
        if (e == IK_ETIMEDOUT && timeout_ms == 0) e = IK_EBUSY;
    }
    if (!e && waited) { /* RE2: ours is still there (the lease did not lapse while we waited) */
        e = ik__etcd_range(b->gw, lk->key, 0, 0, 0, 1, b->wait_ms * 3, &a, why, sizeof why);
        if (!e) {
            int there = a.n_kvs == 1 && a.kvs[0].create_revision == rev;
            ik__etcd_answer_free(&a);
            if (!there)
                e = ik__fail(IK_ESTORE, why, sizeof why, "the lock's key %s is gone", lk->key);
        }
    }
    if (e) {
        drop(lk);
        set_state(lk, IK_HOLD_IDLE, why);
        return e == IK_EINDOUBT ? IK_ESTORE : e;
    }
    pthread_mutex_lock(&lk->mu);
    lk->fence = rev;
    int ok = lk->keeping && !lk->gone;
    if (ok) {
        lk->state = IK_HOLD_HELD;
        snprintf(lk->why, sizeof lk->why, "granted");
    }
    int64_t until = ik__proof_until_ns(&lk->proof);
    pthread_mutex_unlock(&lk->mu);
    if (ok) ik__lock_proved(base, until);
    if (!ok) {
        drop(lk);
        set_state(lk, IK_HOLD_IDLE, "the lock's lease cannot be kept");
        return IK_ESTORE;
    }
    if (fence) *fence = rev;
    return IK_OK;
}

static int etcd_release(ik_lock *base)
{
    etcd_lock *lk = (etcd_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_HELD && st != IK_HOLD_IN_DOUBT && st != IK_HOLD_LOST) return IK_EINVAL;
    drop(lk);
    pthread_mutex_lock(&lk->mu);
    lk->state = IK_HOLD_IDLE;
    lk->fence = 0;
    snprintf(lk->why, sizeof lk->why, "released");
    pthread_mutex_unlock(&lk->mu);
    return st == IK_HOLD_LOST ? IK_ELOST : IK_OK;
}

static void etcd_cancel(ik_lock *base, int on)
{
    etcd_lock *lk = (etcd_lock *)base;
    __atomic_store_n(&lk->cancel, on ? 1 : 0, __ATOMIC_SEQ_CST);
    if (on) __atomic_store_n(&lk->wake, 1, __ATOMIC_SEQ_CST);
}

static void etcd_info(ik_lock *base, ik_hold_info *out)
{
    etcd_lock *lk = (etcd_lock *)base;
    ik__etcd_backend *b = ik__etcd_of(base->be);
    pthread_mutex_lock(&lk->mu);
    out->state = lk->state;
    out->fence = lk->state == IK_HOLD_IDLE || lk->state == IK_HOLD_WAITING ? 0 : lk->fence;
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
    int had = lk->lease != 0 || lk->keeping;
    pthread_mutex_unlock(&lk->mu);
    if (had) drop(lk);
    pthread_cond_destroy(&lk->cv);
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
    .lapses = 1,
};
