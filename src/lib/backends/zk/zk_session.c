/* zk_session.c: the ZooKeeper session layer (zk_session.h): one client handle and
 * its session for a zk:// backend, the ACLs of its nodes, the one bounded wait on
 * asynchronous requests, and the classes of result codes. Every zk:// module
 * (backend_zk_slots.c, backend_zk_tags.c, recipe_zk*.c) makes its requests on the
 * session this file keeps; nothing here knows slots, tags or locks.
 *
 * Invariants
 *   ZS1. A handle (ik__zk_conn) is freed only after zookeeper_close() returned, so
 *       the watcher and pending completions never see a dangling context.
 *   ZS2. zc->conn is replaced (ik__zk_recover) or cleared (ik__zk_client_close) only
 *       under zc->life held for writing; every user of conn->zh holds it for
 *       reading (ik__zk_session_get to put), so no handle closes under a call.
 *   ZS3. A wait (ik__zk_wait) is freed by its last reference: a caller that gives up
 *       at its deadline leaves the buffers to the completions still owed.
 *   ZS4. No multi is sent on a handle whose session the client knows is dead. In
 *       libzookeeper_mt 3.8 (Debian 12), zoo_amulti on such a handle frees the first
 *       op's path twice (with a chroot) and, for every later op, a path it never
 *       set: the process aborts ("free(): invalid pointer"). Our own record of the
 *       state (conn->state, from the watcher on the completion thread) lags the
 *       client's by the events still queued, so the check is the client's
 *       zoo_state() at the call, in ik__zk_amulti / ik__zk_multi, and it sends only
 *       while connected. What remains: between the check and the send, the handle
 *       would have to lose its connection, connect again and hear the verdict; the
 *       I/O thread does that in no less than a round trip to a server.
 *   ZS5. A dead handle is closed on its own completion thread (zookeeper_close from
 *       a completion is the client's supported path), never from another thread.
 *       There, zookeeper_close sets close_requested and only then counts its own
 *       reference: a completion thread finishing in between drops the last one
 *       (the I/O thread of an expired handle has ended) and frees the handle under
 *       the closer. So the watcher that learns of the death (close_when_retired)
 *       waits until recover or ik__zk_client_close has retired the handle, under
 *       life held for writing (no user holds zh any more), and closes it there;
 *       the retired ik__zk_conn is freed later by whoever holds life for writing
 *       (free_closed). Meanwhile the handle's last answers wait behind that
 *       watcher, so a wait on a dead handle returns at once (ik__zk_wait_until)
 *       instead of at its deadline, and recover is not held up by it. A handle
 *       still alive is closed by ik__zk_client_close on the caller's thread: a
 *       session that dies during that close is the one race left.
 *   ZS6. A handle is never closed from another thread while it owes us an answer.
 *       There, zookeeper_close fakes the answers owed (ZCLOSING) onto the queue of
 *       a completion thread that quits as soon as it sees the close requested: in
 *       libzookeeper_mt 3.8 the answers it has not taken by then are never
 *       completed and never freed (the request's ik__zk_wait and the client's own
 *       entry leak; LeakSanitizer fails the stop). Closed on its own completion
 *       thread, the same close runs every one of them before the thread ends. So
 *       every request armed on a handle (ik__zk_arm) counts as owed until its
 *       completion runs (req_finish), and ik__zk_client_close closes a live handle
 *       itself only when it owes nothing; otherwise it leaves the handle to its
 *       completion thread, which closes it as it pays the last answer (conn_paid:
 *       when the server answers, or at the latest when the client gives the
 *       connection up, 2/3 of the session timeout after the server's last byte,
 *       with ZCONNECTIONLOSS). A left handle outlives its client: its watcher
 *       touches nothing of it (wmu), and its ik__zk_conn is kept, never freed, on
 *       a list of its own (one per close that had to leave one). A process that
 *       exits first ends the session by its timeout, as a killed one would.
 *
 * The session of the current handle, and the functions taking each edge:
 *
 *   CONNECTING --watcher: CONNECTED--> CONNECTED --watcher: CONNECTING--> CONNECTING
 *   CONNECTED, CONNECTING --watcher: EXPIRED / AUTH_FAILED--> DEAD
 *   DEAD --ik__zk_recover: a new handle of the next generation--> CONNECTING
 *   (the dead handle: retired by recover or client_close, then closed by its own
 *   watcher, close_when_retired; freed by free_closed)
 *
 * Threads: the ZooKeeper client runs an I/O thread and a completion thread per
 * handle. The session watcher runs on the completion thread, records the state
 * under zc->mu and then calls the listeners (ik__zk_listen) under zc->lmu. Every
 * other call may come from any thread.
 *
 * What it deliberately does not do: it never replaces a session that is only
 * disconnected (its ephemeral nodes may come back with it), and never retries a
 * request: what a lost answer means is the caller's to settle.
 */
#include "zk_session.h"
#include "backend_zk.h"
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <zookeeper/proto.h> /* the multi ops' types */

#define ZS_PATH_MAX 512        /* the slot nodes' paths: the chroot leaves room for them */
#define ZS_CLOSE_WAIT_MS 10000 /* how long a client close waits for dead handles (ZS5) */

/* ZS6: guards every handle's owed and left (a leaf lock: nothing is taken under it),
 * and the handles left to their completion threads, kept here for good. */
