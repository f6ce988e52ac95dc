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
 * first grant), and for an election the leader's id (IK__SQL_HOLDER_SET). Whether
 * the grant still stands is the hold monitor's to decide (src/lib/recipes/hold.h),
 * from this file's evidence: the grant's proof (the fence's first statement: the
 * session lived when it was sent, and the server ends it no sooner than its idle
 * limit, --lease-ttl, after the last statement it received), and a probe, a ping
 * of the session (its send time and the same term; the session gone: GONE).
 *
 * A semaphore (recipes/semaphore.c) is a queue, the session lock "semq:PATH" taken
 * as above (no fence: its grants guard nothing but the order), and leases: max
 * slots, each the session lock "sema:PATH#I" (I from 0), whose holder records itself
 * in idk_holder (its fence, then its data: for ik_semaphore_holders); the fence of
 * every lease is the one counter "sema:PATH", and the max stored with the semaphore
 * is idk_fence's row "semamax:PATH". The queue's holder tries the slots in turn
 * (slot_take), and while none is free tries again after a pause that grows to
 * SLOT_PAUSE_MAX_MS: a database's session locks have no wait for one of several, so
 * a lease given back is found by the queue's holder within that pause, and the other
 * contenders sleep in the database's queue of semq:PATH (no herd). The slots exclude
 * by themselves: no lease depends on the queue (SE1 in semaphore.c).
 *
 *   IDLE --sql_acquire--> WAITING --driver->lock 1, fence--> HELD
 *   WAITING --timeout / cancel (connection closed)--> IDLE
 *   HELD --sql_release (the probe in flight yields, unlock, close or spare)--> IDLE
 *
 * Invariants
 *   SL1. A probe's proof is the send time of the ping it answered: a ping that
 *       timed out is still out, and the next probe waits for its answer, whose
 *       proof is that earlier send (ping_sent).
 *   SL2. One thread at a time uses the lock's connection: while HELD, the probe (on
 *       the hold's prober thread) under cmu; release takes cmu after the hold
 *       asked the probe in flight to stop, which it does within PROBE_SLICE_MS.
 *   SL3. The fence only grows: it is advanced after the grant, under the lock, in
 *       a committed transaction that passed the hazard gate and whose evidence, read
 *       after its COMMIT, is safe (fence_next); a fence in doubt or untrusted fails
 *       the acquire.
 *   SL4. The connection is closed only by a release or a failed acquire: a grant
 *       the hold monitor finds lost keeps its session (and the lock, if the server
 *       still holds it) until its owner releases it, after what it guarded ended.
 *   SL5. The spare is a connection whose unlock of the key the database answered:
 *       it holds nothing; any other connection of the lock is closed, which frees
 *       what its session held.
 *   SL6. A grant counts only if the proof that rode with it (driver->lock, and the
 *       fence's and leader's writes) shows the connection's own server session: a
 *       pooler in transaction mode would run it in a session another client shares,
 *       where a session lock is re-entrant (docs/hazards.md, "PostgreSQL"). One
 *       that does not is IK__SQL_EFOREIGN: the connection is closed, the acquire
 *       fails IK_EUNSAFE and the hazard row is installed. A ping that shows it is
 *       GONE evidence.
 */
#include "backend_sql.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PING_WAIT_MS 1000      /* an idle spare's ping before reuse */
#define SLOT_PAUSE_FIRST_MS 10 /* a semaphore's slots tried again after this ... */
#define SLOT_PAUSE_MAX_MS 100  /* ... doubling up to this while none is free */
#define PROBE_SLICE_MS 100     /* a probe looks at its stop this often (SL2) */

