/* recipe_zk.c: locks and elections on ZooKeeper, node for node as Apache Curator
 * makes them (docs/guarantees.md promise 20), on the coord's own session (zk_session.h). The lock's
 * callbacks, the release's delete and the evidence for the hold monitor (the grant's
 * proof, the probe, what ZooKeeper says unasked) are recipe_zk_probe.c; whether a
 * grant is still held is decided above, by the hold monitor (src/lib/recipes/hold.h).
 *
 * A contender creates CHROOT/PATH/_c_<uuid>-<NAME><seq>, EPHEMERAL_SEQUENTIAL, NAME
 * being "lock-" (InterProcessMutex), "__READ__" / "__WRIT__" (InterProcessReadWrite
 * Lock) or "latch-" (LeaderLatch, whose data is the participant id). Missing
 * parents under the chroot are CONTAINER nodes, as Curator's
 * creatingParentContainersIfNeeded makes them. It then lists the children, keeps
 * the contenders of its kind (recipe_zk_names.c: Curator's and kazoo's names alike),
 * orders them as they were created (by sequence, or by creation zxid once the
 * parent's counter reached its end: order_contenders), and either holds (no contender it must wait
 * for) or sets a data watch on the one contender just ahead of it, its predecessor (a reader: the
 * nearest writer ahead), and sleeps until that watch fires or a session event comes: each waiter
 * watches only its predecessor (docs/guarantees.md promise 19), plus its own node when it would
 * hold without listing again (step_watch). The fencing token is the creation zxid of our node
 * (zoo_create2's Stat).
 *
 * What proves the session for a grant (docs/recipes.md, "What proves the session"): a write or
 * a sync of this attempt, answered, sent less than a quarter of the session timeout ago
 * (proof_fresh: our create, in a contended lock's steady state); else a sync now. A read
 * (a listing, a watch's answer) is not a proof.
 *
 * States of one grant and the functions taking each edge:
 *
 *   IDLE --zk_acquire (acquire_begin)--> WAITING
 *   WAITING --no blocker, session proven (step_first, grant)--> HELD
 *   WAITING --the one contender ahead gone, session proven (after_watch, grant)--> HELD
 *   WAITING --timeout / cancel / error (give_up: delete_ours)--> IDLE
 *   WAITING --one pass (acquire_pass), each a step of its own:
 *              session dead: a new one (after_dead); our node of an older session
 *              forgotten (step_stale); offline: wait for an event; a create in doubt
 *              looked for, a missing parent made (step_settle); our create and a
 *              listing (step_create); who is ahead (step_blocker); our node not a
 *              contender (step_not_contending); a watch on the one ahead
 *              (step_watch)--> WAITING
 *   HELD --zk_release (the release's delete: recipe_zk_probe.c, sent again after
 *          every reconnect until answered or the session is known gone)--> IDLE
 * While HELD, the hold monitor decides HELD, IN_DOUBT or LOST from this file's
 * evidence: the connection lost (IN_DOUBT at once), connected again (a probe), the
 * session expired or our node deleted (LOST at once), the probes' proofs.
 *
 * The hard cases:
 *   - A create whose answer is lost (connection loss) may or may not have made our
 *     node: once connected again we look for a child named _c_<uuid>- (the uuid is
 *     this attempt's) and adopt it only if its ephemeralOwner is our session.
 *   - Our node deleted while we wait (by hand, with its parent): a new node, unless
 *     the deadline has passed; our node present but not a contender: deleted, and
 *     the acquire fails (never a create loop that leaves nodes behind).
 *   - A session that expires while we wait takes our node with it: after recover()
 *     (a new session of the backend) the attempt starts over with a new node.
 *   - Timeout or cancel: our node is deleted, waiting for a reconnection if need
 *     be (at most one session timeout: after that the session, and the node with
 *     it, is gone anyway), so nothing of ours is left behind.
 *
 * Invariants
 *   ZL1. HELD is reported only while the backend's handle is the generation our node
 *       was made on, that session is connected and not expired, and our node was
 *       seen to exist with our session as ephemeralOwner (zk_info re-checks the
 *       session on every call, not only the hold monitor's last state).
 *   ZL2. Watch and session callbacks never touch a freed lock: they carry a registry
 *       id, not a pointer, and a destroyed lock is out of the registry.
 *   ZL3. No call into ZooKeeper is made while lk->mu is held (the completion thread
 *       takes lk->mu in the callbacks, and a synchronous call waits for it).
 */
#include "internal.h"
#include "recipe.h"
#include "recipe_zk.h"
#include "zk_session.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define ZPATH_MAX IK__ZK_LOCK_PATH_MAX

typedef ik__zk_lock zk_lock;

static int ik_err(int zrc)
{
    return zrc == ZOK ? IK_OK : IK_EZK_BASE + zrc;
}

/* After a request failed with zrc (not ZOK): a lost answer or a gone session waits
 * for the next event (0: look again; IK_ETIMEDOUT, IK_ECLOSED); any other code is
 * final (its ik_error). */
static int after_failure(zk_lock *lk, int zrc, uint64_t seen, int64_t deadline)
{
    if (!ik__zk_doubtful(zrc) && !ik__zk_session_gone(zrc)) return ik_err(zrc);
    return ik__zk_lock_wait_event(lk, seen, deadline, 1);
}

/* Creates the missing ancestors of lk->dir (lk->dir included): the chroot's as
 * persistent nodes (the slot backend shares them), the recipe path's as CONTAINER
 * nodes (PERSISTENT on servers before 3.5.1). 0, or a ZooKeeper code. */
