/* recipe.c: locks, read-write locks and leader election over any backend (docs/guarantees.md
 * promises 19-21): argument checks, the path rule, each grant handed to the hold monitor
 * (hold.c) and taken back before its release, and the election's campaign thread. The
 * lock protocol is the one the coord's backend carries (ik__backend_ops.recipe): this
 * file names no backend.
 *
 * An election is a LATCH lock that a campaign thread acquires (waiting forever),
 * holds while it leads, and acquires again after a loss, until resign. The hold
 * monitor tells the lock's state changes on its own thread; the election queues them
 * and its thread delivers them to the caller, so that the election's callbacks come
 * from one thread, in order. With keep_on_loss a lost grant is kept (its node, key or
 * session lock stays) until the owner's ik_election_rejoin gives it back.
 *
 * Election states and the functions that take each edge:
 *
 *   IDLE --ik_election_campaign--> WAITING               (thread started)
 *   WAITING --acquire ok, the lock says HELD, no notice pending (lead)--> HELD
 *                                                        (callback HELD: leading)
 *   HELD --notify IN_DOUBT--> IN_DOUBT                   (callback IN_DOUBT)
 *   IN_DOUBT --notify HELD--> HELD                       (callback HELD: restored)
 *   HELD, IN_DOUBT --notify LOST--> LOST                 (callback LOST; the lock
 *                   is released, and the thread campaigns again: --> WAITING;
 *                   with keep_on_loss only at ik_election_rejoin: await_rejoin)
 *   any --ik_election_resign--> IDLE                     (cancel, release, join)
 *
 * A grant can be in doubt or lost before the campaign thread has reported it (a
 * pause right after the acquire): then its first callback is IN_DOUBT or LOST, not
 * HELD (WAITING --notify IN_DOUBT / LOST (lead)--> IN_DOUBT / LOST), and HELD
 * comes only once the same session answers again.
 *
 * Invariant E1: the election reports HELD only while its lock is granted, the
 * backend has not told it IN_DOUBT or LOST since, and the lock's own state (which
 * checks the session on every call) says HELD.
 * Invariant E2: no notice of a grant is dropped: the queue is emptied only before
 * an acquire, when the earlier grant is released (a released lock calls back no
 * more), so every notice queued after that is the new grant's.
 */
#include "recipe.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------------------------
 * Options (the path rule: rules.c, ik__recipe_path)
 */
const char *ik_hold_state_name(ik_hold_state s)
{
    switch (s) {
    case IK_HOLD_IDLE:
        return "idle";
    case IK_HOLD_WAITING:
        return "waiting";
    case IK_HOLD_HELD:
        return "held";
    case IK_HOLD_IN_DOUBT:
        return "in_doubt";
    case IK_HOLD_LOST:
        return "lost";
    }
    return "unknown";
}

void ik_lock_options_init(ik_lock_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
}

void ik_election_options_init(ik_election_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
}

/* The caller's lock options as far as their size goes, defaults beyond, into
 * *opts: 0, or IK_EINVAL (options_size.c's rule). */
static int lock_options(const ik_lock_options *o, ik_lock_options *opts)
{
    ik_lock_options_init(opts);
    return o ? ik__options_copy(opts, sizeof *opts, o, "ik_lock_options", NULL, 0) : IK_OK;
}

/* Test hook, read only when IDKEEPER_TEST_GRANT_DELAY_MS is set (tests set it, nothing
 * else should): sleeps that many ms right after a grant, before the caller hears of
 * it, as a process paused at that moment would; the window in which a loss notice
 * can come before the grant is told (docs/recipes.md, "Test hooks"). */
