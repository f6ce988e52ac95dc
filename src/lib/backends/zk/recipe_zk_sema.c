/* recipe_zk_sema.c: a semaphore's leases on ZooKeeper, node for node as Apache
 * Curator's InterProcessSemaphoreV2 or kazoo's Semaphore lays them out, so that
 * idkeeper's leases and that peer's count against one limit (docs/recipes.md,
 * "Semaphores"). The queue is a lock of recipe_zk.c (kind SEMQ); recipes/semaphore.c
 * takes it before it asks this file for a lease.
 *
 * The layouts of a semaphore at PATH (under the chroot), as the peers' sources make
 * them (Curator 5.4.0, curator-recipes/.../locks/InterProcessSemaphoreV2.java;
 * kazoo 2.8.0, kazoo/recipe/lock.py):
 *
 *   Curator  PATH/locks    the queue, an InterProcessMutex (LOCK_PARENT, :97, made at
 *                          :129): nodes _c_<uuid>-lock-<seq>, CONTAINER parents
 *            PATH/leases   the leases: _c_<uuid>-lease-<seq>, EPHEMERAL_SEQUENTIAL
 *                          with Curator's protection prefix (:360-361)
 *            PATH's data   the max, where idkeeper keeps it: Curator keeps none (its
 *                          max is "a convention maintained by the users", :59-60)
 *   kazoo    PATH-__lock__ the queue, a kazoo Lock (lock_path, :540; taken at :625-627):
 *                          nodes <hex>__lock__<seq> (Lock's prefix, :127)
 *            PATH/<hex>    the leases, EPHEMERAL, not sequential (create_path, :539;
 *                          created at :672)
 *            PATH's data   the max (_ensure_path, :546-565): written by whoever makes
 *                          PATH, checked by the others; data that is no number is
 *                          left alone and checks nothing (:555-557)
 *
 * Both peers run one algorithm: take the queue, list the leases with a watch
 * (Curator :379, kazoo :666-668), take a lease once fewer than max are there, else
 * wait for the watch, and give the queue back (Curator :435, kazoo :649). Curator
 * creates its lease first and counts it (:360, :395: children.size() <= maxLeases),
 * kazoo counts first (:671: len(children) < max_leases); under the queue the two are
 * the same limit. idkeeper counts first, as kazoo does, and creates the lease in a
 * multi that also checks its queue node, so that a contender whose queue grant is
 * gone (its session expired, its node deleted by hand) takes none (SE1 in
 * semaphore.c); the peers' plain create has no such check.
 *
 * The lease's own states, the queue held throughout (sema_pass takes one edge):
 *
 *   WAITING --the leases listed, fewer than max (list_leases)--> the multi (take_lease)
 *   WAITING --max or more listed--> WAITING: the children watch, a session event,
 *            the cancel or the deadline (ik__zk_lock_wait_event)
 *   the multi --ok: our node's czxid read with its watch set (lease_stat)--> HELD
 *   the multi --its check failed: the queue node is gone--> IK_ELOST (queue again)
 *   the multi --no answer--> in doubt: once connected, our node looked for by its
 *            prefix (find_lease): ours, adopted on a sync (HELD); none, WAITING
 *   any --the queue's session dead or replaced--> IK_ELOST (queue again)
 *   WAITING --cancel, timeout, error (give_up: a lease in doubt deleted)--> IDLE
 *
 * A lease then is a grant like a lock's: recipe_zk_probe.c's probe proves it, its
 * watch tells its deletion, zk_release deletes it (recipe_zk.c).
 *
 * Invariants
 *   ZS_1. A lease node is created only in a multi that checks the queue node this
 *         process holds (SE1).
 *   ZS_2. Only the queue's holder watches the leases: a lease given back wakes one
 *         waiter (the herd of Curator's V2, whose watcher wakes every thread of the
 *         JVM waiting on the semaphore, :87-92 and CuratorFramework.java:346-350's
 *         notifyAll, is not ours).
 */
#include "internal.h"
#include "recipe_zk.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <zookeeper/zookeeper.h>

#define ZPATH_MAX IK__ZK_LOCK_PATH_MAX
#define AGAIN 1

typedef ik__zk_lock zk_lock;

int ik__zk_sema_dir_mode(const ik_lock *base)
{
    int sema = base->kind == IK__LOCK_SEMQ || base->kind == IK__LOCK_SEMA;
    return sema && base->sema_layout == IK_SEMAPHORE_KAZOO ? ZOO_PERSISTENT : ZOO_CONTAINER;
}