static int ensure_dir(zk_lock *lk, zhandle_t *zh)
{
    int zrc = zoo_exists(zh, lk->dir, 0, NULL);
    if (zrc != ZNONODE) return zrc;
    return ik__zk_create_path(zh, lk->dir, lk->chroot_len, &lk->dir_aclv, &lk->dir_aclv,
                              ik__zk_sema_dir_mode(&lk->base), NULL, 0);
}

/* Our node by its _c_<uuid>- prefix, if it exists and our session owns it: 1 and
 * node/fence filled, 0 if none, or -1 on a ZooKeeper error (*zrc). */
static int find_ours(zk_lock *lk, zhandle_t *zh, int64_t session, const char *uuid, char *node,
                     size_t len, int64_t *fence, int *zrc)
{
    struct String_vector kids = {0, NULL};
    *zrc = zoo_get_children(zh, lk->dir, 0, &kids);
    if (*zrc == ZNONODE) return 0;
    if (*zrc != ZOK) return -1;
    char name[96], prefix[96];
    if (ik__zk_node_name(lk->base.kind, lk->base.sema_layout, uuid, name, sizeof name, prefix,
                         sizeof prefix))
        return 0;
    int found = 0;
    for (int i = 0; i < kids.count && !found; i++) {
        if (strncmp(kids.data[i], prefix, strlen(prefix)) != 0) continue;
        char p[ZPATH_MAX];
        snprintf(p, sizeof p, "%s/%s", lk->dir, kids.data[i]);
        struct Stat st;
        *zrc = zoo_exists(zh, p, 0, &st);
        if (*zrc == ZNONODE) continue;
        if (*zrc != ZOK) {
            found = -1;
            break;
        }
        if (st.ephemeralOwner != session) continue; /* a dead session's: not ours */
        snprintf(node, len, "%s", p);
        *fence = st.czxid;
        found = 1;
    }
    deallocate_String_vector(&kids);
    return found;
}

/* Deletes our node (lk->node, or one of this attempt's uuid whose create was in
 * doubt), waiting for a reconnection for at most max_wait_ms. 0: gone (deleted, or
 * its session is); IK_EINDOUBT: could not make sure; else an error. */
static int delete_ours(zk_lock *lk, const char *uuid_in_doubt, int64_t max_wait_ms)
{
    int64_t until = ik__mono_ms() + max_wait_ms;
    for (;;) {
        uint64_t seen = ik__zk_lock_events_now(lk);
        pthread_mutex_lock(&lk->mu);
        char node[ZPATH_MAX];
        snprintf(node, sizeof node, "%s", lk->node);
        unsigned gen = lk->gen;
        int64_t session = lk->session;
        pthread_mutex_unlock(&lk->mu);
        if (!node[0] && !uuid_in_doubt) return IK_OK;
        ik__zk_session s;
        ik__zk_session_get(lk->base.be, &s);
        if (s.dead || s.gen != gen || (session && s.id && s.id != session)) {
            ik__zk_session_put(lk->base.be);
            ik__zk_lock_set_node(lk, "", 0, 0, 0);
            return IK_OK; /* the session that held it is gone, and the node with it */
        }
        int zrc = ZCONNECTIONLOSS;
        if (s.connected) {
            if (node[0]) {
                zrc = zoo_delete(s.zh, node, -1);
                if (zrc == ZNONODE) zrc = ZOK;
            } else {
                int64_t f;
                int found = find_ours(lk, s.zh, s.id, uuid_in_doubt, node, sizeof node, &f, &zrc);
                if (found == 1) {
                    ik__zk_session_put(lk->base.be);
                    ik__zk_lock_set_node(lk, node, s.gen, s.id, f);
                    continue;
                }
                if (found == 0) {
                    ik__zk_session_put(lk->base.be);
                    return IK_OK;
                }
            }
        }
        ik__zk_session_put(lk->base.be);
        if (zrc == ZOK || ik__zk_session_gone(zrc)) {
            ik__zk_lock_set_node(lk, "", 0, 0, 0);
            return IK_OK;
        }
        if (!ik__zk_doubtful(zrc)) return ik_err(zrc);
        if (max_wait_ms <= 0 || ik__zk_lock_wait_event(lk, seen, until, 0) == IK_ETIMEDOUT)
            return IK_EINDOUBT;
    }
}

/* Proves the session through the ZooKeeper leader: a sync, waited for up to a third
 * of the session timeout. ZOK with *sent (monotonic ms) its send time: the session
 * lived at the leader after it; else the error, or ZOPERATIONTIMEOUT. A grant whose
 * last answer was a read proves itself so before it is HELD: a follower cut off
 * from the leader still answers reads (docs/recipes.md, "What proves the session"). */
static int prove_session(zk_lock *lk, const ik__zk_session *s, int64_t *sent)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    *sent = ik__mono_ms();
    ik__zk_arm(&w->r[0], s->zh);
    ik__zk_issued(&w->r[0], zoo_async(s->zh, lk->dir, ik__zk_on_synced, &w->r[0]));
    int zrc = ik__zk_wait_until(w, s->zh, ik__mono_ns() + (int64_t)s->timeout_ms / 3 * 1000000)
                  ? w->r[0].rc
                  : ZOPERATIONTIMEOUT;
    ik__zk_wait_put(w);
    return zrc;
}

static void set_state(zk_lock *lk, ik_hold_state s, const char *why)
{
    pthread_mutex_lock(&lk->mu);
    lk->state = s;
    snprintf(lk->why, sizeof lk->why, "%s", why);
    pthread_mutex_unlock(&lk->mu);
}

/* ------------------------------------------------------------------------------
 * The ops
 */