static pthread_mutex_t owed_mu = PTHREAD_MUTEX_INITIALIZER;
static ik__zk_conn *left_handles;

struct ik__zk_listener {
    ik__zk_listener *next;
    void (*fn)(void *ctx, unsigned gen, int state);
    void *ctx;
};

/* ------------------------------------------------------------------------------
 * Result codes
 */
int ik__zk_doubtful(int zrc)
{
    return zrc == ZCONNECTIONLOSS || zrc == ZOPERATIONTIMEOUT || zrc == ZCLOSING ||
           zrc == ZSYSTEMERROR || zrc == ZMARSHALLINGERROR;
}

int ik__zk_session_gone(int zrc)
{
    return zrc == ZSESSIONEXPIRED || zrc == ZINVALIDSTATE || zrc == ZAUTHFAILED ||
           zrc == ZSESSIONMOVED;
}

int ik__zk_fail(int zrc, char *why, size_t why_len, const char *what)
{
    int err = ik__zk_session_gone(zrc) ? IK_ELOST : ik__zk_doubtful(zrc) ? IK_EINDOUBT : IK_ESTORE;
    return ik__fail(err, why, why_len, "%s: %s", what, zerror(zrc));
}

/* ------------------------------------------------------------------------------
 * URI: zk://HOST:PORT[,HOST:PORT...][/CHROOT]. ik_coord_open checks its syntax
 * before any backend opens; parse_uri asks the same check (zk_uri.c) again, so a
 * caller that reaches the backend another way meets the one rule too.
 */
static int parse_uri(const char *uri, char **hosts, char **chroot, char *why, size_t why_len)
{
    int rc = ik__zk_uri_check(uri, why, why_len); /* the one syntax check (zk_uri.c) */
    if (rc) return rc;
    if (strncmp(uri, "zk://", 5) != 0) return ik__fail(IK_EURI, why, why_len, "not a zk:// URI");
    const char *p = uri + 5;
    const char *slash = strchr(p, '/');
    size_t hl = slash ? (size_t)(slash - p) : strlen(p);
    if (hl == 0) return ik__fail(IK_EURI, why, why_len, "zk URI names no host: %s", uri);
    if (slash && strlen(slash) + sizeof IK__ZK_ROOT + 200 > ZS_PATH_MAX)
        return ik__fail(IK_EURI, why, why_len, "zk chroot is too long");
    *hosts = strndup(p, hl);
    *chroot = strdup(slash && slash[1] ? slash : "");
    if (!*hosts || !*chroot) {
        free(*hosts);
        free(*chroot);
        *hosts = *chroot = NULL;
        return IK_ENOMEM;
    }
    return IK_OK;
}

