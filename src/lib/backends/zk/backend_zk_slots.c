/* backend_zk_slots.c: worker slots on Apache ZooKeeper (zk://HOST:PORT[,...][/CHROOT]),
 * through the official multithreaded C client (libzookeeper_mt), on the session of
 * zk_session.c; reading many slots at once is backend_zk_scan.c, the nodes' data
 * backend_zk_data.c, and the ops table that names these calls backend_zk.c.
 *
 * Node layout (docs/zookeeper.md has the full story), BASE = CHROOT/idkeeper/apps/APP:
 *
 *   BASE/slots/NNNN        persistent: the slot's time record and last holder
 *   BASE/owners/NNNN       ephemeral: the live holder of slot NNNN
 *   BASE/identities/ID     persistent: the slot identity ID took last (stickiness)
 *   BASE/tags/TAG[/meta]   persistent: tags, the counters (backend_zk_tags.c)
 *
 * A slot is free when it has no owner node, so one listing of BASE/owners tells what
 * is held, whatever the range's size. Taking a slot is one zoo_multi that writes the
 * slot node at the version just read (or creates it), creates the ephemeral owner
 * and records the identity's choice: two callers racing for one slot cannot both
 * win. Every later write of the time record is a zoo_multi [check owner exists, set
 * slot node at the version of our last write], so a write succeeds only while
 * nobody else has taken the slot, and only on a live session (the server refuses
 * requests of an expired one).
 *
 * Invariants
 *   ZSL1. A slot node is never deleted by idkeeper; its version grows with every
 *       write, and every holder writes it when it takes the slot. So "our last
 *       version still matches" proves nobody took the slot since.
 *   ZSL2. slot_persist reports success only for a write the server acknowledged on
 *       the current session, and reports the monotonic time the request was sent
 *       with the negotiated session timeout (the server cannot expire the session
 *       before send + timeout; core/lease.c claims only its safe part), however
 *       late the answer came: a write parked unanswered by one call proves, with its own record,
 *       when the next call finds it acknowledged.
 *   ZSL3. A write whose answer was lost (connection loss) leaves the slot "in doubt":
 *       its version is unknown. The next write that meets ZBADVERSION reads the
 *       node back and adopts it only if the data carries our own session id.
 *   ZSL4. One live slot handle per (app, worker) per backend: the handle list keeps
 *       an owner node left by this session (after slot_forget) from being adopted
 *       twice.
 *   ZSL5. An owner node this session may have created and no handle holds is in the
 *       orphan list (remember_orphan) until an answer shows it is not ours, a take
 *       adopts it, or release_orphans deletes it: a take whose answer is lost, and
 *       the checks after it, never leave a slot held by nobody.
 *   ZSL6. A release never waits for a renewal still unanswered before it is sent
 *       (a slow ZooKeeper would make a stop wait for two answers in a row): it goes
 *       right behind it on the session's one connection as [check the slot node at
 *       the version the renewal makes, delete the owner] (release_behind). It
 *       writes no record: the renewal's, once applied, is at least every ID issued
 *       (IDs are issued below a record the store acknowledged, and the renewal's is
 *       not below it). It frees the slot only if the renewal applied, which the
 *       version says (ZSL1), so it never frees, nor lowers the record of, a slot
 *       that someone took meanwhile. Once a stop has begun (stop_begin), a renewal
 *       waits for no answer: it is parked for the release or the next renewal, and
 *       the lease is told IK_ECLOSED (no change of its state).
 *
 * Threads: the ZooKeeper client runs an I/O thread and a completion thread per
 * handle. The session watcher (zk_session.c) runs on the completion thread and only
 * records the state under b->zc.mu. Calls into this backend may come from any
 * thread; b->zc.life (a rwlock) keeps the zhandle alive while a call uses it, and
 * recover() swaps it under the write lock. The slots' own lists (held slots,
 * orphans) and the random choice are under b->slots->mu, never held with b->zc.mu.
 *
 * What it deliberately does not do: it never deletes slot nodes, never steals a
 * slot whose owner node exists (even one with our identity: that may be a live
 * twin), and never reports a lease proven on a session it has not heard from.
 */
#include "backend.h"
#include "backend_zk.h"
#include "backend_zk_leaf.h"
#include "internal.h"
#include "zk_session.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define ZK_ROOT IK__ZK_ROOT
#define ZK_PATH_MAX 512
#define ZK_DATA_MAX 1024

/* ------------------------------------------------------------------------------
 * Types
 */
typedef ik__zk_backend zk_backend;
typedef ik__zk_conn zk_conn;
typedef ik__zk_wait zk_wait;
typedef ik__zk_req zk_item;

/* What a slot write carries besides its request (zk_item.ext). */
typedef struct zk_write {
    char buf[ZK_DATA_MAX];
    int buf_len;
    int64_t sent_ns;
    int64_t record_ms; /* the record this write carries */
} zk_write;

/* A held slot (the opaque handle of ik__slot_grant). */
typedef struct zk_slot zk_slot;

struct zk_slot {
    zk_slot *next; /* b->slots->list */
    char *app, *identity;
    uint32_t worker;
    char slot_path[ZK_PATH_MAX], owner_path[ZK_PATH_MAX];
    unsigned gen;      /* handle generation it was taken on */
    int64_t session;   /* session that owns the owner node */
    int version;       /* slot node version after our last acknowledged write */
    int64_t czxid;     /* slot node identity (0: not known yet) */
    int64_t found_ms;  /* record found at acquisition (the floor) */
    int64_t record_ms; /* highest record we know is written */
    int64_t since_ms;
    int in_doubt;          /* a write's outcome is unknown (ZSL3) */
    ik__lease_proof taken; /* set by the take: its send time, the session timeout */
    zk_wait *pending;      /* a persist sent, not yet answered */
    int leaf;              /* a Leaf fleet's node (backend_zk_leaf.c): Leaf's data */

    /* a Leaf fleet's node only */
    char mark_path[ZK_PATH_MAX]; /* the identity's mark, written with the node */
    unsigned leaf_seen;          /* for ik__zk_leaf_recheck */
};

/* An owner node this session may still hold without a handle (remember_orphan). */
typedef struct zk_orphan {
    struct zk_orphan *next;
    char app[72];
    uint32_t worker;
    int64_t session;
} zk_orphan;