static int zk_lock_init(ik_lock *base)
{
    zk_lock *lk = (zk_lock *)base;
    /* a semaphore's parts, in its layout (recipe_zk_sema.c's header) */
    int kazoo = base->sema_layout == IK_SEMAPHORE_KAZOO;
    const char *part = base->kind == IK__LOCK_SEMQ   ? (kazoo ? "-__lock__" : "/locks")
                       : base->kind == IK__LOCK_SEMA ? (kazoo ? "" : "/leases")
                                                     : "";
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    lk->chroot_len = strlen(s.chroot);
    int n = snprintf(lk->dir, sizeof lk->dir, "%s%s%s", s.chroot, base->path, part);
    /* s.digest_id lives as long as the backend; others (Curator, kazoo) may queue
     * under our parents, and delete their nodes */
    ik__zk_acl_init(lk->node_acl, &lk->node_aclv, s.digest_id, ZOO_PERM_READ);
    ik__zk_acl_init(lk->dir_acl, &lk->dir_aclv, s.digest_id,
                    ZOO_PERM_READ | ZOO_PERM_CREATE | ZOO_PERM_DELETE);
    ik__zk_session_put(base->be);
    if (n < 0 || (size_t)n + 128 >= sizeof lk->dir) return IK_EINVAL;
    pthread_mutex_init(&lk->mu, NULL);
    ik__cond_init_mono(&lk->cv);
    int rc = ik__zk_lock_reg_add(lk);
    if (rc == 0) rc = ik__zk_listen(base->be, ik__zk_lock_on_session, (void *)(uintptr_t)lk->reg);
    if (rc) {
        ik__zk_lock_reg_remove(lk);
        pthread_cond_destroy(&lk->cv);
        pthread_mutex_destroy(&lk->mu);
    }
    return rc;
}

static void free_names(char **v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

/* Our create and a listing of the children, sent together: ZooKeeper applies one
 * session's requests in order, so the listing already holds our node, and an
 * uncontended acquire costs one round trip. Waits for both answers, for twice the
 * session timeout at most, or until the session is known dead (then the answers
 * wait behind the handle's close: zk_session.c, ZS5). NULL on ENOMEM; else *answered
 * says whether both came, and if so r[0] is the create (data: the path made, st:
 * its Stat), r[1] the listing (kids). Unanswered, neither may be read. */
static ik__zk_wait *create_and_list(zk_lock *lk, const ik__zk_session *s, const char *uuid,
                                    int *answered)
{
    ik__zk_wait *w = ik__zk_wait_new(2, 0);
    if (!w) return NULL;
    char path[ZPATH_MAX], name[96], prefix[96];
    ik__zk_node_name(lk->base.kind, lk->base.sema_layout, uuid, name, sizeof name, prefix,
                     sizeof prefix); /* fits: a uuid's name is far below 96 bytes */
    snprintf(path, sizeof path, "%s/%s", lk->dir, name);
    ik__zk_arm(&w->r[0], s->zh);
    ik__zk_issued(&w->r[0], zoo_acreate2(s->zh, path, lk->base.data, (int)strlen(lk->base.data),
                                         &lk->node_aclv, ZOO_EPHEMERAL_SEQUENTIAL,
                                         ik__zk_on_created, &w->r[0]));
    ik__zk_arm(&w->r[1], s->zh);
    ik__zk_issued(&w->r[1], zoo_aget_children(s->zh, lk->dir, 0, ik__zk_on_kids, &w->r[1]));
    *answered = ik__zk_wait_until(w, s->zh, ik__mono_ns() + 2 * (int64_t)s->timeout_ms * 1000000);
    return w;
}

/* Puts the contenders v[0..*n) of dir in creation order (recipe_zk_names.c): by
 * sequence, or, once the sequences cannot tell (the parent's counter reached its
 * end), by creation zxid, with an exists of each contender (ours, named ours, has
 * ours_czxid); a contender gone meanwhile is dropped. ZOK, or an exists' error. */
static int order_contenders(zhandle_t *zh, const char *dir, ik__contender *v, size_t *n,
                            const char *ours, int64_t ours_czxid)
{
    if (!ik__contenders_need_czxid(v, *n)) {
        ik__contenders_sort(v, *n, 0);
        return ZOK;
    }
    size_t k = 0;
    for (size_t i = 0; i < *n; i++) {
        if (ours && ours_czxid && strcmp(v[i].name, ours) == 0) {
            v[i].czxid = ours_czxid;
        } else {
            char p[ZPATH_MAX];
            struct Stat st;
            snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
            int zrc = zoo_exists(zh, p, 0, &st);
            if (zrc == ZNONODE) continue; /* it left */
            if (zrc != ZOK) return zrc;
            v[i].czxid = st.czxid;
        }
        v[k++] = v[i];
    }
    *n = k;
    ik__contenders_sort(v, k, 1);
    return ZOK;
}

/* Whom our node waits for among names: -1 none (we hold it), -2 our node is not
 * there, else 0 and pred set, *alone = 1 if pred is the only contender ahead of us
 * that can block us (then we hold once it is gone, whether it held or gave up: a
 * node made later is created after ours, so it sorts after ours). IK_ENOMEM; *zrc:
 * ZOK, or the error of a request that ordering them needed (then nothing else is
 * set). */
static int blocker_of(zk_lock *lk, zhandle_t *zh, char *const *names, int count, const char *node,
                      char *pred, size_t len, int *alone, int *zrc)
{
    ik__contender *v = calloc((size_t)count + 1, sizeof *v);
    if (!v) return IK_ENOMEM;
    size_t n = 0;
    for (int i = 0; i < count; i++)
        if (ik__contender_parse(lk->base.kind, names[i], &v[n])) n++;
    pthread_mutex_lock(&lk->mu);
    int64_t czxid = lk->fence; /* our node's */
    pthread_mutex_unlock(&lk->mu);
    const char *ours = strrchr(node, '/') + 1;
    *zrc = order_contenders(zh, lk->dir, v, &n, ours, czxid);
    if (*zrc != ZOK) {
        free(v);
        return 0;
    }
    int b = ik__contender_blocker(lk->base.kind, v, n, ours);
    if (b >= 0) snprintf(pred, len, "%s/%s", lk->dir, v[b].name);
    *alone = b == 0;
    if (b > 0 && lk->base.kind == IK__LOCK_READ) { /* the nearest writer ahead: the only? */
        *alone = 1;
        for (int k = 0; k < b; k++)
            if (v[k].writer) *alone = 0;
    }
    free(v);
    return b >= 0 ? 0 : b;
}

/* ------------------------------------------------------------------------------
 * Acquiring: the edges of WAITING (the header's diagram), one function each. One
 * attempt's state lives in an acquire; a pass takes the session once, takes the one
 * edge that applies under it (the step_* functions), puts the session back, and
 * only then waits, recovers or watches (the after_* functions), so that nothing
 * waits while it holds the session.
 */
#define AGAIN 1 /* another pass */

/* What a step under the session decided, for acquire_pass to carry out after it put
 * the session back. */
typedef enum next {
    N_AGAIN,    /* look again at once */
    N_END,      /* the wait ends with a->rc */
    N_HELD,     /* no blocker, session proven: HELD */
    N_FAILED,   /* a request failed with a->zrc: after_failure */
    N_OFFLINE,  /* not connected: wait for an event */
    N_RECOVER,  /* the session is dead: a new one */
    N_WATCHING, /* a data watch on the contender ahead (a->zrc: ZOK, or an error) */
} next;

typedef struct acquire {
    zk_lock *lk;
    int64_t timeout_ms, deadline; /* deadline: -1 none, else monotonic ms */
    char uuid[IK__UUID_SIZE];     /* this attempt's node name */
    int in_doubt;                 /* a create of this uuid may have happened ... */
    unsigned doubt_gen;           /* ... on this session generation */
    int need_dir;                 /* the parent was missing */
    int64_t asked;                /* send time of the request that proved the session */
    int64_t proven;               /* send time of the last write or sync answered on ... */
    unsigned proven_gen;          /* ... this session generation (0: none) ... */
    int64_t proven_sid;           /* ... and session */
    int rc;                       /* N_END's */
    /* one pass: */
    uint64_t seen;        /* the lock's event count at its start */
    uint64_t sseen;       /* and its session-event count */
    char node[ZPATH_MAX]; /* our node then */
    unsigned gen;         /* the session generation our node was made on */
    int64_t session;      /* and that session's id */
    ik__zk_session s;     /* the session, held while a step runs */
    int zrc;              /* the last request's ZooKeeper code */
    char **names;         /* the children listed, count of them; listed: by our */
    int count, listed;    /* create's request (which proves the session) */
    char pred[ZPATH_MAX]; /* the contender ahead of us */
    int alone;            /* it is the only one that can block us */
    int64_t watched;      /* send time of the watch on pred */
} acquire;

/* IDLE --zk_acquire--> WAITING: AGAIN, or the error that keeps the lock IDLE. */
static int acquire_begin(zk_lock *lk, int64_t timeout_ms, acquire *a)
{
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_IDLE) return IK_EINVAL;
    set_state(lk, IK_HOLD_WAITING, "waiting");
    memset(a, 0, sizeof *a);
    a->lk = lk;
    a->timeout_ms = timeout_ms;
    a->deadline = timeout_ms < 0 ? -1 : ik__mono_ms() + timeout_ms;
    int rc = ik__uuid4(a->uuid); /* no randomness: an error, never a weak name */
    if (rc != 0) set_state(lk, IK_HOLD_IDLE, "no randomness for the lock node's name");
    return rc ? rc : AGAIN;
}

