/* backend_zk.c: worker slots on Apache ZooKeeper (zk://HOST:PORT[,HOST:PORT...][/CHROOT]),
 * through the official multithreaded C client (libzookeeper_mt).
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
 *   Z1. A slot node is never deleted by idkeeper; its version grows with every
 *       write, and every holder writes it when it takes the slot. So "our last
 *       version still matches" proves nobody took the slot since.
 *   Z2. slot_persist reports success only for a write the server acknowledged on
 *       the current session; the lease is then proven until the monotonic time the
 *       request was sent plus 2/3 of the negotiated session timeout (the server
 *       cannot expire the session before send + timeout), however late the answer
 *       came: a write parked unanswered by one call proves, with its own record,
 *       when the next call finds it acknowledged.
 *   Z3. A write whose answer was lost (connection loss) leaves the slot "in doubt":
 *       its version is unknown. The next write that meets ZBADVERSION reads the
 *       node back and adopts it only if the data carries our own session id.
 *   Z4. One live slot handle per (app, worker) per backend: the handle list keeps
 *       an owner node left by this session (after slot_forget) from being adopted
 *       twice.
 *   Z5. An owner node this session may have created and no handle holds is in the
 *       orphan list (remember_orphan) until an answer shows it is not ours, a take
 *       adopts it, or release_orphans deletes it: a take whose answer is lost, and
 *       the checks after it, never leave a slot held by nobody.
 *
 * Threads: the ZooKeeper client runs an I/O thread and a completion thread per
 * handle. The session watcher runs on the completion thread and only records the
 * state under b->mu. Calls into this backend may come from any thread; b->life (a
 * rwlock) keeps the zhandle alive while a call uses it, and recover() swaps it under
 * the write lock.
 *
 * What it deliberately does not do: it never deletes slot nodes, never steals a
 * slot whose owner node exists (even one with our identity: that may be a live
 * twin), and never reports a lease proven on a session it has not heard from.
 */
#include "backend_zk.h"
#include "backend.h"
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zookeeper/zookeeper.h>

#define ZK_ROOT "/idkeeper/apps"
#define ZK_PATH_MAX 512
#define ZK_DATA_MAX 1024

/* ------------------------------------------------------------------------------
 * Types
 */
typedef struct zk_backend zk_backend;

/* One zhandle and what its session watcher has told us. Freed only after
 * zookeeper_close() returned, so the watcher never sees a dangling context. */
typedef struct zk_conn {
    zk_backend *b;
    zhandle_t *zh;
    unsigned gen;    /* backend's handle generation */
    int state;       /* last ZOO_*_STATE from the watcher (0: none yet) */
    int dead;        /* session expired or auth failed: the handle is unusable */
    int64_t session; /* session id once connected, else 0 */
} zk_conn;

/* A held slot (the opaque handle of ik__slot_grant). */
typedef struct zk_slot zk_slot;
typedef struct zk_wait zk_wait;

struct zk_slot {
    zk_slot *next; /* b->slots */
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
    int in_doubt;            /* a write's outcome is unknown (Z3) */
    int64_t proven_until_ns; /* set by the take: its send time + the safe window */
    zk_wait *pending;        /* a persist sent, not yet answered */
};

/* Another module's interest in session events (ik__zk_listen). */
typedef struct zk_listener {
    struct zk_listener *next;
    void (*fn)(void *ctx, unsigned gen, int state);
    void *ctx;
} zk_listener;

/* An owner node this session may still hold without a handle (remember_orphan). */
typedef struct zk_orphan {
    struct zk_orphan *next;
    char app[72];
    uint32_t worker;
    int64_t session;
} zk_orphan;

struct zk_backend {
    ik__backend base;
    char *uri;      /* canonical */
    char *hosts;    /* "h:p,h:p" (no chroot: paths are prefixed here) */
    char *chroot;   /* "" or "/a/b" */
    char *auth;     /* "user:password" or NULL */
    int timeout_ms; /* requested session timeout */
    struct ACL acl_app[2], acl_shared[2];
    struct ACL_vector app_acl, shared_acl;
    char *digest_id; /* "user:base64(sha1(user:password))" */

    pthread_rwlock_t life; /* read: a call uses conn->zh; write: swap or close it */
    pthread_mutex_t mu;    /* guards conn fields, slots, gen */
    pthread_cond_t cv;     /* broadcast on every session event */
    zk_conn *conn;
    unsigned gen;
    zk_slot *slots;
    zk_orphan *orphans;
    uint64_t rng;

    pthread_mutex_t lmu;    /* guards listeners; held while they are called */
    zk_listener *listeners; /* session events for other modules (ik__zk_listen) */
    ik__zk_tags *tags;      /* the tag store's state (backend_zk_tags.c) */
};

static uint64_t rng_next(zk_backend *b)
{
    /* xorshift64*; callers hold b->mu */
    uint64_t x = b->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    b->rng = x;
    return x * UINT64_C(2685821657736338717);
}