int ik__zk_app_ok(const char *app)
{
    return ik__app_name_check(app, NULL, 0) == 0;
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

void ik__zk_acl_init(struct ACL acl[2], struct ACL_vector *v, const char *digest_id,
                     int world_perms)
{
    static char digest[] = "digest", world[] = "world", anyone[] = "anyone";
    if (!digest_id) {
        *v = ZOO_OPEN_ACL_UNSAFE;
        return;
    }
    acl[0] = (struct ACL){ZOO_PERM_ALL, {digest, (char *)digest_id}};
    acl[1] = (struct ACL){world_perms, {world, anyone}};
    *v = (struct ACL_vector){2, acl};
}

static int setup_acls(ik__zk_client *zc, char *why, size_t why_len)
{
    if (zc->auth) {
        const char *colon = strchr(zc->auth, ':');
        if (!colon || colon == zc->auth)
            return ik__fail(IK_EINVAL, why, why_len, "--zk-auth must be USER:PASSWORD");
        for (const char *c = zc->auth; *c; c++)
            if ((unsigned char)*c < 0x20)
                return ik__fail(IK_EINVAL, why, why_len, "--zk-auth has a control character");
        zc->digest_id = ik__zk_digest_id(zc->auth);
        if (!zc->digest_id)
            return ik__fail(IK_ENOMEM, why, why_len, "cannot compute the digest id");
    }
    ik__zk_acl_init(zc->acl_app, &zc->app_acl, zc->digest_id, ZOO_PERM_READ);
    ik__zk_acl_init(zc->acl_shared, &zc->shared_acl, zc->digest_id,
                    ZOO_PERM_READ | ZOO_PERM_CREATE);
    return IK_OK;
}

int ik__zk_create_path(zhandle_t *zh, const char *path, size_t shared_end,
                       const struct ACL_vector *shared, const struct ACL_vector *own, int mode,
                       char *failed, size_t failed_len)
{
    static int no_containers;
    char p[1024];
    int zrc = ZOK;
    if (strlen(path) >= sizeof p) return ZBADARGUMENTS;
    for (const char *s = strchr(path + 1, '/');; s = strchr(s + 1, '/')) {
        size_t n = s ? (size_t)(s - path) : strlen(path);
        memcpy(p, path, n);
        p[n] = '\0';
        int shared_part = n <= shared_end;
        int m = shared_part || (mode == ZOO_CONTAINER && no_containers) ? ZOO_PERSISTENT : mode;
        const struct ACL_vector *acl = shared_part ? shared : own;
        zrc = ik__zk_sync_create(zh, p, NULL, -1, acl, m);
        if ((zrc == ZUNIMPLEMENTED || zrc == ZBADARGUMENTS) && m == ZOO_CONTAINER) {
            no_containers = 1;
            zrc = ik__zk_sync_create(zh, p, NULL, -1, acl, ZOO_PERSISTENT);
        }
        if (zrc != ZOK && zrc != ZNODEEXISTS) break;
        zrc = ZOK;
        if (!s) break;
    }
    if (zrc != ZOK && failed_len) snprintf(failed, failed_len, "%s", p);
    return zrc;
}

/* ------------------------------------------------------------------------------
 * Asynchronous requests with a bounded wait (zk_session.h)
 */
ik__zk_wait *ik__zk_wait_new(int n, size_t extra)
{
    extra = (extra + 15) / 16 * 16;
    size_t head = sizeof(ik__zk_wait) + (size_t)n * sizeof(ik__zk_req);
    head = (head + 15) / 16 * 16;
    ik__zk_wait *w = calloc(1, head + (size_t)n * extra);
    if (!w) return NULL;
    pthread_mutex_init(&w->mu, NULL);
    ik__cond_init_mono(&w->cv);
    w->refs = 1;
    w->n = n;
    for (int i = 0; i < n; i++) {
        w->r[i].w = w;
        w->r[i].ext = extra ? (char *)w + head + (size_t)i * extra : NULL;
    }
    return w;
}

static void wait_unref_unlock(ik__zk_wait *w)
{
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->mu);
    if (!last) return;
    for (int i = 0; i < w->n; i++) {
        free(w->r[i].data);
        deallocate_String_vector(&w->r[i].kids);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void ik__zk_wait_put(ik__zk_wait *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    wait_unref_unlock(w);
}

void ik__zk_arm(ik__zk_req *r, zhandle_t *zh)
{
    pthread_mutex_lock(&r->w->mu);
    r->w->refs++;
    r->w->left++;
    pthread_mutex_unlock(&r->w->mu);
    r->conn = zh ? (ik__zk_conn *)zoo_get_context(zh) : NULL; /* conn_open made it */
    if (r->conn) { /* ZS6: owed until its completion runs */
        pthread_mutex_lock(&owed_mu);
        r->conn->owed++;
        pthread_mutex_unlock(&owed_mu);
    }
}

/* ZS6: one answer c owed is paid (on c's completion thread, or on the caller's for a
 * request that failed at once). The last one of a handle that ik__zk_client_close
 * left closes it here, on its own completion thread: the answers that close fakes
 * run on this thread before it ends. */
static void conn_paid(ik__zk_conn *c)
{
    pthread_mutex_lock(&owed_mu);
    int close_now = --c->owed == 0 && c->left;
    pthread_mutex_unlock(&owed_mu);
    if (close_now) zookeeper_close(c->zh); /* c itself stays on left_handles */
}

static void req_finish(ik__zk_req *r, int rc)
{
    ik__zk_wait *w = r->w;
    ik__zk_conn *c = r->conn; /* before the last reference frees r with w */
    pthread_mutex_lock(&w->mu);
    r->rc = rc;
    r->done = 1;
    w->left--;
    pthread_cond_broadcast(&w->cv);
    wait_unref_unlock(w);
    if (c) conn_paid(c);
}

void ik__zk_issued(ik__zk_req *r, int zrc)
{
    if (zrc != ZOK) req_finish(r, zrc);
}

/* How often a wait looks whether its handle died (ZS5). */
#define ZS_DEATH_POLL_MS 50

/* 1 if c's session is known dead, or its client was cut (ik__zk_client_cut): no
 * answer is waited for on it any longer. */
static int conn_dead_now(const ik__zk_conn *c)
{
    return c && (__atomic_load_n(&c->dead, __ATOMIC_ACQUIRE) != 0 ||
                 __atomic_load_n(&c->zc->cut, __ATOMIC_ACQUIRE) != 0);
}

void ik__zk_client_cut(ik__zk_client *zc)
{
    pthread_mutex_lock(&zc->mu);
    __atomic_store_n(&zc->cut, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&zc->cv);
    pthread_mutex_unlock(&zc->mu);
}

void ik__zk_client_stopping(ik__zk_client *zc)
{
    __atomic_store_n(&zc->stopping, 1, __ATOMIC_RELEASE); /* the waits look every poll */
}

/* ik__zk_wait_until, and with renewal set ik__zk_wait_renewal. */
static int wait_for(ik__zk_wait *w, zhandle_t *zh, int64_t deadline_ns, int renewal)
{
    const ik__zk_conn *c = zh ? zoo_get_context(zh) : NULL;
    pthread_mutex_lock(&w->mu);
    while (w->left > 0 && !conn_dead_now(c) &&
           !(renewal && c && __atomic_load_n(&c->zc->stopping, __ATOMIC_ACQUIRE))) {
        int64_t ms = ZS_DEATH_POLL_MS;
        if (deadline_ns >= 0) {
            int64_t left = (deadline_ns - ik__mono_ns() + 999999) / 1000000;
            if (left <= 0) break;
            if (left < ms || !c) ms = left;
        } else if (!c) {
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        struct timespec ts;
        ik__deadline_ts(&ts, ms);
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    int all = w->left == 0;
    pthread_mutex_unlock(&w->mu);
    return all;
}

int ik__zk_wait_until(ik__zk_wait *w, zhandle_t *zh, int64_t deadline_ns)
{
    return wait_for(w, zh, deadline_ns, 0);
}

int ik__zk_wait_renewal(ik__zk_wait *w, zhandle_t *zh, int64_t deadline_ns)
{
    return wait_for(w, zh, deadline_ns, 1);
}

void ik__zk_on_void(int rc, const void *data)
{
    req_finish((ik__zk_req *)data, rc);
}

/* A NUL-terminated copy of value into r->data: ZOK, or ZSYSTEMERROR. */
static int keep_copy(ik__zk_req *r, const char *value, int len)
{
    if (len < 0) len = 0;
    r->data = malloc((size_t)len + 1);
    if (!r->data) return ZSYSTEMERROR;
    if (len) memcpy(r->data, value, (size_t)len);
    r->data[len] = '\0';
    r->len = len;
    return ZOK;
}

void ik__zk_on_data(int rc, const char *value, int len, const struct Stat *st, const void *data)
{
    ik__zk_req *r = (ik__zk_req *)data;
    if (rc == ZOK) {
        if (st) r->st = *st;
        rc = keep_copy(r, value, len);
    }
    req_finish(r, rc);
}

void ik__zk_on_stat(int rc, const struct Stat *st, const void *data)
{
    ik__zk_req *r = (ik__zk_req *)data;
    if (rc == ZOK && st) r->st = *st;
    req_finish(r, rc);
}

void ik__zk_on_kids(int rc, const struct String_vector *v, const void *data)
{
    ik__zk_req *r = (ik__zk_req *)data;
    if (rc == ZOK && v) {
        /* take a copy: the client frees v after the completion */
        r->kids.data = calloc(v->count ? (size_t)v->count : 1, sizeof(char *));
        if (!r->kids.data) {
            rc = ZSYSTEMERROR;
        } else {
            for (int i = 0; i < v->count; i++) {
                r->kids.data[i] = strdup(v->data[i]);
                if (!r->kids.data[i]) {
                    rc = ZSYSTEMERROR;
                    break;
                }
                r->kids.count = i + 1;
            }
        }
    }
    req_finish(r, rc);
}

void ik__zk_on_synced(int rc, const char *value, const void *data)
{
    (void)value;
    req_finish((ik__zk_req *)data, rc);
}

void ik__zk_on_created(int rc, const char *value, const struct Stat *st, const void *data)
{
    ik__zk_req *r = (ik__zk_req *)data;
    if (rc == ZOK) {
        if (st) r->st = *st;
        if (value) rc = keep_copy(r, value, (int)strlen(value));
    }
    req_finish(r, rc);
}

/* ------------------------------------------------------------------------------
 * Bounded synchronous calls (zk_session.h)
 */
/* The answer of w's one request, sent on zh: its code, or ZOPERATIONTIMEOUT when
 * none came within the session timeout plus a second, the handle died or the
 * client was cut. */
static int sync_answer(ik__zk_wait *w, zhandle_t *zh)
{
    int64_t ms = (int64_t)zoo_recv_timeout(zh) + 1000;
    return ik__zk_wait_until(w, zh, ik__mono_ns() + ms * 1000000) ? w->r[0].rc : ZOPERATIONTIMEOUT;
}

int ik__zk_sync_children(zhandle_t *zh, const char *path, struct String_vector *out)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_aget_children(zh, path, 0, ik__zk_on_kids, r));
    int zrc = sync_answer(w, zh);
    if (zrc == ZOK) { /* answered: the copy is the caller's now */
        *out = r->kids;
        r->kids = (struct String_vector){0, NULL};
    }
    ik__zk_wait_put(w);
    return zrc;
}

int ik__zk_sync_get(zhandle_t *zh, const char *path, char *buf, int *buf_len, struct Stat *st)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_aget(zh, path, 0, ik__zk_on_data, r));
    int zrc = sync_answer(w, zh);
    if (zrc == ZOK) {
        int n = r->len < *buf_len ? r->len : *buf_len;
        if (n > 0) memcpy(buf, r->data, (size_t)n);
        *buf_len = n;
        if (st) *st = r->st;
    }
    ik__zk_wait_put(w);
    return zrc;
}