static int past_deadline(const acquire *a)
{
    return a->deadline >= 0 && ik__mono_ms() >= a->deadline;
}

/* Our node is gone with its session (or was never made): the next create is of a new
 * name. 0, or the error of ik__uuid4. */
static int forget_node(acquire *a)
{
    ik__zk_lock_set_node(a->lk, "", 0, 0, 0);
    a->node[0] = '\0';
    a->in_doubt = 0;
    return ik__uuid4(a->uuid);
}

/* WAITING --cancel--> (IDLE): reads the lock's node and session for this pass; 0,
 * or IK_ECLOSED when ik_lock_cancel was called. */
static int pass_begin(acquire *a)
{
    zk_lock *lk = a->lk;
    int rc = 0;
    a->seen = ik__zk_lock_events_now(lk);
    a->sseen = ik__zk_lock_sevents_now(lk);
    pthread_mutex_lock(&lk->mu);
    if (lk->cancel) {
        lk->cancel = 0;
        rc = IK_ECLOSED;
    }
    snprintf(a->node, sizeof a->node, "%s", lk->node);
    a->gen = lk->gen;
    a->session = lk->session;
    pthread_mutex_unlock(&lk->mu);
    a->names = NULL;
    a->count = a->listed = 0;
    a->zrc = ZOK;
    a->pred[0] = '\0';
    a->alone = 0;
    return rc;
}

/* Under the session: a node (or a create in doubt) of an earlier session is
 * forgotten. 0, or the error of ik__uuid4. */
static int step_stale(acquire *a)
{
    const ik__zk_session *s = &a->s;
    if ((a->node[0] && (a->gen != s->gen || (s->id && s->id != a->session))) ||
        (a->in_doubt && a->doubt_gen != s->gen))
        return forget_node(a); /* made on a session that is gone */
    return 0;
}