typedef struct sql_lock {
    ik_lock base;
    char key[IK__RECIPE_PATH_MAX + 16];
    int cancel; /* __atomic */

    pthread_mutex_t mu;  /* guards what follows */
    ik_hold_state state; /* IDLE, WAITING or HELD */
    int64_t fence;
    char why[160];
    char session[64];
    ik__sql_conn *c;
    ik__sql_conn *spare; /* unlocked, kept for the next acquire (SL5) */
    int64_t granted_ns;  /* the grant's proof: its fence's first statement's send */

    pthread_mutex_t cmu; /* SL2: held while a probe, the watch or release uses c */
    int ping_out;        /* under cmu: a ping of c is still out (SL1) ... */
    int64_t ping_sent;   /* ... sent then */
    int kick[2];         /* a pipe: release wakes the watch at once (-1: none) */
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
    case IK__LOCK_SEMQ:
        return "semq:";
    case IK__LOCK_SEMA:
        return "sema:";
    default:
        return "lock:";
    }
}

int ik__sql_lock_init(ik_lock *base)
{
    sql_lock *lk = (sql_lock *)base;
    if (base->sema_layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    snprintf(lk->key, sizeof lk->key, "%s%s", prefix_of(base->kind), base->path);
    pthread_mutex_init(&lk->mu, NULL);
    pthread_mutex_init(&lk->cmu, NULL);
    lk->state = IK_HOLD_IDLE;
    lk->spare = NULL;
    if (pipe2(lk->kick, O_CLOEXEC | O_NONBLOCK) != 0) lk->kick[0] = lk->kick[1] = -1;
    return IK_OK;
}

static void set_state(sql_lock *lk, ik_hold_state s, const char *why)
{
    pthread_mutex_lock(&lk->mu);
    lk->state = s;
    snprintf(lk->why, sizeof lk->why, "%s", why);
    pthread_mutex_unlock(&lk->mu);
}

void ik__sql_proof_of_grant(ik_lock *base, ik__hold_evidence *out)
{
    sql_lock *lk = (sql_lock *)base;
    pthread_mutex_lock(&lk->mu);
    out->fact = IK__HOLD_STANDS;
    out->proof = (ik__lease_proof){lk->granted_ns, ik__sql_of(base->be)->ttl_ms};
    pthread_mutex_unlock(&lk->mu);
}

/* The probe: a ping of the grant's session, waited for in slices until the deadline
 * or the stop (SL1, SL2). */
void ik__sql_probe(ik_lock *base, int64_t deadline_ns, const int *stop, ik__hold_evidence *out)
{
    sql_lock *lk = (sql_lock *)base;
    ik__sql_backend *b = ik__sql_of(base->be);
    pthread_mutex_lock(&lk->cmu);
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->state == IK_HOLD_HELD ? lk->c : NULL;
    pthread_mutex_unlock(&lk->mu);
    int rc = IK__SQL_ETIMEOUT;
    while (c && !__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
        int64_t left = (deadline_ns - ik__mono_ns()) / 1000000;
        if (left <= 0) break;
        if (!lk->ping_out) lk->ping_sent = ik__mono_ns();
        rc = b->d->ping(c, (int)(left < PROBE_SLICE_MS ? left : PROBE_SLICE_MS));
        lk->ping_out = rc == IK__SQL_ETIMEOUT;
        if (rc != IK__SQL_ETIMEOUT) break;
    }
    out->fact = IK__HOLD_NO_ANSWER;
    if (!c) {
        snprintf(out->why, sizeof out->why, "released");
    } else if (rc == 0) {
        out->fact = IK__HOLD_STANDS;
        out->proof = (ik__lease_proof){lk->ping_sent, b->ttl_ms};
    } else if (rc == IK__SQL_ETIMEOUT) {
        snprintf(out->why, sizeof out->why, "no answer from the database to a ping");
    } else if (rc == IK__SQL_EFOREIGN) { /* SL6 */
        ik__sql_hazards_foreign(b, c, rc);
        out->fact = IK__HOLD_GONE;
        snprintf(out->why, sizeof out->why,
                 "the lock's server session is not this connection's own (a pooler in "
                 "transaction mode): the lock may be another's");
    } else {
        out->fact = IK__HOLD_GONE;
        snprintf(out->why, sizeof out->why,
                 "the database session ended (its connection closed): the database frees "
                 "the lock");
    }
    pthread_mutex_unlock(&lk->cmu);
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

/* Between probes: the session's end as the database tells it unasked (a terminated
 * session, a restart, its own idle limit): with no request out the database sends
 * nothing, so the connection's socket turning readable means it ended the session
 * (sql_driver.h's socket). A ping then says which: the session's end (GONE), or an
 * answer after all (STANDS). Polled until the deadline, the stop, or a release's
 * kick; with a ping still out, the next probe waits for it instead. */
void ik__sql_watch(ik_lock *base, int64_t deadline_ns, const int *stop, ik__hold_evidence *out)
{
    sql_lock *lk = (sql_lock *)base;
    ik__sql_backend *b = ik__sql_of(base->be);
    out->fact = IK__HOLD_NO_ANSWER;
    pthread_mutex_lock(&lk->cmu);
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->state == IK_HOLD_HELD ? lk->c : NULL;
    pthread_mutex_unlock(&lk->mu);
    int fd = c && !lk->ping_out && b->d->socket ? b->d->socket(c) : -1;
    int said = 0;
    while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE) && !said) {
        int64_t left = (deadline_ns - ik__mono_ns()) / 1000000;
        if (left <= 0) break;
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = lk->kick[0], .events = POLLIN}};
        int n = poll(p, 2, (int)(left < PROBE_SLICE_MS ? left : PROBE_SLICE_MS));
        if (n > 0 && p[1].revents) { /* a release: drain the kick and yield */
            char x[16];
            while (read(lk->kick[0], x, sizeof x) > 0) {
            }
            break;
        }
        said = n > 0 && fd >= 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL));
    }
    if (said) {
        lk->ping_sent = ik__mono_ns();
        int rc = b->d->ping(c, PROBE_SLICE_MS);
        lk->ping_out = rc == IK__SQL_ETIMEOUT;
        if (rc == 0) {
            out->fact = IK__HOLD_STANDS;
            out->proof = (ik__lease_proof){lk->ping_sent, b->ttl_ms};
        } else if (rc != IK__SQL_ETIMEOUT) {
            if (rc == IK__SQL_EFOREIGN) ik__sql_hazards_foreign(b, c, rc);
            out->fact = IK__HOLD_GONE;
            snprintf(out->why, sizeof out->why,
                     "the database ended the lock's session (terminated, restarted, or its "
                     "idle limit): it freed the lock");
        }
    }
    pthread_mutex_unlock(&lk->cmu);
}

