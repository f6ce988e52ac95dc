/* recipe_sql.c: locks and elections on SQL, on the database's session locks
 * (PostgreSQL advisory locks, MySQL/MariaDB GET_LOCK), which the server frees when
 * the holder's connection ends (docs/recipes.md, "SQL"; docs/sql.md).
 *
 * Each ik_lock has a connection of its own while it waits and holds: the lock is
 * that session's. A release that unlocked keeps the connection as the lock's spare
 * for its next acquire, which pings it first (a dead one is closed and a new one
 * opened): a new connection costs a fork and a SCRAM exchange on PostgreSQL, far
 * more than the lock itself. The spare holds no session lock (SL5).
 *
 * Its key is the path with its kind, "lock:PATH" (a mutex),
 * "rwlock:PATH" (both halves of a read-write lock: readers take it shared, where
 * the database can), "elect:PATH" (an election's latch); the driver derives the
 * database's lock name from it, as docs/recipes.md shows, so that an application
 * taking that lock by hand is excluded. The wait is the database's own queue
 * (driver->lock), so contenders are served as fairly as the database serves them.
 *
 * After the grant, in the same session: the fencing token, a per-key counter in
 * idk_fence advanced in one transaction (IK__SQL_FENCE_BUMP, or _INSERT for the
 * first grant), and for an election the leader's id (IK__SQL_HOLDER_SET). Then a
 * monitor thread pings the session every PING_MS:
 *
 *   IDLE --sql_acquire--> WAITING --driver->lock 1, fence--> HELD (monitor started)
 *   WAITING --timeout / cancel (connection closed)--> IDLE
 *   HELD --ping: no answer in PING_WAIT_MS (monitor)--> IN_DOUBT        callback
 *   IN_DOUBT --ping answered (monitor)--> HELD                          callback
 *   HELD, IN_DOUBT --session dead, a ping's proof of another session (SL6), or in
 *                    doubt for 2/3 of the lease TTL (monitor)--> LOST   callback
 *   HELD, IN_DOUBT, LOST --sql_release (monitor joined, unlock, close)--> IDLE
 *
 * Invariants
 *   SL1. HELD only while the session that took the lock answered a ping within the
 *       last PING_WAIT_MS + PING_MS (or just took it); a dead session is LOST.
 *   SL2. Only the monitor uses the connection while the lock is held; release
 *       joins it first, so one thread at a time uses a connection.
 *   SL3. The fence only grows: it is advanced after the grant, under the lock, in
 *       a committed transaction that passed the hazard gate and whose evidence, read
 *       after its COMMIT, is safe (fence_next); a fence in doubt or untrusted fails
 *       the acquire.
 *   SL4. No callback is made while lk->mu is held.
 *   SL5. The spare is a connection whose unlock of the key the database answered:
 *       it holds nothing; any other connection of the lock is closed, which frees
 *       what its session held.
 *   SL6. A grant counts only if the proof that rode with it (driver->lock, and the
 *       fence's and leader's writes) shows the connection's own server session: a
 *       pooler in transaction mode would run it in a session another client shares,
 *       where a session lock is re-entrant (docs/hazards.md, "PostgreSQL"). One
 *       that does not is IK__SQL_EFOREIGN: the connection is closed, the acquire
 *       fails IK_EUNSAFE and the hazard row is installed.
 */
#include "backend_sql.h"
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PING_MS 500       /* a ping every half second (docs/recipes.md: every second or faster) */
#define PING_WAIT_MS 1000 /* no answer this long: in doubt */

typedef struct sql_lock {
    ik_lock base;
    char key[IK__RECIPE_PATH_MAX + 16];
    int cancel; /* __atomic */

    pthread_mutex_t mu; /* guards what follows */
    pthread_cond_t cv;
    ik_hold_state state;
    int64_t fence;
    char why[160];
    char session[64];
    ik__sql_conn *c;
    ik__sql_conn *spare; /* unlocked, kept for the next acquire (SL5) */
    int monitoring, stop;
    pthread_t monitor;
} sql_lock;

_Static_assert(sizeof(sql_lock) <= IK__SQL_LOCK_SIZE, "IK__SQL_LOCK_SIZE too small");

const size_t ik__sql_lock_size = sizeof(sql_lock);

static const char *prefix_of(ik__lock_kind k)
{
    switch (k) {
    case IK__LOCK_READ:
    case IK__LOCK_WRITE:
        return "rwlock:";
    case IK__LOCK_LATCH:
        return "elect:";
    default:
        return "lock:";
    }
}