/* Under the session: a create in doubt is looked for, a missing parent made. */
static void step_settle(acquire *a)
{
    zk_lock *lk = a->lk;
    if (!a->node[0] && a->in_doubt) {
        int64_t f;
        int found = find_ours(lk, a->s.zh, a->s.id, a->uuid, a->node, sizeof a->node, &f, &a->zrc);
        if (found == 1) ik__zk_lock_set_node(lk, a->node, a->s.gen, a->s.id, f);
        if (found >= 0) a->in_doubt = 0;
    }
    if (a->zrc == ZOK && a->need_dir) {
        a->zrc = ensure_dir(lk, a->s.zh);
        if (a->zrc == ZOK) a->need_dir = 0;
    }
}

/* Under the session, with no node of ours: our create and a listing in one round
 * trip (create_and_list). N_AGAIN when it went on (a->zrc says how), or N_END. */
static next step_create(acquire *a)
{
    zk_lock *lk = a->lk;
    a->asked = ik__mono_ms();
    int answered = 0;
    ik__zk_wait *pl = create_and_list(lk, &a->s, a->uuid, &answered);
    if (!pl) {
        a->rc = IK_ENOMEM;
        return N_END;
    }
    ik__zk_req *made = &pl->r[0], *list = &pl->r[1];
    a->zrc = answered ? made->rc : ZOPERATIONTIMEOUT; /* unanswered: in doubt */
    if (a->zrc == ZOK) {
        a->proven = a->asked; /* a write: through the leader */
        a->proven_gen = a->s.gen;
        a->proven_sid = a->s.id;
        snprintf(a->node, sizeof a->node, "%s", made->data ? made->data : "");
        ik__zk_lock_set_node(lk, a->node, a->s.gen, a->s.id, made->st.czxid);
        if (list->rc == ZOK) {
            a->names = list->kids.data;
            a->count = list->kids.count;
            a->listed = 1;
            list->kids.data = NULL;
            list->kids.count = 0;
        }
    } else if (a->zrc == ZNONODE) {
        a->need_dir = 1;
    } else if (ik__zk_doubtful(a->zrc)) {
        a->in_doubt = 1;
        a->doubt_gen = a->s.gen;
    }
    ik__zk_wait_put(pl);
    return N_AGAIN;
}

/* Under the session, our node listed or not: whom it waits for (blocker_of). The
 * blocker (-1 none, -2 our node not a contender, 0 one ahead), or IK_ENOMEM; a->zrc
 * the listing's or ordering's code. */
static int step_blocker(acquire *a)
{
    zk_lock *lk = a->lk;
    if (!a->listed) {
        struct String_vector kids = {0, NULL};
        a->asked = ik__mono_ms();
        a->zrc = zoo_get_children(a->s.zh, lk->dir, 0, &kids);
        if (a->zrc == ZOK) {
            a->names = kids.data;
            a->count = kids.count;
        }
    }
    int blocker = -2;
    if (a->zrc == ZOK)
        blocker = blocker_of(lk, a->s.zh, a->names, a->count, a->node, a->pred, sizeof a->pred,
                             &a->alone, &a->zrc);
    free_names(a->names, a->count);
    a->names = NULL;
    return blocker;
}

/* Under the session: our node is not among the contenders. Deleted (by hand, by an
 * admin tool, with its parent): queue again with a new node, unless the deadline
 * has passed. Still there under a name we cannot order: delete it and fail, rather
 * than make node after node. */
static next step_not_contending(acquire *a)
{
    int zd = zoo_delete(a->s.zh, a->node, -1);
    if (zd == ZOK) {
        ik__zk_lock_set_node(a->lk, "", 0, 0, 0);
        a->rc = IK_ESTORE;
        return N_END;
    }
    if (zd != ZNONODE) { /* not known: the listing comes again after an event */
        a->zrc = zd;
        return N_FAILED;
    }
    ik__zk_lock_set_node(a->lk, "", 0, 0, 0);
    if (past_deadline(a)) {
        a->rc = a->timeout_ms == 0 ? IK_EBUSY : IK_ETIMEDOUT;
        return N_END;
    }
    return N_AGAIN;
}

/* Whether a write or sync of this attempt, answered on the session s, was sent less
 * than a quarter of the session timeout ago: then it proves the session for a grant
 * (the monitor's next probe is due when it is that old, as for any grant), and
 * *sent is its send time. */
static int proof_fresh(const acquire *a, const ik__zk_session *s, int64_t *sent)
{
    if (!a->proven_gen || a->proven_gen != s->gen || a->proven_sid != s->id ||
        ik__mono_ms() - a->proven >= (int64_t)s->timeout_ms / 4)
        return 0;
    *sent = a->proven;
    return 1;
}

/* Proves the session for a grant (prove_session), recording the proof. */
static int prove_now(acquire *a, const ik__zk_session *s)
{
    int zrc = prove_session(a->lk, s, &a->asked);
    if (zrc == ZOK) {
        a->proven = a->asked;
        a->proven_gen = s->gen;
        a->proven_sid = s->id;
    }
    return zrc;
}

/* Under the session, no blocker: WAITING --no blocker--> HELD once the session is
 * proven: by our create's answer in this pass, by a write or sync of ours answered
 * recently enough (proof_fresh), or else by a sync through the leader now: a proof
 * so far by a read is not one (prove_session). */
static next step_first(acquire *a)
{
    if (a->listed) return N_HELD;
    if (proof_fresh(a, &a->s, &a->asked)) return N_HELD;
    a->zrc = prove_now(a, &a->s);
    if (a->zrc == ZOK) return N_HELD;
    if (a->zrc == ZOPERATIONTIMEOUT && !past_deadline(a)) return N_AGAIN; /* slow, not gone */
    return N_FAILED;
}

