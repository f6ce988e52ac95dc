/* recipe_zk_monitor.c: the part of the ZooKeeper recipes that ZooKeeper's threads
 * and the monitor drive: the registry that watch, probe and session callbacks find
 * a lock by (ZL2 in recipe_zk.c), the waits on a lock's events, the release's
 * delete sent without waiting (and again after a lost answer), and the monitor
 * thread that tells a holder when its grant is in doubt, held again, or lost.
 * recipe_zk.c (the ops: acquire, release, info) sits on it; it calls nothing of
 * recipe_zk.c. The states and invariants are at the top of recipe_zk.c.
 *
 * Threads: the callbacks run on the ZooKeeper completion thread and take only the
 * registry's read lock and lk->mu; the monitor runs on its own thread; the rest
 * runs on the caller's. No call into ZooKeeper is made with lk->mu held (ZL3).
 */
#include "internal.h"
#include "recipe_zk.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define ZPATH_MAX IK__ZK_LOCK_PATH_MAX

typedef ik__zk_lock zk_lock;

/* ------------------------------------------------------------------------------
 * The registry (ZL2)
 */
static pthread_rwlock_t reg_rw = PTHREAD_RWLOCK_INITIALIZER; /* read: callbacks */
static struct {
    uint64_t id;
    zk_lock *lk;
} * reg_v;
static size_t reg_n, reg_cap;
static uint64_t reg_next = 1;

int ik__zk_lock_reg_add(zk_lock *lk)
{
    pthread_rwlock_wrlock(&reg_rw);
    if (ik__grow((void **)&reg_v, &reg_cap, reg_n, sizeof *reg_v, 16)) {
        pthread_rwlock_unlock(&reg_rw);
        return IK_ENOMEM;
    }
    lk->reg = reg_next++;
    reg_v[reg_n].id = lk->reg;
    reg_v[reg_n].lk = lk;
    reg_n++;
    pthread_rwlock_unlock(&reg_rw);
    return IK_OK;
}

void ik__zk_lock_reg_remove(zk_lock *lk)
{
    pthread_rwlock_wrlock(&reg_rw);
    for (size_t i = 0; i < reg_n; i++)
        if (reg_v[i].id == lk->reg) {
            reg_v[i] = reg_v[--reg_n];
            break;
        }
    pthread_rwlock_unlock(&reg_rw);
}

/* The lock registered as id with its mu locked, the registry held for reading
 * until reg_unlock; or NULL (nothing held) if it is not registered (any more). */
static zk_lock *reg_lock(uint64_t id)
{
    pthread_rwlock_rdlock(&reg_rw);
    for (size_t i = 0; i < reg_n; i++)
        if (reg_v[i].id == id) {
            pthread_mutex_lock(&reg_v[i].lk->mu);
            return reg_v[i].lk;
        }
    pthread_rwlock_unlock(&reg_rw);
    return NULL;
}

static void reg_unlock(zk_lock *lk)
{
    pthread_mutex_unlock(&lk->mu);
    pthread_rwlock_unlock(&reg_rw);
}

/* The lock an answer is for, locked as reg_lock does: an answer's data is
 * (registry id << 20 | the request's seq), *seq its low 20 bits. */
static zk_lock *answer_lock(const void *data, uint32_t *seq)
{
    uint64_t v = (uint64_t)(uintptr_t)data;
    *seq = (uint32_t)(v & 0xfffff);
    return reg_lock(v >> 20);
}

/* Bumps the events of the lock registered as id (if it still is): a watch event of
 * type on path (session_event: of the session, path NULL). */