int ik__sql_lock_init(ik_lock *base)
{
    sql_lock *lk = (sql_lock *)base;
    snprintf(lk->key, sizeof lk->key, "%s%s", prefix_of(base->kind), base->path);
    pthread_mutex_init(&lk->mu, NULL);
    ik__cond_init_mono(&lk->cv);
    lk->state = IK_HOLD_IDLE;
    lk->spare = NULL;
    return IK_OK;
}

static void set_state(sql_lock *lk, ik_hold_state s, const char *why)
{
    pthread_mutex_lock(&lk->mu);
    lk->state = s;
    snprintf(lk->why, sizeof lk->why, "%s", why);
    pthread_mutex_unlock(&lk->mu);
}

static void *monitor_thread(void *arg)
{
    sql_lock *lk = arg;
    ik__sql_backend *b = ik__sql_of(lk->base.be);
    int64_t doubt_since = 0;
    int64_t lost_after = ik__proof_window_ms(b->ttl_ms);
    for (;;) {
        struct timespec ts;
        ik__deadline_ts(&ts, PING_MS);
        pthread_mutex_lock(&lk->mu);
        while (!lk->stop && pthread_cond_timedwait(&lk->cv, &lk->mu, &ts) != ETIMEDOUT) {
        }
        int stop = lk->stop;
        ik__sql_conn *c = lk->c;
        pthread_mutex_unlock(&lk->mu);
        if (stop) break;
        int rc = b->d->ping(c, PING_WAIT_MS);
        ik_hold_state now;
        const char *why;
        if (rc == 0) {
            doubt_since = 0;
            now = IK_HOLD_HELD;
            why = "the database answers again";
        } else if (rc == IK__SQL_ETIMEOUT) {
            if (!doubt_since) doubt_since = ik__mono_ms() - PING_WAIT_MS;
            if (ik__mono_ms() - doubt_since >= lost_after) {
                now = IK_HOLD_LOST;
                why = "no answer from the database for 2/3 of the lease TTL: the lock may be "
                      "another's soon";
            } else {
                now = IK_HOLD_IN_DOUBT;
                why = "no answer from the database: the lock may have been lost";
            }
        } else if (rc == IK__SQL_EFOREIGN) { /* SL6 */
            ik__sql_hazards_foreign(b, c, rc);
            now = IK_HOLD_LOST;
            why = "the lock's server session is not this connection's own (a pooler in "
                  "transaction mode): the lock may be another's";
        } else {
            now = IK_HOLD_LOST;
            why = "the database session ended: the database freed the lock";
        }
        pthread_mutex_lock(&lk->mu);
        ik_hold_state was = lk->state;
        int tell = was != now && !lk->stop;
        if (tell) {
            lk->state = now;
            snprintf(lk->why, sizeof lk->why, "%s", why);
        }
        pthread_mutex_unlock(&lk->mu);
        if (tell) ik__lock_notify(&lk->base, now, why);
        if (now == IK_HOLD_LOST) break;
    }
    return NULL;
}

/* The fence's transaction on c, up to its COMMIT (BEGIN, the bump, or the first
 * row, and the read of the new value): 0 and *f, or a class (IK__SQL_EDUPLICATE: a
 * first grant raced us; the transaction is rolled back on every failure). */
static int fence_write(const ik__sql_driver *d, ik__sql_conn *c, const char *key, int64_t *f)
{
    const char *p[] = {key};
    ik__sql_res r;
    int rc = d->exec(c, IK__SQL_BEGIN, NULL, 0, NULL, NULL, 0);
    if (rc) return rc;
    rc = ik__sql_exec(d, c, IK__SQL_FENCE_BUMP, p, 1, &r, NULL, 0);
    int64_t affected = r.affected;
    ik__sql_res_clear(&r);
    if (rc == 0 && affected == 0) rc = d->exec(c, IK__SQL_FENCE_INSERT, p, 1, NULL, NULL, 0);
    if (rc == 0) rc = ik__sql_exec(d, c, IK__SQL_FENCE_GET, p, 1, &r, NULL, 0);
    *f = rc == 0 && r.nrows == 1 ? ik__sql_int(&r, 0, 0) : 0;
    if (rc == 0) ik__sql_res_clear(&r);
    return rc ? ik__sql_abort(d, c, rc) : 0;
}

/* Advances the key's fence on c in one transaction, a write like any other (SL3;
 * docs/hazards.md, "Proof with every write"): the hazard gate first (nothing is sent
 * while a check is refused), and the COMMIT with the proof read after it in its round
 * trip (SP1 of backend_sql_proof.c). 0 and *fence; IK_EUNSAFE (the gate refused, or
 * the fence's evidence was refused or qualified: not granted; why says which); or a
 * class. */