static void test_grant_delay(void)
{
    const char *v = getenv("IDKEEPER_TEST_GRANT_DELAY_MS");
    if (!v || !*v) return;
    long ms = strtol(v, NULL, 10);
    if (ms <= 0 || ms > 600000) return;
    ik__logf("test: grant delay %ld ms", ms);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* Data stored in our node or ticket: o->data, else "pid=PID host=HOST". */
static char *default_data(const char *data)
{
    if (data) return strdup(data);
    char host[128] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    char buf[192];
    snprintf(buf, sizeof buf, "pid=%ld host=%s", (long)getpid(), host);
    return strdup(buf);
}

int ik__lock_new(ik_coord *c, const char *path, ik__lock_kind kind, ik_hold_cb cb,
                 ik_hold_proof_cb proof_cb, void *ctx, const char *data, int64_t sema_max,
                 ik_semaphore_layout sema_layout, ik_lock **out)
{
    char norm[IK__RECIPE_PATH_MAX + 2];
    if (!c || !out) return IK_EINVAL;
    if (ik__coord_forked(c)) return IK_EFORKED; /* the parent's coord (fork.c) */
    int rc = ik__recipe_path(path, norm, sizeof norm, NULL, 0);
    if (rc) return rc;
    if (data && strlen(data) > 1024) return IK_EINVAL;
    ik__backend *be = ik__coord_backend(c);
    const ik__recipe_ops *ops = be->ops->recipe; /* NULL: a backend without locks */
    if (!ops) return IK_EURI;
    ik_lock *lk = calloc(1, ops->lock_size);
    if (!lk) return IK_ENOMEM;
    lk->ops = ops;
    lk->be = be;
    lk->kind = kind;
    lk->path = strdup(norm);
    lk->data = default_data(data);
    lk->on_change = cb;
    lk->on_proof = proof_cb;
    lk->ctx = ctx;
    lk->sema_max = sema_max;
    lk->sema_layout = sema_layout;
    rc = (!lk->path || !lk->data) ? IK_ENOMEM : ik__hold_init(lk);
    if (rc == 0) {
        rc = ops->lock_init(lk);
        if (rc) ik__hold_fini(lk);
    }
    if (rc) {
        free(lk->path);
        free(lk->data);
        free(lk);
        return rc;
    }
    *out = lk;
    return IK_OK;
}

/* Frees lk: its hold ends (no callback after it) and its threads, which call the
 * protocol, are joined before the protocol frees its part (releasing a grant). */
void ik__lock_free(ik_lock *lk)
{
    ik__hold_end(lk);
    ik__hold_quit(lk);
    lk->ops->lock_fini(lk);
    ik__hold_fini(lk);
    free(lk->path);
    free(lk->data);
    free(lk);
}

/* ------------------------------------------------------------------------------
 * Locks
 */
int ik_lock_create(ik_coord *c, const char *path, const ik_lock_options *o, ik_lock **out)
{
    ik_lock_options opts;
    if (lock_options(o, &opts)) return IK_EINVAL;
    return ik__lock_new(c, path, IK__LOCK_MUTEX, opts.on_change, opts.on_proof, opts.ctx, opts.data,
                        0, IK_SEMAPHORE_CURATOR, out);
}

void ik_lock_destroy(ik_lock *lk)
{
    if (!lk || lk->in_rwlock) return;
    ik__lock_free(lk);
}

/* WAITING --the protocol's acquire--> HELD: its grant handed to the hold monitor
 * with the proof it was made on. A grant the monitor cannot watch is given back
 * (nobody could tell its holder of a loss). */
int ik__lock_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence)
{
    int64_t f = 0;
    int rc = lk->ops->acquire(lk, timeout_ms, &f);
    if (rc) return rc;
    ik__hold_evidence ev;
    memset(&ev, 0, sizeof ev);
    ev.fact = IK__HOLD_STANDS;
    ev.proof = (ik__lease_proof){ik__mono_ns(), IK_FOREVER};
    if (lk->ops->proof_of_grant) lk->ops->proof_of_grant(lk, &ev);
    rc = ik__hold_begin(lk, &ev);
    if (rc) {
        lk->ops->release(lk);
        return rc;
    }
    if (fence) *fence = f;
    return IK_OK;
}

/* HELD, IN_DOUBT, LOST --release--> IDLE: the hold ends first (no callback of this
 * grant after it), then the protocol gives the grant back. IK_ELOST if the monitor
 * had found it lost. */
int ik__lock_release(ik_lock *lk)
{
    ik_hold_state st = ik__hold_end(lk);
    int rc = lk->ops->release(lk);
    return rc == IK_OK && st == IK_HOLD_LOST ? IK_ELOST : rc;
}

int ik_lock_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence)
{
    if (!lk || timeout_ms < -1) return IK_EINVAL;
    /* a LOST grant is given back first, as by ik_lock_release */
    if (ik__hold_state(lk, NULL, 0) == IK_HOLD_LOST) ik__lock_release(lk);
    int64_t f = 0;
    int rc = ik__lock_acquire(lk, timeout_ms, &f);
    if (rc == 0) test_grant_delay();
    if (rc == 0 && fence) *fence = f;
    return rc;
}