/* One acquire of a lease. */
typedef struct take {
    zk_lock *lk;
    int64_t timeout_ms, deadline; /* deadline: -1 none, else ik__mono_ms */
    char uuid[IK__UUID_SIZE];
    char name[96], prefix[96]; /* our lease node's name, and the prefix that finds it */
    char qnode[ZPATH_MAX];     /* the queue's node, which the multi checks (ZS_1) */
    unsigned qgen;             /* and its handle generation and session */
    int64_t qsession;
    int in_doubt; /* a multi of ours went unanswered on this generation: */
    unsigned doubt_gen;
    int64_t asked;        /* send time (ik__mono_ms) of the write or sync that proves it */
    char node[ZPATH_MAX]; /* the lease made, its czxid read once known */
    int wait;             /* the pass asks for an event before the next */
    int rc;               /* a pass's end: an ik_error */
    char why[160];
} take;

/* A pass's session check: the queue's session must be the live one (its node dies
 * with it). */
static int queue_session_ok(const take *t, const ik__zk_session *s)
{
    return !s->dead && s->gen == t->qgen && (!s->id || s->id == t->qsession);
}

/* Our lease node, looked for by its prefix among dir's children: 1 and node set if
 * our session owns one, 0 if none, -1 on an error (*zrc). */
static int find_lease(const take *t, const ik__zk_session *s, char *node, size_t len, int *zrc)
{
    struct String_vector kids = {0, NULL};
    *zrc = zoo_get_children(s->zh, t->lk->dir, 0, &kids);
    if (*zrc == ZNONODE) return 0;
    if (*zrc != ZOK) return -1;
    int found = 0;
    size_t pl = strlen(t->prefix);
    for (int i = 0; i < kids.count && !found; i++) {
        if (strncmp(kids.data[i], t->prefix, pl) != 0) continue;
        char p[ZPATH_MAX];
        snprintf(p, sizeof p, "%s/%s", t->lk->dir, kids.data[i]);
        struct Stat st;
        *zrc = zoo_exists(s->zh, p, 0, &st);
        if (*zrc == ZNONODE) continue;
        if (*zrc != ZOK) {
            found = -1;
            break;
        }
        if (st.ephemeralOwner != s->id) continue;
        snprintf(node, len, "%s", p);
        found = 1;
    }
    deallocate_String_vector(&kids);
    return found;
}

/* The leases listed with a watch on the list (the peers' getChildren with a watcher):
 * ZOK and *count, or the code. A missing directory is made (a CONTAINER for Curator,
 * which makes it so, PERSISTENT for kazoo) and counts 0. */
static int list_leases(take *t, const ik__zk_session *s, int *count)
{
    zk_lock *lk = t->lk;
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_arm(&w->r[0], s->zh);
    ik__zk_issued(&w->r[0],
                  zoo_awget_children(s->zh, lk->dir, ik__zk_lock_on_watch,
                                     (void *)(uintptr_t)lk->reg, ik__zk_on_kids, &w->r[0]));
    int zrc = ik__zk_wait_until(w, s->zh, ik__mono_ns() + 2 * (int64_t)s->timeout_ms * 1000000)
                  ? w->r[0].rc
                  : ZOPERATIONTIMEOUT;
    *count = w->r[0].kids.count;
    ik__zk_wait_put(w);
    if (zrc == ZNONODE) {
        *count = 0;
        zrc = ik__zk_create_path(s->zh, lk->dir, lk->chroot_len, &lk->dir_aclv, &lk->dir_aclv,
                                 ik__zk_sema_dir_mode(&lk->base), NULL, 0);
        if (zrc == ZOK) zrc = ZNONODE; /* made: list again, with the watch */
    }
    return zrc;
}

/* The multi: [check the queue node, create our lease] (ZS_1). ZOK with t->node, or
 * the first failure's code (*check_failed: the queue node is gone). */