int ik__zk_sync_exists(zhandle_t *zh, const char *path, struct Stat *st)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_aexists(zh, path, 0, ik__zk_on_stat, r));
    int zrc = sync_answer(w, zh);
    if (zrc == ZOK && st) *st = r->st;
    ik__zk_wait_put(w);
    return zrc;
}

int ik__zk_sync_create(zhandle_t *zh, const char *path, const char *value, int value_len,
                       const struct ACL_vector *acl, int mode)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_acreate2(zh, path, value, value_len, acl, mode, ik__zk_on_created, r));
    int zrc = sync_answer(w, zh);
    ik__zk_wait_put(w);
    return zrc;
}

int ik__zk_sync_delete(zhandle_t *zh, const char *path, int version)
{
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    if (!w) return ZSYSTEMERROR;
    ik__zk_req *r = &w->r[0];
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_adelete(zh, path, version, ik__zk_on_void, r));
    int zrc = sync_answer(w, zh);
    ik__zk_wait_put(w);
    return zrc;
}

/* ZS4: the client's state now, as a reason not to send a multi (ZOK: send it). */
static int multi_refusal(zhandle_t *zh)
{
    int st = zoo_state(zh);
    if (st == ZOO_CONNECTED_STATE) return ZOK;
    if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE) return ZINVALIDSTATE;
    return ZCONNECTIONLOSS; /* connecting: not sent, so not in doubt, but no answer */
}