/* Under the session, a contender ahead (a->pred): a data watch (getData, as
 * Curator does: an exists of a node already gone would leave a watch for its
 * creation, which never comes, in the server and the client) on it, N_WATCHING with
 * a->zrc ZOK (pred_event set if it is gone already) or the error; or N_END (IK_EBUSY)
 * for a try without waiting. Only the predecessor is watched (docs/guarantees.md
 * promise 19: no herd), and, when it is the only contender that can block us
 * (a->alone: after_watch then holds without listing again once it goes), our own
 * node too, in the same round trip: deleted while we wait (by hand, with its
 * parent), we look again at once (step_not_contending) rather than hold without
 * it when the one ahead goes. ZooKeeper sends one session's watch events in the
 * order of the changes, so a deletion of ours before the predecessor's is seen
 * before it. No other waiter's release touches our node, so this adds no herd.
 * When not alone, we list again after the predecessor goes, and that listing
 * shows whether our node is still there. */
static next step_watch(acquire *a)
{
    zk_lock *lk = a->lk;
    if (a->timeout_ms == 0) {
        a->rc = IK_EBUSY;
        return N_END;
    }
    pthread_mutex_lock(&lk->mu);
    snprintf(lk->pred, sizeof lk->pred, "%s", a->pred);
    lk->pred_deleted = 0;
    lk->pred_event = 0;
    pthread_mutex_unlock(&lk->mu);
    int n = a->alone ? 2 : 1; /* the predecessor, and ours if alone */
    ik__zk_wait *w = ik__zk_wait_new(n, 0);
    if (!w) {
        a->rc = IK_ENOMEM;
        return N_END;
    }
    a->watched = ik__mono_ms();
    for (int i = 0; i < n; i++) {
        ik__zk_arm(&w->r[i], a->s.zh);
        ik__zk_issued(&w->r[i], zoo_awget(a->s.zh, i == 0 ? a->pred : a->node, ik__zk_lock_on_watch,
                                          (void *)(uintptr_t)lk->reg, ik__zk_on_data, &w->r[i]));
    }
    int answered =
        ik__zk_wait_until(w, a->s.zh, ik__mono_ns() + 2 * (int64_t)a->s.timeout_ms * 1000000);
    a->zrc = answered ? ZOK : ZOPERATIONTIMEOUT;
    int pred_gone = answered && w->r[0].rc == ZNONODE;
    int own_gone = answered && n == 2 && w->r[1].rc == ZNONODE;
    for (int i = 0; answered && i < n; i++)
        if (w->r[i].rc != ZOK && w->r[i].rc != ZNONODE && a->zrc == ZOK) a->zrc = w->r[i].rc;
    ik__zk_wait_put(w);
    pthread_mutex_lock(&lk->mu);
    if (pred_gone) lk->pred_deleted = lk->pred_event = 1;
    if (own_gone) lk->own_deleted = 1;
    pthread_mutex_unlock(&lk->mu);
    return N_WATCHING;
}

/* Under the session, connected: the steps in the order of the hard cases (header). */
static next step(acquire *a)
{
    step_settle(a);
    if (a->zrc == ZOK && !a->node[0] && !a->in_doubt) {
        next n = step_create(a);
        if (n != N_AGAIN) return n;
    }
    if (a->zrc != ZOK) /* a (container) parent is missing: make it at once */
        return a->zrc == ZNONODE ? N_AGAIN : N_FAILED;
    int blocker = step_blocker(a); /* our node exists: who is ahead? */
    if (blocker == IK_ENOMEM) {
        a->rc = IK_ENOMEM;
        return N_END;
    }
    if (a->zrc != ZOK && a->zrc != ZNONODE) return N_FAILED;
    if (blocker == -2) return step_not_contending(a);
    if (blocker == -1) return step_first(a); /* ours; the monitor's probes watch it */
    return step_watch(a);
}

/* After the session was found dead: our node (if any) died with it; a new session
 * (the backend's recover), or a nap of 200 ms before the next try. */
static int after_dead(acquire *a)
{
    int rc = forget_node(a);
    if (rc) return rc;
    if (past_deadline(a)) return IK_ETIMEDOUT;
    char why[160];
    ik__backend *be = a->lk->base.be;
    if (be->ops->recover(be, why, sizeof why) != 0) {
        int64_t nap = ik__mono_ms() + 200;
        rc = ik__zk_lock_wait_event(a->lk, a->seen,
                                    a->deadline >= 0 && a->deadline < nap ? a->deadline : nap, 1);
        if (rc == IK_ECLOSED) return rc;
        /* a timeout here is the nap's; the deadline is checked above */
    }
    return AGAIN;
}

/* After the watch: WAITING --predecessor gone--> HELD (the fast hand-over), or
 * AGAIN. Waits for an event on the contender ahead, our node's deletion or a
 * session event (ik__zk_lock_wait_pred: no other event ends the wait). The one
 * contender ahead of us gone (a->alone: whether it held or gave up, nothing else
 * was ahead, and a node made later sorts after ours), our own node still there
 * (watched in the same round trip), we hold without listing again if the watch was
 * set less than a third of the session timeout ago (else the listing looks), on a
 * proof of the session: a write or sync of ours answered recently enough
 * (proof_fresh: our create, in the steady state of a contended lock), else a sync
 * now (the watch's answer is a read). Not alone, the predecessor may have left
 * without holding while those before it still hold: we list again (AGAIN), as
 * Curator does. */