static void reg_poke(uint64_t id, int type, const char *path, int session_event)
{
    zk_lock *lk = reg_lock(id);
    if (!lk) return;
    lk->events++;
    int deleted = type == ZOO_DELETED_EVENT && path;
    int ours = !session_event && path && lk->node[0] && strcmp(path, lk->node) == 0;
    int mine = deleted && ours;
    if (mine) lk->own_deleted = 1;
    if (!session_event && path && lk->pred[0] && strcmp(path, lk->pred) == 0) {
        lk->pred_event = 1; /* deleted, or its watch is spent otherwise: look again */
        if (deleted) lk->pred_deleted = 1;
    }
    /* a waiter's watch on its own node spent by something else: look again */
    if (ours && !deleted && lk->pred[0]) lk->pred_event = 1;
    if (session_event) lk->sevents++;
    pthread_cond_broadcast(&lk->cv);
    if (mine || session_event) { /* the monitor's business too */
        lk->mevents++;
        pthread_cond_signal(&lk->mcv);
    }
    reg_unlock(lk);
}

/* One answer of a probe (the sync's or the exists'); the proof is the probe's send
 * time once both came and both say so. Under lk->mu. */
static void probe_answered(zk_lock *lk)
{
    if (--lk->probe_left > 0) return;
    lk->probe_inflight = 0;
    if (lk->probe_synced && lk->probe_seen) lk->proven_ms = lk->probe_sent_ms;
}

/* The answer of a probe's sync (data: answer_lock's). A sync goes through the
 * ZooKeeper leader: answered, the session's server was in touch with the leader
 * (which expires sessions) after it was sent. A read alone is not that: a follower
 * cut off from the leader still answers reads until it notices, syncLimit ticks
 * later, while the leader may expire the session (docs/recipes.md, "What proves
 * the session"). */
static void on_probe_sync(int zrc, const char *value, const void *data)
{
    (void)value;
    uint32_t seq;
    zk_lock *lk = answer_lock(data, &seq);
    if (!lk) return;
    if (lk->probe_inflight && (lk->probe_seq & 0xfffff) == seq) {
        lk->probe_synced = zrc == ZOK;
        if (zrc == ZSESSIONEXPIRED || zrc == ZAUTHFAILED || zrc == ZSESSIONMOVED)
            lk->probe_gone = 1;
        probe_answered(lk);
    }
    lk->mevents++;
    pthread_cond_signal(&lk->mcv);
    reg_unlock(lk);
}

/* The answer of a probe's exists (data: answer_lock's). */
static void on_probe(int zrc, const struct Stat *st, const void *data)
{
    uint32_t seq;
    zk_lock *lk = answer_lock(data, &seq);
    if (!lk) return;
    if (lk->probe_inflight && (lk->probe_seq & 0xfffff) == seq) {
        if (zrc == ZOK && st && st->ephemeralOwner == lk->session)
            lk->probe_seen = 1;
        else if (zrc == ZNONODE || zrc == ZOK)
            lk->own_deleted = 1; /* gone, or another session's */
        else if (zrc == ZSESSIONEXPIRED || zrc == ZAUTHFAILED || zrc == ZSESSIONMOVED)
            lk->probe_gone = 1;
        probe_answered(lk);
    }
    lk->mevents++;
    pthread_cond_signal(&lk->mcv);
    reg_unlock(lk);
}

/* The answer of a release's delete (data: answer_lock's). */
static void on_deleted(int zrc, const void *data)
{
    uint32_t seq;
    zk_lock *lk = answer_lock(data, &seq);
    if (!lk) return;
    if (lk->del_state == 1 && (lk->del_seq & 0xfffff) == seq) {
        /* lost answer: send it again once connected; else done (or hopeless) */
        lk->del_state = zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT ? 2 : 0;
        if (lk->del_state == 2) { /* the monitor sends it again */
            lk->mevents++;
            pthread_cond_signal(&lk->mcv);
        }
    }
    lk->events++; /* delete_settle */
    pthread_cond_broadcast(&lk->cv);
    reg_unlock(lk);
}

void ik__zk_lock_on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)state;
    int session = type == ZOO_SESSION_EVENT;
    reg_poke((uint64_t)(uintptr_t)ctx, type, session ? NULL : path, session);
}

void ik__zk_lock_on_session(void *ctx, unsigned gen, int state)
{
    (void)gen;
    (void)state;
    reg_poke((uint64_t)(uintptr_t)ctx, ZOO_SESSION_EVENT, NULL, 1);
}