/* The slots' state of one backend. */
struct ik__zk_slots {
    pthread_mutex_t mu; /* guards what follows */
    zk_slot *list;
    zk_orphan *orphans;
    uint64_t rng;
};

ik__zk_slots *ik__zk_slots_new(void)
{
    ik__zk_slots *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    pthread_mutex_init(&t->mu, NULL);
    if (getrandom(&t->rng, sizeof t->rng, 0) != (ssize_t)sizeof t->rng)
        t->rng = (uint64_t)ik__mono_ns() ^ ((uint64_t)getpid() << 32);
    t->rng |= 1;
    return t;
}

void ik__zk_slots_free(ik__zk_slots *t)
{
    if (!t) return;
    while (t->list) {
        zk_slot *s = t->list;
        t->list = s->next;
        ik__zk_wait_put(s->pending);
        free(s->app);
        free(s->identity);
        free(s);
    }
    while (t->orphans) {
        zk_orphan *o = t->orphans;
        t->orphans = o->next;
        free(o);
    }
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static uint64_t rng_next(zk_backend *b)
{
    /* xorshift64*; callers hold b->slots->mu */
    uint64_t x = b->slots->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    b->slots->rng = x;
    return x * UINT64_C(2685821657736338717);
}

/* ------------------------------------------------------------------------------
 * Time
 */
/* Waits up to ms for every request of w, sent on c, to be answered (or c's session
 * to be known dead). 1: all answered. */
static int wait_all(zk_conn *c, zk_wait *w, int64_t ms)
{
    return ik__zk_wait_until(w, c->zh, ik__mono_ns() + ms * 1000000);
}

/* wait_all for a renewal: it ends too once a stop has begun (ZSL6). */
static int wait_renewal(zk_conn *c, zk_wait *w, int64_t ms)
{
    return ik__zk_wait_renewal(w, c->zh, ik__mono_ns() + ms * 1000000);
}

/* 1 once a stop has begun (ZSL6). */
static int stopping(const zk_conn *c)
{
    return __atomic_load_n(&c->zc->stopping, __ATOMIC_ACQUIRE) != 0;
}

/* What a request answered on c's session proves (ZSL2): the session cannot
 * expire before its send time + the negotiated session timeout; the lease
 * (core/lease.c) claims its safe part (docs/zookeeper.md, "The safe window"). */
static ik__lease_proof proof_of(zk_conn *c, int64_t sent_ns)
{
    return (ik__lease_proof){sent_ns, ik__zk_conn_timeout_ms(c)};
}

/* How long one slot_persist waits for answers before parking its write and
 * reporting "in doubt": a third of the negotiated session timeout. An answer proves
 * the lease until its send time + 2/3 T, so one that takes up to T/3 still lets the
 * next write be answered before that proof runs out: a steady latency of seconds
 * is a slow ZooKeeper, not a lost one. */
static int64_t answer_wait_ms(zk_conn *c)
{
    int64_t w = ik__proof_slack_ms(ik__zk_conn_timeout_ms(c));
    return w < 100 ? 100 : w;
}

/* How long slot_release waits in all (a connection, a parked write, its own
 * multi): half the negotiated session timeout, at least 2 s. A ZooKeeper that
 * answers up to about T/3 late keeps the lease (docs/zookeeper.md, "A slow
 * ZooKeeper"), so its answer to the release must be waited for that long too; and a
 * shutdown must not hang on one that does not answer: past this, the release is in
 * doubt (the slot frees when the session closes, a moment later). */
static int64_t release_budget_ms(zk_conn *c)
{
    int64_t w = ik__zk_conn_timeout_ms(c) / 2;
    return w < 2000 ? 2000 : w;
}

/* What is left until the monotonic ms deadline until, 0 if past. */
static int64_t left_ms(int64_t until)
{
    int64_t left = until - ik__mono_ns() / 1000000;
    return left > 0 ? left : 0;
}

static int format_owner_data(char *buf, size_t len, int64_t since_ms, int64_t session,
                             const char *identity)
{
    char host[64] = "";
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if ((unsigned char)*c < 0x20) *c = '?';
    int n = snprintf(buf, len,
                     "pid=%ld\nhost=%s\nsince_ms=%" PRId64 "\nsession=0x%" PRIx64 "\nidentity=%s\n",
                     (long)getpid(), host, since_ms, (uint64_t)session, identity);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* ------------------------------------------------------------------------------
 * Paths. BASE = CHROOT/idkeeper/apps/APP:
 *   BASE/slots/NNNN        persistent: the time record
 *   BASE/owners/NNNN       ephemeral: the live holder
 *   BASE/identities/ENC    persistent: the slot this identity took last
 */
/* Creates CHROOT, /idkeeper, /idkeeper/apps (shared ACL), then BASE and its slots,
 * owners and identities nodes (app ACL), as needed. */
static int ensure_parents(zk_backend *b, zk_conn *c, const char *app, char *why, size_t why_len)
{
    char base[ZK_PATH_MAX], path[ZK_PATH_MAX];
    static const char *const subs[] = {"slots", "owners", "identities"};
    ik__zk_app_path(b->zc.chroot, app, "identities", path, sizeof path);
    int zrc = ik__zk_sync_exists(c->zh, path, NULL);
    if (zrc == ZOK) return IK_OK;
    if (zrc != ZNONODE) goto fail;
    ik__zk_app_path(b->zc.chroot, app, NULL, base, sizeof base);
    zrc = ik__zk_create_path(c->zh, base, strlen(b->zc.chroot) + strlen(ZK_ROOT), &b->zc.shared_acl,
                             &b->zc.app_acl, ZOO_PERSISTENT, path, sizeof path);
    for (size_t i = 0; i < sizeof subs / sizeof subs[0] && zrc == ZOK; i++) {
        ik__zk_app_path(b->zc.chroot, app, subs[i], path, sizeof path);
        zrc = ik__zk_sync_create(c->zh, path, NULL, -1, &b->zc.app_acl, ZOO_PERSISTENT);
        if (zrc == ZNODEEXISTS) zrc = ZOK;
    }
    if (zrc == ZOK) return IK_OK;
fail:
    if (zrc == ZNOAUTH)
        return ik__fail(IK_ESTORE, why, why_len,
                        "not authorized to create %s (nodes made with other credentials? "
                        "check --zk-auth)",
                        path);
    return ik__zk_fail(zrc, why, why_len, path);
}

/* ------------------------------------------------------------------------------
 * Taking a slot
 */

/* 1 if (app, worker) has a live handle in this backend. Caller holds b->slots->mu. */
static int slot_is_live(zk_backend *b, const char *app, uint32_t worker)
{
    for (zk_slot *s = b->slots->list; s; s = s->next)
        if (s->worker == worker && strcmp(s->app, app) == 0) return 1;
    return 0;
}

/* Remembers that this session may still own (app, worker)'s owner node: a slot the
 * lease forgot, or a take whose answer was lost. slot_acquire looks there first. */
static void remember_orphan(zk_backend *b, const char *app, uint32_t worker, int64_t session)
{
    pthread_mutex_lock(&b->slots->mu);
    int n = 0;
    for (zk_orphan *o = b->slots->orphans; o; o = o->next, n++)
        if (o->worker == worker && o->session == session && strcmp(o->app, app) == 0) {
            pthread_mutex_unlock(&b->slots->mu);
            return;
        }
    zk_orphan *o = n < 64 ? calloc(1, sizeof *o) : NULL;
    if (o) {
        snprintf(o->app, sizeof o->app, "%s", app);
        o->worker = worker;
        o->session = session;
        o->next = b->slots->orphans;
        b->slots->orphans = o;
    }
    pthread_mutex_unlock(&b->slots->mu);
}

/* Takes the first orphan of app, session and range out of the list: 1 and *w, or 0. */
static int pop_orphan(zk_backend *b, const char *app, int64_t session, uint32_t lo, uint32_t hi,
                      uint32_t *w)
{
    int found = 0;
    pthread_mutex_lock(&b->slots->mu);
    for (zk_orphan **pp = &b->slots->orphans; *pp;) {
        zk_orphan *o = *pp;
        if (o->session != session) { /* an older session: its owners are gone */
            *pp = o->next;
            free(o);
            continue;
        }
        if (strcmp(o->app, app) == 0 && o->worker >= lo && o->worker <= hi) {
            *w = o->worker;
            *pp = o->next;
            free(o);
            found = 1;
            break;
        }
        pp = &o->next;
    }
    pthread_mutex_unlock(&b->slots->mu);
    return found;
}

/* Drops (app, worker, session) from the orphans, if there. */
static void pop_orphan_exact(zk_backend *b, const char *app, uint32_t worker, int64_t session)
{
    pthread_mutex_lock(&b->slots->mu);
    for (zk_orphan **pp = &b->slots->orphans; *pp; pp = &(*pp)->next) {
        zk_orphan *o = *pp;
        if (o->worker == worker && o->session == session && strcmp(o->app, app) == 0) {
            *pp = o->next;
            free(o);
            break;
        }
    }
    pthread_mutex_unlock(&b->slots->mu);
}

/* After a slot was taken: frees the other owner nodes this session still holds
 * without a handle in app's [lo, hi] (orphans the take did not need), so that
 * they do not stay held by nobody until the session ends. Deleting our own owner
 * node is a release without a record write: the slot node keeps the record our
 * take (or our last persist) wrote, above anything issued under it. An orphan
 * whose delete is not answered stays remembered. */
static void release_orphans(zk_backend *b, zk_conn *c, const char *app, int64_t session,
                            uint32_t lo, uint32_t hi)
{
    uint32_t w, ws[16];
    int nw = 0;
    char path[ZK_PATH_MAX];
    while (nw < 16 && pop_orphan(b, app, session, lo, hi, &w))
        ws[nw++] = w;
    for (int i = 0; i < nw; i++) {
        struct Stat ost;
        pthread_mutex_lock(&b->slots->mu);
        int live = slot_is_live(b, app, ws[i]);
        pthread_mutex_unlock(&b->slots->mu);
        if (live) continue;
        ik__zk_worker_path(b->zc.chroot, app, "owners", ws[i], path, sizeof path);
        int zrc = ik__zk_sync_exists(c->zh, path, &ost);
        if (zrc == ZOK && ost.ephemeralOwner == session)
            zrc = ik__zk_sync_delete(c->zh, path, ost.version);
        if (ik__zk_doubtful(zrc)) remember_orphan(b, app, ws[i], session);
    }
}

enum { TAKE_OK = 0, TAKE_CONFLICT = 1 };

/* What slot_acquire knows about the identity node when it takes a slot. */
typedef struct zk_ident {
    char path[ZK_PATH_MAX + 640];
    int exists;
    int worker; /* the slot it names, -1 if none */
} zk_ident;

/* try_take's multi got no answer: did it land? Only an owner node of our own session
 * says yes. Until an answer says it did not, the slot is remembered as maybe ours, so
 * that no owner node of this session is ever left without a handle (ZSL5). session is
 * the one the multi was sent on, whatever the connection holds now. TAKE_OK:
 * it landed with our slot data (*wst and *record the slot node's); TAKE_CONFLICT: it
 * did not, or our owner node stands over another's slot data (the next pass takes it
 * back with a fresh write; the orphan stays remembered); < 0 is an ik_error. */
static int take_in_doubt(zk_backend *b, zk_conn *c, const ik__slot_request *req, uint32_t w,
                         int64_t session, const zk_slot *s, struct Stat *wst, int64_t *record,
                         char *why, size_t why_len)
{
    struct Stat ost;
    int erc = ik__zk_conn_wait(&b->zc, c, ik__zk_connect_wait_ms(b->zc.timeout_ms)) == IK_OK
                  ? ik__zk_sync_exists(c->zh, s->owner_path, &ost)
                  : ZCONNECTIONLOSS;
    if (erc == ZNONODE || (erc == ZOK && ost.ephemeralOwner != session)) return TAKE_CONFLICT;
    remember_orphan(b, req->app, w, session); /* ours, or maybe ours */
    if (erc != ZOK)
        return ik__fail(ik__zk_doubtful(erc) ? IK_EINDOUBT : IK_ELOST, why, why_len,
                        "ZooKeeper connection lost while taking slot %" PRIu32 ": %s", w,
                        zerror(erc));
    char buf[ZK_DATA_MAX];
    int blen = sizeof buf - 1;
    int zrc = ik__zk_sync_get(c->zh, s->slot_path, buf, &blen, wst);
    if (zrc != ZOK)
        return ik__fail(ik__zk_doubtful(zrc) ? IK_EINDOUBT : IK_ELOST, why, why_len,
                        "ZooKeeper connection lost while taking slot %" PRIu32 ": %s", w,
                        zerror(zrc));
    ik__zk_fields f = {0};
    ik__zk_parse_fields(buf, blen < 0 ? 0 : blen, &f);
    if (f.session != session || strcmp(f.ident, req->identity) != 0 || !f.has_record)
        return TAKE_CONFLICT;
    pop_orphan_exact(b, req->app, w, session);
    *record = f.record_ms;
    return TAKE_OK;
}

/* One attempt at worker w: the single zoo_multi of the node layout,
 *   [set slot at version | create slot] + [create owner EPHEMERAL]
 *   + [set | create identities/ME "worker=w"]
 * or, to take back an owner node of this very session (adopt_owner_version >= 0),
 *   [set slot at version] + [set owner at version].
 * Reads the slot node first. TAKE_OK fills s; TAKE_CONFLICT means someone else won
 * or the slot cannot be used (try another); < 0 is an ik_error. */
static int try_take(zk_backend *b, zk_conn *c, const ik__slot_request *req, uint32_t w,
                    const zk_ident *id, int adopt_owner_version, zk_slot *s, char *why,
                    size_t why_len)
{
    char slot_data[ZK_DATA_MAX], owner_data[ZK_DATA_MAX], id_data[32], buf[ZK_DATA_MAX];
    int64_t session = ik__zk_conn_session(&b->zc, c);
    ik__zk_worker_path(b->zc.chroot, req->app, "slots", w, s->slot_path, sizeof s->slot_path);
    ik__zk_worker_path(b->zc.chroot, req->app, "owners", w, s->owner_path, sizeof s->owner_path);

    struct Stat st;
    int blen = sizeof buf - 1;
    int zrc = ik__zk_sync_get(c->zh, s->slot_path, buf, &blen, &st);
    int exists = zrc == ZOK;
    ik__zk_fields f = {0};
    if (zrc == ZOK) {
        ik__zk_parse_fields(buf, blen < 0 ? 0 : blen, &f);
        if (!f.has_record) return TAKE_CONFLICT; /* never guess a floor */
    } else if (zrc != ZNONODE) {
        return ik__zk_fail(zrc, why, why_len, s->slot_path);
    }
    if (adopt_owner_version >= 0 && !exists) return TAKE_CONFLICT;
    int64_t found = exists ? f.record_ms : 0;
    int64_t record = req->new_record_ms > found ? req->new_record_ms : found;
    int64_t since = ik__wall_ms();
    int sl = ik__zk_format_slot(slot_data, sizeof slot_data, record, since, session, req->identity);
    int ol = format_owner_data(owner_data, sizeof owner_data, since, session, req->identity);
    int il = snprintf(id_data, sizeof id_data, "worker=%" PRIu32 "\n", w);
    if (sl < 0 || ol < 0) return ik__fail(IK_EINVAL, why, why_len, "identity too long");

    zoo_op_t ops[3];
    zoo_op_result_t res[3];
    struct Stat wst;
    int nops = 2;
    memset(res, 0, sizeof res);
    memset(&wst, 0, sizeof wst);
    if (exists)
        zoo_set_op_init(&ops[0], s->slot_path, slot_data, sl, st.version, &wst);
    else
        zoo_create_op_init(&ops[0], s->slot_path, slot_data, sl, &b->zc.app_acl, ZOO_PERSISTENT,
                           NULL, 0);
    if (adopt_owner_version >= 0) {
        zoo_set_op_init(&ops[1], s->owner_path, owner_data, ol, adopt_owner_version, NULL);
    } else {
        zoo_create_op_init(&ops[1], s->owner_path, owner_data, ol, &b->zc.app_acl, ZOO_EPHEMERAL,
                           NULL, 0);
        if (id->worker != (int)w || !id->exists) {
            if (id->exists)
                zoo_set_op_init(&ops[2], id->path, id_data, il, -1, NULL);
            else
                zoo_create_op_init(&ops[2], id->path, id_data, il, &b->zc.app_acl, ZOO_PERSISTENT,
                                   NULL, 0);
            nops = 3;
        }
    }
    int64_t sent = ik__mono_ns();
    zrc = ik__zk_multi(c->zh, nops, ops, res);
    if (nops == 3 && zrc == ZNODEEXISTS && res[2].err == ZNODEEXISTS && !id->exists) {
        /* Only the identity node was there already (a twin with our identity made it
         * since we looked): the slot may still be free; once more, with a set. */
        zoo_set_op_init(&ops[2], id->path, id_data, il, -1, NULL);
        memset(res, 0, sizeof res);
        sent = ik__mono_ns();
        zrc = ik__zk_multi(c->zh, nops, ops, res);
    }
    if (ik__zk_doubtful(zrc)) {
        int landed = take_in_doubt(b, c, req, w, session, s, &wst, &record, why, why_len);
        if (landed != TAKE_OK) return landed;
        zrc = ZOK;
    } else if (zrc == ZOK && !exists) {
        if (ik__zk_sync_exists(c->zh, s->slot_path, &wst) != ZOK) wst.czxid = 0;
        wst.version = 0;
    }
    switch (zrc) {
    case ZOK:
        break;
    case ZNODEEXISTS:
    case ZBADVERSION:
    case ZNONODE:
    case ZNOTEMPTY:
        return TAKE_CONFLICT;
    case ZNOAUTH:
        return ik__fail(IK_ESTORE, why, why_len,
                        "not authorized to write %s (made with other credentials? check "
                        "--zk-auth)",
                        s->slot_path);
    default:
        return ik__zk_fail(zrc, why, why_len, "taking a slot");
    }
    s->worker = w;
    s->gen = c->gen;
    s->session = session;
    s->version = wst.version;
    s->czxid = wst.czxid;
    s->found_ms = found;
    s->record_ms = record;
    s->since_ms = since;
    s->in_doubt = 0;
    s->pending = NULL;
    s->taken = proof_of(c, sent);
    return TAKE_OK;
}

/* Reads the identity node: whether it exists and the slot it names. */
static int read_ident(zk_conn *c, zk_ident *id, char *why, size_t why_len)
{
    char buf[64];
    int blen = sizeof buf - 1;
    id->exists = 0;
    id->worker = -1;
    int zrc = ik__zk_sync_get(c->zh, id->path, buf, &blen, NULL);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return ik__zk_fail(zrc, why, why_len, id->path);
    id->exists = 1;
    uint64_t v;
    if (blen > 7 && !memcmp(buf, "worker=", 7)) {
        size_t l = (size_t)blen - 7;
        if (l && buf[7 + l - 1] == '\n') l--;
        if (ik__zk_parse_u64(buf + 7, l, 10, &v) == 0 && v <= UINT32_MAX) id->worker = (int)v;
    }
    return IK_OK;
}

/* One pass of slot_acquire on a connected handle: orphans of this session, then
 * the identity's last slot, then a free one by choice (three listings at most).
 * IK_OK fills s; IK_ENOSLOT; IK_EINDOUBT when ZooKeeper did not answer. */
static int acquire_pass(zk_backend *b, zk_conn *c, const ik__slot_request *req, zk_ident *id,
                        zk_slot *s, ik__zk_wset *busy_set, char *why, size_t why_len)
{
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    char owners[ZK_PATH_MAX];
    int rc = ensure_parents(b, c, req->app, why, why_len);
    if (rc) return rc;
    int64_t session = ik__zk_conn_session(&b->zc, c);
    ik__zk_app_path(b->zc.chroot, req->app, "owners", owners, sizeof owners);

    /* 1. An owner node of this very session that no handle has (a slot the lease
     *    forgot while its session lived on, or a take whose answer was lost). */
    /* Each orphan is tried once a pass (taken out of the list first); one whose
     * fate is still unknown goes back to the list (ZSL5). */
    uint32_t w, ws[16];
    int nw = 0;
    while (nw < 16 && pop_orphan(b, req->app, session, req->worker_min, req->worker_max, &w))
        ws[nw++] = w;
    rc = IK_ENOSLOT;
    for (int i = 0; i < nw; i++) {
        struct Stat ost;
        w = ws[i];
        pthread_mutex_lock(&b->slots->mu);
        int live = slot_is_live(b, req->app, w);
        pthread_mutex_unlock(&b->slots->mu);
        if (live) continue;
        if (rc != IK_ENOSLOT) { /* done or failed: the rest wait for the next call */
            remember_orphan(b, req->app, w, session);
            continue;
        }
        ik__zk_worker_path(b->zc.chroot, req->app, "owners", w, s->owner_path,
                           sizeof s->owner_path);
        int erc = ik__zk_sync_exists(c->zh, s->owner_path, &ost);
        if (erc != ZOK && erc != ZNONODE) {
            remember_orphan(b, req->app, w, session); /* still maybe ours */
            rc = ik__zk_fail(erc, why, why_len, s->owner_path);
            continue;
        }
        if (erc == ZNONODE || ost.ephemeralOwner != session) continue;
        int t = try_take(b, c, req, w, id, ost.version, s, why, why_len);
        if (t == TAKE_OK)
            rc = IK_OK;
        else if (t < 0)
            rc = t;
        /* an answer lost (t < 0), or ours with data we cannot adopt: keep it */
        if (t != TAKE_OK) remember_orphan(b, req->app, w, session);
    }
    for (int round = 0; round < 3 && rc == IK_ENOSLOT; round++) {
        /* What is held now: one listing, whatever the range's size. */
        int src = ik__zk_list_workers(c->zh, owners, req->worker_min, req->worker_max, busy_set,
                                      why, why_len);
        if (!src) src = read_ident(c, id, why, why_len);
        if (src) {
            rc = src;
            break;
        }
        pthread_mutex_lock(&b->slots->mu);
        for (zk_slot *o = b->slots->list; o && !src; o = o->next)
            if (strcmp(o->app, req->app) == 0 && o->worker >= req->worker_min &&
                o->worker <= req->worker_max && ik__zk_wset_add(busy_set, o->worker))
                src = IK_ENOMEM;
        pthread_mutex_unlock(&b->slots->mu);
        if (src) {
            rc = src;
            break;
        }
        /* 2. The slot this identity took last, if free (docs/guarantees.md promise 8). */
        if (id->worker >= 0 && (uint32_t)id->worker >= req->worker_min &&
            (uint32_t)id->worker <= req->worker_max &&
            !ik__zk_wset_has(busy_set, (uint32_t)id->worker)) {
            int t = try_take(b, c, req, (uint32_t)id->worker, id, -1, s, why, why_len);
            if (t == TAKE_OK)
                rc = IK_OK;
            else if (t < 0)
                rc = t;
            else if (ik__zk_wset_add(busy_set, (uint32_t)id->worker))
                rc = IK_ENOMEM;
        }
        /* 3. Any free slot, by req->choice. */
        while (rc == IK_ENOSLOT && busy_set->n < range) {
            uint64_t k = 0;
            if (req->choice == IK_SLOT_RANDOM) {
                pthread_mutex_lock(&b->slots->mu);
                k = rng_next(b) % (range - busy_set->n);
                pthread_mutex_unlock(&b->slots->mu);
            }
            w = ik__zk_wset_nth_free(busy_set, req->worker_min, k);
            int t = try_take(b, c, req, w, id, -1, s, why, why_len);
            if (t == TAKE_OK)
                rc = IK_OK;
            else if (t < 0)
                rc = t;
            else if (ik__zk_wset_add(busy_set, w))
                rc = IK_ENOMEM;
        }
    }
    return rc;
}

/* slot_is_live for backend_zk_leaf.c, taking the lock. */
static int leaf_live(zk_backend *b, const char *app, uint32_t worker)
{
    pthread_mutex_lock(&b->slots->mu);
    int live = slot_is_live(b, app, worker);
    pthread_mutex_unlock(&b->slots->mu);
    return live;
}

/* One pass of slot_acquire on a Leaf fleet's nodes: backend_zk_leaf.c takes the
 * number, and s becomes a handle that slot_persist and slot_release write as any
 * other, in Leaf's data. Same answers as acquire_pass. */
static int leaf_pass(zk_backend *b, zk_conn *c, const ik__slot_request *req, zk_slot *s, char *why,
                     size_t why_len)
{
    ik__zk_leaf_taken t;
    int rc = ik__zk_leaf_take(b, c, b->leaf, req, leaf_live, &t, why, why_len);
    if (rc) return rc;
    s->leaf = 1;
    s->worker = t.worker;
    snprintf(s->slot_path, sizeof s->slot_path, "%s", t.node_path);
    snprintf(s->owner_path, sizeof s->owner_path, "%s", t.owner_path);
    snprintf(s->mark_path, sizeof s->mark_path, "%s", t.mark_path);
    s->leaf_seen = t.seen;
    s->gen = c->gen;
    s->session = ik__zk_conn_session(&b->zc, c);
    s->version = t.version;
    s->czxid = t.czxid;
    s->found_ms = t.found_ms;
    s->record_ms = t.record_ms;
    s->since_ms = t.since_ms;
    s->taken = proof_of(c, t.sent_ns);
    return IK_OK;
}

int ik__zk_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                        char *why, size_t why_len)
{
    zk_backend *b = (zk_backend *)be;
    if (!req || !out || !req->identity || !*req->identity)
        return ik__fail(IK_EINVAL, why, why_len, "no identity");
    if (!ik__zk_app_ok(req->app)) return ik__fail(IK_EINVAL, why, why_len, "bad app name");
    if (req->worker_min > req->worker_max)
        return ik__fail(IK_EINVAL, why, why_len, "empty worker range");
    zk_ident *id = calloc(1, sizeof *id);
    zk_slot *s = calloc(1, sizeof *s);
    if (!id || !s) {
        free(id);
        free(s);
        return IK_ENOMEM;
    }
    s->app = strdup(req->app);
    s->identity = strdup(req->identity);
    char enc[640];
    ik__zk_app_path(b->zc.chroot, req->app, "identities", id->path, sizeof id->path);
    size_t pl = strlen(id->path);
    int bad = !s->app || !s->identity ? IK_ENOMEM
              : ik__zk_identity_name(req->identity, enc, sizeof enc) < 0
                  ? ik__fail(IK_EINVAL, why, why_len, "identity too long")
                  : IK_OK;
    if (bad) {
        free(s->app);
        free(s->identity);
        free(s);
        free(id);
        return bad;
    }
    snprintf(id->path + pl, sizeof id->path - pl, "/%s", enc);

    pthread_rwlock_rdlock(&b->zc.life);
    zk_conn *c = b->zc.conn;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    ik__zk_wset busy = {0};
    /* Connection trouble (no answer) is retried on this handle for a while: a slow
     * or restarting ZooKeeper should not make a server refuse to start. */
    int64_t deadline =
        ik__mono_ns() / 1000000 + (b->zc.timeout_ms < 5000 ? b->zc.timeout_ms : 5000);
    int rc;
    for (;;) {
        int64_t left = deadline - ik__mono_ns() / 1000000;
        rc = ik__zk_conn_wait(&b->zc, c, left > 0 ? left : 0);
        if (rc == IK_ELOST) {
            ik__fail(IK_ELOST, why, why_len, "%s", ik__zk_why_lost(c));
            goto out;
        }
        if (rc) {
            ik__fail(rc, why, why_len, "ZooKeeper at %s is unreachable", b->zc.hosts);
            goto out;
        }
        rc = b->leaf ? leaf_pass(b, c, req, s, why, why_len)
                     : acquire_pass(b, c, req, id, s, &busy, why, why_len);
        if (rc != IK_EINDOUBT) break;
        if (ik__mono_ns() / 1000000 >= deadline) {
            rc = IK_ESTORE; /* why says what did not answer */
            goto out;
        }
    }
    if (rc == IK_ENOSLOT && !b->leaf)
        ik__zk_describe_holders(b->zc.chroot, c->zh, req, range, why, why_len);
    if (rc == IK_OK) {
        out->worker = s->worker;
        out->old_record_ms = s->found_ms;
        out->record_ms = s->record_ms;
        out->since_ms = s->since_ms;
        out->proof = s->taken;
        out->handle = s;
        pthread_mutex_lock(&b->slots->mu);
        s->next = b->slots->list;
        b->slots->list = s;
        pthread_mutex_unlock(&b->slots->mu);
        if (!s->leaf) release_orphans(b, c, req->app, s->session, req->worker_min, req->worker_max);
    }
out:
    pthread_rwlock_unlock(&b->zc.life);
    free(busy.v);
    free(id);
    if (rc != IK_OK) {
        free(s->app);
        free(s->identity);
        free(s);
    }
    return rc;
}

/* ------------------------------------------------------------------------------
 * Writing the time record
 */
enum { SETTLE_RETRY = 1 };

/* Sends the slot's write as one zoo_amulti: persist = [check owner exists, set slot
 * at our version]; release = [set slot at our version, delete owner]; a Leaf node's
 * also sets its identity's mark (ZLF3, ZLF4). *out holds it
 * (one item); the caller waits and puts it. */
static int send_write(zk_conn *c, zk_slot *s, int64_t record_ms, int release, zk_wait **out)
{
    zk_wait *w = ik__zk_wait_new(1, sizeof(zk_write));
    if (!w) return IK_ENOMEM;
    zk_item *it = &w->r[0];
    zk_write *x = it->ext;
    /* a held Leaf node's timestamp stays well ahead of the clock (ZLF8) */
    x->buf_len = s->leaf ? ik__zk_leaf_format(x->buf, sizeof x->buf, s->identity,
                                              release ? record_ms : ik__zk_leaf_stamp(record_ms))
                         : ik__zk_format_slot(x->buf, sizeof x->buf, record_ms, s->since_ms,
                                              s->session, s->identity);
    if (x->buf_len < 0) {
        ik__zk_wait_put(w);
        return IK_EINVAL;
    }
    x->record_ms = record_ms;
    if (release) {
        zoo_set_op_init(&it->ops[0], s->slot_path, x->buf, x->buf_len, s->version, &it->op_st);
        zoo_delete_op_init(&it->ops[1], s->owner_path, -1);
    } else {
        zoo_check_op_init(&it->ops[0], s->owner_path, -1);
        zoo_set_op_init(&it->ops[1], s->slot_path, x->buf, x->buf_len, s->version, &it->op_st);
    }
    if (s->leaf)
        zoo_set_op_init(&it->ops[2], s->mark_path, s->identity, (int)strlen(s->identity), -1, NULL);
    ik__zk_arm(it, c->zh);
    x->sent_ns = ik__mono_ns();
    ik__zk_issued(it, ik__zk_amulti(c->zh, s->leaf ? 3 : 2, it->ops, it->res, ik__zk_on_void, it));
    *out = w;
    return IK_OK;
}

/* ZSL3: after ZBADVERSION following a write whose answer was lost, reads the slot node
 * back; if the data is ours (our session wrote it), adopts its version. SETTLE_RETRY
 * when adopted, else IK_ELOST or IK_EINDOUBT. */
static int reconcile(zk_conn *c, zk_slot *s)
{
    /* A Leaf node's data does not say who wrote it (a Leaf heartbeat may have): the
     * slot is given up, and taken again by the rules of a take, which the mark
     * decides (ZLF4, ZLF5). */
    if (s->leaf) return IK_ELOST;
    char buf[ZK_DATA_MAX];
    int len = sizeof buf - 1;
    struct Stat st;
    int zrc = ik__zk_sync_get(c->zh, s->slot_path, buf, &len, &st);
    if (zrc != ZOK) return ik__zk_doubtful(zrc) ? IK_EINDOUBT : IK_ELOST;
    if (len < 0) len = 0;
    ik__zk_fields f;
    ik__zk_parse_fields(buf, len, &f);
    if (f.session != s->session || strcmp(f.ident, s->identity) != 0 ||
        (s->czxid && st.czxid != s->czxid))
        return IK_ELOST;
    s->version = st.version;
    s->czxid = st.czxid;
    if (f.has_record && f.record_ms > s->record_ms) s->record_ms = f.record_ms;
    s->in_doubt = 0;
    return SETTLE_RETRY;
}

/* Applies an answered write to s: IK_OK (s advanced), SETTLE_RETRY (version
 * adopted, write again), IK_EINDOUBT (no answer; s marked in doubt), IK_ELOST. */
static int settle(zk_conn *c, zk_slot *s, const zk_item *it)
{
    int zrc = ik__zk_multi_error(it);
    if (zrc == ZOK) {
        if (s->czxid && it->op_st.czxid != s->czxid) return IK_ELOST; /* ZSL1 broken by hand */
        s->czxid = it->op_st.czxid;
        s->version = it->op_st.version;
        const zk_write *x = it->ext;
        if (x->record_ms > s->record_ms) s->record_ms = x->record_ms;
        s->in_doubt = 0;
        return IK_OK;
    }
    if (ik__zk_doubtful(zrc)) {
        s->in_doubt = 1;
        return IK_EINDOUBT;
    }
    if (zrc == ZBADVERSION && s->in_doubt) return reconcile(c, s);
    return IK_ELOST; /* ZBADVERSION, ZNONODE (owner gone), session gone, ZNOAUTH */
}

/* IK_ELOST if s does not belong to c's live session, IK_EINDOUBT if c is not
 * connected now, else 0. */
static int slot_session_check(zk_backend *b, zk_conn *c, const zk_slot *s)
{
    pthread_mutex_lock(&b->zc.mu);
    int rc = (c->gen != s->gen || c->dead || c->session != s->session) ? IK_ELOST
             : c->state != ZOO_CONNECTED_STATE                         ? IK_EINDOUBT
                                                                       : IK_OK;
    pthread_mutex_unlock(&b->zc.mu);
    return rc;
}

/* What an acknowledged write proves (ZSL2): the lease (its send time and the
 * session timeout), and that the store holds record_ms. lease.sent_mono_ns 0:
 * nothing. */
typedef struct zk_proof {
    ik__lease_proof lease;
    int64_t record_ms;
} zk_proof;

/* Applies an answered write to s as settle() does, and fills *p if it succeeded. */
static int settle_proof(zk_conn *c, zk_slot *s, const zk_item *it, zk_proof *p)
{
    int rc = settle(c, s, it);
    if (rc == IK_OK) {
        /* ZSL2: the server answered on this session, so it cannot expire before
         * sent + timeout (the lease claims only its safe part). */
        const zk_write *x = it->ext;
        p->lease = proof_of(c, x->sent_ns);
        p->record_ms = x->record_ms;
    }
    return rc;
}

/* Settles an earlier write still unanswered, waiting up to ms (a renewal's wait:
 * none once a stop has begun). IK_OK when there is none left (*p filled if that
 * write was acknowledged: its proof counts from its own send time, however late
 * the answer), IK_EINDOUBT if it is still unanswered, IK_ELOST. */
static int settle_pending(zk_conn *c, zk_slot *s, int64_t ms, zk_proof *p)
{
    if (!s->pending) return IK_OK;
    if (!wait_renewal(c, s->pending, ms)) return IK_EINDOUBT;
    int rc = settle_proof(c, s, &s->pending->r[0], p);
    ik__zk_wait_put(s->pending);
    s->pending = NULL;
    return rc == IK_ELOST ? IK_ELOST : IK_OK;
}

/* slot_persist on the handle c (life held). The call waits answer_wait_ms in all:
 * first for a write parked by an earlier call, then for its own; a write still
 * unanswered then is parked, settled by the next call. It reports the newest
 * proof it got, the parked write's if its own is not answered yet. */
static int persist_locked(zk_backend *b, zk_conn *c, zk_slot *s, int64_t record_ms,
                          ik__lease_proof *lease, int64_t *written_ms)
{
    zk_proof proof = {{0, 0}, 0};
    int64_t deadline = ik__mono_ns() + answer_wait_ms(c) * 1000000;
    int rc = slot_session_check(b, c, s);
    if (rc == IK_ELOST) return rc;
    int prc = settle_pending(c, s, answer_wait_ms(c), &proof);
    if (prc == IK_EINDOUBT && stopping(c)) return IK_ECLOSED; /* ZSL6 */
    if (prc) return prc; /* lost, or still unanswered: one write outstanding at most */
    /* a second node of a held Leaf identity: the number is lost (ZLF6) */
    if (rc == IK_OK && s->leaf &&
        ik__zk_leaf_recheck(b, c, b->leaf, s->identity, s->slot_path, &s->leaf_seen,
                            answer_wait_ms(c)) == IK_ELOST)
        return IK_ELOST;
    if (rc == IK_OK) { /* not connected: do not queue writes behind a dead socket */
        if (record_ms < s->record_ms) record_ms = s->record_ms; /* records only grow */
        for (int attempt = 0; attempt < 2; attempt++) {
            zk_wait *w;
            int src = send_write(c, s, record_ms, 0, &w);
            if (src) return src;
            int64_t left = (deadline - ik__mono_ns()) / 1000000;
            if (!wait_renewal(c, w, left > 0 ? left : 0)) {
                s->pending = w; /* settled by the next call, or the release (ZSL6) */
                break;
            }
            src = settle_proof(c, s, &w->r[0], &proof);
            ik__zk_wait_put(w);
            if (src == IK_ELOST) return IK_ELOST;
            if (src != SETTLE_RETRY) break; /* IK_OK (proof), or IK_EINDOUBT */
        }
    }
    if (!proof.lease.sent_mono_ns) return stopping(c) ? IK_ECLOSED : IK_EINDOUBT;
    if (lease) *lease = proof.lease;
    if (written_ms) *written_ms = proof.record_ms;
    return IK_OK;
}

int ik__zk_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                        int64_t *written_ms)
{
    zk_backend *b = (zk_backend *)be;
    zk_slot *s = handle;
    if (!s) return IK_ELOST;
    pthread_rwlock_rdlock(&b->zc.life);
    int rc = persist_locked(b, b->zc.conn, s, record_ms, proof, written_ms);
    pthread_rwlock_unlock(&b->zc.life);
    return rc;
}