int ik_lock_release(ik_lock *lk)
{
    return lk ? ik__lock_release(lk) : IK_EINVAL;
}

/* The rank of a grant's state: the worse wins (HELD < IN_DOUBT < LOST). */
static int badness(ik_hold_state s)
{
    return s == IK_HOLD_LOST ? 2 : s == IK_HOLD_IN_DOUBT ? 1 : 0;
}

/* The lock's info: the protocol's (node, session, fence, its own state), and while a
 * grant is watched the hold monitor's state and reason, or the protocol's own check
 * where it knows worse (a session known dead). */
void ik__lock_info(ik_lock *lk, ik_hold_info *out)
{
    memset(out, 0, sizeof *out);
    lk->ops->info(lk, out);
    char why[160];
    ik_hold_state hs = ik__hold_state(lk, why, sizeof why);
    if (hs == IK_HOLD_IDLE) return;
    if (out->state == IK_HOLD_HELD || badness(hs) >= badness(out->state)) {
        out->state = hs;
        snprintf(out->why, sizeof out->why, "%s", why);
    }
}

/* ik_lock_trusted_until's answer for a lock whose state (lock_info) is s. */
static int64_t trusted_until(ik_lock *lk, ik_hold_state s)
{
    if (s != IK_HOLD_HELD && s != IK_HOLD_IN_DOUBT) return 0;
    return ik__hold_trusted_until(lk);
}

int64_t ik__lock_trusted_until(ik_lock *lk)
{
    ik_hold_info hi;
    ik__lock_info(lk, &hi);
    return trusted_until(lk, hi.state);
}

int64_t ik_lock_trusted_until(ik_lock *lk)
{
    return lk ? ik__lock_trusted_until(lk) : IK_EINVAL;
}

void ik_lock_cancel(ik_lock *lk)
{
    if (lk) lk->ops->cancel(lk, 1);
}

ik_hold_state ik_lock_state(ik_lock *lk)
{
    ik_hold_info hi;
    ik_lock_get_info(lk, &hi);
    return hi.state;
}

void ik_lock_get_info(ik_lock *lk, ik_hold_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (lk) ik__lock_info(lk, out);
}

/* ------------------------------------------------------------------------------
 * Read-write locks: two locks on one path, of kinds READ and WRITE.
 */
struct ik_rwlock {
    ik_lock *read, *write;
};

int ik_rwlock_create(ik_coord *c, const char *path, const ik_lock_options *o, ik_rwlock **out)
{
    ik_lock_options opts;
    if (!out || lock_options(o, &opts)) return IK_EINVAL;
    ik_rwlock *rw = calloc(1, sizeof *rw);
    if (!rw) return IK_ENOMEM;
    ik_hold_cb cb = opts.on_change;
    ik_hold_proof_cb pcb = opts.on_proof;
    void *ctx = opts.ctx;
    const char *data = opts.data;
    int rc = ik__lock_new(c, path, IK__LOCK_READ, cb, pcb, ctx, data, 0, IK_SEMAPHORE_CURATOR,
                          &rw->read);
    if (rc == 0)
        rc = ik__lock_new(c, path, IK__LOCK_WRITE, cb, pcb, ctx, data, 0, IK_SEMAPHORE_CURATOR,
                          &rw->write);
    if (rc) {
        if (rw->read) ik__lock_free(rw->read);
        free(rw);
        return rc;
    }
    rw->read->in_rwlock = rw->write->in_rwlock = 1;
    *out = rw;
    return IK_OK;
}

void ik_rwlock_destroy(ik_rwlock *rw)
{
    if (!rw) return;
    ik__lock_free(rw->read);
    ik__lock_free(rw->write);
    free(rw);
}

ik_lock *ik_rwlock_read(ik_rwlock *rw)
{
    return rw ? rw->read : NULL;
}

ik_lock *ik_rwlock_write(ik_rwlock *rw)
{
    return rw ? rw->write : NULL;
}

/* ------------------------------------------------------------------------------
 * Elections
 */
#define EVQ 16 /* queued state changes; more than that in one go keeps the latest */

