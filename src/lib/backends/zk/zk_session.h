/* zk_session.h: the ZooKeeper session layer under every zk:// file of the library:
 * the client handle and its session (connection, watcher, recovery, the client's
 * log), the URI and the ACLs, the one bounded wait on asynchronous requests, and
 * what a result code means. backend_zk_slots.c, backend_zk_tags.c and the recipes
 * (recipe_zk*.c) sit on it; backend_zk.c (the ops table) sits on those. Nothing in
 * here calls up. Not a public API. */
#ifndef IK_ZK_SESSION_H
#define IK_ZK_SESSION_H

#include "backend.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <zookeeper/zookeeper.h>

#define IK__ZK_ROOT "/idkeeper/apps" /* under the chroot: one node per app */

/* ------------------------------------------------------------------------------
 * The client: one zhandle at a time, and what its session watcher has told us.
 */
typedef struct ik__zk_client ik__zk_client;

/* One zhandle. Freed only after zookeeper_close() returned, so the watcher never
 * sees a dangling context. Fields under the client's mu (dead is also read without
 * it, atomically, by ik__zk_wait_until). */
typedef struct ik__zk_conn {
    ik__zk_client *zc;
    zhandle_t *zh;
    unsigned gen;    /* the client's handle generation */
    int state;       /* last ZOO_*_STATE from the watcher (0: none yet) */
    int dead;        /* session expired or auth failed: the handle is unusable */
    int64_t session; /* session id once connected, else 0 */
    /* ZS5: a dead handle is closed on its own completion thread, once retired */
    int retired;              /* no user holds zh any more: its watcher may close it */
    int closing;              /* closed by ik__zk_client_close while still alive */
    int closed;               /* its watcher's zookeeper_close() returned */
    struct ik__zk_conn *next; /* the client's list of retired handles, or of left ones */
    /* ZS6: the answers owed on zh, and a live handle left to its completion thread */
    pthread_mutex_t wmu; /* held by the watcher while it runs, and to set `left` */
    int owed;            /* requests armed on zh whose completion has not run (owed_mu) */
    int left;            /* closed by its completion thread once owed is 0 (owed_mu) */
} ik__zk_conn;

typedef struct ik__zk_listener ik__zk_listener;

struct ik__zk_client {
    char *uri;      /* canonical */
    char *hosts;    /* "h:p,h:p" (no chroot: paths are prefixed by their makers) */
    char *chroot;   /* "" or "/a/b" */
    char *auth;     /* "user:password" or NULL */
    int timeout_ms; /* requested session timeout */
    struct ACL acl_app[2], acl_shared[2];
    struct ACL_vector app_acl, shared_acl; /* the app's nodes; the shared ancestors */
    char *digest_id;                       /* "user:base64(sha1(user:password))" */

    pthread_rwlock_t life; /* read: a call uses conn->zh; write: swap or close it */
    pthread_mutex_t mu;    /* guards conn's fields and gen */
    pthread_cond_t cv;     /* broadcast on every session event */
    int cut;               /* ik__zk_client_cut: no answer is waited for any more */
    int stopping;          /* ik__zk_client_stopping: a renewal's answer is not waited for */
    ik__zk_conn *conn;
    ik__zk_conn *retired; /* dead handles replaced, freed once closed (ZS5) */
    unsigned gen;

    pthread_mutex_t lmu;        /* guards listeners; held while they are called */
    ik__zk_listener *listeners; /* session events for other modules (ik__zk_listen) */
};

/* A zk:// backend object: what backend_zk.c allocates, and what the modules on the
 * session layer find behind an ik__backend. */
struct ik__zk_slots;
struct ik__zk_tags;
struct ik__zk_hz;
typedef struct ik__zk_backend {
    ik__backend base;
    ik__zk_client zc;
    struct ik__zk_slots *slots; /* backend_zk_slots.c */
    struct ik__zk_tags *tags;   /* backend_zk_tags.c */
    struct ik__zk_hz *hzs;      /* zk_hazards.c */
    char *leaf; /* the Leaf fleet whose nodes are the worker slots (backend_zk_leaf.c), or NULL */
    char *leaf_takeover; /* the identity whose Leaf server's number may be taken, or NULL */
} ik__zk_backend;