/* Strict decimal int64 >= 0. */
static int parse_i64(const char *s, size_t n, int64_t *out)
{
    int64_t v = 0;
    if (n == 0 || n > 19) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        if (v > (INT64_MAX - (s[i] - '0')) / 10) return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

static int parse_hex64(const char *s, size_t n, int64_t *out)
{
    uint64_t v = 0;
    if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x') return -1;
    for (size_t i = 2; i < n; i++) {
        int d;
        if (s[i] >= '0' && s[i] <= '9')
            d = s[i] - '0';
        else if (s[i] >= 'a' && s[i] <= 'f')
            d = s[i] - 'a' + 10;
        else
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    *out = (int64_t)v;
    return 0;
}

/* ZooKeeper result codes that mean "no answer: the request may or may not have been
 * applied". */
int ik__zk_doubtful(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZCLOSING ||
           zrc == ZSYSTEMERROR || zrc == ZMARSHALLINGERROR;
}

/* ZooKeeper result codes that mean "this session is gone for good". */
int ik__zk_session_gone(int zrc)
{
    return zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zrc == ZAUTHFAILED ||
           zrc == ZSESSIONMOVED;
}

/* Maps a failed ZooKeeper call to an ik_error with "what: reason" in why:
 * IK_ELOST (the session is gone), IK_EINDOUBT (no answer: worth another try once
 * connected) or IK_ESTORE. */
static int zfail(int zrc, char *why, size_t why_len, const char *what)
{
    int err = ik__zk_session_gone(zrc) ? IK_ELOST : ik__zk_doubtful(zrc) ? IK_EINDOUBT : IK_ESTORE;
    return ik__fail(err, why, why_len, "%s: %s", what, zerror(zrc));
}

/* ------------------------------------------------------------------------------
 * URI: zk://HOST:PORT[,HOST:PORT...][/CHROOT]
 */
static int parse_uri(const char *uri, char **hosts, char **chroot, char *why, size_t why_len)
{
    int rc = ik_coord_uri_check(uri, why, why_len); /* the one syntax check (coord.c) */
    if (rc) return rc;
    if (strncmp(uri, "zk://", 5) != 0) return ik__fail(IK_EURI, why, why_len, "not a zk:// URI");
    const char *p = uri + 5;
    const char *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    if (hl == 0) return ik__fail(IK_EURI, why, why_len, "zk URI names no host: %s", uri);
    if (slash && strlen(slash) + sizeof ZK_ROOT + 200 > ZK_PATH_MAX)
        return ik__fail(IK_EURI, why, why_len, "zk chroot is too long");
    *hosts = strndup(p, hl);
    *chroot = strdup(slash && slash[1] ? slash : "");
    if (!*hosts || !*chroot) {
        free(*hosts);
        free(*chroot);
        return IK_ENOMEM;
    }
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * Digest ACLs: the app's identity "user:base64(sha1(user:password))" has ALL, the
 * world may READ (and CREATE under the shared ancestors, so other apps can live
 * next to this one).
 */
char *ik__zk_digest_id(const char *auth)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    const char *colon = strchr(auth, ':');
    if (!colon) return NULL;
    if (!EVP_Digest(auth, strlen(auth), md, &mdlen, EVP_sha1(), NULL)) return NULL;
    size_t ul = (size_t)(colon - auth);
    char *out = malloc(ul + 1 + 4 * ((mdlen + 2) / 3) + 1);
    if (!out) return NULL;
    memcpy(out, auth, ul + 1);
    EVP_EncodeBlock((unsigned char *)out + ul + 1, md, (int)mdlen);
    return out;
}

static int setup_acls(zk_backend *b, char *why, size_t why_len)
{
    if (!b->auth) {
        b->app_acl = ZOO_OPEN_ACL_UNSAFE;
        b->shared_acl = ZOO_OPEN_ACL_UNSAFE;
        return IK_OK;
    }
    const char *colon = strchr(b->auth, ':');
    if (!colon || colon == b->auth)
        return ik__fail(IK_EINVAL, why, why_len, "--zk-auth must be USER:PASSWORD");
    for (const char *c = b->auth; *c; c++)
        if ((unsigned char)*c < 0x20)
            return ik__fail(IK_EINVAL, why, why_len, "--zk-auth has a control character");
    b->digest_id = ik__zk_digest_id(b->auth);
    if (!b->digest_id) return ik__fail(IK_ENOMEM, why, why_len, "cannot compute the digest id");
    static char digest[] = "digest", world[] = "world", anyone[] = "anyone";
    b->acl_app[0] = (struct ACL){ZOO_PERM_ALL, {digest, b->digest_id}};
    b->acl_app[1] = (struct ACL){ZOO_PERM_READ, {world, anyone}};
    b->acl_shared[0] = (struct ACL){ZOO_PERM_ALL, {digest, b->digest_id}};
    b->acl_shared[1] = (struct ACL){ZOO_PERM_READ | ZOO_PERM_CREATE, {world, anyone}};
    b->app_acl = (struct ACL_vector){2, b->acl_app};
    b->shared_acl = (struct ACL_vector){2, b->acl_shared};
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * Async calls with a bounded wait. A zk_wait holds n requests; it is reference
 * counted (the waiter, plus one per outstanding completion), so a waiter that gives
 * up may return while the ZooKeeper client still owns the buffers.
 */
typedef struct zk_item {
    zk_wait *w;
    int done;
    int rc;
    struct Stat st;
    char *data; /* get: value (NUL-terminated copy), or NULL */
    int len;
    /* multi */
    zoo_op_t ops[2];
    zoo_op_result_t res[2];
    struct Stat op_st;
    char buf[ZK_DATA_MAX];
    int buf_len;
    int64_t sent_ns;
    int64_t record_ms; /* the record this write carries */
} zk_item;

struct zk_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int left;
    int n;
    zk_item items[];
};

static zk_wait *wait_new(int n)
{
    zk_wait *w = calloc(1, sizeof *w + (size_t)n * sizeof(zk_item));
    if (!w) return NULL;
    pthread_mutex_init(&w->mu, NULL);
    ik__cond_init_mono(&w->cv);
    w->refs = 1;
    w->n = n;
    for (int i = 0; i < n; i++)
        w->items[i].w = w;
    return w;
}

static void wait_put_locked_unlock(zk_wait *w)
{
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (!last) return;
    for (int i = 0; i < w->n; i++)
        free(w->items[i].data);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static void wait_put(zk_wait *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    wait_put_locked_unlock(w);
}

/* Registers one more outstanding request on w (call before issuing it). */
static void wait_arm(zk_wait *w)
{
    pthread_mutex_lock(&w->mu);
    w->refs++;
    w->left++;
    pthread_mutex_unlock(&w->mu);
}

/* The request was not issued (synchronous failure): no completion will come. */
static void wait_disarm(zk_item *it, int rc)
{
    zk_wait *w = it->w;
    pthread_mutex_lock(&w->mu);
    it->rc = rc;
    it->done = 1;
    w->left--;
    wait_put_locked_unlock(w);
}

static void item_finish(zk_item *it, int rc)
{
    zk_wait *w = it->w;
    pthread_mutex_lock(&w->mu);
    it->rc = rc;
    it->done = 1;
    w->left--;
    pthread_cond_broadcast(&w->cv);
    wait_put_locked_unlock(w);
}

static void on_void(int rc, const void *data)
{
    item_finish((zk_item *)data, rc);
}

static void on_data(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    zk_item *it = (zk_item *)data;
    if (rc == ZOK) {
        if (st) it->st = *st;
        if (len < 0) len = 0;
        it->data = malloc((size_t)len + 1);
        if (it->data) {
            if (len) memcpy(it->data, value, (size_t)len);
            it->data[len] = '\0';
            it->len = len;
        } else {
            rc = ZSYSTEMERROR;
        }
    }
    item_finish(it, rc);
}

/* Waits until every request of w is answered or ms pass. 1: all answered. */
static int wait_all(zk_wait *w, int64_t ms)
{
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&w->mu);
    while (w->left > 0 && pthread_cond_timedwait(&w->cv, &w->mu, &ts) != ETIMEDOUT) {
    }
    int all = w->left == 0;
    pthread_mutex_unlock(&w->mu);
    return all;
}

/* ------------------------------------------------------------------------------
 * Sessions
 */
static void conn_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    zk_conn *c = ctx;
    if (type != ZOO_SESSION_EVENT || !c) return;
    zk_backend *b = c->b;
    pthread_mutex_lock(&b->mu);
    c->state = state;
    if (state == ZOO_CONNECTED_STATE) {
        const clientid_t *id = zoo_client_id(zh);
        if (id) c->session = id->client_id;
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        c->dead = state;
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    /* outside mu: a listener takes its own locks, and those may be held while
     * ik__zk_session_get takes mu */
    pthread_mutex_lock(&b->lmu);
    for (zk_listener *l = b->listeners; l; l = l->next)
        l->fn(l->ctx, c->gen, state);
    pthread_mutex_unlock(&b->lmu);
}

static void quiet_client_log(void)
{
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
}

/* The client's log lines (errors only), to the log sink, at most 3 every 10 s: while
 * ZooKeeper is down the client logs every reconnect attempt, several a second. */
static void client_log(const char *message)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int64_t window_start = INT64_MIN / 2;
    static int shown;
    static long suppressed;
    int64_t now = ik__mono_ns() / 1000000;
    pthread_mutex_lock(&mu);
    if (now - window_start >= 10000) {
        if (suppressed)
            ik__logf("zookeeper client: %ld more messages like these in 10 s", suppressed);
        window_start = now;
        shown = 0;
        suppressed = 0;
    }
    if (shown < 3) {
        shown++;
        ik__logf("%s", message);
    } else {
        suppressed++;
    }
    pthread_mutex_unlock(&mu);
}

/* A new handle (connecting in the background). Caller holds life for writing or is
 * the only user. */
static int conn_open(zk_backend *b, zk_conn **out, char *why, size_t why_len)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, quiet_client_log);
    zk_conn *c = calloc(1, sizeof *c);
    if (!c) return IK_ENOMEM;
    c->b = b;
    pthread_mutex_lock(&b->mu);
    c->gen = ++b->gen;
    pthread_mutex_unlock(&b->mu);
    errno = 0;
    c->zh = zookeeper_init2(b->hosts, conn_watcher, b->timeout_ms, NULL, c, 0, client_log);
    if (!c->zh) {
        int e = errno;
        free(c);
        return ik__fail(e == EINVAL ? IK_EURI : IK_ESTORE, why, why_len,
                        "cannot start a ZooKeeper client for %s: %s", b->hosts,
                        e ? strerror(e) : "unknown error");
    }
    /* By default the client resolves the host names again each time it polls its
     * socket: a getaddrinfo (a netlink socket) and a read of /dev/urandom for every
     * request, most of the CPU of a busy client. DNS changes are picked up within
     * 10 s instead (and on every connection loss, as before). */
    zoo_set_servers_resolution_delay(c->zh, 10000);
    if (b->auth) {
        /* Queued now, sent once connected and again after every reconnect. */
        int zrc = zoo_add_auth(c->zh, "digest", b->auth, (int)strlen(b->auth), NULL, NULL);
        if (zrc != ZOK) {
            zookeeper_close(c->zh);
            free(c);
            return ik__fail(IK_ESTORE, why, why_len, "zoo_add_auth: %s", zerror(zrc));
        }
    }
    *out = c;
    return IK_OK;
}