struct ik_election {
    ik_lock *lk;
    char *id;
    ik_hold_cb cb;
    ik_hold_proof_cb proof_cb;
    void *ctx;
    int keep_on_loss;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    /* under mu */
    int running; /* a campaign thread exists (joined by resign) */
    int stop;
    ik_hold_state state;
    int64_t fence;
    char why[160];
    struct {
        ik_hold_state state;
        char why[160];
    } q[EVQ];
    int qn;
    int rejoin_wait; /* keep_on_loss: a lost grant kept until ik_election_rejoin */
    int rejoin;      /* ik_election_rejoin asked for it */
};

/* The lock's proofs, from its hold monitor: the caller's on_proof. */
static void on_lock_proof(void *ctx, int64_t until_ns)
{
    ik_election *e = ctx;
    if (e->proof_cb) e->proof_cb(e->ctx, until_ns);
}

/* keep_on_loss: LOST --> waits, the grant kept, until ik_election_rejoin (1) or
 * resign (0). */
static int await_rejoin(ik_election *e)
{
    pthread_mutex_lock(&e->mu);
    e->rejoin_wait = 1;
    e->rejoin = 0;
    pthread_cond_broadcast(&e->cv);
    while (!e->stop && !e->rejoin)
        pthread_cond_wait(&e->cv, &e->mu);
    int go = !e->stop;
    pthread_mutex_unlock(&e->mu);
    return go;
}

/* The lock's state changes, from the backend's thread: queued for the campaign. */
static void on_lock_change(void *ctx, ik_hold_state state, const char *why)
{
    ik_election *e = ctx;
    pthread_mutex_lock(&e->mu);
    if (e->qn == EVQ) {
        memmove(&e->q[0], &e->q[1], sizeof e->q[0] * (EVQ - 1));
        e->qn--;
    }
    e->q[e->qn].state = state;
    snprintf(e->q[e->qn].why, sizeof e->q[0].why, "%s", why);
    e->qn++;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

/* Sets the state under mu and calls back (outside mu) if it changed. */
static void elect_set(ik_election *e, ik_hold_state s, const char *why, int tell)
{
    pthread_mutex_lock(&e->mu);
    int changed = e->state != s;
    e->state = s;
    snprintf(e->why, sizeof e->why, "%s", why);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (changed && tell && e->cb) e->cb(e->ctx, s, why);
}

/* Sleeps up to ms unless asked to stop; returns 1 if asked to stop. */
static int elect_nap(ik_election *e, int64_t ms)
{
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&e->mu);
    while (!e->stop && pthread_cond_timedwait(&e->cv, &e->mu, &ts) != ETIMEDOUT) {
    }
    int stop = e->stop;
    pthread_mutex_unlock(&e->mu);
    return stop;
}

/* Delivers the notices of the grant held since acquire returned, until it is lost
 * or the election resigns. The queue holds only this grant's notices: it was
 * emptied before the acquire, and a released grant sends none. Leadership is
 * reported (HELD, "leading") only while no notice is pending and the lock's own
 * state, which checks the session (ZL1 in recipe_zk.c), says HELD; a grant whose
 * first notice is IN_DOUBT or LOST reports that instead (E2). Returns 1 if asked
 * to stop. */
static int lead(ik_election *e)
{
    int told = 0; /* a state of this grant was reported */
    for (;;) {
        if (!told) {
            ik_hold_info hi;
            ik__lock_info(e->lk, &hi);
            pthread_mutex_lock(&e->mu);
            int pending = e->qn;
            pthread_mutex_unlock(&e->mu);
            if (!pending && hi.state == IK_HOLD_HELD) {
                elect_set(e, IK_HOLD_HELD, "leading", 1);
                told = 1;
            }
        }
        pthread_mutex_lock(&e->mu);
        if (told) {
            while (!e->stop && e->qn == 0)
                pthread_cond_wait(&e->cv, &e->mu);
        } else if (!e->stop && e->qn == 0) {
            /* the lock says in doubt or lost and its notice is on its way; if the
             * doubt ends before the monitor looks, none comes: look again */
            struct timespec ts;
            ik__deadline_ts(&ts, 50);
            pthread_cond_timedwait(&e->cv, &e->mu, &ts);
        }
        if (e->stop) {
            pthread_mutex_unlock(&e->mu);
            return 1;
        }
        if (e->qn == 0) {
            pthread_mutex_unlock(&e->mu);
            continue;
        }
        ik_hold_state s = e->q[0].state;
        char why[160];
        snprintf(why, sizeof why, "%s", e->q[0].why);
        memmove(&e->q[0], &e->q[1], sizeof e->q[0] * (size_t)(EVQ - 1));
        e->qn--;
        pthread_mutex_unlock(&e->mu);
        if (s == IK_HOLD_HELD || s == IK_HOLD_IN_DOUBT || s == IK_HOLD_LOST) {
            elect_set(e, s, why, 1);
            told = 1;
        }
        if (s == IK_HOLD_LOST) return 0;
    }
}