int ik__zk_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                  void_completion_t completion, const void *data)
{
    int zrc = multi_refusal(zh);
    return zrc != ZOK ? zrc : zoo_amulti(zh, count, ops, results, completion, data);
}

/* 1 if op writes its answer where it points: a create's path buffer, a set's Stat. */
static int op_is_create(const zoo_op_t *op)
{
    return (op->type == ZOO_CREATE_OP || op->type == ZOO_CREATE2_OP) && op->create_op.buf;
}

int ik__zk_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results)
{
    if (count <= 0) return ZBADARGUMENTS;
    int zrc = multi_refusal(zh);
    if (zrc != ZOK) return zrc;
    /* Bounded as the other synchronous calls are (zk_session.h). The client writes
     * the answers where the ops point (a set's Stat, a create's path buffer) and
     * into the results, whenever they come: a wait that ends first must leave
     * nothing pointing at the caller's memory, so the request goes out with copies
     * in memory the wait owns (its last reference frees it), and the caller's get
     * the answer once it is in. */
    size_t bufs = 0;
    for (int i = 0; i < count; i++)
        if (op_is_create(&ops[i])) bufs += (size_t)ops[i].create_op.buflen;
    size_t head =
        (size_t)count * (sizeof(zoo_op_t) + sizeof(zoo_op_result_t) + sizeof(struct Stat));
    ik__zk_wait *w = ik__zk_wait_new(1, 0);
    char *mem = calloc(1, head + bufs);
    if (!w || !mem) {
        free(mem);
        ik__zk_wait_put(w);
        return ZSYSTEMERROR;
    }
    ik__zk_req *r = &w->r[0];
    r->data = mem; /* freed with the wait, by its last reference */
    zoo_op_t *op = (zoo_op_t *)mem;
    zoo_op_result_t *res = (zoo_op_result_t *)(op + count);
    struct Stat *st = (struct Stat *)(res + count);
    char *buf = (char *)(st + count);
    memcpy(op, ops, (size_t)count * sizeof *op);
    for (int i = 0; i < count; i++) {
        if (op_is_create(&op[i])) {
            op[i].create_op.buf = buf;
            buf += op[i].create_op.buflen;
        } else if (op[i].type == ZOO_SETDATA_OP && op[i].set_op.stat) {
            op[i].set_op.stat = &st[i];
        }
    }
    ik__zk_arm(r, zh);
    ik__zk_issued(r, zoo_amulti(zh, count, op, res, ik__zk_on_void, r));
    zrc = sync_answer(w, zh);
    for (int i = 0; i < count && zrc != ZOPERATIONTIMEOUT; i++) {
        results[i] = (zoo_op_result_t){.err = res[i].err, .valuelen = res[i].valuelen};
        if (op_is_create(&ops[i])) {
            memcpy(ops[i].create_op.buf, op[i].create_op.buf, (size_t)ops[i].create_op.buflen);
            results[i].value = ops[i].create_op.buf;
        } else if (ops[i].type == ZOO_SETDATA_OP && ops[i].set_op.stat) {
            *ops[i].set_op.stat = st[i];
            results[i].stat = ops[i].set_op.stat;
        }
    }
    ik__zk_wait_put(w);
    return zrc;
}

int ik__zk_multi_error(const ik__zk_req *r)
{
    if (r->rc == ZOK) return ZOK;
    for (size_t i = 0; i < sizeof r->res / sizeof r->res[0]; i++)
        if (r->res[i].err != ZOK && r->res[i].err != ZRUNTIMEINCONSISTENCY) return r->res[i].err;
    return r->rc;
}

/* ------------------------------------------------------------------------------
 * Handles and their sessions
 */
/* ZS5, on the dead handle's completion thread: waits until c is retired (no user
 * holds its zh), then closes it here. A handle that ik__zk_client_close closes
 * itself (it was alive when that began) is left to it. */
static void close_when_retired(ik__zk_conn *c)
{
    ik__zk_client *zc = c->zc;
    pthread_mutex_lock(&zc->mu);
    while (!c->retired && !c->closing)
        pthread_cond_wait(&zc->cv, &zc->mu);
    int ours = c->retired;
    pthread_mutex_unlock(&zc->mu);
    if (!ours) return;
    zookeeper_close(c->zh); /* from its own completion thread: the handle is freed
                               once this watcher returns and the thread ends */
    pthread_mutex_lock(&zc->mu);
    c->closed = 1;
    pthread_cond_broadcast(&zc->cv);
    pthread_mutex_unlock(&zc->mu);
}