static void conn_close(zk_conn *c)
{
    if (!c) return;
    zookeeper_close(c->zh); /* runs pending completions (ZCLOSING), joins threads */
    free(c);
}

/* Waits up to ms for the connection to be up. 0: connected; IK_ELOST: the session
 * is dead; IK_ESTORE: not connected in time. Caller holds life (read or write). */
static int conn_wait(zk_backend *b, zk_conn *c, int64_t ms)
{
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&b->mu);
    for (;;) {
        if (c->dead) break;
        if (c->state == ZOO_CONNECTED_STATE) break;
        if (pthread_cond_timedwait(&b->cv, &b->mu, &ts) == ETIMEDOUT) break;
    }
    int rc = c->dead ? IK_ELOST : c->state == ZOO_CONNECTED_STATE ? IK_OK : IK_ESTORE;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static int64_t conn_session(zk_backend *b, zk_conn *c)
{
    pthread_mutex_lock(&b->mu);
    int64_t s = c->session;
    pthread_mutex_unlock(&b->mu);
    return s;
}

/* The part of the negotiated session timeout during which a lease proven by an
 * answered request stays valid, counted from when that request was sent: 2/3 of it
 * (see docs/zookeeper.md, "The safe window"). */
static int64_t safe_window_ns(zk_conn *c)
{
    int t = zoo_recv_timeout(c->zh);
    if (t <= 0) t = c->b->timeout_ms;
    return (int64_t)t * 2 / 3 * 1000000;
}

/* How long one slot_persist waits for answers before parking its write and
 * reporting "in doubt": a third of the negotiated session timeout. An answer proves
 * the lease until its send time + 2/3 T, so one that takes up to T/3 still lets the
 * next write be answered before that proof runs out: a steady latency of seconds
 * is a slow ZooKeeper, not a lost one. */
static int64_t answer_wait_ms(zk_conn *c)
{
    int t = zoo_recv_timeout(c->zh);
    if (t <= 0) t = c->b->timeout_ms;
    int64_t w = t / 3;
    return w < 100 ? 100 : w;
}

/* How long slot_release waits for an answer it needs first: short, a shutdown
 * must not hang on a ZooKeeper that does not answer. */
static int64_t release_wait_ms(zk_conn *c)
{
    int64_t w = answer_wait_ms(c);
    return w > 1000 ? 1000 : w;
}

/* How long a call waits for a connection that is down: short, since callers retry
 * (the lease every second) and a shutdown must not wait on it. */
static int64_t connect_wait_ms(zk_backend *b)
{
    int64_t w = b->timeout_ms;
    return w > 2000 ? 2000 : w;
}

static const char *zk_why_lost(zk_conn *c)
{
    return c->dead == ZOO_AUTH_FAILED_STATE ? "ZooKeeper authentication failed"
                                            : "ZooKeeper session expired";
}

/* ------------------------------------------------------------------------------
 * Node data. Text, one key=value a line, the free-form identity last (it may hold
 * anything but control characters):
 *   slot:  record_ms=N  since_ms=N  session=0xHEX  holder=IDENTITY
 *   owner: pid=N  host=NAME  since_ms=N  session=0xHEX  identity=IDENTITY
 */
void ik__zk_parse_fields(const char *d, int len, ik__zk_fields *f)
{
    memset(f, 0, sizeof *f);
    const char *p = d, *end = d + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eq = memchr(p, '=', (size_t)((nl ? nl : end) - p));
        if (!eq) {
            p = nl ? nl + 1 : end;
            continue;
        }
        size_t kl = (size_t)(eq - p);
        const char *v = eq + 1;
        if ((kl == 6 && !memcmp(p, "holder", 6)) || (kl == 8 && !memcmp(p, "identity", 8))) {
            /* the last field: the rest, minus one trailing newline */
            size_t vl = (size_t)(end - v);
            if (vl && v[vl - 1] == '\n') vl--;
            if (vl >= sizeof f->ident) vl = sizeof f->ident - 1;
            memcpy(f->ident, v, vl);
            f->ident[vl] = '\0';
            return;
        }
        size_t vl = (size_t)((nl ? nl : end) - v);
        if (kl == 9 && !memcmp(p, "record_ms", 9))
            f->has_record = parse_i64(v, vl, &f->record_ms) == 0;
        else if (kl == 8 && !memcmp(p, "since_ms", 8))
            parse_i64(v, vl, &f->since_ms);
        else if (kl == 7 && !memcmp(p, "session", 7))
            parse_hex64(v, vl, &f->session);
        else if (kl == 3 && !memcmp(p, "pid", 3))
            parse_i64(v, vl, &f->pid);
        else if (kl == 4 && !memcmp(p, "host", 4)) {
            if (vl >= sizeof f->host) vl = sizeof f->host - 1;
            memcpy(f->host, v, vl);
            f->host[vl] = '\0';
        }
        p = nl ? nl + 1 : end;
    }
}

int ik__zk_format_slot(char *buf, size_t len, int64_t record_ms, int64_t since_ms, int64_t session,
                       const char *identity)
{
    int n = snprintf(
        buf, len, "record_ms=%" PRId64 "\nsince_ms=%" PRId64 "\nsession=0x%" PRIx64 "\nholder=%s\n",
        record_ms, since_ms, (uint64_t)session, identity);
    return n < 0 || (size_t)n >= len ? -1 : n;
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
static int app_ok(const char *app)
{
    return ik__valid_name(app, 64) && strcmp(app, ".") != 0 && strcmp(app, "..") != 0;
}

static void app_path(const zk_backend *b, const char *app, const char *sub, char *out, size_t len)
{
    snprintf(out, len, "%s" ZK_ROOT "/%s%s%s", b->chroot, app, sub ? "/" : "", sub ? sub : "");
}

int ik__zk_worker_name(uint32_t w, char *out, size_t len)
{
    return snprintf(out, len, "%04" PRIu32, w);
}

static void worker_path(const zk_backend *b, const char *app, const char *sub, uint32_t w,
                        char *out, size_t len)
{
    snprintf(out, len, "%s" ZK_ROOT "/%s/%s/%04" PRIu32, b->chroot, app, sub, w);
}

/* "0007" -> 7; names that are not a canonical worker number -> -1. */
int ik__zk_parse_worker(const char *s, uint32_t *w)
{
    int64_t v;
    char canon[16];
    if (parse_i64(s, strlen(s), &v) || v > UINT32_MAX) return -1;
    ik__zk_worker_name((uint32_t)v, canon, sizeof canon);
    if (strcmp(canon, s) != 0) return -1;
    *w = (uint32_t)v;
    return 0;
}

int ik__zk_identity_name(const char *identity, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    int dots = strcmp(identity, ".") == 0 || strcmp(identity, "..") == 0;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)identity; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '_' || *p == ':' || *p == '-' ||
                    (*p == '.' && !dots);
        if (n + (plain ? 1 : 3) >= len) return -1;
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    if (n == 0 || n >= len) return -1;
    out[n] = '\0';
    return (int)n;
}

/* Creates CHROOT, /idkeeper, /idkeeper/apps (shared ACL), then BASE and its slots,
 * owners and identities nodes (app ACL), as needed. */
static int ensure_parents(zk_backend *b, zk_conn *c, const char *app, char *why, size_t why_len)
{
    char base[ZK_PATH_MAX], path[ZK_PATH_MAX];
    static const char *const subs[] = {"slots", "owners", "identities"};
    app_path(b, app, "identities", path, sizeof path);
    int zrc = zoo_exists(c->zh, path, 0, NULL);
    if (zrc == ZOK) return IK_OK;
    if (zrc != ZNONODE) goto fail;
    app_path(b, app, NULL, base, sizeof base);
    size_t shared_end = strlen(b->chroot) + strlen(ZK_ROOT);
    for (const char *s = strchr(base + 1, '/');; s = strchr(s + 1, '/')) {
        size_t n = s ? (size_t)(s - base) : strlen(base);
        memcpy(path, base, n);
        path[n] = '\0';
        const struct ACL_vector *acl = n <= shared_end ? &b->shared_acl : &b->app_acl;
        zrc = zoo_create(c->zh, path, NULL, -1, acl, ZOO_PERSISTENT, NULL, 0);
        if (zrc != ZOK && zrc != ZNODEEXISTS) goto fail;
        if (!s) break;
    }
    for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++) {
        app_path(b, app, subs[i], path, sizeof path);
        zrc = zoo_create(c->zh, path, NULL, -1, &b->app_acl, ZOO_PERSISTENT, NULL, 0);
        if (zrc != ZOK && zrc != ZNODEEXISTS) goto fail;
    }
    return IK_OK;