static void *campaign_thread(void *arg)
{
    ik_election *e = arg;
    int64_t backoff = 50;
    int failing = 0; /* failed campaigns in a row: told once, in the store's words */
    for (;;) {
        pthread_mutex_lock(&e->mu);
        e->qn = 0; /* notices of an earlier grant, released since: none come later */
        pthread_mutex_unlock(&e->mu);
        elect_set(e, IK_HOLD_WAITING, "campaigning", 0);
        int64_t fence = 0;
        int rc = ik__lock_acquire(e->lk, -1, &fence);
        if (rc == IK_ECLOSED) break; /* resign */
        if (rc != 0) {
            ik_hold_info hi;
            ik__lock_info(e->lk, &hi);
            char why[160];
            snprintf(why, sizeof why, "campaigning: %s", hi.why[0] ? hi.why : ik_strerror(rc));
            if (failing++ == 0)
                ik__logf("election %s: %s (%s); campaigning again", e->lk->path,
                         hi.why[0] ? hi.why : "no reason given", ik_strerror(rc));
            elect_set(e, IK_HOLD_WAITING, why, 0);
            if (elect_nap(e, backoff)) break;
            if (backoff < 1000) backoff *= 2;
            continue;
        }
        backoff = 50;
        failing = 0;
        test_grant_delay();
        pthread_mutex_lock(&e->mu);
        if (e->stop) {
            pthread_mutex_unlock(&e->mu);
            ik__lock_release(e->lk);
            break;
        }
        e->fence = fence;
        pthread_mutex_unlock(&e->mu);
        int stop = lead(e);
        if (!stop && e->keep_on_loss) stop = !await_rejoin(e);
        ik__lock_release(e->lk);
        pthread_mutex_lock(&e->mu);
        e->fence = 0;
        e->rejoin_wait = 0; /* ik_election_rejoin returns: the removal is sent */
        pthread_cond_broadcast(&e->cv);
        stop = stop || e->stop;
        pthread_mutex_unlock(&e->mu);
        if (stop) break;
    }
    return NULL;
}

int ik_election_create(ik_coord *c, const char *path, const char *id, const ik_election_options *o,
                       ik_election **out)
{
    if (!c || !out || !id || !*id || strlen(id) > 255) return IK_EINVAL;
    for (const char *p = id; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) return IK_EINVAL;
    ik_election_options opts; /* the caller's, as far as its size goes; defaults beyond */
    ik_election_options_init(&opts);
    if (o && ik__options_copy(&opts, sizeof opts, o, "ik_election_options", NULL, 0))
        return IK_EINVAL;
    ik_election *e = calloc(1, sizeof *e);
    if (!e) return IK_ENOMEM;
    e->id = strdup(id);
    e->cb = opts.on_change;
    e->proof_cb = opts.on_proof;
    e->ctx = opts.ctx;
    e->keep_on_loss = opts.keep_on_loss != 0;
    if (!e->id) {
        free(e);
        return IK_ENOMEM;
    }
    int rc = ik__lock_new(c, path, IK__LOCK_LATCH, on_lock_change, on_lock_proof, e, id, 0,
                          IK_SEMAPHORE_CURATOR, &e->lk);
    if (rc) {
        free(e->id);
        free(e);
        return rc;
    }
    pthread_mutex_init(&e->mu, NULL);
    ik__cond_init_mono(&e->cv);
    *out = e;
    return IK_OK;
}

int ik_election_campaign(ik_election *e)
{
    if (!e) return IK_EINVAL;
    pthread_mutex_lock(&e->mu);
    if (e->running) {
        pthread_mutex_unlock(&e->mu);
        return IK_EINVAL;
    }
    e->stop = 0;
    e->qn = 0;
    e->state = IK_HOLD_WAITING;
    snprintf(e->why, sizeof e->why, "campaigning");
    int rc = pthread_create(&e->thread, NULL, campaign_thread, e);
    if (rc == 0)
        e->running = 1;
    else
        e->state = IK_HOLD_IDLE;
    pthread_mutex_unlock(&e->mu);
    return rc ? IK_ESYS(rc) : IK_OK;
}