static void conn_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)path;
    ik__zk_conn *c = ctx;
    if (type != ZOO_SESSION_EVENT || !c) return;
    /* ZS6: a handle left to this thread may outlive its client: wmu keeps the
     * client's close from leaving it while this runs, and then nothing of the
     * client is touched */
    pthread_mutex_lock(&c->wmu);
    if (c->left) {
        pthread_mutex_unlock(&c->wmu);
        return;
    }
    ik__zk_client *zc = c->zc;
    int died = 0;
    pthread_mutex_lock(&zc->mu);
    c->state = state;
    if (state == ZOO_CONNECTED_STATE) {
        const clientid_t *id = zoo_client_id(zh);
        if (id) c->session = id->client_id;
    } else if (state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE) {
        /* closing: ik__zk_client_close has it already (ZS6), not close_when_retired */
        died = !c->dead && !c->closing;
        __atomic_store_n(&c->dead, state, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&zc->cv);
    pthread_mutex_unlock(&zc->mu);
    /* outside mu: a listener takes its own locks, and those may be held while
     * ik__zk_session_get takes mu */
    pthread_mutex_lock(&zc->lmu);
    for (ik__zk_listener *l = zc->listeners; l; l = l->next)
        l->fn(l->ctx, c->gen, state);
    pthread_mutex_unlock(&zc->lmu);
    pthread_mutex_unlock(&c->wmu); /* not held while it waits to be retired */
    if (died) close_when_retired(c);
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
static int conn_open(ik__zk_client *zc, ik__zk_conn **out, char *why, size_t why_len)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, quiet_client_log);
    ik__zk_conn *c = calloc(1, sizeof *c);
    if (!c) return IK_ENOMEM;
    c->zc = zc;
    pthread_mutex_init(&c->wmu, NULL);
    pthread_mutex_lock(&zc->mu);
    c->gen = ++zc->gen;
    pthread_mutex_unlock(&zc->mu);
    errno = 0;
    c->zh = zookeeper_init2(zc->hosts, conn_watcher, zc->timeout_ms, NULL, c, 0, client_log);
    if (!c->zh) {
        int e = errno;
        pthread_mutex_destroy(&c->wmu);
        free(c);
        return ik__fail(e == EINVAL ? IK_EURI : IK_ESTORE, why, why_len,
                        "cannot start a ZooKeeper client for %s: %s", zc->hosts,
                        e ? strerror(e) : "unknown error");
    }
    /* By default the client resolves the host names again each time it polls its
     * socket: a getaddrinfo (a netlink socket) and a read of /dev/urandom for every
     * request, most of the CPU of a busy client. DNS changes are picked up within
     * 10 s instead (and on every connection loss, as before). */
    zoo_set_servers_resolution_delay(c->zh, 10000);
    if (zc->auth) {
        /* Queued now, sent once connected and again after every reconnect. */
        int zrc = zoo_add_auth(c->zh, "digest", zc->auth, (int)strlen(zc->auth), NULL, NULL);
        if (zrc != ZOK) {
            zookeeper_close(c->zh);
            pthread_mutex_destroy(&c->wmu);
            free(c);
            return ik__fail(IK_ESTORE, why, why_len, "zoo_add_auth: %s", zerror(zrc));
        }
    }
    *out = c;
    return IK_OK;
}

/* The close of a live handle left after the stop's cut (conn_close): on a thread
 * of its own, for zookeeper_close waits up to 1.5 s for the server to end the
 * session, which the stop's bound leaves no time for. A process that exits first
 * ends the session by its timeout, as a killed one would; c stays on left_handles. */
static void *close_left(void *arg)
{
    ik__zk_conn *c = arg;
    zookeeper_close(c->zh);
    return NULL;
}

/* Takes c out of use (caller holds life for writing, or took c out of zc->conn
 * under it): a dead handle is retired, for its own watcher to close (ZS5); a live
 * one that owes no answer is closed here, on this thread (its threads are joined)
 * and freed, or after the stop's cut on a thread of its own (close_left); a live
 * one that still owes answers is left to its completion thread, which closes it
 * with the last of them (ZS6). */
static void conn_close(ik__zk_client *zc, ik__zk_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&zc->mu);
    int dead = c->dead != 0;
    if (dead) {
        c->retired = 1;
        c->next = zc->retired;
        zc->retired = c;
        pthread_cond_broadcast(&zc->cv);
    } else {
        c->closing = 1; /* a death heard during the close leaves it to us */
        pthread_cond_broadcast(&zc->cv);
    }
    pthread_mutex_unlock(&zc->mu);
    if (dead) return;
    int cut = __atomic_load_n(&zc->cut, __ATOMIC_ACQUIRE);
    pthread_mutex_lock(&c->wmu); /* a session event running now ends first (ZS6) */
    pthread_mutex_lock(&owed_mu);
    int owed = c->owed;
    if (owed || cut) {
        c->left = 1;
        c->next = left_handles;
        left_handles = c;
    }
    pthread_mutex_unlock(&owed_mu);
    pthread_mutex_unlock(&c->wmu);
    if (owed) return;
    pthread_t t;
    pthread_attr_t a;
    if (cut && pthread_attr_init(&a) == 0) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        int made = pthread_create(&t, &a, close_left, c) == 0;
        pthread_attr_destroy(&a);
        if (made) return;
    }
    if (cut) { /* no thread for it: closed here after all, and kept (left_handles) */
        zookeeper_close(c->zh);
        return;
    }
    zookeeper_close(c->zh);
    pthread_mutex_destroy(&c->wmu);
    free(c);
}

/* A retired handle that may be freed: its watcher closed it, and the answers that
 * close faked have all run (ZS6: they run on its thread after the watcher). Caller
 * holds zc->mu. */
static int retired_done(ik__zk_conn *r)
{
    pthread_mutex_lock(&owed_mu);
    int done = r->closed && r->owed == 0;
    pthread_mutex_unlock(&owed_mu);
    return done;
}