static void slot_free(zk_backend *b, zk_slot *s)
{
    pthread_mutex_lock(&b->slots->mu);
    for (zk_slot **pp = &b->slots->list; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&b->slots->mu);
    ik__zk_wait_put(s->pending);
    free(s->app);
    free(s->identity);
    free(s);
}

/* ZSL6: the release of s sent right behind its renewal still unanswered, then both
 * waited for until the monotonic ms deadline until. IK_OK (freed), IK_ELOST (the
 * renewal found the slot gone), IK_EINDOUBT (no answer in time, or the renewal's
 * outcome leaves the slot's version unknown: the owner node stays, and frees with
 * the session). */
static int release_behind(zk_conn *c, zk_slot *s, int64_t until)
{
    zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return IK_ENOMEM;
    zk_item *it = &w->r[0];
    int64_t sent_ms = (ik__mono_ns() - ((const zk_write *)s->pending->r[0].ext)->sent_ns) / 1000000;
    ik__logf("releasing worker %" PRIu32 ": ZooKeeper has not answered the renewal sent %" PRId64
             " ms ago; the release goes right behind it, and waits for both at most %" PRId64 " ms",
             s->worker, sent_ms, left_ms(until));
    zoo_check_op_init(&it->ops[0], s->slot_path, s->version + 1);
    zoo_delete_op_init(&it->ops[1], s->owner_path, -1);
    ik__zk_arm(it, c->zh);
    ik__zk_issued(it, ik__zk_amulti(c->zh, 2, it->ops, it->res, ik__zk_on_void, it));
    int rc = IK_EINDOUBT;
    if (wait_all(c, s->pending, left_ms(until)) && wait_all(c, w, left_ms(until))) {
        zk_proof unused;
        int prc = settle_proof(c, s, &s->pending->r[0], &unused); /* the renewal's record stands */
        int zrc = ik__zk_multi_error(it);
        rc = zrc == ZOK                                           ? IK_OK
             : prc == IK_ELOST || ik__zk_session_gone(zrc)        ? IK_ELOST
             : zrc == ZBADVERSION && prc == IK_OK && !s->in_doubt ? IK_ELOST
                                                                  : IK_EINDOUBT;
    }
    ik__zk_wait_put(w);
    return rc;
}