static int fence_next(ik__sql_backend *b, ik__sql_conn *c, const char *key, int64_t *fence,
                      char *why, size_t why_len)
{
    const ik__sql_driver *d = b->d;
    int cls = 0;
    int rc = ik__sql_hazards_gate(b, c, &cls, why, why_len);
    if (rc) return rc == IK_EUNSAFE ? rc : cls ? cls : IK__SQL_EGONE;
    for (int attempt = 0; attempt < 3; attempt++) {
        int64_t f = 0;
        rc = fence_write(d, c, key, &f);
        if (rc == IK__SQL_EDUPLICATE) continue; /* a first grant raced us: bump again */
        if (rc) return rc;
        ik__test_hold(b->test_commit_hold);
        ik__sql_commit cm;
        rc = ik__sql_commit_proved(b, c, (ik__sql_call){IK__SQL_COMMIT, NULL, 0}, "idk_fence", NULL,
                                   &cm);
        if (cm.state == IK__SQL_UNTRUSTED) {
            ik__fail(0, why, why_len, "fence %" PRId64 " of %s was not trusted: %s", f, key,
                     cm.why);
            return rc == IK__SQL_EFOREIGN ? rc : IK_EUNSAFE;
        }
        if (cm.state != IK__SQL_COMMITTED) return rc ? rc : IK__SQL_EDEFINITE;
        if (f <= 0) return IK__SQL_EDEFINITE;
        *fence = f;
        return 0;
    }
    return IK__SQL_EDEFINITE;
}

/* Ends a grant or wait: stops the monitor, unlocks (if held) and closes. */
static void drop(sql_lock *lk, int unlock)
{
    ik__sql_backend *b = ik__sql_of(lk->base.be);
    pthread_mutex_lock(&lk->mu);
    int mon = lk->monitoring;
    lk->stop = 1;
    pthread_cond_broadcast(&lk->cv);
    pthread_mutex_unlock(&lk->mu);
    if (mon) pthread_join(lk->monitor, NULL);
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->c;
    lk->c = NULL;
    lk->monitoring = 0;
    lk->stop = 0;
    lk->session[0] = '\0';
    pthread_mutex_unlock(&lk->mu);
    if (c && unlock && b->d->unlock(c, lk->base.kind, lk->key) == 0) {
        pthread_mutex_lock(&lk->mu); /* SL5: unlocked, so it may serve the next acquire */
        if (!lk->spare) lk->spare = c, c = NULL;
        pthread_mutex_unlock(&lk->mu);
    }
    ik__sql_conn_close(b, c);
}

int ik__sql_acquire(ik_lock *base, int64_t timeout_ms, int64_t *fence)
{
    sql_lock *lk = (sql_lock *)base;
    ik__sql_backend *b = ik__sql_of(base->be);
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st == IK_HOLD_LOST) {
        drop(lk, 0);
        set_state(lk, IK_HOLD_IDLE, "released after a loss");
    } else if (st != IK_HOLD_IDLE) {
        return IK_EINVAL;
    }
    if (__atomic_exchange_n(&lk->cancel, 0, __ATOMIC_SEQ_CST)) return IK_ECLOSED;
    int64_t deadline = timeout_ms < 0 ? -1 : timeout_ms == 0 ? 0 : ik__mono_ms() + timeout_ms;
    set_state(lk, IK_HOLD_WAITING, "waiting");
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->spare;
    lk->spare = NULL;
    pthread_mutex_unlock(&lk->mu);
    if (c && b->d->ping(c, PING_WAIT_MS) != 0) { /* ended while idle: a new one */
        ik__sql_conn_close(b, c);
        c = NULL;
    }
    char why[256] = "";
    int rc = c ? 0 : ik__sql_connect_holder(b, &c, why, sizeof why);
    if (rc) {
        set_state(lk, IK_HOLD_IDLE, why);
        return IK_ESTORE;
    }
    rc = b->d->lock(c, base->kind, lk->key, deadline, &lk->cancel, why, sizeof why);
    int64_t f = 0;
    if (rc == 1) {
        rc = fence_next(b, c, lk->key, &f, why, sizeof why);
        if (rc == 0 && base->kind == IK__LOCK_LATCH) {
            const char *p[] = {lk->key, base->data ? base->data : ""};
            rc = b->d->exec(c, IK__SQL_HOLDER_SET, p, 2, NULL, why, sizeof why);
        }
        if (rc == 0)
            rc = 1;
        else
            b->d->unlock(c, base->kind, lk->key);
    }
    if (rc != 1) {
        if (rc == IK__SQL_EFOREIGN) { /* granted in a session not ours: SL6 */
            const ik__sql_conn_hz *hz = b->d->hz_state(c);
            snprintf(why, sizeof why, "%s is %s: %s", hz->foreign_check, hz->foreign_value,
                     hz->foreign_fix);
            ik__sql_hazards_foreign(b, c, rc);
        }
        ik__sql_conn_close(b, c);
        if (rc == IK__SQL_ECANCELED) __atomic_store_n(&lk->cancel, 0, __ATOMIC_SEQ_CST);
        set_state(lk, IK_HOLD_IDLE, rc == 0 ? "timed out" : why);
        return rc == 0                   ? (timeout_ms == 0 ? IK_EBUSY : IK_ETIMEDOUT)
               : rc == IK__SQL_ECANCELED ? IK_ECLOSED
               : rc == IK__SQL_EFOREIGN || rc == IK_EUNSAFE ? IK_EUNSAFE
                                                            : IK_ESTORE;
    }
    pthread_mutex_lock(&lk->mu);
    lk->c = c;
    lk->fence = f;
    lk->state = IK_HOLD_HELD;
    snprintf(lk->why, sizeof lk->why, "granted");
    b->d->session(c, lk->session, sizeof lk->session);
    lk->stop = 0;
    lk->monitoring = pthread_create(&lk->monitor, NULL, monitor_thread, lk) == 0;
    int mon = lk->monitoring;
    pthread_mutex_unlock(&lk->mu);
    if (!mon) {
        drop(lk, 1);
        set_state(lk, IK_HOLD_IDLE, "cannot start the monitor thread");
        return IK_ESYS(EAGAIN);
    }
    if (fence) *fence = f;
    return IK_OK;
}