/* Waits under lk->mu until woken(lk, seen), a cancel (if honour_cancel), or
 * deadline_ms (monotonic, -1: none). 0: woken; IK_ETIMEDOUT; IK_ECLOSED. */
static int lock_wait(zk_lock *lk, int (*woken)(const zk_lock *, uint64_t), uint64_t seen,
                     int64_t deadline_ms, int honour_cancel)
{
    int rc = 0;
    pthread_mutex_lock(&lk->mu);
    while (!woken(lk, seen) && !(honour_cancel && lk->cancel)) {
        if (deadline_ms < 0) {
            pthread_cond_wait(&lk->cv, &lk->mu);
            continue;
        }
        int64_t left = deadline_ms - ik__mono_ms();
        if (left <= 0) {
            rc = IK_ETIMEDOUT;
            break;
        }
        struct timespec ts;
        ik__deadline_ts(&ts, left);
        pthread_cond_timedwait(&lk->cv, &lk->mu, &ts);
    }
    if (rc == 0 && honour_cancel && lk->cancel) rc = IK_ECLOSED;
    pthread_mutex_unlock(&lk->mu);
    return rc;
}

static int any_event(const zk_lock *lk, uint64_t seen)
{
    return lk->events != seen;
}

/* the predecessor's watch, our own node's deletion, or a session event after seen */
static int pred_or_session(const zk_lock *lk, uint64_t sseen)
{
    return lk->pred_event || lk->own_deleted || lk->sevents != sseen;
}

/* Waits until an event after `seen`, a cancel (if honour_cancel), or deadline_ms
 * (monotonic, -1: none). 0: woken; IK_ETIMEDOUT; IK_ECLOSED. */
int ik__zk_lock_wait_event(zk_lock *lk, uint64_t seen, int64_t deadline_ms, int honour_cancel)
{
    return lock_wait(lk, any_event, seen, deadline_ms, honour_cancel);
}

int ik__zk_lock_wait_pred(zk_lock *lk, uint64_t sseen, int64_t deadline_ms)
{
    return lock_wait(lk, pred_or_session, sseen, deadline_ms, 1);
}

uint64_t ik__zk_lock_sevents_now(zk_lock *lk)
{
    pthread_mutex_lock(&lk->mu);
    uint64_t e = lk->sevents;
    pthread_mutex_unlock(&lk->mu);
    return e;
}

uint64_t ik__zk_lock_events_now(zk_lock *lk)
{
    pthread_mutex_lock(&lk->mu);
    uint64_t e = lk->events;
    pthread_mutex_unlock(&lk->mu);
    return e;
}

int64_t ik__zk_lock_session_of(zk_lock *lk)
{
    pthread_mutex_lock(&lk->mu);
    int64_t id = lk->session;
    pthread_mutex_unlock(&lk->mu);
    return id;
}

void ik__zk_lock_set_node(zk_lock *lk, const char *node, unsigned gen, int64_t session,
                          int64_t fence)
{
    pthread_mutex_lock(&lk->mu);
    snprintf(lk->node, sizeof lk->node, "%s", node);
    lk->gen = gen;
    lk->session = session;
    lk->fence = fence;
    lk->own_deleted = 0;
    pthread_mutex_unlock(&lk->mu);
}

/* Sends the release's delete if it is due (del_state 2) and the session that owns
 * the node is connected; forgets it if that session is gone (the node went with
 * it). Requests of one session are applied in order, so no later request of ours
 * can see the node. Never blocks. */
void ik__zk_lock_delete_pending(zk_lock *lk)
{
    pthread_mutex_lock(&lk->mu);
    int due = lk->del_state == 2;
    char node[ZPATH_MAX];
    snprintf(node, sizeof node, "%s", lk->del_node);
    unsigned gen = lk->del_gen;
    int64_t session = lk->del_session;
    pthread_mutex_unlock(&lk->mu);
    if (!due) return;
    ik__zk_session s;
    ik__zk_session_get(lk->base.be, &s);
    if (s.dead || s.gen != gen || (s.id && s.id != session)) {
        pthread_mutex_lock(&lk->mu);
        if (lk->del_state == 2) lk->del_state = 0;
        pthread_mutex_unlock(&lk->mu);
    } else if (s.connected) {
        pthread_mutex_lock(&lk->mu);
        uint32_t seq = ++lk->del_seq;
        lk->del_state = 1;
        pthread_mutex_unlock(&lk->mu);
        void *data = (void *)(uintptr_t)(lk->reg << 20 | (seq & 0xfffff));
        if (zoo_adelete(s.zh, node, -1, on_deleted, data) != ZOK) {
            pthread_mutex_lock(&lk->mu);
            if (lk->del_seq == seq) lk->del_state = 2;
            pthread_mutex_unlock(&lk->mu);
        }
    }
    ik__zk_session_put(lk->base.be);
}