static inline ik__zk_backend *ik__zk_backend_of(ik__backend *be)
{
    return (ik__zk_backend *)be;
}

/* Makes zc's locks; then ik__zk_client_close frees whatever was set up, always. */
void ik__zk_client_init(ik__zk_client *zc);

/* Reads the URI (zk://HOST:PORT[,...][/CHROOT], its syntax already checked by
 * ik_coord_open) and the options (session timeout, --zk-auth), makes the ACLs and
 * the first handle, and waits up to the session timeout for it to connect. 0, or
 * an ik_error with why. */
int ik__zk_client_open(ik__zk_client *zc, const char *uri, const ik_coord_options *o, char *why,
                       size_t why_len);

/* Closes the handle (pending completions run with ZCLOSING; a live handle that
 * still owes answers is left to its completion thread, which closes it with the
 * last of them, ZS6), forgets the listeners, frees what init and open made. After
 * it, no completion touches zc. */
void ik__zk_client_close(ik__zk_client *zc);

/* The seam's cut (backend.h), for a bounded stop: every wait for an answer or a
 * connection on zc ends now (as one that got none) and every later one at once.
 * Any thread. */
void ik__zk_client_cut(ik__zk_client *zc);

/* The seam's stop_begin (backend.h): a stop has begun, so the slot renewals wait
 * for no answer any more (ik__zk_wait_renewal); the release sends itself right
 * behind one still unanswered (backend_zk_slots.c, ZSL6). Any thread. */
void ik__zk_client_stopping(ik__zk_client *zc);

/* Waits up to ms for c to be connected. 0: connected; IK_ELOST: the session is
 * dead; IK_ESTORE: not connected in time. Caller holds life (read or write). */
int ik__zk_conn_wait(ik__zk_client *zc, ik__zk_conn *c, int64_t ms);

/* c's session id (0 before the first connection). */
int64_t ik__zk_conn_session(ik__zk_client *zc, ik__zk_conn *c);

/* Why a dead session is dead, in words. */
const char *ik__zk_why_lost(const ik__zk_conn *c);

/* The negotiated session timeout of c (the requested one until known). */
int ik__zk_conn_timeout_ms(const ik__zk_conn *c);

/* How long a call waits for a connection that is down: short (2 s at most),
 * since callers retry (the lease every second) and a shutdown must not wait on
 * it. timeout_ms: the session timeout the caller goes by. */
int64_t ik__zk_connect_wait_ms(int64_t timeout_ms);

/* The backend's recover(): replaces a dead session's handle by a new one (only a
 * dead one: a disconnected session may come back with its ephemeral nodes), then
 * waits a short while for a connection. 0, or IK_ESTORE with why. */
int ik__zk_recover(ik__backend *be, char *why, size_t why_len);

/* The seam's uri, slot_free_ms and session calls (backend.h): the canonical URI;
 * the negotiated session timeout (the requested one before the first connect: a
 * dead holder's ephemeral nodes go when its session expires); "0xID" of the
 * session, " (expired)" after it if dead, "" before the first connection. */
const char *ik__zk_uri(const ik__backend *be);
int64_t ik__zk_slot_free_ms(ik__backend *be);
void ik__zk_session_desc(ik__backend *be, char *buf, size_t len);

/* ------------------------------------------------------------------------------
 * The session, as the modules borrow it.
 */
typedef struct ik__zk_session {
    zhandle_t *zh;         /* valid until ik__zk_session_put */
    unsigned gen;          /* handle generation: recover() replaces a dead handle by one
                              of a new generation */
    int64_t id;            /* session id (0 before the first connection) */
    int connected;         /* the latest session event said CONNECTED */
    int dead;              /* expired or auth failed: only recover() helps */
    int timeout_ms;        /* negotiated session timeout (the requested one until known) */
    const char *chroot;    /* "" or "/a/b": every path starts with it */
    const char *digest_id; /* the --zk-auth digest id for ACLs, or NULL */
    const struct ACL_vector *app_acl, *shared_acl; /* the app's nodes; shared ancestors */
} ik__zk_session;

/* Borrows the current handle: holds the client's `life` lock for reading from get
 * to put, so that recover() cannot close it meanwhile. Between the two: no wait for
 * a session event, no call to recover(), no nested get. zk:// backends only. */