int ik_election_await(ik_election *e, int64_t timeout_ms)
{
    if (!e || timeout_ms < -1) return IK_EINVAL;
    struct timespec ts;
    if (timeout_ms >= 0) ik__deadline_ts(&ts, timeout_ms);
    pthread_mutex_lock(&e->mu);
    int rc = IK_OK;
    while (e->state != IK_HOLD_HELD) {
        if (!e->running || e->stop) {
            rc = IK_ECLOSED;
            break;
        }
        if (timeout_ms < 0)
            pthread_cond_wait(&e->cv, &e->mu);
        else if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT) {
            rc = e->state == IK_HOLD_HELD ? IK_OK : IK_ETIMEDOUT;
            break;
        }
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

int ik_election_resign(ik_election *e)
{
    if (!e) return IK_EINVAL;
    pthread_mutex_lock(&e->mu);
    if (!e->running || e->stop) {
        pthread_mutex_unlock(&e->mu);
        return IK_EINVAL;
    }
    e->stop = 1;
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    e->lk->ops->cancel(e->lk, 1);
    pthread_join(e->thread, NULL);
    pthread_mutex_lock(&e->mu);
    e->running = 0;
    e->state = IK_HOLD_IDLE;
    e->qn = 0;
    snprintf(e->why, sizeof e->why, "resigned");
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    /* a cancel that the thread did not consume must not cancel the next campaign */
    e->lk->ops->cancel(e->lk, 0);
    return IK_OK;
}

int ik_election_rejoin(ik_election *e)
{
    if (!e) return IK_EINVAL;
    pthread_mutex_lock(&e->mu);
    if (!e->running || e->stop || !e->rejoin_wait || e->rejoin) {
        pthread_mutex_unlock(&e->mu);
        return IK_EINVAL;
    }
    e->rejoin = 1;
    pthread_cond_broadcast(&e->cv);
    while (e->rejoin_wait && !e->stop)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return IK_OK;
}

int64_t ik_election_trusted_until(ik_election *e)
{
    if (!e) return IK_EINVAL;
    ik_hold_info hi;
    ik_election_get_info(e, &hi);
    return trusted_until(e->lk, hi.state);
}

ik_hold_state ik_election_state(ik_election *e)
{
    ik_hold_info hi;
    ik_election_get_info(e, &hi);
    return hi.state;
}

void ik_election_get_info(ik_election *e, ik_hold_info *out)
{
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!e) return;
    ik_hold_info lk;
    ik__lock_info(e->lk, &lk);
    *out = lk;
    pthread_mutex_lock(&e->mu);
    ik_hold_state s = e->state;
    out->state = s;
    snprintf(out->why, sizeof out->why, "%s", e->why);
    /* E1: the lock's own check knows a dead or cut-off session before its notice
     * has come through the queue; the worse of the two wins */
    int led = s == IK_HOLD_HELD || s == IK_HOLD_IN_DOUBT;
    if (led && (lk.state == IK_HOLD_LOST || (lk.state == IK_HOLD_IN_DOUBT && s == IK_HOLD_HELD))) {
        out->state = lk.state;
        snprintf(out->why, sizeof out->why, "%s", lk.why);
    }
    if (!led) {
        out->node[0] = '\0';
        out->session[0] = '\0';
    }
    out->fence = out->state == IK_HOLD_HELD || out->state == IK_HOLD_IN_DOUBT ? e->fence : 0;
    pthread_mutex_unlock(&e->mu);
}

void ik_election_destroy(ik_election *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    int running = e->running && !e->stop;
    pthread_mutex_unlock(&e->mu);
    if (running) ik_election_resign(e);
    ik__lock_free(e->lk);
    pthread_cond_destroy(&e->cv);
    pthread_mutex_destroy(&e->mu);
    free(e->id);
    free(e);
}

int ik_election_leader(ik_coord *c, const char *path, char **id)
{
    char norm[IK__RECIPE_PATH_MAX + 2];
    if (!c || !id) return IK_EINVAL;
    if (ik__coord_forked(c)) return IK_EFORKED;
    int rc = ik__recipe_path(path, norm, sizeof norm, NULL, 0);
    if (rc) return rc;
    ik__backend *be = ik__coord_backend(c);
    const ik__recipe_ops *ops = be->ops->recipe;
    if (!ops) return IK_EURI;
    return ops->leader(be, norm, id);
}