/* Ends a grant: once the probe in flight has yielded (SL2), unlocks where the
 * session answers (the connection then becomes the spare, SL5) and closes it
 * otherwise, which frees what its session held. */
static void drop(sql_lock *lk)
{
    ik__sql_backend *b = ik__sql_of(lk->base.be);
    if (lk->kick[1] >= 0 && write(lk->kick[1], "k", 1) < 0) { /* full: a kick is there */
    }
    pthread_mutex_lock(&lk->cmu);
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->c;
    lk->c = NULL;
    lk->session[0] = '\0';
    pthread_mutex_unlock(&lk->mu);
    /* a ping still out: the session may not answer an unlock either */
    int unlock = !lk->ping_out;
    lk->ping_out = 0;
    pthread_mutex_unlock(&lk->cmu);
    if (c && unlock && b->d->unlock(c, lk->base.kind, lk->key) == 0) {
        pthread_mutex_lock(&lk->mu); /* SL5: unlocked, so it may serve the next acquire */
        if (!lk->spare) lk->spare = c, c = NULL;
        pthread_mutex_unlock(&lk->mu);
    }
    ik__sql_conn_close(b, c);
}

/* SEMA: the first free one of the semaphore's slots, its session lock taken on c,
 * tried in turn until deadline_ms (0: one round; -1: none) or a cancel, with a pause
 * between rounds (the header). 1 held (lk->key its key, "sema:PATH#I"), 0 not by
 * the deadline, IK__SQL_ECANCELED, or a connection class. */