int ik__sql_release(ik_lock *base)
{
    sql_lock *lk = (sql_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_HELD && st != IK_HOLD_IN_DOUBT && st != IK_HOLD_LOST) return IK_EINVAL;
    drop(lk, st != IK_HOLD_LOST);
    pthread_mutex_lock(&lk->mu);
    lk->state = IK_HOLD_IDLE;
    lk->fence = 0;
    snprintf(lk->why, sizeof lk->why, "released");
    pthread_mutex_unlock(&lk->mu);
    return st == IK_HOLD_LOST ? IK_ELOST : IK_OK;
}

void ik__sql_cancel(ik_lock *base, int on)
{
    sql_lock *lk = (sql_lock *)base;
    __atomic_store_n(&lk->cancel, on ? 1 : 0, __ATOMIC_SEQ_CST);
}

void ik__sql_info(ik_lock *base, ik_hold_info *out)
{
    sql_lock *lk = (sql_lock *)base;
    ik__sql_backend *b = ik__sql_of(base->be);
    pthread_mutex_lock(&lk->mu);
    out->state = lk->state;
    out->fence = lk->state == IK_HOLD_IDLE || lk->state == IK_HOLD_WAITING ? 0 : lk->fence;
    snprintf(out->node, sizeof out->node, "%s", lk->key);
    snprintf(out->session, sizeof out->session, "%s", lk->session);
    snprintf(out->why, sizeof out->why, "%s", lk->why);
    out->session_timeout_ms = b->ttl_ms;
    pthread_mutex_unlock(&lk->mu);
}

void ik__sql_lock_fini(ik_lock *base)
{
    sql_lock *lk = (sql_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st == IK_HOLD_HELD || st == IK_HOLD_IN_DOUBT || st == IK_HOLD_LOST)
        drop(lk, st != IK_HOLD_LOST);
    ik__sql_conn_close(ik__sql_of(base->be), lk->spare);
    lk->spare = NULL;
    pthread_cond_destroy(&lk->cv);
    pthread_mutex_destroy(&lk->mu);
}

int ik__sql_leader(ik__backend *be, const char *path, char **id)
{
    ik__sql_backend *b = ik__sql_of(be);
    char key[IK__RECIPE_PATH_MAX + 16];
    snprintf(key, sizeof key, "%s%s", prefix_of(IK__LOCK_LATCH), path);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return IK_ESTORE;
    const char *p[] = {key};
    ik__sql_res r;
    rc = ik__sql_exec(b->d, c, IK__SQL_HOLDER_GET, p, 1, &r, NULL, 0);
    ik__sql_put(b, idx, rc);
    if (rc) return IK_ESTORE;
    rc = IK_ENOTFOUND;
    if (r.nrows >= 1) {
        *id = strdup(ik__sql_cell(&r, 0, 0));
        rc = *id ? IK_OK : IK_ENOMEM;
    }
    ik__sql_res_clear(&r);
    return rc;
}