void ik__zk_session_get(ik__backend *be, ik__zk_session *s);
void ik__zk_session_put(ik__backend *be);

/* Session events: fn(ctx, gen, state) on the ZooKeeper completion thread of handle
 * gen, for every ZOO_SESSION_EVENT (state: ZOO_CONNECTED_STATE,
 * ZOO_CONNECTING_STATE, ZOO_EXPIRED_SESSION_STATE, ...), after the client has
 * recorded it. fn must not block and must not call into the backend. listen: 0 or
 * IK_ENOMEM. Once unlisten returns, fn is not running for ctx and is not called
 * again. */
int ik__zk_listen(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx);
void ik__zk_unlisten(ik__backend *be, void (*fn)(void *ctx, unsigned gen, int state), void *ctx);

/* Waits up to ms for the backend's session to be connected (not between
 * ik__zk_session_get and put). 0: connected; IK_ELOST: the session is dead
 * (recover() makes a new one); IK_ESTORE: not connected in time. */
int ik__zk_wait_connected(ik__backend *be, int64_t ms);

/* ------------------------------------------------------------------------------
 * ACLs and paths
 */

/* Fills acl and *v: with digest_id (--zk-auth), the digest has ALL and the world
 * world_perms; without, *v is ZOO_OPEN_ACL_UNSAFE. acl and digest_id must outlive v. */
void ik__zk_acl_init(struct ACL acl[2], struct ACL_vector *v, const char *digest_id,
                     int world_perms);

/* Creates path and its missing ancestors: those up to shared_end characters long
 * PERSISTENT with *shared, the others with *own in mode (ZOO_CONTAINER falls back
 * to PERSISTENT on servers without containers). ZOK, or the first failure's code
 * with the path it failed on in failed (if failed_len). */
int ik__zk_create_path(zhandle_t *zh, const char *path, size_t shared_end,
                       const struct ACL_vector *shared, const struct ACL_vector *own, int mode,
                       char *failed, size_t failed_len);

/* Valid app names: ik__valid_name up to 64, not "." or "..". */
int ik__zk_app_ok(const char *app);

/* ------------------------------------------------------------------------------
 * Result codes
 */

/* ZooKeeper result codes (ZCONNECTIONLOSS, ...) that mean "no answer: the request
 * may or may not have been applied". */
int ik__zk_doubtful(int zrc);

/* ZooKeeper result codes that mean "this session is gone for good" (the request
 * was refused, not applied). */
int ik__zk_session_gone(int zrc);

/* Maps a failed ZooKeeper call to an ik_error with "what: reason" in why:
 * IK_ELOST (the session is gone), IK_EINDOUBT (no answer: worth another try once
 * connected) or IK_ESTORE. */
int ik__zk_fail(int zrc, char *why, size_t why_len, const char *what);

/* ------------------------------------------------------------------------------
 * Asynchronous requests with a bounded wait. A wait holds n requests and is
 * reference counted (the caller, plus one per request the client still owes an
 * answer), so a caller that gives up at its deadline returns while the client may
 * still write into the results; the last reference frees it.
 *
 *   w = ik__zk_wait_new(n, extra);
 *   ik__zk_arm(&w->r[i], zh);
 *   ik__zk_issued(&w->r[i], zoo_aget(zh, p, 0, ik__zk_on_data, &w->r[i]));
 *   if (ik__zk_wait_until(w, zh, deadline_ns)) ... w->r[i].rc ...
 *   ik__zk_wait_put(w);
 */
typedef struct ik__zk_wait ik__zk_wait;
typedef struct ik__zk_req {
    ik__zk_wait *w;
    struct ik__zk_conn *conn; /* the handle it was sent on (ik__zk_arm): it owes the answer */
    int done, rc;
    struct Stat st;            /* aget, aset, aexists, acreate2 */
    char *data;                /* aget: a NUL-terminated copy; acreate2: the path made */
    int len;                   /* of data */
    struct String_vector kids; /* aget_children: a copy */
    zoo_op_t ops[3];           /* amulti */
    zoo_op_result_t res[3];
    struct Stat op_st; /* amulti: a set op's Stat */
    void *ext;         /* the caller's `extra` bytes, zeroed, freed with the wait */
} ik__zk_req;

struct ik__zk_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs, left, n;
    ik__zk_req r[];
};