static int slot_take(sql_lock *lk, ik__sql_conn *c, int64_t deadline_ms, char *why, size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(lk->base.be);
    int64_t pause = SLOT_PAUSE_FIRST_MS;
    for (;;) {
        for (int64_t i = 0; i < lk->base.sema_max; i++) {
            char key[sizeof lk->key];
            snprintf(key, sizeof key, "sema:%s#%" PRId64, lk->base.path, i);
            int rc = b->d->lock(c, lk->base.kind, key, 0, &lk->cancel, why, why_len);
            if (rc == 1) {
                pthread_mutex_lock(&lk->mu);
                snprintf(lk->key, sizeof lk->key, "%s", key);
                pthread_mutex_unlock(&lk->mu);
            }
            if (rc != 0) return rc;
        }
        int64_t now = ik__mono_ms();
        if (deadline_ms == 0 || (deadline_ms > 0 && now >= deadline_ms)) return 0;
        int64_t until = now + pause;
        if (deadline_ms > 0 && until > deadline_ms) until = deadline_ms;
        while (ik__mono_ms() < until) {
            if (__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) return IK__SQL_ECANCELED;
            int64_t ms = until - ik__mono_ms();
            struct timespec ts = {0, (ms < 20 ? ms : 20) * 1000000};
            nanosleep(&ts, NULL);
        }
        if (__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) return IK__SQL_ECANCELED;
        if (pause < SLOT_PAUSE_MAX_MS) pause *= 2;
    }
}

/* The fence's key: the lock's own, or for a lease the semaphore's one counter. */
static void fence_key(const sql_lock *lk, char *out, size_t len)
{
    if (lk->base.kind == IK__LOCK_SEMA)
        snprintf(out, len, "sema:%s", lk->base.path);
    else
        snprintf(out, len, "%s", lk->key);
}

/* A lease's holder row: its fence, a newline, its data, within idk_holder's 256
 * characters (cut before a UTF-8 sequence, never inside one). */
static int holder_note(ik__sql_backend *b, ik__sql_conn *c, const sql_lock *lk, int64_t fence,
                       char *why, size_t why_len)
{
    char id[250];
    int n = snprintf(id, sizeof id, "%" PRId64 "\n%s", fence, lk->base.data ? lk->base.data : "");
    if (n >= (int)sizeof id) {
        size_t k = sizeof id - 1;
        while (k > 0 && ((unsigned char)id[k] & 0xc0) == 0x80)
            k--;
        id[k] = '\0';
    }
    const char *p[] = {lk->key, id};
    return b->d->exec(c, IK__SQL_HOLDER_SET, p, 2, NULL, why, why_len);
}

/* One attempt of WAITING: a connection (the spare, pinged, or a new one), the
 * session lock in the database's queue until deadline_ms (a lease: a free slot's,
 * slot_take), the fence (SL3) and an election's or a lease's holder row. 1 held
 * (*cp, *f, *sent), or the class that ended it (its connection closed; why in the
 * database's words where it gave some). */
static int attempt(sql_lock *lk, int64_t deadline_ms, ik__sql_conn **cp, int64_t *f, int64_t *sent,
                   char *why, size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(lk->base.be);
    if (why_len) why[0] = '\0'; /* this attempt's words only */
    pthread_mutex_lock(&lk->mu);
    ik__sql_conn *c = lk->spare;
    lk->spare = NULL;
    pthread_mutex_unlock(&lk->mu);
    if (c && b->d->ping(c, PING_WAIT_MS) != 0) { /* ended while idle: a new one */
        ik__sql_conn_close(b, c);
        c = NULL;
    }
    int rc = c ? 0 : ik__sql_connect_holder(b, &c, why, why_len);
    if (rc) return rc;
    if (lk->base.kind == IK__LOCK_SEMA)
        rc = slot_take(lk, c, deadline_ms, why, why_len);
    else
        rc = b->d->lock(c, lk->base.kind, lk->key, deadline_ms, &lk->cancel, why, why_len);
    *sent = ik__mono_ns(); /* the fence's statements prove the session from here */
    if (rc == 1) {
        char fkey[sizeof lk->key];
        fence_key(lk, fkey, sizeof fkey);
        /* a queue's grant guards only the order: no fence */
        rc = lk->base.kind == IK__LOCK_SEMQ ? 0 : fence_next(b, c, fkey, f, why, why_len);
        if (rc && !why[0])
            snprintf(why, why_len, "the fencing token of %s could not be advanced", fkey);
        if (rc == 0 && lk->base.kind == IK__LOCK_LATCH) {
            const char *p[] = {lk->key, lk->base.data ? lk->base.data : ""};
            rc = b->d->exec(c, IK__SQL_HOLDER_SET, p, 2, NULL, why, why_len);
        }
        if (rc == 0 && lk->base.kind == IK__LOCK_SEMA) rc = holder_note(b, c, lk, *f, why, why_len);
        if (rc == 0)
            rc = 1;
        else
            b->d->unlock(c, lk->base.kind, lk->key);
    }
    if (rc == IK__SQL_EFOREIGN) { /* granted in a session not ours: SL6 */
        const ik__sql_conn_hz *hz = b->d->hz_state(c);
        snprintf(why, why_len, "%s is %s: %s", hz->foreign_check, hz->foreign_value,
                 hz->foreign_fix);
        ik__sql_hazards_foreign(b, c, rc);
    }
    if (rc == 1)
        *cp = c;
    else
        ik__sql_conn_close(b, c);
    return rc;
}