static int take_lease(take *t, const ik__zk_session *s, int *check_failed)
{
    zk_lock *lk = t->lk;
    ik__zk_wait *w = ik__zk_wait_new(1, ZPATH_MAX);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    char path[ZPATH_MAX];
    snprintf(path, sizeof path, "%s/%s", lk->dir, t->name);
    const char *data = lk->base.data;
    int flags =
        lk->base.sema_layout == IK_SEMAPHORE_KAZOO ? ZOO_EPHEMERAL : ZOO_EPHEMERAL_SEQUENTIAL;
    zoo_check_op_init(&r->ops[0], t->qnode, -1);
    zoo_create_op_init(&r->ops[1], path, data, (int)strlen(data), &lk->node_aclv, flags, r->ext,
                       ZPATH_MAX);
    ik__zk_arm(r, s->zh);
    t->asked = ik__mono_ms();
    ik__zk_issued(r, ik__zk_amulti(s->zh, 2, r->ops, r->res, ik__zk_on_void, r));
    int zrc = ik__zk_wait_until(w, s->zh, ik__mono_ns() + 2 * (int64_t)s->timeout_ms * 1000000)
                  ? r->rc
                  : ZOPERATIONTIMEOUT;
    if (zrc != ZOK && !ik__zk_doubtful(zrc)) zrc = ik__zk_multi_error(r);
    *check_failed = zrc != ZOK && !ik__zk_doubtful(zrc) && r->res[0].err != ZOK &&
                    r->res[0].err != ZRUNTIMEINCONSISTENCY;
    if (zrc == ZOK) snprintf(t->node, sizeof t->node, "%s", (const char *)r->ext);
    ik__zk_wait_put(w);
    return zrc;
}

/* Proves the session through the leader (a sync), for a lease adopted after a multi
 * in doubt (a listing is a read, no proof): ZOK with t->asked its send time. */
static int prove(take *t, const ik__zk_session *s)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    int64_t sent = ik__mono_ms();
    ik__zk_arm(&w->r[0], s->zh);
    ik__zk_issued(&w->r[0], zoo_async(s->zh, t->lk->dir, ik__zk_on_synced, &w->r[0]));
    int zrc = ik__zk_wait_until(w, s->zh, ik__mono_ns() + (int64_t)s->timeout_ms / 3 * 1000000)
                  ? w->r[0].rc
                  : ZOPERATIONTIMEOUT;
    ik__zk_wait_put(w);
    if (zrc == ZOK) t->asked = sent;
    return zrc;
}

/* Our lease's Stat, read with its watch set (its deletion by hand is then told at
 * once): ZOK and *czxid, ZNONODE (gone already, or another session's), or the code. */
static int lease_stat(take *t, const ik__zk_session *s, int64_t *czxid)
{
    zk_lock *lk = t->lk;
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_arm(&w->r[0], s->zh);
    ik__zk_issued(&w->r[0], zoo_awexists(s->zh, t->node, ik__zk_lock_on_watch,
                                         (void *)(uintptr_t)lk->reg, ik__zk_on_stat, &w->r[0]));
    int zrc = ik__zk_wait_until(w, s->zh, ik__mono_ns() + 2 * (int64_t)s->timeout_ms * 1000000)
                  ? w->r[0].rc
                  : ZOPERATIONTIMEOUT;
    if (zrc == ZOK && w->r[0].st.ephemeralOwner != s->id) zrc = ZNONODE;
    *czxid = w->r[0].st.czxid;
    ik__zk_wait_put(w);
    return zrc;
}

/* A failed request's code, under the session: waited out (a lost answer, no
 * connection) or final (t->rc, why in ZooKeeper's words). */
static int failed(take *t, int zrc, const char *what)
{
    if (ik__zk_doubtful(zrc)) {
        t->wait = 1;
        return AGAIN;
    }
    t->rc = ik__zk_session_gone(zrc) ? IK_ELOST : IK_ESTORE;
    snprintf(t->why, sizeof t->why, "%s: ZooKeeper refused it: %s (on %s)", what, zerror(zrc),
             t->lk->dir);
    return t->rc;
}

/* The lease made (t->node): the lock's node from now (so that its watch, set here,
 * is heard as ours), its czxid read. 0, AGAIN (the node is gone already: list
 * again), or a code as failed() (the node unread: in doubt, looked for again). */
static int adopt(take *t, const ik__zk_session *s)
{
    zk_lock *lk = t->lk;
    ik__zk_lock_set_node(lk, t->node, s->gen, s->id, 0);
    int64_t czxid = 0;
    int zrc = lease_stat(t, s, &czxid);
    if (zrc != ZOK) {
        ik__zk_lock_set_node(lk, "", 0, 0, 0);
        t->node[0] = '\0';
    }
    if (zrc == ZNONODE) return AGAIN;
    if (zrc != ZOK) {
        t->in_doubt = 1;
        t->doubt_gen = s->gen;
        return failed(t, zrc, "reading our lease");
    }
    pthread_mutex_lock(&lk->mu);
    lk->fence = czxid;
    pthread_mutex_unlock(&lk->mu);
    return IK_OK;
}

