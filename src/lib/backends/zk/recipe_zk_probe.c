/* recipe_zk_probe.c: the part of the ZooKeeper recipes that ZooKeeper's threads and
 * the hold monitor drive: the registry that watch, probe and session callbacks find
 * a lock by (ZL2 in recipe_zk.c), the waits on a lock's events, the release's delete
 * sent without waiting (and again after a lost answer, between grants: tend), and
 * the evidence for the hold monitor (src/lib/recipes/hold.h): the grant's proof, a
 * probe, and what ZooKeeper says unasked (our node deleted, the session expired or
 * cut off, connected again), told at once. recipe_zk.c (the ops: acquire, release,
 * info) sits on it; it calls nothing of recipe_zk.c. The states and invariants are
 * at the top of recipe_zk.c.
 *
 * Threads: the callbacks run on the ZooKeeper completion thread and take only the
 * registry's read lock, lk->mu and (ik__hold_tell) the hold's mutex; the probe and
 * tend run on the hold's prober thread; the rest runs on the caller's. No call into
 * ZooKeeper is made with lk->mu held (ZL3).
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
 * type on path, or (session_event) a session event of handle generation gen in
 * zstate; and tells the hold monitor what it means for a grant (our node deleted,
 * the session expired or cut off, connected again). */
static void reg_poke(uint64_t id, int type, const char *path, int session_event, unsigned gen,
                     int zstate)
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
    int held = lk->state == IK_HOLD_HELD;
    int this_gen = session_event && lk->node[0] && gen == lk->gen;
    int tend = lk->del_state == 2 && session_event && zstate == ZOO_CONNECTED_STATE;
    reg_unlock(lk);
    /* the hold's mutex is never held while it calls into the protocol (hold.h) */
    if (held && mine) ik__hold_tell(&lk->base, IK__HOLD_GONE, "our lock node was deleted");
    if (held && this_gen) {
        if (zstate == ZOO_EXPIRED_SESSION_STATE || zstate == ZOO_AUTH_FAILED_STATE)
            ik__hold_tell(&lk->base, IK__HOLD_GONE, "ZooKeeper session expired");
        else if (zstate == ZOO_CONNECTED_STATE)
            ik__hold_tell(&lk->base, IK__HOLD_STANDS, NULL);
        else
            ik__hold_tell(&lk->base, IK__HOLD_NO_ANSWER, "connection to ZooKeeper lost");
    }
    if (tend) ik__hold_poke(&lk->base);
}

/* One answer of a probe (the sync's or the exists'); complete once both came. Under
 * lk->mu. */
static void probe_answered(zk_lock *lk)
{
    if (--lk->probe_left > 0) return;
    lk->probe_inflight = 0;
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
    pthread_cond_broadcast(&lk->cv);
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
    pthread_cond_broadcast(&lk->cv);
    reg_unlock(lk);
}

/* The answer of the grant's own watch of our node (data: answer_lock's, seq 0): our
 * node already gone, or another session's, is the grant gone. */
static void on_own_watch_set(int zrc, const struct Stat *st, const void *data)
{
    uint32_t seq;
    zk_lock *lk = answer_lock(data, &seq);
    if (!lk) return;
    int gone = zrc == ZNONODE || (zrc == ZOK && st && st->ephemeralOwner != lk->session);
    int held = lk->state == IK_HOLD_HELD;
    if (gone) lk->own_deleted = 1;
    pthread_cond_broadcast(&lk->cv);
    reg_unlock(lk);
    if (gone && held) ik__hold_tell(&lk->base, IK__HOLD_GONE, "our lock node was deleted");
}