/* Whether an attempt's end is waited out (a waiter rides out what a holder rides
 * out, docs/recipes.md): the database unreachable, or the connection lost, its
 * session (and whatever it held) gone with it. */
static int transient(int rc)
{
    return rc == IK__SQL_EGONE || rc == IK__SQL_EDOUBT;
}

int ik__sql_acquire(ik_lock *base, int64_t timeout_ms, int64_t *fence)
{
    sql_lock *lk = (sql_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_IDLE) return IK_EINVAL;
    if (__atomic_exchange_n(&lk->cancel, 0, __ATOMIC_SEQ_CST)) return IK_ECLOSED;
    int64_t deadline = timeout_ms < 0 ? -1 : timeout_ms == 0 ? 0 : ik__mono_ms() + timeout_ms;
    set_state(lk, IK_HOLD_WAITING, "waiting");
    char why[256] = "";
    ik__sql_conn *c = NULL;
    int64_t f = 0, sent = 0, pause = 50;
    int rc, failing = 0;
    for (;;) {
        rc = attempt(lk, deadline, &c, &f, &sent, why, sizeof why);
        if (rc == 1 || !transient(rc) || timeout_ms == 0) break;
        int64_t now = ik__mono_ms();
        if (deadline >= 0 && now >= deadline) break;
        if (failing++ == 0)
            ik__logf("lock %s: the database failed (%s); trying again%s", base->path,
                     why[0] ? why : "no answer", deadline < 0 ? "" : " until the timeout");
        int64_t until = now + pause;
        if (deadline >= 0 && until > deadline) until = deadline;
        while (ik__mono_ms() < until && !__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) {
            struct timespec ts = {0, 20 * 1000000};
            nanosleep(&ts, NULL);
        }
        if (pause < 1000) pause *= 2;
        if (__atomic_load_n(&lk->cancel, __ATOMIC_SEQ_CST)) {
            rc = IK__SQL_ECANCELED;
            break;
        }
    }
    if (rc != 1) {
        if (rc == IK__SQL_ECANCELED) __atomic_store_n(&lk->cancel, 0, __ATOMIC_SEQ_CST);
        set_state(lk, IK_HOLD_IDLE, rc == 0 ? "timed out" : why);
        return rc == 0                   ? (timeout_ms == 0 ? IK_EBUSY : IK_ETIMEDOUT)
               : rc == IK__SQL_ECANCELED ? IK_ECLOSED
               : rc == IK__SQL_EFOREIGN || rc == IK_EUNSAFE ? IK_EUNSAFE
                                                            : IK_ESTORE;
    }
    ik__sql_backend *b = ik__sql_of(base->be);
    pthread_mutex_lock(&lk->mu);
    lk->c = c;
    lk->fence = f;
    lk->state = IK_HOLD_HELD;
    lk->granted_ns = sent;
    snprintf(lk->why, sizeof lk->why, "granted");
    b->d->session(c, lk->session, sizeof lk->session);
    pthread_mutex_unlock(&lk->mu);
    if (fence) *fence = f;
    return IK_OK;
}