/* Waits up to ms for the release's delete to be answered (sending it again after a
 * reconnect). 0, or IK_EINDOUBT. */
int ik__zk_lock_delete_settle(zk_lock *lk, int64_t ms)
{
    int64_t until = ik__mono_ms() + ms;
    for (;;) {
        ik__zk_lock_delete_pending(lk);
        uint64_t seen = ik__zk_lock_events_now(lk);
        pthread_mutex_lock(&lk->mu);
        int st = lk->del_state;
        pthread_mutex_unlock(&lk->mu);
        if (st == 0) return IK_OK;
        if (ik__zk_lock_wait_event(lk, seen, until, 0) == IK_ETIMEDOUT) return IK_EINDOUBT;
    }
}

/* ------------------------------------------------------------------------------
 * The monitor of a grant: tells the holder when it is in doubt, held again, lost.
 *
 * The monitor thread lives from a lock's first grant to ik_lock_destroy, and
 * also sends a release's delete again after a lost answer. It never blocks on
 * ZooKeeper: every quarter of the session timeout (and when a doubt begins) it
 * sends a probe, an asynchronous sync followed by an exists of our node that also
 * sets the watch on it. A probe whose sync and exists are both answered proves the
 * session alive at least until its send time + the session timeout (the leader
 * counts from the last request our server passed on; the sync shows that server
 * reached the leader after the send). So a holder that loses contact reports IN_DOUBT at once and
 * LOST once 2/3 of the session timeout have passed since the last proof, which is at least 1/3 of
 * the timeout before the server can expire the session and hand the lock to someone else: time for
 * the holder to stop what the lock guards.
 */