/* n requests, each with extra bytes of its own at r[i].ext. NULL on ENOMEM. */
ik__zk_wait *ik__zk_wait_new(int n, size_t extra);
/* Drops the caller's reference (NULL: nothing). */
void ik__zk_wait_put(ik__zk_wait *w);
/* Call before issuing request r on zh (a handle of this layer, from
 * ik__zk_session_get); then ik__zk_issued(r, zrc) with what the call returned: a
 * request that failed synchronously gets no completion. Until r's completion runs,
 * zh owes it an answer, and is not closed from another thread (ZS6). */
void ik__zk_arm(ik__zk_req *r, zhandle_t *zh);
void ik__zk_issued(ik__zk_req *r, int zrc);
/* Waits until every request of w, sent on zh, is answered, the deadline
 * (ik__mono_ns; < 0: none) passes, or zh's session is known dead (its answers then
 * wait behind the handle's close, ZS5). 1: all answered. */
int ik__zk_wait_until(ik__zk_wait *w, zhandle_t *zh, int64_t deadline_ns);
/* The same for a slot renewal: it also ends (0) once the client is stopping
 * (ik__zk_client_stopping). */
int ik__zk_wait_renewal(ik__zk_wait *w, zhandle_t *zh, int64_t deadline_ns);

/* Completions; data is the ik__zk_req. */
void ik__zk_on_void(int rc, const void *data);
void ik__zk_on_data(int rc, const char *value, int len, const struct Stat *st, const void *data);
void ik__zk_on_stat(int rc, const struct Stat *st, const void *data);
void ik__zk_on_kids(int rc, const struct String_vector *v, const void *data);
void ik__zk_on_created(int rc, const char *value, const struct Stat *st, const void *data);
void ik__zk_on_synced(int rc, const char *value, const void *data); /* zoo_async (sync) */

/* The synchronous reads and creates of the zk:// modules, each bounded: the
 * client's own zoo_get_children, zoo_get, zoo_exists, zoo_create and zoo_delete wait for
 * their answer with no deadline (until the client gives the connection up, 2/3 of
 * the session timeout after the server's last byte), and no cut reaches them; so
 * a stop could not outlast them (docs/guarantees.md promise 13). These send the
 * asynchronous form and wait as ik__zk_wait_until does, until the session timeout
 * plus a second, the handle's death, or the client's cut (ik__zk_client_cut):
 * ZOPERATIONTIMEOUT then (no answer: a create may still land). Arguments and
 * answers otherwise as the client's calls (no watches). Any thread. */
int ik__zk_sync_children(zhandle_t *zh, const char *path, struct String_vector *out);
int ik__zk_sync_get(zhandle_t *zh, const char *path, char *buf, int *buf_len, struct Stat *st);
int ik__zk_sync_exists(zhandle_t *zh, const char *path, struct Stat *st);
int ik__zk_sync_create(zhandle_t *zh, const char *path, const char *value, int value_len,
                       const struct ACL_vector *acl, int mode);
int ik__zk_sync_delete(zhandle_t *zh, const char *path, int version);

/* zoo_amulti and zoo_multi, sent only while the client says it is connected
 * (zoo_state() at the call): ZCONNECTIONLOSS while it is not (nothing was sent),
 * ZINVALIDSTATE once its session is dead. Every multi of the zk:// modules goes
 * through these (invariant ZS4), never through the client's own. ik__zk_multi is
 * bounded as the synchronous calls above are (ZOPERATIONTIMEOUT: no answer). */
int ik__zk_amulti(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results,
                  void_completion_t completion, const void *data);
int ik__zk_multi(zhandle_t *zh, int count, const zoo_op_t *ops, zoo_op_result_t *results);

/* The effective error of an amulti of up to three ops: the first op that really
 * failed. */
int ik__zk_multi_error(const ik__zk_req *r);

/* backend_zk.c: the ops table, named by the registry (coord.c); recipe_zk.c: the
 * lock protocol, named by that table. */
extern const ik__backend_ops ik__backend_zk_ops;
extern const ik__recipe_ops ik__recipe_zk_ops;
/* zk_uri.c: the zk:// syntax (ik__backend_zk_ops.uri_check). */
int ik__zk_uri_check(const char *uri, char *why, size_t why_len);

#endif