int ik__sql_release(ik_lock *base)
{
    sql_lock *lk = (sql_lock *)base;
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
    out->fence = lk->state == IK_HOLD_HELD ? lk->fence : 0;
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
    if (st == IK_HOLD_HELD) drop(lk);
    ik__sql_conn_close(ik__sql_of(base->be), lk->spare);
    lk->spare = NULL;
    pthread_mutex_destroy(&lk->cmu);
    pthread_mutex_destroy(&lk->mu);
    for (int i = 0; i < 2; i++)
        if (lk->kick[i] >= 0) close(lk->kick[i]);
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

/* The max stored with the semaphore: idk_fence's row "semamax:PATH", seeded with
 * lk's where there is none. */
int ik__sql_sema_max(ik_lock *base, int64_t *stored, char *why, size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(base->be);
    char key[IK__RECIPE_PATH_MAX + 16], mine[32];
    snprintf(key, sizeof key, "semamax:%s", base->path);
    snprintf(mine, sizeof mine, "%" PRId64, base->sema_max);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, why, why_len);
    if (rc) return IK_ESTORE;
    const char *p[] = {key, mine};
    rc = b->d->exec(c, IK__SQL_FENCE_SEED, p, 2, NULL, why, why_len);
    ik__sql_res r;
    if (rc == 0) rc = ik__sql_exec(b->d, c, IK__SQL_FENCE_GET, p, 1, &r, why, why_len);
    if (rc == 0) {
        *stored = r.nrows == 1 ? ik__sql_int(&r, 0, 0) : 0;
        ik__sql_res_clear(&r);
    }
    ik__sql_put(b, idx, rc);
    return rc ? IK_ESTORE : IK_OK;
}

/* The slots of the semaphore at path whose session lock is held by the session
 * that recorded itself in idk_holder (IK__SQL_HOLDER_GET), slot by slot up to the
 * stored max. */
int ik__sql_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout,
                         int64_t *max, ik_semaphore_holder **out, size_t *n)
{
    if (layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    ik__sql_backend *b = ik__sql_of(be);
    char key[IK__RECIPE_PATH_MAX + 32];
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return IK_ESTORE;
    snprintf(key, sizeof key, "semamax:%s", path);
    const char *p[] = {key};
    ik__sql_res r;
    rc = ik__sql_exec(b->d, c, IK__SQL_FENCE_GET, p, 1, &r, NULL, 0);
    if (rc == 0) {
        *max = r.nrows == 1 ? ik__sql_int(&r, 0, 0) : 0;
        ik__sql_res_clear(&r);
    }
    ik_semaphore_holder *v = NULL;
    size_t cnt = 0, cap = 0;
    for (int64_t i = 0; rc == 0 && i < *max; i++) {
        snprintf(key, sizeof key, "sema:%s#%" PRId64, path, i);
        rc = ik__sql_exec(b->d, c, IK__SQL_HOLDER_GET, p, 1, &r, NULL, 0);
        if (rc || r.nrows < 1) {
            if (rc == 0) ik__sql_res_clear(&r);
            continue;
        }
        if (ik__grow((void **)&v, &cap, cnt, sizeof *v, 8)) {
            ik__sql_res_clear(&r);
            rc = IK_ENOMEM;
            break;
        }
        ik_semaphore_holder *h = &v[cnt++];
        memset(h, 0, sizeof *h);
        snprintf(h->node, sizeof h->node, "%s", key);
        const char *id = ik__sql_cell(&r, 0, 0), *nl = strchr(id, '\n');
        h->fence = nl ? strtoll(id, NULL, 10) : 0;
        snprintf(h->data, sizeof h->data, "%s", nl ? nl + 1 : id);
        ik__sql_res_clear(&r);
    }
    ik__sql_put(b, idx, rc == IK_ENOMEM ? 0 : rc);
    if (rc) {
        free(v);
        return rc == IK_ENOMEM ? rc : IK_ESTORE;
    }
    *out = v;
    *n = cnt;
    return IK_OK;
}