void *ik__zk_lock_monitor_thread(void *arg)
{
    zk_lock *lk = arg;
    uint64_t seen = 0, grant = 0;
    int64_t doubt_since = 0, told_proven = 0;
    for (;;) {
        ik__zk_session s;
        ik__zk_session_get(lk->base.be, &s);
        int64_t t = s.timeout_ms;
        ik__zk_session_put(lk->base.be);

        /* wait for an event, for the next probe or deadline of a grant, or for good */
        pthread_mutex_lock(&lk->mu);
        int held = lk->state == IK_HOLD_HELD || lk->state == IK_HOLD_IN_DOUBT;
        int64_t wake = ik__mono_ms() + t / 4; /* idle: look for a new grant now and then */
        if (held) {
            int64_t lost_at = lk->proven_ms + ik__proof_window_ms(t);
            int64_t probe_at = lk->probe_inflight ? lost_at : lk->probe_sent_ms + t / 4;
            wake = probe_at < lost_at ? probe_at : lost_at;
        }
        while (!lk->stop && lk->mevents == seen && ik__mono_ms() < wake) {
            int64_t left = wake - ik__mono_ms();
            struct timespec ts;
            ik__deadline_ts(&ts, left);
            pthread_cond_timedwait(&lk->mcv, &lk->mu, &ts);
        }
        if (lk->stop) {
            pthread_mutex_unlock(&lk->mu);
            break;
        }
        int evented = lk->mevents != seen;
        seen = lk->mevents;
        ik_hold_state st = lk->state;
        held = st == IK_HOLD_HELD || st == IK_HOLD_IN_DOUBT;
        if (held && lk->grant != grant) { /* a new grant */
            grant = lk->grant;
            doubt_since = 0;
            told_proven = lk->proven_ms; /* the grant's own proof: told by the grant */
        }
        if (held) lk->mon_busy = 1;
        char node[ZPATH_MAX];
        snprintf(node, sizeof node, "%s", lk->node);
        unsigned gen = lk->gen;
        int64_t session = lk->session, proven = lk->proven_ms;
        int deleted = lk->own_deleted, gone = lk->probe_gone, inflight = lk->probe_inflight;
        int64_t last_probe = lk->probe_sent_ms;
        pthread_mutex_unlock(&lk->mu);

        ik__zk_lock_delete_pending(lk);
        if (!held) continue;

        int64_t now = ik__mono_ms();
        ik_hold_state next = st;
        const char *why = "";
        int probe = 0;
        ik__zk_session_get(lk->base.be, &s);
        if (gone || s.dead || s.gen != gen || (s.id && s.id != session)) {
            next = IK_HOLD_LOST;
            why = "ZooKeeper session expired";
        } else if (deleted) {
            next = IK_HOLD_LOST;
            why = "our lock node was deleted";
        } else if (now >= proven + ik__proof_window_ms(t)) {
            next = IK_HOLD_LOST;
            why = "no answer from ZooKeeper for 2/3 of the session timeout: the session may "
                  "expire any moment";
        } else if (!s.connected) {
            if (st == IK_HOLD_HELD) {
                next = IK_HOLD_IN_DOUBT;
                why = "connection to ZooKeeper lost: the session may expire";
                doubt_since = now;
            }
        } else {
            if (st == IK_HOLD_IN_DOUBT && proven > doubt_since) {
                next = IK_HOLD_HELD;
                why = "connection to ZooKeeper restored, same session";
            }
            probe = !inflight && (now >= last_probe + t / 4 || next == IK_HOLD_IN_DOUBT ||
                                  (evented && st == IK_HOLD_IN_DOUBT));
        }
        if (probe) {
            pthread_mutex_lock(&lk->mu);
            uint32_t seq = ++lk->probe_seq;
            lk->probe_inflight = 1;
            lk->probe_left = 2;
            lk->probe_synced = 0;
            lk->probe_seen = 0;
            lk->probe_sent_ms = now;
            pthread_mutex_unlock(&lk->mu);
            void *data = (void *)(uintptr_t)(lk->reg << 20 | (seq & 0xfffff));
            /* the sync first: ZooKeeper applies one session's requests in order */
            int zs = zoo_async(s.zh, node, on_probe_sync, data);
            int ze = zs == ZOK ? zoo_awexists(s.zh, node, ik__zk_lock_on_watch,
                                              (void *)(uintptr_t)lk->reg, on_probe, data)
                               : zs;
            if (zs != ZOK || ze != ZOK) {
                pthread_mutex_lock(&lk->mu);
                if (lk->probe_seq == seq) {
                    if (zs == ZOK) { /* the sync's answer may still come; alone it proves nothing */
                        lk->probe_seen = 0;
                        if (--lk->probe_left == 0) lk->probe_inflight = 0;
                    } else {
                        lk->probe_inflight = 0;
                    }
                }
                pthread_mutex_unlock(&lk->mu);
            }
        }
        ik__zk_session_put(lk->base.be);

        /* apply, unless the grant was released meanwhile (release waits for mon_busy) */
        pthread_mutex_lock(&lk->mu);
        int apply = next != st && lk->grant == grant && lk->state == st;
        if (apply) {
            lk->state = next;
            snprintf(lk->why, sizeof lk->why, "%s", why);
        }
        pthread_mutex_unlock(&lk->mu);
        if (apply) ik__lock_notify(&lk->base, next, why);
        if (next != IK_HOLD_LOST && proven > told_proven && lk->grant == grant) {
            ik__lock_proved(&lk->base, (proven + ik__proof_window_ms(t)) * INT64_C(1000000));
            told_proven = proven;
        }
        pthread_mutex_lock(&lk->mu);
        lk->mon_busy = 0;
        pthread_cond_broadcast(&lk->cv);
        pthread_mutex_unlock(&lk->mu);
    }
    return NULL;
}