/* Frees the retired handles whose watcher has closed them; with wait_ms > 0, first
 * waits up to that long for all of them to be closed (a handle still open then is
 * left, and never freed: better a leak than a crash). Caller holds life for
 * writing, or is the client's closer. */
static void free_closed(ik__zk_client *zc, int64_t wait_ms)
{
    int64_t until = ik__mono_ns() + (wait_ms > 0 ? wait_ms : 0) * 1000000;
    pthread_mutex_lock(&zc->mu);
    for (;;) {
        int open = 0;
        for (ik__zk_conn *r = zc->retired; r; r = r->next)
            open += !retired_done(r);
        int64_t left_ms = (until - ik__mono_ns()) / 1000000;
        if (!open || left_ms <= 0) break;
        /* closed is broadcast; the answers paid after it are looked at every poll */
        struct timespec ts;
        ik__deadline_ts(&ts, left_ms < ZS_DEATH_POLL_MS ? left_ms : ZS_DEATH_POLL_MS);
        pthread_cond_timedwait(&zc->cv, &zc->mu, &ts);
    }
    for (ik__zk_conn **pp = &zc->retired; *pp;) {
        ik__zk_conn *r = *pp;
        if (retired_done(r)) {
            *pp = r->next;
            pthread_mutex_destroy(&r->wmu);
            free(r);
        } else {
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&zc->mu);
}

int ik__zk_conn_wait(ik__zk_client *zc, ik__zk_conn *c, int64_t ms)
{
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&zc->mu);
    for (;;) {
        if (c->dead || zc->cut) break;
        if (c->state == ZOO_CONNECTED_STATE) break;
        if (pthread_cond_timedwait(&zc->cv, &zc->mu, &ts) == ETIMEDOUT) break;
    }
    int rc = c->dead ? IK_ELOST : c->state == ZOO_CONNECTED_STATE && !zc->cut ? IK_OK : IK_ESTORE;
    pthread_mutex_unlock(&zc->mu);
    return rc;
}

int64_t ik__zk_conn_session(ik__zk_client *zc, ik__zk_conn *c)
{
    pthread_mutex_lock(&zc->mu);
    int64_t s = c->session;
    pthread_mutex_unlock(&zc->mu);
    return s;
}

const char *ik__zk_why_lost(const ik__zk_conn *c)
{
    return c->dead == ZOO_AUTH_FAILED_STATE ? "ZooKeeper authentication failed"
                                            : "ZooKeeper session expired";
}

int ik__zk_conn_timeout_ms(const ik__zk_conn *c)
{
    int t = zoo_recv_timeout(c->zh);
    return t > 0 ? t : c->zc->timeout_ms;
}

int64_t ik__zk_connect_wait_ms(int64_t timeout_ms)
{
    return timeout_ms > 2000 ? 2000 : timeout_ms;
}

/* ------------------------------------------------------------------------------
 * Open, close, recover
 */
void ik__zk_client_init(ik__zk_client *zc)
{
    pthread_rwlock_init(&zc->life, NULL);
    pthread_mutex_init(&zc->mu, NULL);
    pthread_mutex_init(&zc->lmu, NULL);
    ik__cond_init_mono(&zc->cv);
}

int ik__zk_client_open(ik__zk_client *zc, const char *uri, const ik_coord_options *o, char *why,
                       size_t why_len)
{
    int rc = parse_uri(uri, &zc->hosts, &zc->chroot, why, why_len);
    if (rc) return rc;
    /* the backend's store options, checked by their rows (backend_zk.c) */
    zc->timeout_ms = (int)ik__store_opt_int(o, "session-timeout", 10000);
    const char *auth = ik__store_opt(o, "auth");
    if (auth && !(zc->auth = strdup(auth))) return IK_ENOMEM;
    rc = setup_acls(zc, why, why_len);
    if (rc) return rc;
    size_t ul = strlen(zc->hosts) + strlen(zc->chroot) + 6;
    if (!(zc->uri = malloc(ul))) return IK_ENOMEM;
    snprintf(zc->uri, ul, "zk://%s%s", zc->hosts, zc->chroot);
    rc = conn_open(zc, &zc->conn, why, why_len);
    if (rc) return rc;
    rc = ik__zk_conn_wait(zc, zc->conn, zc->timeout_ms);
    if (rc == IK_ELOST) return ik__fail(IK_ESTORE, why, why_len, "%s", ik__zk_why_lost(zc->conn));
    if (rc)
        return ik__fail(IK_ESTORE, why, why_len, "cannot reach ZooKeeper at %s within %d ms",
                        zc->hosts, zc->timeout_ms);
    return IK_OK;
}

void ik__zk_client_close(ik__zk_client *zc)
{
    pthread_rwlock_wrlock(&zc->life);
    pthread_mutex_lock(&zc->mu);
    ik__zk_conn *c = zc->conn;
    zc->conn = NULL;
    pthread_mutex_unlock(&zc->mu);
    pthread_rwlock_unlock(&zc->life);
    /* outside life: a live handle's close runs its pending completions, which may
     * borrow the session (and find none); no user holds any handle now */
    conn_close(zc, c);
    free_closed(zc, ZS_CLOSE_WAIT_MS);
    while (zc->listeners) { /* none, if every recipe was destroyed before the coord */
        ik__zk_listener *l = zc->listeners;
        zc->listeners = l->next;
        free(l);
    }
    pthread_mutex_destroy(&zc->lmu);
    pthread_rwlock_destroy(&zc->life);
    pthread_cond_destroy(&zc->cv);
    pthread_mutex_destroy(&zc->mu);
    free(zc->uri);
    free(zc->hosts);
    free(zc->chroot);
    free(zc->auth);
    free(zc->digest_id);
}