int ik__zk_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    zk_backend *b = (zk_backend *)be;
    zk_slot *s = handle;
    if (!s) return IK_OK;
    pthread_rwlock_rdlock(&b->zc.life);
    zk_conn *c = b->zc.conn;
    int64_t until = ik__mono_ns() / 1000000 + release_budget_ms(c);
    int rc = slot_session_check(b, c, s);
    if (rc == IK_EINDOUBT) {
        rc = ik__zk_conn_wait(&b->zc, c, left_ms(until));
        if (rc == IK_OK)
            rc = slot_session_check(b, c, s);
        else if (rc == IK_ESTORE)
            rc = IK_EINDOUBT;
    }
    zk_proof unused;
    if (rc == IK_OK && s->pending && !s->leaf && !wait_all(c, s->pending, 0)) {
        rc = release_behind(c, s, until); /* ZSL6 */
        pthread_rwlock_unlock(&b->zc.life);
        slot_free(b, s);
        return rc;
    }
    if (rc == IK_OK && s->pending) wait_all(c, s->pending, left_ms(until)); /* a Leaf node's */
    if (rc == IK_OK) rc = settle_pending(c, s, 0, &unused);
    /* backend.h: a release may lower the record, never below what it found */
    if (record_ms < s->found_ms) record_ms = s->found_ms;
    /* ZLF8: a Leaf server on this identity starts once its clock is not below the
     * record, so the record names the first ms after our last tick */
    if (s->leaf) record_ms += 1;
    for (int attempt = 0; attempt < 2 && rc == IK_OK; attempt++) {
        zk_wait *w;
        rc = send_write(c, s, record_ms, 1, &w);
        if (rc) break;
        if (!wait_all(c, w, left_ms(until)))
            rc = IK_EINDOUBT;
        else
            rc = settle(c, s, &w->r[0]);
        ik__zk_wait_put(w);
        if (rc == SETTLE_RETRY)
            rc = IK_OK;
        else
            break;
    }
    pthread_rwlock_unlock(&b->zc.life);
    slot_free(b, s);
    return rc;
}

void ik__zk_slot_forget(ik__backend *be, void *handle)
{
    zk_slot *s = handle;
    if (!s) return;
    /* If the session outlived the lease's doubt, its owner node is still there:
     * the next slot_acquire takes it back rather than leave it held by nobody. */
    remember_orphan((zk_backend *)be, s->app, s->worker, s->session);
    slot_free((zk_backend *)be, s);
}