/* One pass under the session: the one edge of the header's diagram that applies.
 * IK_OK (HELD), AGAIN (t->wait: after an event), or an ik_error (t->rc). */
static int sema_pass(take *t, const ik__zk_session *s)
{
    zk_lock *lk = t->lk;
    if (!queue_session_ok(t, s)) {
        snprintf(t->why, sizeof t->why, "the queue's ZooKeeper session is gone");
        return t->rc = IK_ELOST;
    }
    if (!s->connected) {
        t->wait = 1;
        return AGAIN;
    }
    int zrc;
    if (t->in_doubt) { /* a multi of ours unanswered: did it make our node? */
        if (t->doubt_gen != s->gen) {
            t->in_doubt = 0; /* its session, and the node with it, are gone */
            return AGAIN;
        }
        int found = find_lease(t, s, t->node, sizeof t->node, &zrc);
        if (found < 0) return failed(t, zrc, "looking for our lease");
        t->in_doubt = 0;
        if (!found) return AGAIN;
        zrc = prove(t, s);
        if (zrc != ZOK) {
            t->in_doubt = 1; /* still ours: adopted once the session is proven */
            return failed(t, zrc, "proving the session");
        }
        return adopt(t, s);
    }
    int count = 0;
    zrc = list_leases(t, s, &count);
    if (zrc == ZNONODE) return AGAIN;
    if (zrc != ZOK) return failed(t, zrc, "listing the leases");
    if (count >= lk->base.sema_max) {
        if (t->timeout_ms == 0) {
            snprintf(t->why, sizeof t->why, "all %" PRId64 " leases are held", lk->base.sema_max);
            return t->rc = IK_EBUSY;
        }
        t->wait = 1; /* ZS_2: the watch on the list wakes us, and only us */
        return AGAIN;
    }
    int check_failed = 0;
    zrc = take_lease(t, s, &check_failed);
    if (zrc == ZOK) return adopt(t, s);
    if (check_failed) {
        snprintf(t->why, sizeof t->why, "the queue's node %s is gone", t->qnode);
        return t->rc = IK_ELOST;
    }
    if (zrc == ZNONODE) return AGAIN;                 /* the leases' container went: made again */
    if (zrc == ZNODEEXISTS || ik__zk_doubtful(zrc)) { /* kazoo's name: made before? */
        t->in_doubt = 1;
        t->doubt_gen = s->gen;
    }
    if (zrc == ZNODEEXISTS) return AGAIN;
    return failed(t, zrc, "taking a lease");
}

/* WAITING --cancel, timeout, error--> IDLE: a lease whose multi is in doubt is looked
 * for and deleted, for at most a session timeout (after it the session, and the node
 * with it, are gone anyway). */
static int give_up(take *t, int rc)
{
    zk_lock *lk = t->lk;
    if (rc == IK_ECLOSED) { /* the cancel is consumed */
        pthread_mutex_lock(&lk->mu);
        lk->cancel = 0;
        pthread_mutex_unlock(&lk->mu);
    }
    int64_t until = -1;
    while (t->in_doubt) {
        uint64_t seen = ik__zk_lock_events_now(lk);
        ik__zk_session s;
        ik__zk_session_get(lk->base.be, &s);
        if (until < 0) until = ik__mono_ms() + s.timeout_ms + 2000;
        int done = !queue_session_ok(t, &s) || s.gen != t->doubt_gen;
        if (!done && s.connected) {
            char node[ZPATH_MAX];
            int zrc;
            int found = find_lease(t, &s, node, sizeof node, &zrc);
            if (found == 1) zrc = zoo_delete(s.zh, node, -1);
            done = found == 0 || (found == 1 && (zrc == ZOK || zrc == ZNONODE));
        }
        ik__zk_session_put(lk->base.be);
        if (done) break;
        if (ik__zk_lock_wait_event(lk, seen, until, 0) == IK_ETIMEDOUT) break;
    }
    pthread_mutex_lock(&lk->mu);
    lk->state = IK_HOLD_IDLE;
    snprintf(lk->why, sizeof lk->why, "%s",
             rc == IK_ECLOSED                       ? "cancelled"
             : rc == IK_ETIMEDOUT || rc == IK_EBUSY ? (t->why[0] ? t->why : "timed out")
             : t->why[0]                            ? t->why
                                                    : ik_strerror(rc));
    pthread_mutex_unlock(&lk->mu);
    return rc;
}