int ik__zk_recover(ik__backend *be, char *why, size_t why_len)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    int rc = IK_OK;
    pthread_rwlock_wrlock(&zc->life);
    ik__zk_conn *old = zc->conn;
    pthread_mutex_lock(&zc->mu);
    int dead = old->dead;
    pthread_mutex_unlock(&zc->mu);
    if (dead) {
        /* Only a dead session is replaced: one that is merely disconnected may come
         * back with its ephemeral nodes, which their owners then take back. */
        ik__zk_conn *nc = NULL;
        rc = conn_open(zc, &nc, why, why_len);
        if (rc == IK_OK) {
            pthread_mutex_lock(&zc->mu);
            zc->conn = nc;
            pthread_mutex_unlock(&zc->mu);
            conn_close(zc, old);
        }
    }
    free_closed(zc, 0);
    pthread_rwlock_unlock(&zc->life);
    if (rc) return rc;
    pthread_rwlock_rdlock(&zc->life);
    ik__zk_conn *c = zc->conn;
    rc = ik__zk_conn_wait(zc, c, ik__zk_connect_wait_ms(zc->timeout_ms));
    if (rc == IK_ELOST)
        ik__fail(IK_ESTORE, why, why_len, "%s", ik__zk_why_lost(c));
    else if (rc)
        ik__fail(IK_ESTORE, why, why_len, "ZooKeeper at %s is unreachable", zc->hosts);
    pthread_rwlock_unlock(&zc->life);
    return rc ? IK_ESTORE : IK_OK;
}

const char *ik__zk_uri(const ik__backend *be)
{
    return ((const ik__zk_backend *)be)->zc.uri;
}

int64_t ik__zk_slot_free_ms(ik__backend *be)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    pthread_rwlock_rdlock(&zc->life);
    int t = zc->conn ? zoo_recv_timeout(zc->conn->zh) : 0;
    pthread_rwlock_unlock(&zc->life);
    return t > 0 ? t : zc->timeout_ms;
}

void ik__zk_session_desc(ik__backend *be, char *buf, size_t len)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    if (!buf || !len) return;
    pthread_mutex_lock(&zc->mu);
    int64_t s = zc->conn ? zc->conn->session : 0;
    int dead = zc->conn ? zc->conn->dead : 0;
    pthread_mutex_unlock(&zc->mu);
    if (s == 0)
        buf[0] = '\0';
    else
        snprintf(buf, len, "0x%" PRIx64 "%s", (uint64_t)s, dead ? " (expired)" : "");
}

/* ------------------------------------------------------------------------------
 * The session, for the modules on this layer: they make their nodes on the
 * backend's own session instead of opening one of their own.
 */
void ik__zk_session_get(ik__backend *be, ik__zk_session *s)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    pthread_rwlock_rdlock(&zc->life);
    memset(s, 0, sizeof *s);
    pthread_mutex_lock(&zc->mu);
    ik__zk_conn *c = zc->conn;
    if (c) {
        s->zh = c->zh;
        s->gen = c->gen;
        s->id = c->session;
        s->connected = c->state == ZOO_CONNECTED_STATE && !c->dead && !zc->cut; /* cut: none */
        s->dead = c->dead != 0;
    } else {
        s->dead = 1;
    }
    pthread_mutex_unlock(&zc->mu);
    int t = s->zh ? zoo_recv_timeout(s->zh) : 0;
    s->timeout_ms = t > 0 ? t : zc->timeout_ms;
    s->chroot = zc->chroot;
    s->digest_id = zc->digest_id;
    s->app_acl = &zc->app_acl;
    s->shared_acl = &zc->shared_acl;
}

void ik__zk_session_put(ik__backend *be)
{
    pthread_rwlock_unlock(&ik__zk_backend_of(be)->zc.life);
}

int ik__zk_wait_connected(ik__backend *be, int64_t ms)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    pthread_rwlock_rdlock(&zc->life);
    int rc = zc->conn ? ik__zk_conn_wait(zc, zc->conn, ms) : IK_ELOST;
    pthread_rwlock_unlock(&zc->life);
    return rc;
}

int ik__zk_listen(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    ik__zk_listener *l = calloc(1, sizeof *l);
    if (!l) return IK_ENOMEM;
    l->fn = fn;
    l->ctx = ctx;
    pthread_mutex_lock(&zc->lmu);
    l->next = zc->listeners;
    zc->listeners = l;
    pthread_mutex_unlock(&zc->lmu);
    return IK_OK;
}

void ik__zk_unlisten(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx)
{
    ik__zk_client *zc = &ik__zk_backend_of(be)->zc;
    pthread_mutex_lock(&zc->lmu);
    for (ik__zk_listener **p = &zc->listeners; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->ctx == ctx) {
            ik__zk_listener *l = *p;
            *p = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&zc->lmu);
}