fail:
    if (zrc == ZNOAUTH)
        return ik__fail(IK_ESTORE, why, why_len,
                        "not authorized to create %s (nodes made with other credentials? "
                        "check --zk-auth)",
                        path);
    return zfail(zrc, why, why_len, path);
}

/* ------------------------------------------------------------------------------
 * Sets of workers
 */
int ik__zk_wset_add(ik__zk_wset *s, uint32_t w)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid] == w) return 0;
        if (s->v[mid] < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        uint32_t *v = realloc(s->v, cap * sizeof *v);
        if (!v) return -1;
        s->v = v;
        s->cap = cap;
    }
    memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
    s->v[lo] = w;
    s->n++;
    return 0;
}

int ik__zk_wset_has(const ik__zk_wset *s, uint32_t w)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid] == w) return 1;
        if (s->v[mid] < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

uint32_t ik__zk_wset_nth_free(const ik__zk_wset *s, uint32_t lo, uint64_t k)
{
    uint64_t w = lo + k;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i] < lo) continue;
        if (s->v[i] <= w)
            w++;
        else
            break;
    }
    return (uint32_t)w;
}

/* The workers in [lo, hi] named by the children of dir, into *out (emptied first).
 * A missing dir is an empty set. */
static int list_workers(zk_conn *c, const char *dir, uint32_t lo, uint32_t hi, ik__zk_wset *out,
                        char *why, size_t why_len)
{
    struct String_vector kids = {0, NULL};
    out->n = 0;
    int zrc = zoo_get_children(c->zh, dir, 0, &kids);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return zfail(zrc, why, why_len, dir);
    int rc = IK_OK;
    for (int i = 0; i < kids.count && rc == IK_OK; i++) {
        uint32_t w;
        if (ik__zk_parse_worker(kids.data[i], &w) == 0 && w >= lo && w <= hi &&
            ik__zk_wset_add(out, w))
            rc = IK_ENOMEM;
    }
    deallocate_String_vector(&kids);
    return rc;
}

/* ------------------------------------------------------------------------------
 * Reading many slots at once (listing, and naming the holders in a refusal)
 */
typedef struct zk_node {
    uint32_t worker;
    int gone;     /* listed, then not found */
    int readable; /* record parsed */
    int version;
    int64_t czxid;
    ik__zk_fields slot;    /* record, last holder */
    int held;              /* an owner node exists */
    int owner_known;       /* owner data read */
    int64_t owner_session; /* ephemeralOwner of the owner node */
    int owner_version;
    ik__zk_fields owner;
} zk_node;

/* Reads every slot node of app with worker in [lo, hi], and the owner node of each
 * held one, pipelined (zoo_aget). *out sorted by worker, freed by the caller. */