void ik__zk_lock_watch_own(zk_lock *lk)
{
    ik__zk_session s;
    ik__zk_session_get(lk->base.be, &s);
    pthread_mutex_lock(&lk->mu);
    char node[ZPATH_MAX];
    snprintf(node, sizeof node, "%s", lk->node);
    int ours = node[0] && s.connected && !s.dead && s.gen == lk->gen;
    pthread_mutex_unlock(&lk->mu);
    if (ours)
        zoo_awexists(s.zh, node, ik__zk_lock_on_watch, (void *)(uintptr_t)lk->reg, on_own_watch_set,
                     (void *)(uintptr_t)(lk->reg << 20));
    ik__zk_session_put(lk->base.be);
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
    }
    int again = lk->del_state == 2; /* sent again once connected (tend) */
    lk->events++;                   /* delete_settle */
    pthread_cond_broadcast(&lk->cv);
    reg_unlock(lk);
    if (again) ik__hold_poke(&lk->base);
}

void ik__zk_lock_on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh;
    (void)state;
    if (type == ZOO_SESSION_EVENT) return; /* the session listener tells those */
    reg_poke((uint64_t)(uintptr_t)ctx, type, path, 0, 0, 0);
}

void ik__zk_lock_on_session(void *ctx, unsigned gen, int state)
{
    reg_poke((uint64_t)(uintptr_t)ctx, ZOO_SESSION_EVENT, NULL, 1, gen, state);
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

int64_t ik__zk_lock_granted(zk_lock *lk, int64_t asked_ms)
{
    pthread_mutex_lock(&lk->mu);
    lk->state = IK_HOLD_HELD;
    snprintf(lk->why, sizeof lk->why, "held");
    int64_t fence = lk->fence;
    /* own_deleted stays: it is of this node (ik__zk_lock_set_node cleared it when
     * the node became ours), and set, the first probe finds the grant gone */
    lk->probe_gone = 0;
    lk->probe_seq++; /* a late answer to an earlier grant's probe is not ours */
    lk->probe_inflight = 0;
    lk->granted_ms = asked_ms;
    pthread_mutex_unlock(&lk->mu);
    return fence;
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
 * The hold monitor's evidence (src/lib/recipes/hold.h): what proves a grant.
 *
 * A probe is an asynchronous sync followed by an exists of our node that also sets
 * the watch on it, pipelined. Both answered, and the node ours, prove the session
 * alive at least until the probe's send time + the session timeout: the leader counts
 * from the last request our server passed on, and the sync shows that server
 * reached the leader after the send (docs/recipes.md, "What proves the session"). A
 * read alone is not that: a follower cut off from the leader still answers reads.
 */
/* What the lock's flags say of the grant now (under lk->mu): GONE, or STANDS to go on. */
static ik__hold_fact grant_fact(const zk_lock *lk, const ik__zk_session *s, const char **why)
{
    if (lk->probe_gone || s->dead || s->gen != lk->gen || (s->id && s->id != lk->session)) {
        *why = "ZooKeeper session expired";
        return IK__HOLD_GONE;
    }
    if (lk->own_deleted) {
        *why = "our lock node was deleted";
        return IK__HOLD_GONE;
    }
    return IK__HOLD_STANDS;
}

void ik__zk_lock_proof_of_grant(ik_lock *base, ik__hold_evidence *out)
{
    zk_lock *lk = (zk_lock *)base;
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    const char *why = "";
    pthread_mutex_lock(&lk->mu);
    out->fact = grant_fact(lk, &s, &why);
    out->proof = (ik__lease_proof){lk->granted_ms * INT64_C(1000000), s.timeout_ms};
    pthread_mutex_unlock(&lk->mu);
    ik__zk_session_put(base->be);
    snprintf(out->why, sizeof out->why, "%s", why);
}

/* Sends a probe of our node on s: 0 and *seq, or the ZooKeeper code of the send. */
static int probe_send(zk_lock *lk, const ik__zk_session *s, uint32_t *seq)
{
    pthread_mutex_lock(&lk->mu);
    *seq = ++lk->probe_seq;
    lk->probe_inflight = 1;
    lk->probe_left = 2;
    lk->probe_synced = 0;
    lk->probe_seen = 0;
    char node[ZPATH_MAX];
    snprintf(node, sizeof node, "%s", lk->node);
    pthread_mutex_unlock(&lk->mu);
    void *data = (void *)(uintptr_t)(lk->reg << 20 | (*seq & 0xfffff));
    /* the sync first: ZooKeeper applies one session's requests in order */
    int zs = zoo_async(s->zh, node, on_probe_sync, data);
    int ze = zs == ZOK ? zoo_awexists(s->zh, node, ik__zk_lock_on_watch, (void *)(uintptr_t)lk->reg,
                                      on_probe, data)
                       : zs;
    if (zs == ZOK && ze == ZOK) return ZOK;
    pthread_mutex_lock(&lk->mu);
    if (lk->probe_seq == *seq) {
        if (zs == ZOK) { /* the sync's answer may still come; alone it proves nothing */
            lk->probe_seen = 0;
            if (--lk->probe_left == 0) lk->probe_inflight = 0;
        } else {
            lk->probe_inflight = 0;
        }
    }
    pthread_mutex_unlock(&lk->mu);
    return zs != ZOK ? zs : ze;
}

void ik__zk_lock_probe(ik_lock *base, int64_t deadline_ns, const int *stop, ik__hold_evidence *out)
{
    zk_lock *lk = (zk_lock *)base;
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    int64_t t = s.timeout_ms;
    const char *why = "";
    pthread_mutex_lock(&lk->mu);
    ik__hold_fact f = grant_fact(lk, &s, &why);
    pthread_mutex_unlock(&lk->mu);
    uint32_t seq = 0;
    int64_t sent = ik__mono_ns();
    int zrc = ZOK;
    if (f == IK__HOLD_STANDS && !s.connected) {
        f = IK__HOLD_NO_ANSWER;
        why = "not connected to ZooKeeper";
    } else if (f == IK__HOLD_STANDS) {
        zrc = probe_send(lk, &s, &seq);
        if (zrc != ZOK) f = IK__HOLD_NO_ANSWER;
    }
    ik__zk_session_put(base->be);
    out->fact = f;
    if (f != IK__HOLD_STANDS) {
        if (zrc != ZOK)
            snprintf(out->why, sizeof out->why, "ZooKeeper: %s", zerror(zrc));
        else
            snprintf(out->why, sizeof out->why, "%s", why);
        return;
    }
    /* the answers, our node's deletion, the session's end, the stop, or the deadline */
    pthread_mutex_lock(&lk->mu);
    while (lk->probe_inflight && lk->probe_seq == seq && !lk->own_deleted && !lk->probe_gone &&
           !__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
        int64_t left = deadline_ns - ik__mono_ns();
        if (left <= 0) break;
        struct timespec ts;
        ik__deadline_ts(&ts, left < 100000000 ? (left + 999999) / 1000000 : 100);
        pthread_cond_timedwait(&lk->cv, &lk->mu, &ts);
    }
    pthread_mutex_unlock(&lk->mu);
    ik__zk_session_get(base->be, &s); /* not under lk->mu (ZL3's order) */
    pthread_mutex_lock(&lk->mu);
    f = grant_fact(lk, &s, &why);
    int done = lk->probe_seq == seq && !lk->probe_inflight;
    int proved = done && lk->probe_synced && lk->probe_seen;
    if (f == IK__HOLD_STANDS && !proved) {
        f = IK__HOLD_NO_ANSWER;
        why = done ? "ZooKeeper did not confirm our node (its answer was lost)"
                   : "no answer from ZooKeeper in time";
    }
    pthread_mutex_unlock(&lk->mu);
    ik__zk_session_put(base->be);
    out->fact = f;
    snprintf(out->why, sizeof out->why, "%s", why);
    if (f == IK__HOLD_STANDS) out->proof = (ik__lease_proof){sent, t};
}

void ik__zk_lock_tend(ik_lock *base)
{
    ik__zk_lock_delete_pending((zk_lock *)base);
}