static int after_watch(acquire *a, unsigned wgen, int64_t t)
{
    zk_lock *lk = a->lk;
    int rc = a->zrc == ZOK ? ik__zk_lock_wait_pred(lk, a->sseen, a->deadline) : 0;
    pthread_mutex_lock(&lk->mu);
    int gone_pred = lk->pred_deleted, own_deleted = lk->own_deleted;
    lk->pred[0] = '\0';
    pthread_mutex_unlock(&lk->mu);
    if (rc) return rc;
    if (a->zrc != ZOK || own_deleted || !a->alone || !gone_pred ||
        ik__mono_ms() - a->watched >= t / 3)
        return AGAIN;
    ik__zk_session s;
    ik__zk_session_get(lk->base.be, &s);
    int ok = s.connected && !s.dead && s.gen == wgen && s.id == ik__zk_lock_session_of(lk);
    int64_t sent = 0;
    if (ok && !proof_fresh(a, &s, &sent)) {
        ok = prove_now(a, &s) == ZOK;
        sent = a->asked;
    }
    ik__zk_session_put(lk->base.be);
    if (!ok) return AGAIN;
    a->asked = sent;
    return IK_OK;
}

/* One pass of WAITING: AGAIN, IK_OK (HELD), or the error that ends the wait. */
static int acquire_pass(acquire *a)
{
    zk_lock *lk = a->lk;
    int rc = pass_begin(a);
    if (rc) return rc;
    ik__zk_lock_delete_pending(lk); /* an earlier release's delete whose answer was lost */
    ik__zk_session_get(lk->base.be, &a->s);
    next n = N_RECOVER;
    if (!a->s.dead) {
        n = N_END;
        a->rc = step_stale(a);
        if (!a->rc) n = a->s.connected ? step(a) : N_OFFLINE;
    }
    unsigned wgen = a->s.gen;
    int64_t t = a->s.timeout_ms;
    ik__zk_session_put(lk->base.be);
    switch (n) {
    case N_AGAIN:
        return AGAIN;
    case N_END:
        return a->rc;
    case N_HELD:
        return IK_OK;
    case N_RECOVER:
        return after_dead(a);
    case N_WATCHING:
        return after_watch(a, wgen, t);
    case N_OFFLINE:
        rc = ik__zk_lock_wait_event(lk, a->seen, a->deadline, 1);
        break;
    case N_FAILED:
        rc = after_failure(lk, a->zrc, a->seen, a->deadline);
        break;
    }
    return rc ? rc : AGAIN;
}

/* WAITING --timeout / cancel / error--> IDLE: our node deleted (delete_ours). */
static int give_up(acquire *a, int rc)
{
    zk_lock *lk = a->lk;
    ik__zk_session s;
    ik__zk_session_get(lk->base.be, &s);
    int wait = s.timeout_ms + 2000;
    ik__zk_session_put(lk->base.be);
    delete_ours(lk, a->in_doubt ? a->uuid : NULL, wait);
    ik__zk_lock_set_node(lk, "", 0, 0, 0);
    int zk = rc <= IK_EZK_BASE + 1000 && rc > IK_EZK_BASE - 1000;
    char why[160];
    if (zk) /* ZooKeeper's own words for the caller (docs/recipes.md) */
        snprintf(why, sizeof why, "ZooKeeper refused it: %s (on %s)", zerror(rc - IK_EZK_BASE),
                 lk->dir);
    else
        snprintf(why, sizeof why, "%s",
                 rc == IK_ECLOSED                       ? "cancelled"
                 : rc == IK_ETIMEDOUT || rc == IK_EBUSY ? "timed out"
                                                        : ik_strerror(rc));
    set_state(lk, IK_HOLD_IDLE, why);
    return zk ? IK_ESTORE : rc;
}

/* WAITING --no blocker--> HELD: the grant's proof is the request that proved the
 * session (a->asked); the hold monitor takes over from it (recipe.c hands it the
 * grant), and sends its first probe when that proof is a quarter of the timeout old,
 * as for a grant held since. */
static int grant(acquire *a, int64_t *fence)
{
    *fence = ik__zk_lock_granted(a->lk, a->asked);
    return IK_OK;
}

static int zk_acquire(ik_lock *base, int64_t timeout_ms, int64_t *fence)
{
    if (base->kind == IK__LOCK_SEMA) return ik__zk_sema_acquire((zk_lock *)base, timeout_ms, fence);
    acquire a;
    int rc = acquire_begin((zk_lock *)base, timeout_ms, &a);
    if (rc == AGAIN) {
        do
            rc = acquire_pass(&a);
        while (rc == AGAIN);
        rc = rc == IK_OK ? grant(&a, fence) : give_up(&a, rc);
        if (rc == IK_OK) ik__zk_lock_watch_own(a.lk);
    }
    return rc;
}

/* HELD --zk_release--> IDLE. The delete of our node is sent without waiting for its
 * answer (a lost answer is sent again after the reconnect, by tend on the hold's
 * prober thread, and ik_lock_destroy waits for it). */