static int scan_slots(zk_backend *b, zk_conn *c, const char *app, uint32_t lo, uint32_t hi,
                      zk_node **out, size_t *n_out, char *why, size_t why_len)
{
    char dir[ZK_PATH_MAX], path[ZK_PATH_MAX];
    ik__zk_wset names = {0}, held = {0};
    *out = NULL;
    *n_out = 0;
    app_path(b, app, "slots", dir, sizeof dir);
    int rc = list_workers(c, dir, lo, hi, &names, why, why_len);
    if (rc == IK_OK) {
        app_path(b, app, "owners", path, sizeof path);
        rc = list_workers(c, path, lo, hi, &held, why, why_len);
    }
    size_t n = names.n;
    zk_node *nodes = rc ? NULL : calloc(n + 1, sizeof *nodes);
    if (!rc && !nodes) rc = IK_ENOMEM;
    for (size_t i = 0; i < n && !rc; i++) {
        nodes[i].worker = names.v[i];
        nodes[i].held = ik__zk_wset_has(&held, names.v[i]);
    }
    free(names.v);
    free(held.v);
    int64_t wait_ms = (int64_t)zoo_recv_timeout(c->zh) + 1000;
    /* Round 1: slot nodes; round 2: owners of the held ones. */
    for (int round = 0; round < 2 && rc == IK_OK && n > 0; round++) {
        zk_wait *w = wait_new((int)n);
        if (!w) {
            rc = IK_ENOMEM;
            break;
        }
        for (size_t i = 0; i < n; i++) {
            zk_item *it = &w->items[i];
            if (round == 1 && !nodes[i].held) {
                it->done = 1;
                it->rc = ZNONODE;
                continue;
            }
            worker_path(b, app, round ? "owners" : "slots", nodes[i].worker, path, sizeof path);
            wait_arm(w);
            int arc = zoo_aget(c->zh, path, 0, on_data, it);
            if (arc != ZOK) wait_disarm(it, arc);
        }
        if (!wait_all(w, wait_ms)) {
            rc = ik__fail(IK_ESTORE, why, why_len, "ZooKeeper did not answer reading %s", dir);
        } else {
            for (size_t i = 0; i < n && rc == IK_OK; i++) {
                zk_item *it = &w->items[i];
                zk_node *nd = &nodes[i];
                if (it->rc == ZNONODE) {
                    if (round == 0)
                        nd->gone = 1; /* deleted since the listing */
                    else
                        nd->held = 0; /* freed since the listing */
                    continue;
                }
                if (it->rc != ZOK) {
                    if (ik__zk_session_gone(it->rc))
                        rc = ik__fail(IK_ELOST, why, why_len, "%s", zerror(it->rc));
                    else
                        rc = ik__fail(IK_ESTORE, why, why_len, "reading %s: %s", dir,
                                      zerror(it->rc));
                    break;
                }
                if (round == 0) {
                    ik__zk_parse_fields(it->data, it->len, &nd->slot);
                    nd->readable = nd->slot.has_record;
                    nd->version = it->st.version;
                    nd->czxid = it->st.czxid;
                } else {
                    nd->owner_known = 1;
                    nd->owner_session = it->st.ephemeralOwner;
                    nd->owner_version = it->st.version;
                    ik__zk_parse_fields(it->data, it->len, &nd->owner);
                }
            }
        }
        wait_put(w);
        if (round == 0) {
            size_t k = 0;
            for (size_t i = 0; i < n; i++)
                if (!nodes[i].gone) nodes[k++] = nodes[i];
            n = k;
        }
    }
    if (rc) {
        free(nodes);
        return rc;
    }
    *out = nodes;
    *n_out = n;
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * Taking a slot
 */

/* 1 if (app, worker) has a live handle in this backend. Caller holds b->mu. */
static int slot_is_live(zk_backend *b, const char *app, uint32_t worker)
{
    for (zk_slot *s = b->slots; s; s = s->next)
        if (s->worker == worker && strcmp(s->app, app) == 0) return 1;
    return 0;
}

/* Remembers that this session may still own (app, worker)'s owner node: a slot the
 * lease forgot, or a take whose answer was lost. slot_acquire looks there first. */
static void remember_orphan(zk_backend *b, const char *app, uint32_t worker, int64_t session)
{
    pthread_mutex_lock(&b->mu);
    int n = 0;
    for (zk_orphan *o = b->orphans; o; o = o->next, n++)
        if (o->worker == worker && o->session == session && strcmp(o->app, app) == 0) {
            pthread_mutex_unlock(&b->mu);
            return;
        }
    zk_orphan *o = n < 64 ? calloc(1, sizeof *o) : NULL;
    if (o) {
        snprintf(o->app, sizeof o->app, "%s", app);
        o->worker = worker;
        o->session = session;
        o->next = b->orphans;
        b->orphans = o;
    }
    pthread_mutex_unlock(&b->mu);
}

/* Takes the first orphan of app, session and range out of the list: 1 and *w, or 0. */
static int pop_orphan(zk_backend *b, const char *app, int64_t session, uint32_t lo, uint32_t hi,
                      uint32_t *w)
{
    int found = 0;
    pthread_mutex_lock(&b->mu);
    for (zk_orphan **pp = &b->orphans; *pp;) {
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
    pthread_mutex_unlock(&b->mu);
    return found;
}

/* Drops (app, worker, session) from the orphans, if there. */
static void pop_orphan_exact(zk_backend *b, const char *app, uint32_t worker, int64_t session)
{
    pthread_mutex_lock(&b->mu);
    for (zk_orphan **pp = &b->orphans; *pp; pp = &(*pp)->next) {
        zk_orphan *o = *pp;
        if (o->worker == worker && o->session == session && strcmp(o->app, app) == 0) {
            *pp = o->next;
            free(o);
            break;
        }
    }
    pthread_mutex_unlock(&b->mu);
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
        pthread_mutex_lock(&b->mu);
        int live = slot_is_live(b, app, ws[i]);
        pthread_mutex_unlock(&b->mu);
        if (live) continue;
        worker_path(b, app, "owners", ws[i], path, sizeof path);
        int zrc = zoo_exists(c->zh, path, 0, &ost);
        if (zrc == ZOK && ost.ephemeralOwner == session) zrc = zoo_delete(c->zh, path, ost.version);
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
    int64_t session = conn_session(b, c);
    worker_path(b, req->app, "slots", w, s->slot_path, sizeof s->slot_path);
    worker_path(b, req->app, "owners", w, s->owner_path, sizeof s->owner_path);

    struct Stat st;
    int blen = sizeof buf - 1;
    int zrc = zoo_get(c->zh, s->slot_path, 0, buf, &blen, &st);
    int exists = zrc == ZOK;
    ik__zk_fields f = {0};
    if (zrc == ZOK) {
        ik__zk_parse_fields(buf, blen < 0 ? 0 : blen, &f);
        if (!f.has_record) return TAKE_CONFLICT; /* never guess a floor */
    } else if (zrc != ZNONODE) {
        return zfail(zrc, why, why_len, s->slot_path);
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
        zoo_create_op_init(&ops[0], s->slot_path, slot_data, sl, &b->app_acl, ZOO_PERSISTENT, NULL,
                           0);
    if (adopt_owner_version >= 0) {
        zoo_set_op_init(&ops[1], s->owner_path, owner_data, ol, adopt_owner_version, NULL);
    } else {
        zoo_create_op_init(&ops[1], s->owner_path, owner_data, ol, &b->app_acl, ZOO_EPHEMERAL, NULL,
                           0);
        if (id->worker != (int)w || !id->exists) {
            if (id->exists)
                zoo_set_op_init(&ops[2], id->path, id_data, il, -1, NULL);
            else
                zoo_create_op_init(&ops[2], id->path, id_data, il, &b->app_acl, ZOO_PERSISTENT,
                                   NULL, 0);
            nops = 3;
        }
    }
    int64_t sent = ik__mono_ns();
    zrc = zoo_multi(c->zh, nops, ops, res);
    if (nops == 3 && zrc == ZNODEEXISTS && res[2].err == ZNODEEXISTS && !id->exists) {
        /* Only the identity node was there already (a twin with our identity made it
         * since we looked): the slot may still be free; once more, with a set. */
        zoo_set_op_init(&ops[2], id->path, id_data, il, -1, NULL);
        memset(res, 0, sizeof res);
        sent = ik__mono_ns();
        zrc = zoo_multi(c->zh, nops, ops, res);
    }
    if (ik__zk_doubtful(zrc)) {
        /* Did it land? Only an owner node of our own session says yes. Until an
         * answer says it did not, the slot is remembered as maybe ours, so that no
         * owner node of this session is ever left without a handle (Z5). */
        struct Stat ost;
        int erc = conn_wait(b, c, connect_wait_ms(b)) == IK_OK
                      ? zoo_exists(c->zh, s->owner_path, 0, &ost)
                      : ZCONNECTIONLOSS;
        if (erc == ZNONODE || (erc == ZOK && ost.ephemeralOwner != session)) return TAKE_CONFLICT;
        remember_orphan(b, req->app, w, session); /* ours, or maybe ours */
        if (erc != ZOK)
            return ik__fail(ik__zk_doubtful(erc) ? IK_EINDOUBT : IK_ELOST, why, why_len,
                            "ZooKeeper connection lost while taking slot %" PRIu32 ": %s", w,
                            zerror(erc));
        blen = sizeof buf - 1;
        zrc = zoo_get(c->zh, s->slot_path, 0, buf, &blen, &wst);
        if (zrc != ZOK)
            return ik__fail(ik__zk_doubtful(zrc) ? IK_EINDOUBT : IK_ELOST, why, why_len,
                            "ZooKeeper connection lost while taking slot %" PRIu32 ": %s", w,
                            zerror(zrc));
        ik__zk_parse_fields(buf, blen < 0 ? 0 : blen, &f);
        /* Our owner node, but not our slot data: the next pass takes it back with
         * a fresh write (the orphan stays remembered). */
        if (f.session != session || strcmp(f.ident, req->identity) != 0 || !f.has_record)
            return TAKE_CONFLICT;
        pop_orphan_exact(b, req->app, w, session);
        record = f.record_ms;
        zrc = ZOK;
    } else if (zrc == ZOK && !exists) {
        if (zoo_exists(c->zh, s->slot_path, 0, &wst) != ZOK) wst.czxid = 0;
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
        return zfail(zrc, why, why_len, "taking a slot");
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
    s->proven_until_ns = sent + safe_window_ns(c);
    return TAKE_OK;
}

/* Reads the identity node: whether it exists and the slot it names. */
static int read_ident(zk_conn *c, zk_ident *id, char *why, size_t why_len)
{
    char buf[64];
    int blen = sizeof buf - 1;
    id->exists = 0;
    id->worker = -1;
    int zrc = zoo_get(c->zh, id->path, 0, buf, &blen, NULL);
    if (zrc == ZNONODE) return IK_OK;
    if (zrc != ZOK) return zfail(zrc, why, why_len, id->path);
    id->exists = 1;
    int64_t v;
    if (blen > 7 && !memcmp(buf, "worker=", 7)) {
        size_t l = (size_t)blen - 7;
        if (l && buf[7 + l - 1] == '\n') l--;
        if (parse_i64(buf + 7, l, &v) == 0 && v <= UINT32_MAX) id->worker = (int)v;
    }
    return IK_OK;
}

/* Writes "no free worker slot: all N slots of app A in LO-HI are held: 0 by a, ..."
 * into why, naming as many holders as fit. */
static void describe_holders(zk_backend *b, zk_conn *c, const ik__slot_request *req, uint64_t range,
                             char *why, size_t why_len)
{
    if (!why || why_len == 0) return;
    zk_node *nodes = NULL;
    size_t n = 0;
    size_t len = (size_t)snprintf(why, why_len,
                                  "no free worker slot: all %" PRIu64 " slots of app %s in %" PRIu32
                                  "-%" PRIu32 " are held",
                                  range, req->app, req->worker_min, req->worker_max);
    if (len >= why_len) return;
    if (scan_slots(b, c, req->app, req->worker_min, req->worker_max, &nodes, &n, NULL, 0)) return;
    size_t shown = 0, total = 0;
    for (size_t i = 0; i < n; i++)
        total += nodes[i].held || !nodes[i].readable;
    for (size_t i = 0; i < n; i++) {
        const zk_node *nd = &nodes[i];
        if (!nd->held && nd->readable) continue;
        char item[320];
        const char *sep = shown ? ", " : ": ";
        if (!nd->held)
            snprintf(item, sizeof item, "%s%" PRIu32 " has an unreadable record", sep, nd->worker);
        else
            snprintf(item, sizeof item, "%s%" PRIu32 " by %s", sep, nd->worker,
                     nd->owner_known && nd->owner.ident[0] ? nd->owner.ident : "?");
        size_t il = strlen(item);
        if (len + il + 16 >= why_len) break; /* keep room for " (+NNNNN more)" */
        memcpy(why + len, item, il + 1);
        len += il;
        shown++;
    }
    if (shown < total && len + 16 < why_len)
        snprintf(why + len, why_len - len, " (+%zu more)", total - shown);
    free(nodes);
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
    int64_t session = conn_session(b, c);
    app_path(b, req->app, "owners", owners, sizeof owners);

    /* 1. An owner node of this very session that no handle has (a slot the lease
     *    forgot while its session lived on, or a take whose answer was lost). */
    /* Each orphan is tried once a pass (taken out of the list first); one whose
     * fate is still unknown goes back to the list (Z5). */
    uint32_t w, ws[16];
    int nw = 0;
    while (nw < 16 && pop_orphan(b, req->app, session, req->worker_min, req->worker_max, &w))
        ws[nw++] = w;
    rc = IK_ENOSLOT;
    for (int i = 0; i < nw; i++) {
        struct Stat ost;
        w = ws[i];
        pthread_mutex_lock(&b->mu);
        int live = slot_is_live(b, req->app, w);
        pthread_mutex_unlock(&b->mu);
        if (live) continue;
        if (rc != IK_ENOSLOT) { /* done or failed: the rest wait for the next call */
            remember_orphan(b, req->app, w, session);
            continue;
        }
        worker_path(b, req->app, "owners", w, s->owner_path, sizeof s->owner_path);
        int erc = zoo_exists(c->zh, s->owner_path, 0, &ost);
        if (erc != ZOK && erc != ZNONODE) {
            remember_orphan(b, req->app, w, session); /* still maybe ours */
            rc = zfail(erc, why, why_len, s->owner_path);
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
        int src = list_workers(c, owners, req->worker_min, req->worker_max, busy_set, why, why_len);
        if (!src) src = read_ident(c, id, why, why_len);
        if (src) {
            rc = src;
            break;
        }
        pthread_mutex_lock(&b->mu);
        for (zk_slot *o = b->slots; o && !src; o = o->next)
            if (strcmp(o->app, req->app) == 0 && o->worker >= req->worker_min &&
                o->worker <= req->worker_max && ik__zk_wset_add(busy_set, o->worker))
                src = IK_ENOMEM;
        pthread_mutex_unlock(&b->mu);
        if (src) {
            rc = src;
            break;
        }
        /* 2. The slot this identity took last, if free (SPEC 3 rule 3). */
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
                pthread_mutex_lock(&b->mu);
                k = rng_next(b) % (range - busy_set->n);
                pthread_mutex_unlock(&b->mu);
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

static int zk_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                           char *why, size_t why_len)
{
    zk_backend *b = (zk_backend *)be;
    if (!req || !out || !req->identity || !*req->identity)
        return ik__fail(IK_EINVAL, why, why_len, "no identity");
    if (!app_ok(req->app)) return ik__fail(IK_EINVAL, why, why_len, "bad app name");
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
    app_path(b, req->app, "identities", id->path, sizeof id->path);
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

    pthread_rwlock_rdlock(&b->life);
    zk_conn *c = b->conn;
    uint64_t range = (uint64_t)req->worker_max - req->worker_min + 1;
    ik__zk_wset busy = {0};
    /* Connection trouble (no answer) is retried on this handle for a while: a slow
     * or restarting ZooKeeper should not make a server refuse to start. */
    int64_t deadline = ik__mono_ns() / 1000000 + (b->timeout_ms < 5000 ? b->timeout_ms : 5000);
    int rc;
    for (;;) {
        int64_t left = deadline - ik__mono_ns() / 1000000;
        rc = conn_wait(b, c, left > 0 ? left : 0);
        if (rc == IK_ELOST) {
            ik__fail(IK_ELOST, why, why_len, "%s", zk_why_lost(c));
            goto out;
        }
        if (rc) {
            ik__fail(rc, why, why_len, "ZooKeeper at %s is unreachable", b->hosts);
            goto out;
        }
        rc = acquire_pass(b, c, req, id, s, &busy, why, why_len);
        if (rc != IK_EINDOUBT) break;
        if (ik__mono_ns() / 1000000 >= deadline) {
            rc = IK_ESTORE; /* why says what did not answer */
            goto out;
        }
    }
    if (rc == IK_ENOSLOT) describe_holders(b, c, req, range, why, why_len);
    if (rc == IK_OK) {
        out->worker = s->worker;
        out->old_record_ms = s->found_ms;
        out->record_ms = s->record_ms;
        out->since_ms = s->since_ms;
        out->valid_until_mono_ns = s->proven_until_ns;
        out->handle = s;
        pthread_mutex_lock(&b->mu);
        s->next = b->slots;
        b->slots = s;
        pthread_mutex_unlock(&b->mu);
        release_orphans(b, c, req->app, s->session, req->worker_min, req->worker_max);
    }
out:
    pthread_rwlock_unlock(&b->life);
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

/* The effective error of a multi: the first op that really failed. */
static int multi_error(const zk_item *it)
{
    if (it->rc == ZOK) return ZOK;
    for (int i = 0; i < 2; i++)
        if (it->res[i].err != ZOK && it->res[i].err != ZRUNTIMEINCONSISTENCY) return it->res[i].err;
    return it->rc;
}

/* Sends the slot's write as one zoo_amulti: persist = [check owner exists, set slot
 * at our version]; release = [set slot at our version, delete owner]. *out holds it
 * (one item); the caller waits and puts it. */
static int send_write(zk_conn *c, zk_slot *s, int64_t record_ms, int release, zk_wait **out)
{
    zk_wait *w = wait_new(1);
    if (!w) return IK_ENOMEM;
    zk_item *it = &w->items[0];
    it->buf_len = ik__zk_format_slot(it->buf, sizeof it->buf, record_ms, s->since_ms, s->session,
                                     s->identity);
    if (it->buf_len < 0) {
        wait_put(w);
        return IK_EINVAL;
    }
    it->record_ms = record_ms;
    if (release) {
        zoo_set_op_init(&it->ops[0], s->slot_path, it->buf, it->buf_len, s->version, &it->op_st);
        zoo_delete_op_init(&it->ops[1], s->owner_path, -1);
    } else {
        zoo_check_op_init(&it->ops[0], s->owner_path, -1);
        zoo_set_op_init(&it->ops[1], s->slot_path, it->buf, it->buf_len, s->version, &it->op_st);
    }
    wait_arm(w);
    it->sent_ns = ik__mono_ns();
    int zrc = zoo_amulti(c->zh, 2, it->ops, it->res, on_void, it);
    if (zrc != ZOK) wait_disarm(it, zrc);
    *out = w;
    return IK_OK;
}

/* Z3: after ZBADVERSION following a write whose answer was lost, reads the slot node
 * back; if the data is ours (our session wrote it), adopts its version. SETTLE_RETRY
 * when adopted, else IK_ELOST or IK_EINDOUBT. */
static int reconcile(zk_conn *c, zk_slot *s)
{
    char buf[ZK_DATA_MAX];
    int len = sizeof buf - 1;
    struct Stat st;
    int zrc = zoo_get(c->zh, s->slot_path, 0, buf, &len, &st);
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
    int zrc = multi_error(it);
    if (zrc == ZOK) {
        if (s->czxid && it->op_st.czxid != s->czxid) return IK_ELOST; /* Z1 broken by hand */
        s->czxid = it->op_st.czxid;
        s->version = it->op_st.version;
        if (it->record_ms > s->record_ms) s->record_ms = it->record_ms;
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
    pthread_mutex_lock(&b->mu);
    int rc = (c->gen != s->gen || c->dead || c->session != s->session) ? IK_ELOST
             : c->state != ZOO_CONNECTED_STATE                         ? IK_EINDOUBT
                                                                       : IK_OK;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

/* What an acknowledged write proves (Z2): the lease until until_ns (its send time
 * + the safe window), and that the store holds record_ms. until_ns 0: nothing. */
typedef struct zk_proof {
    int64_t until_ns;
    int64_t record_ms;
} zk_proof;

/* Applies an answered write to s as settle() does, and fills *p if it succeeded. */
static int settle_proof(zk_conn *c, zk_slot *s, const zk_item *it, zk_proof *p)
{
    int rc = settle(c, s, it);
    if (rc == IK_OK) {
        /* Z2: the server answered on this session, so it cannot expire before
         * sent + timeout; we claim only 2/3 of it. */
        p->until_ns = it->sent_ns + safe_window_ns(c);
        p->record_ms = it->record_ms;
    }
    return rc;
}

/* Settles an earlier write still unanswered, waiting up to ms. IK_OK when there is
 * none left (*p filled if that write was acknowledged: its proof counts from its
 * own send time, however late the answer), IK_EINDOUBT if it is still unanswered,
 * IK_ELOST. */
static int settle_pending(zk_conn *c, zk_slot *s, int64_t ms, zk_proof *p)
{
    if (!s->pending) return IK_OK;
    if (!wait_all(s->pending, ms)) return IK_EINDOUBT;
    int rc = settle_proof(c, s, &s->pending->items[0], p);
    wait_put(s->pending);
    s->pending = NULL;
    return rc == IK_ELOST ? IK_ELOST : IK_OK;
}

/* slot_persist on the handle c (life held). The call waits answer_wait_ms in all:
 * first for a write parked by an earlier call, then for its own; a write still
 * unanswered then is parked, settled by the next call. It reports the newest
 * proof it got, the parked write's if its own is not answered yet. */
static int persist_locked(zk_backend *b, zk_conn *c, zk_slot *s, int64_t record_ms,
                          int64_t *valid_until, int64_t *written_ms)
{
    zk_proof proof = {0, 0};
    int64_t deadline = ik__mono_ns() + answer_wait_ms(c) * 1000000;
    int rc = slot_session_check(b, c, s);
    if (rc == IK_ELOST) return rc;
    int prc = settle_pending(c, s, answer_wait_ms(c), &proof);
    if (prc) return prc; /* lost, or still unanswered: one write outstanding at most */
    if (rc == IK_OK) {   /* not connected: do not queue writes behind a dead socket */
        if (record_ms < s->record_ms) record_ms = s->record_ms; /* records only grow */
        for (int attempt = 0; attempt < 2; attempt++) {
            zk_wait *w;
            int src = send_write(c, s, record_ms, 0, &w);
            if (src) return src;
            int64_t left = (deadline - ik__mono_ns()) / 1000000;
            if (!wait_all(w, left > 0 ? left : 0)) {
                s->pending = w; /* settled by the next call */
                break;
            }
            src = settle_proof(c, s, &w->items[0], &proof);
            wait_put(w);
            if (src == IK_ELOST) return IK_ELOST;
            if (src != SETTLE_RETRY) break; /* IK_OK (proof), or IK_EINDOUBT */
        }
    }
    if (!proof.until_ns) return IK_EINDOUBT;
    if (valid_until) *valid_until = proof.until_ns;
    if (written_ms) *written_ms = proof.record_ms;
    return IK_OK;
}

static int zk_slot_persist(ik__backend *be, void *handle, int64_t record_ms,
                           int64_t *valid_until_mono_ns, int64_t *written_ms)
{
    zk_backend *b = (zk_backend *)be;
    zk_slot *s = handle;
    if (!s) return IK_ELOST;
    pthread_rwlock_rdlock(&b->life);
    int rc = persist_locked(b, b->conn, s, record_ms, valid_until_mono_ns, written_ms);
    pthread_rwlock_unlock(&b->life);
    return rc;
}

static void slot_free(zk_backend *b, zk_slot *s)
{
    pthread_mutex_lock(&b->mu);
    for (zk_slot **pp = &b->slots; *pp; pp = &(*pp)->next)
        if (*pp == s) {
            *pp = s->next;
            break;
        }
    pthread_mutex_unlock(&b->mu);
    wait_put(s->pending);
    free(s->app);
    free(s->identity);
    free(s);
}

static int zk_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    zk_backend *b = (zk_backend *)be;
    zk_slot *s = handle;
    if (!s) return IK_OK;
    pthread_rwlock_rdlock(&b->life);
    zk_conn *c = b->conn;
    int rc = slot_session_check(b, c, s);
    if (rc == IK_EINDOUBT) {
        rc = conn_wait(b, c, release_wait_ms(c) * 2);
        if (rc == IK_OK)
            rc = slot_session_check(b, c, s);
        else if (rc == IK_ESTORE)
            rc = IK_EINDOUBT;
    }
    zk_proof unused;
    if (rc == IK_OK) rc = settle_pending(c, s, release_wait_ms(c), &unused);
    /* backend.h: a release may lower the record, never below what it found */
    if (record_ms < s->found_ms) record_ms = s->found_ms;
    for (int attempt = 0; attempt < 2 && rc == IK_OK; attempt++) {
        zk_wait *w;
        rc = send_write(c, s, record_ms, 1, &w);
        if (rc) break;
        if (!wait_all(w, connect_wait_ms(b)))
            rc = IK_EINDOUBT;
        else
            rc = settle(c, s, &w->items[0]);
        wait_put(w);
        if (rc == SETTLE_RETRY)
            rc = IK_OK;
        else
            break;
    }
    pthread_rwlock_unlock(&b->life);
    slot_free(b, s);
    return rc;
}

static void zk_slot_forget(ik__backend *be, void *handle)
{
    zk_slot *s = handle;
    if (!s) return;
    /* If the session outlived the lease's doubt, its owner node is still there:
     * the next slot_acquire takes it back rather than leave it held by nobody. */
    remember_orphan((zk_backend *)be, s->app, s->worker, s->session);
    slot_free((zk_backend *)be, s);
}

/* ------------------------------------------------------------------------------
 * Sessions again: recovery, listing, description
 */
static int zk_recover(ik__backend *be, char *why, size_t why_len)
{
    zk_backend *b = (zk_backend *)be;
    int rc = IK_OK;
    pthread_rwlock_wrlock(&b->life);
    zk_conn *old = b->conn;
    pthread_mutex_lock(&b->mu);
    int dead = old->dead;
    pthread_mutex_unlock(&b->mu);
    if (dead) {
        /* Only a dead session is replaced: one that is merely disconnected may come
         * back with its owner nodes, which slot_acquire then takes back. */
        zk_conn *nc;
        rc = conn_open(b, &nc, why, why_len);
        if (rc == IK_OK) {
            pthread_mutex_lock(&b->mu);
            b->conn = nc;
            pthread_mutex_unlock(&b->mu);
            conn_close(old);
        }
    }
    pthread_rwlock_unlock(&b->life);
    if (rc) return rc;
    pthread_rwlock_rdlock(&b->life);
    zk_conn *c = b->conn;
    rc = conn_wait(b, c, connect_wait_ms(b));
    if (rc == IK_ELOST)
        ik__fail(IK_ESTORE, why, why_len, "%s", zk_why_lost(c));
    else if (rc)
        ik__fail(IK_ESTORE, why, why_len, "ZooKeeper at %s is unreachable", b->hosts);
    pthread_rwlock_unlock(&b->life);
    return rc ? IK_ESTORE : IK_OK;
}

static int zk_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out)
{
    zk_backend *b = (zk_backend *)be;
    if (!app_ok(app) || !out || !n_out) return IK_EINVAL;
    pthread_rwlock_rdlock(&b->life);
    zk_conn *c = b->conn;
    int rc = conn_wait(b, c, connect_wait_ms(b));
    if (rc == IK_ELOST) {
        pthread_rwlock_unlock(&b->life);
        rc = zk_recover(be, NULL, 0);
        if (rc) return rc;
        pthread_rwlock_rdlock(&b->life);
        c = b->conn;
    } else if (rc) {
        pthread_rwlock_unlock(&b->life);
        return IK_ESTORE;
    }
    zk_node *nodes = NULL;
    size_t n = 0;
    rc = scan_slots(b, c, app, 0, UINT32_MAX, &nodes, &n, NULL, 0);
    pthread_rwlock_unlock(&b->life);
    if (rc) return rc == IK_ELOST ? IK_ESTORE : rc;
    ik_slot_info *v = calloc(n ? n : 1, sizeof *v);
    if (!v) {
        free(nodes);
        return IK_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const zk_node *nd = &nodes[i];
        ik_slot_info *si = &v[i];
        si->worker = nd->worker;
        si->held = nd->held;
        si->record_ms = nd->slot.record_ms;
        if (nd->held && nd->owner_known) {
            snprintf(si->holder, sizeof si->holder, "%s", nd->owner.ident);
            snprintf(si->detail, sizeof si->detail, "pid=%" PRId64 " host=%s session=0x%" PRIx64,
                     nd->owner.pid, nd->owner.host, (uint64_t)nd->owner_session);
            si->since_ms = nd->owner.since_ms;
        } else {
            snprintf(si->holder, sizeof si->holder, "%s", nd->slot.ident);
            if (!nd->readable) snprintf(si->detail, sizeof si->detail, "unreadable record");
        }
    }
    free(nodes);
    *out = v;
    *n_out = n;
    return IK_OK;
}

/* The negotiated session timeout (the requested one before the first connect):
 * a dead holder's owner node goes when its session expires. */
static int64_t zk_slot_free_ms(ik__backend *be)
{
    zk_backend *b = (zk_backend *)be;
    pthread_rwlock_rdlock(&b->life);
    int t = b->conn ? zoo_recv_timeout(b->conn->zh) : 0;
    pthread_rwlock_unlock(&b->life);
    return t > 0 ? t : b->timeout_ms;
}

static void zk_session_desc(ik__backend *be, char *buf, size_t len)
{
    zk_backend *b = (zk_backend *)be;
    if (!buf || !len) return;
    pthread_mutex_lock(&b->mu);
    int64_t s = b->conn ? b->conn->session : 0;
    int dead = b->conn ? b->conn->dead : 0;
    pthread_mutex_unlock(&b->mu);
    if (s == 0)
        buf[0] = '\0';
    else
        snprintf(buf, len, "0x%" PRIx64 "%s", (uint64_t)s, dead ? " (expired)" : "");
}

/* ------------------------------------------------------------------------------
 * Open and close
 */
static void zk_close(ik__backend *be)
{
    zk_backend *b = (zk_backend *)be;
    if (!b) return;
    pthread_rwlock_wrlock(&b->life);
    pthread_mutex_lock(&b->mu);
    zk_conn *c = b->conn;
    b->conn = NULL;
    pthread_mutex_unlock(&b->mu);
    pthread_rwlock_unlock(&b->life);
    conn_close(c);
    while (b->slots)
        slot_free(b, b->slots);
    while (b->orphans) {
        zk_orphan *o = b->orphans;
        b->orphans = o->next;
        free(o);
    }
    while (b->listeners) { /* none, if every recipe was destroyed before the coord */
        zk_listener *l = b->listeners;
        b->listeners = l->next;
        free(l);
    }
    ik__zk_tags_free(b->tags);
    pthread_mutex_destroy(&b->lmu);
    pthread_rwlock_destroy(&b->life);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    free(b->uri);
    free(b->hosts);
    free(b->chroot);
    free(b->auth);
    free(b->digest_id);
    free(b);
}

static int zk_open(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                   size_t why_len)
{
    zk_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = &ik__backend_zk_ops;
    pthread_rwlock_init(&b->life, NULL);
    pthread_mutex_init(&b->mu, NULL);
    pthread_mutex_init(&b->lmu, NULL);
    ik__cond_init_mono(&b->cv);
    if (getrandom(&b->rng, sizeof b->rng, 0) != (ssize_t)sizeof b->rng)
        b->rng = (uint64_t)ik__mono_ns() ^ ((uint64_t)getpid() << 32);
    b->rng |= 1;
    int rc = parse_uri(uri, &b->hosts, &b->chroot, why, why_len);
    if (rc) goto fail;
    b->timeout_ms = o && o->zk_session_timeout_ms ? o->zk_session_timeout_ms : 10000;
    if (b->timeout_ms < 100 || b->timeout_ms > 3600000) {
        rc = ik__fail(IK_EINVAL, why, why_len,
                      "ZooKeeper session timeout must be 100 to 3600000 ms");
        goto fail;
    }
    if (o && o->zk_auth && *o->zk_auth) {
        b->auth = strdup(o->zk_auth);
        if (!b->auth) {
            rc = IK_ENOMEM;
            goto fail;
        }
    }
    rc = setup_acls(b, why, why_len);
    if (rc) goto fail;
    if (!(b->tags = ik__zk_tags_new())) {
        rc = IK_ENOMEM;
        goto fail;
    }
    size_t ul = strlen(b->hosts) + strlen(b->chroot) + 6;
    b->uri = malloc(ul);
    if (!b->uri) {
        rc = IK_ENOMEM;
        goto fail;
    }
    snprintf(b->uri, ul, "zk://%s%s", b->hosts, b->chroot);
    rc = conn_open(b, &b->conn, why, why_len);
    if (rc) goto fail;
    rc = conn_wait(b, b->conn, b->timeout_ms);
    if (rc == IK_ELOST) {
        rc = ik__fail(IK_ESTORE, why, why_len, "%s", zk_why_lost(b->conn));
        goto fail;
    }
    if (rc) {
        rc = ik__fail(IK_ESTORE, why, why_len, "cannot reach ZooKeeper at %s within %d ms",
                      b->hosts, b->timeout_ms);
        goto fail;
    }
    *out = &b->base;
    return IK_OK;
fail:
    zk_close(&b->base);
    return rc;
}

static const char *zk_uri(const ik__backend *be)
{
    return ((const zk_backend *)be)->uri;
}

/* ------------------------------------------------------------------------------
 * The session, for other modules of the library (backend_zk.h): the ZooKeeper
 * recipes (recipe_zk.c) create and watch their nodes on the backend's own session.
 */
void ik__zk_session_get(ik__backend *be, ik__zk_session *s)
{
    zk_backend *b = (zk_backend *)be;
    pthread_rwlock_rdlock(&b->life);
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&b->mu);
    zk_conn *c = b->conn;
    if (c) {
        s->zh = c->zh;
        s->gen = c->gen;
        s->id = c->session;
        s->connected = c->state == ZOO_CONNECTED_STATE && !c->dead;
        s->dead = c->dead != 0;
    } else {
        s->dead = 1;
    }
    pthread_mutex_unlock(&b->mu);
    int t = s->zh ? zoo_recv_timeout(s->zh) : 0;
    s->timeout_ms = t > 0 ? t : b->timeout_ms;
    s->chroot = b->chroot;
    s->digest_id = b->digest_id;
}

void ik__zk_session_put(ik__backend *be)
{
    pthread_rwlock_unlock(&((zk_backend *)be)->life);
}

int ik__zk_wait_connected(ik__backend *be, int64_t ms)
{
    zk_backend *b = (zk_backend *)be;
    pthread_rwlock_rdlock(&b->life);
    int rc = b->conn ? conn_wait(b, b->conn, ms) : IK_ELOST;
    pthread_rwlock_unlock(&b->life);
    return rc;
}

ik__zk_tags *ik__zk_tags_of(ik__backend *be)
{
    return ((zk_backend *)be)->tags;
}

int ik__zk_listen(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx)
{
    zk_backend *b = (zk_backend *)be;
    zk_listener *l = calloc(1, sizeof *l);
    if (!l) return IK_ENOMEM;
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_lock(&b->lmu);
    l->next = b->listeners;
    b->listeners = l;
    pthread_mutex_unlock(&b->lmu);
    return IK_OK;
}

void ik__zk_unlisten(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx)
{
    zk_backend *b = (zk_backend *)be;
    pthread_mutex_lock(&b->lmu);
    for (zk_listener **p = &b->listeners; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->ctx == ctx) {
            zk_listener *l = *p;
            *p = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&b->lmu);
}

const ik__backend_ops ik__backend_zk_ops = {
    .scheme = "zk",
    .open = zk_open,
    .close = zk_close,
    .uri = zk_uri,
    .slot_acquire = zk_slot_acquire,
    .slot_persist = zk_slot_persist,
    .slot_release = zk_slot_release,
    .slot_forget = zk_slot_forget,
    .recover = zk_recover,
    .slots_list = zk_slots_list,
    .slot_free_ms = zk_slot_free_ms,
    .session = zk_session_desc,
    .tag_create = ik__zk_tag_create,
    .tag_get = ik__zk_tag_get,
    .tag_list = ik__zk_tag_list,
    .tag_advance = ik__zk_tag_advance,
};