int ik__zk_sema_acquire(zk_lock *lk, int64_t timeout_ms, int64_t *fence)
{
    take t;
    memset(&t, 0, sizeof t);
    t.lk = lk;
    t.timeout_ms = timeout_ms;
    t.deadline = timeout_ms < 0 ? -1 : ik__mono_ms() + timeout_ms;
    zk_lock *q = (zk_lock *)lk->base.sema_queue;
    pthread_mutex_lock(&q->mu);
    int queued = q->state == IK_HOLD_HELD && q->node[0];
    snprintf(t.qnode, sizeof t.qnode, "%s", q->node);
    t.qgen = q->gen;
    t.qsession = q->session;
    pthread_mutex_unlock(&q->mu);
    pthread_mutex_lock(&lk->mu);
    int idle = lk->state == IK_HOLD_IDLE;
    if (idle) {
        lk->state = IK_HOLD_WAITING;
        snprintf(lk->why, sizeof lk->why, "waiting for a lease");
    }
    pthread_mutex_unlock(&lk->mu);
    if (!idle) return IK_EINVAL;
    if (!queued) return give_up(&t, IK_ELOST);
    int rc = ik__uuid4(t.uuid);
    if (rc) return give_up(&t, rc);
    if (ik__zk_node_name(IK__LOCK_SEMA, lk->base.sema_layout, t.uuid, t.name, sizeof t.name,
                         t.prefix, sizeof t.prefix))
        return give_up(&t, IK_EINVAL);
    for (;;) {
        pthread_mutex_lock(&lk->mu);
        int cancel = lk->cancel;
        pthread_mutex_unlock(&lk->mu);
        if (cancel) {
            rc = IK_ECLOSED;
            break;
        }
        uint64_t seen = ik__zk_lock_events_now(lk);
        ik__zk_session s;
        ik__zk_session_get(lk->base.be, &s);
        t.wait = 0;
        rc = sema_pass(&t, &s);
        ik__zk_session_put(lk->base.be);
        if (rc != AGAIN) break;
        if (t.deadline >= 0 && ik__mono_ms() >= t.deadline) {
            rc = timeout_ms == 0 ? IK_EBUSY : IK_ETIMEDOUT;
            break;
        }
        if (t.wait) rc = ik__zk_lock_wait_event(lk, seen, t.deadline, 1);
        if (rc == IK_ETIMEDOUT && timeout_ms == 0) rc = IK_EBUSY;
        if (rc != AGAIN && rc != 0) break;
    }
    if (rc != IK_OK) return give_up(&t, rc);
    /* HELD: the proof is the multi's (or the sync's) send; the hold monitor takes over */
    *fence = ik__zk_lock_granted(lk, t.asked);
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * The max stored with a semaphore, and its holders
 */

/* The semaphore's node CHROOT/PATH, and its data read into buf: ZOK (*st its Stat),
 * or the code. */
static int read_max_node(const ik__zk_session *s, const char *node, char *buf, int len,
                         struct Stat *st)
{
    int n = len - 1;
    int zrc = zoo_get(s->zh, node, 0, buf, &n, st);
    buf[zrc == ZOK && n > 0 ? n : 0] = '\0';
    return zrc;
}

/* kazoo's rule for the node's data (lock.py :552-557): a max if it is an integer's
 * text (Python's int() of it), else nothing stored. 0 for nothing. */
static int64_t parse_max(const char *buf)
{
    const char *p = buf;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end || v <= 0 ? 0 : v;
}

int ik__zk_sema_max(ik_lock *base, int64_t *stored, char *why, size_t why_len)
{
    zk_lock *lk = (zk_lock *)base;
    char node[ZPATH_MAX];
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    snprintf(node, sizeof node, "%s%s", s.chroot, base->path);
    char mine[32];
    int ml = snprintf(mine, sizeof mine, "%" PRId64, base->sema_max);
    int mode = ik__zk_sema_dir_mode(base);
    int zrc = ZOK;
    *stored = 0;
    for (int tries = 0; tries < 5; tries++) {
        char buf[64];
        struct Stat st;
        zrc = read_max_node(&s, node, buf, sizeof buf, &st);
        if (zrc == ZNONODE) { /* we make it, with our max, as kazoo's ensure_path + set */
            char parent[ZPATH_MAX];
            snprintf(parent, sizeof parent, "%s", node);
            char *slash = strrchr(parent, '/');
            if (slash && slash != parent) {
                *slash = '\0';
                zrc = ik__zk_create_path(s.zh, parent, lk->chroot_len, &lk->dir_aclv, &lk->dir_aclv,
                                         mode, NULL, 0);
                if (zrc != ZOK) break;
            }
            zrc = zoo_create(s.zh, node, mine, ml, &lk->dir_aclv, mode, NULL, 0);
            if (zrc == ZUNIMPLEMENTED || zrc == ZBADARGUMENTS) /* a server without containers */
                zrc = zoo_create(s.zh, node, mine, ml, &lk->dir_aclv, ZOO_PERSISTENT, NULL, 0);
            if (zrc == ZOK) {
                *stored = base->sema_max;
                break;
            }
            if (zrc == ZNODEEXISTS) continue; /* another made it meanwhile: read it */
            break;
        }
        if (zrc != ZOK) break;
        if (buf[0]) { /* a max, or data of another use, left alone */
            *stored = parse_max(buf);
            break;
        }
        /* empty (a Curator container, or kazoo between its ensure_path and set): ours
         * goes in, unless someone wrote first */
        zrc = zoo_set(s.zh, node, mine, ml, st.version);
        if (zrc == ZOK) {
            *stored = base->sema_max;
            break;
        }
        if (zrc != ZBADVERSION && zrc != ZNONODE) break;
        zrc = ZOK;
    }
    ik__zk_session_put(base->be);
    if (zrc == ZOK) return IK_OK;
    return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper: %s (on %s)", zerror(zrc), node);
}

static int by_czxid(const void *a, const void *b)
{
    int64_t x = ((const ik_semaphore_holder *)a)->fence,
            y = ((const ik_semaphore_holder *)b)->fence;
    return x < y ? -1 : x > y;
}

int ik__zk_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout, int64_t *max,
                        ik_semaphore_holder **out, size_t *n)
{
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    char node[ZPATH_MAX], dir[ZPATH_MAX];
    snprintf(node, sizeof node, "%s%s", s.chroot, path);
    snprintf(dir, sizeof dir, "%s%s", node, layout == IK_SEMAPHORE_KAZOO ? "" : "/leases");
    int rc = IK_OK;
    char buf[64];
    struct Stat st;
    int zrc = s.connected ? read_max_node(&s, node, buf, sizeof buf, &st) : ZCONNECTIONLOSS;
    if (zrc == ZOK) *max = parse_max(buf);
    struct String_vector kids = {0, NULL};
    if (zrc == ZOK || zrc == ZNONODE) zrc = zoo_get_children(s.zh, dir, 0, &kids);
    ik_semaphore_holder *v = NULL;
    size_t cnt = 0;
    if (zrc == ZOK && kids.count > 0) {
        v = calloc((size_t)kids.count, sizeof *v);
        if (!v) rc = IK_ENOMEM;
    }
    for (int i = 0; v && i < kids.count; i++) {
        ik_semaphore_holder *h = &v[cnt];
        snprintf(h->node, sizeof h->node, "%s/%s", dir, kids.data[i]);
        int len = (int)sizeof h->data - 1;
        int g = zoo_get(s.zh, h->node, 0, h->data, &len, &st);
        if (g == ZNONODE) continue; /* given back meanwhile */
        if (g != ZOK) {
            zrc = g;
            break;
        }
        h->data[len > 0 ? len : 0] = '\0';
        h->fence = st.czxid;
        snprintf(h->session, sizeof h->session, "0x%" PRIx64, (uint64_t)st.ephemeralOwner);
        cnt++;
    }
    deallocate_String_vector(&kids);
    ik__zk_session_put(be);
    if (rc == 0 && zrc != ZOK && zrc != ZNONODE) rc = IK_ESTORE;
    if (rc) {
        free(v);
        return rc;
    }
    if (cnt > 1) qsort(v, cnt, sizeof *v, by_czxid);
    if (!cnt) {
        free(v);
        v = NULL;
    }
    *out = v;
    *n = cnt;
    return IK_OK;
}