static int zk_release(ik_lock *base)
{
    zk_lock *lk = (zk_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    if (st == IK_HOLD_IDLE || st == IK_HOLD_WAITING) {
        pthread_mutex_unlock(&lk->mu);
        return IK_EINVAL;
    }
    lk->state = IK_HOLD_IDLE;
    snprintf(lk->why, sizeof lk->why, "released");
    int earlier = lk->del_state != 0;
    pthread_mutex_unlock(&lk->mu);

    /* LOST too: the hold monitor may have given up on a session that reconnects
     * unexpired, and then our node is still there, ahead of every contender (ours
     * included). It goes to the release's delete like any other: sent again after
     * every reconnect of that session, forgotten only once the session is known
     * gone (docs/recipes.md, "A lost grant's node"). */
    if (earlier) { /* rare: an earlier delete still unanswered; one at a time */
        ik__zk_session s;
        ik__zk_session_get(base->be, &s);
        int64_t wait = s.timeout_ms + 2000;
        ik__zk_session_put(base->be);
        ik__zk_lock_delete_settle(lk, wait);
    }
    pthread_mutex_lock(&lk->mu);
    snprintf(lk->del_node, sizeof lk->del_node, "%s", lk->node);
    lk->del_gen = lk->gen;
    lk->del_session = lk->session;
    lk->del_state = lk->node[0] ? 2 : 0;
    lk->node[0] = '\0';
    lk->gen = 0;
    lk->session = 0;
    lk->fence = 0;
    pthread_mutex_unlock(&lk->mu);
    ik__zk_lock_delete_pending(lk);
    return IK_OK;
}

static void zk_cancel(ik_lock *base, int on)
{
    zk_lock *lk = (zk_lock *)base;
    pthread_mutex_lock(&lk->mu);
    lk->cancel = on;
    pthread_cond_broadcast(&lk->cv);
    pthread_mutex_unlock(&lk->mu);
}

static void zk_info(ik_lock *base, ik_hold_info *out)
{
    zk_lock *lk = (zk_lock *)base;
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    ik__zk_session_put(base->be);
    pthread_mutex_lock(&lk->mu);
    out->state = lk->state;
    out->session_timeout_ms = s.timeout_ms;
    snprintf(out->why, sizeof out->why, "%s", lk->why);
    if (lk->state == IK_HOLD_HELD || lk->state == IK_HOLD_IN_DOUBT) {
        out->fence = lk->fence;
        snprintf(out->node, sizeof out->node, "%s", lk->node);
        snprintf(out->session, sizeof out->session, "0x%" PRIx64, (uint64_t)lk->session);
        /* ZL1: never HELD on a session not known to live */
        if (s.dead || s.gen != lk->gen || (s.id && s.id != lk->session)) {
            out->state = IK_HOLD_LOST;
            snprintf(out->why, sizeof out->why, "ZooKeeper session expired");
        } else if (!s.connected && lk->state == IK_HOLD_HELD) {
            out->state = IK_HOLD_IN_DOUBT;
            snprintf(out->why, sizeof out->why, "connection to ZooKeeper lost");
        }
    }
    pthread_mutex_unlock(&lk->mu);
}

static void zk_lock_fini(ik_lock *base)
{
    zk_lock *lk = (zk_lock *)base;
    pthread_mutex_lock(&lk->mu);
    ik_hold_state st = lk->state;
    pthread_mutex_unlock(&lk->mu);
    if (st != IK_HOLD_IDLE && st != IK_HOLD_WAITING) zk_release(base);
    /* our node must not outlive the lock on a live session */
    ik__zk_session s;
    ik__zk_session_get(base->be, &s);
    int64_t wait = s.timeout_ms + 2000;
    ik__zk_session_put(base->be);
    ik__zk_lock_delete_settle(lk, wait);
    ik__zk_unlisten(base->be, ik__zk_lock_on_session, (void *)(uintptr_t)lk->reg);
    ik__zk_lock_reg_remove(lk);
    pthread_cond_destroy(&lk->cv);
    pthread_mutex_destroy(&lk->mu);
}

static int zk_leader(ik__backend *be, const char *path, char **id)
{
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    char dir[ZPATH_MAX];
    snprintf(dir, sizeof dir, "%s%s", s.chroot, path);
    if (!s.connected) {
        ik__zk_session_put(be);
        return IK_ESTORE;
    }
    struct String_vector kids = {0, NULL};
    int zrc = zoo_get_children(s.zh, dir, 0, &kids);
    int rc = IK_ENOTFOUND;
    if (zrc == ZOK) {
        ik__contender *v = calloc((size_t)kids.count + 1, sizeof *v);
        size_t n = 0;
        if (!v) rc = IK_ENOMEM;
        for (int i = 0; v && i < kids.count; i++)
            if (ik__contender_parse(IK__LOCK_LATCH, kids.data[i], &v[n])) n++;
        if (v && order_contenders(s.zh, dir, v, &n, NULL, 0) != ZOK) rc = IK_ESTORE;
        for (size_t i = 0; v && i < n && rc == IK_ENOTFOUND; i++) {
            char p[ZPATH_MAX], buf[1025];
            int len = (int)sizeof buf - 1;
            snprintf(p, sizeof p, "%s/%s", dir, v[i].name);
            zrc = zoo_get(s.zh, p, 0, buf, &len, NULL);
            if (zrc == ZNONODE) continue; /* it just left: the next one leads */
            if (zrc != ZOK) {
                rc = IK_ESTORE;
                break;
            }
            if (len < 0) len = 0;
            buf[len] = '\0';
            *id = strdup(buf);
            rc = *id ? IK_OK : IK_ENOMEM;
        }
        free(v);
        deallocate_String_vector(&kids);
    } else if (zrc != ZNONODE) {
        rc = IK_ESTORE;
    }
    ik__zk_session_put(be);
    return rc;
}

const ik__recipe_ops ik__recipe_zk_ops = {
    .scheme = "zk",
    .lock_size = sizeof(zk_lock),
    .lock_init = zk_lock_init,
    .lock_fini = zk_lock_fini,
    .acquire = zk_acquire,
    .release = zk_release,
    .cancel = zk_cancel,
    .info = zk_info,
    .leader = zk_leader,
    .proof_of_grant = ik__zk_lock_proof_of_grant,
    .probe = ik__zk_lock_probe,
    .tend = ik__zk_lock_tend,
    .sema_max = ik__zk_sema_max,
    .sema_holders = ik__zk_sema_holders,
};
