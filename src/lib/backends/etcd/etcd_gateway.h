/* etcd_gateway.h: the etcd client under every etcd:// file of the library: typed
 * calls on etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/...,
 * /v3/watch), made with libcurl and read with jansson, both sealed in
 * etcd_gateway.c (no other file names either), as the daemon seals its HTTP parser.
 *
 * What the gateway's JSON is, once (etcd 3.4, 3.5 and 3.6 serve the same paths):
 * keys and values are base64; 64-bit integers are JSON strings; a field at its
 * default (0, false, empty) is left out, so an absent TTL in a keepalive answer is
 * the expired lease's signal; a streamed answer (watch, keepalive) is one JSON
 * object a line, each {"result": ...} or {"error": ...}; only the first keepalive of
 * a streamed request is served, so each keepalive is a POST of its own.
 *
 * Invariants
 *   EG1. Every answer's header names the cluster the gateway first saw (its
 *        cluster_id, fixed at ik__etcd_gw_new): an answer from another cluster
 *        behind the same address is IK_EUNSAFE, never trusted (docs/hazards.md,
 *        etcd: "cluster identity"; the proof that rides with each write). A
 *        member id may change with a failover; the cluster id may not.
 *   EG2. IK_ESTORE means the request certainly did not apply (no endpoint took
 *        the connection, or etcd answered a definite error); IK_EINDOUBT means it
 *        was sent and may have applied (no answer, a timeout, "request timed
 *        out", a leader change). A call moves on to the next endpoint only while
 *        nothing was sent.
 *   EG3. After ik__etcd_gw_cut, no call waits: those blocked return IK_EINDOUBT
 *        (their sockets shut) and later ones IK_ESTORE without connecting.
 *   EG4. The password is kept only to authenticate again when etcd drops the
 *        token; no message, log line or URI holds it.
 *
 * Threads: every call is thread-safe and may block (each on a connection of its
 * own, from a small pool); cut from any thread.
 */
#ifndef IK_ETCD_GATEWAY_H
#define IK_ETCD_GATEWAY_H

#include <pthread.h>
#include <stddef.h>
#include <sys/socket.h>
#include <stdint.h>

#define IK__ETCD_ENDPOINTS_MAX 16

/* What ik__etcd_gw_new connects with (from the URI: etcd_uri.c). */
typedef struct ik__etcd_gw_config {
    int tls;                                     /* etcds:// */
    char endpoints[IK__ETCD_ENDPOINTS_MAX][270]; /* "HOST:PORT" ("[v6]:PORT") */
    int n_endpoints;
    const char *cacert, *cert, *key; /* PEM files, or NULL */
    const char *user, *password;     /* NULL: no auth */
} ik__etcd_gw_config;

/* One key-value as etcd shows it (key and value decoded from base64, each with a
 * NUL after its bytes). */
typedef struct ik__etcd_kv {
    char *key, *value;
    size_t key_len, value_len;
    int64_t create_revision, mod_revision, version, lease;
    int resp; /* txn: the index of the response it came in (range: 0) */
} ik__etcd_kv;

typedef struct ik__etcd_member {
    uint64_t id;
    char name[64];
    int is_learner;
} ik__etcd_member;

/* Any answer of the gateway, read whole (fields absent stay 0). */
typedef struct ik__etcd_answer {
    int has_header;
    uint64_t cluster_id, member_id;
    int64_t revision, raft_term;
    int err_code; /* an error answer: its gRPC code (> 0), err its message */
    char err[200];
    int succeeded;    /* txn */
    ik__etcd_kv *kvs; /* range; txn: every response_range's, in order */
    size_t n_kvs;
    int64_t count;            /* range */
    int64_t deleted;          /* deleterange; txn: the sum of its response_delete_range */
    int64_t id, ttl;          /* lease grant, keepalive (ttl 0: absent: the lease is gone) */
    char token[256];          /* authenticate */
    char version[32];         /* maintenance status */
    uint64_t leader;          /* maintenance status */
    int is_learner;           /* maintenance status (3.5+) */
    ik__etcd_member *members; /* member list */
    size_t n_members;
    int created, canceled; /* watch */
    int deletes;           /* watch: DELETE events seen */
} ik__etcd_answer;

/* Reads one JSON answer (len bytes, streamed ones unwrapped from "result"), as
 * the gateway writes it, into *a (zeroed first; free with ik__etcd_answer_free).
 * 0, or -1 with why (not JSON, not an object, a field of the wrong type, a bad
 * base64 or number). Pure: tests/fuzz/fuzz_etcd_answer.c's target. */
int ik__etcd_answer_parse(const char *buf, size_t len, ik__etcd_answer *a, char *why,
                          size_t why_len);
void ik__etcd_answer_free(ik__etcd_answer *a);

typedef struct ik__etcd_gw ik__etcd_gw;

/* Makes the client and asks the cluster once (a range of a key nobody uses):
 * authenticates where c->user is set, and fixes the cluster id (EG1). 0, or
 * IK_ESTORE / IK_EUNSAFE / IK_ENOMEM with why; on failure *out is NULL. */
int ik__etcd_gw_new(const ik__etcd_gw_config *c, ik__etcd_gw **out, char *why, size_t why_len);
void ik__etcd_gw_free(ik__etcd_gw *g);
void ik__etcd_gw_cut(ik__etcd_gw *g);
uint64_t ik__etcd_gw_cluster_id(const ik__etcd_gw *g);
/* 1 while the last answer came from another cluster than the open's (EG1): the
 * hazard checks then run before every write, and show it refused. */
int ik__etcd_gw_foreign(const ik__etcd_gw *g);
/* "HOST:PORT" of the endpoint that answered last. */
void ik__etcd_gw_endpoint(ik__etcd_gw *g, char *buf, size_t len);
/* 1 if the cluster has auth enabled (seen at new). */
int ik__etcd_gw_auth_on(const ik__etcd_gw *g);

/* ---- requests ----------------------------------------------------------------
 * Every call: 0 and *a filled (free it), or IK_ESTORE / IK_EINDOUBT / IK_EUNSAFE
 * (EG1, EG2) with why. An error answer of etcd's (a.err_code) that means "not
 * done" is IK_ESTORE; timeout_ms bounds the whole call, every endpoint tried. */

/* A txn, built by the caller with the helpers below. */
typedef struct ik__etcd_txn ik__etcd_txn;
ik__etcd_txn *ik__etcd_txn_new(void);
void ik__etcd_txn_free(ik__etcd_txn *t);
/* compare: target "CREATE", "MOD", "VERSION", "VALUE" or "LEASE"; result "EQUAL",
 * "LESS", "GREATER", "NOT_EQUAL"; the value is n (or, for VALUE, the bytes v). */
int ik__etcd_txn_cmp(ik__etcd_txn *t, const char *key, const char *target, const char *result,
                     int64_t n, const char *v);
/* ops of the success (ok = 1) or failure (ok = 0) branch */
int ik__etcd_txn_put(ik__etcd_txn *t, int ok, const char *key, const char *value, int64_t lease);
int ik__etcd_txn_get(ik__etcd_txn *t, int ok, const char *key, int prefix);
int ik__etcd_txn_del(ik__etcd_txn *t, int ok, const char *key);
int ik__etcd_txn_run(ik__etcd_gw *g, ik__etcd_txn *t, int64_t timeout_ms, ik__etcd_answer *a,
                     char *why, size_t why_len);

/* A linearizable range: key alone, or every key with the prefix key (prefix = 1);
 * sorted by create_revision, ascending where by_create > 0, descending where < 0;
 * only keys created at or
 * below max_create (0: any); at most limit (0: all). */
int ik__etcd_range(ik__etcd_gw *g, const char *key, int prefix, int by_create, int64_t max_create,
                   int64_t limit, int64_t timeout_ms, ik__etcd_answer *a, char *why,
                   size_t why_len);
int ik__etcd_put(ik__etcd_gw *g, const char *key, const char *value, int64_t lease,
                 int64_t timeout_ms, ik__etcd_answer *a, char *why, size_t why_len);
int ik__etcd_delete(ik__etcd_gw *g, const char *key, int64_t timeout_ms, ik__etcd_answer *a,
                    char *why, size_t why_len);
int ik__etcd_lease_grant(ik__etcd_gw *g, int64_t ttl_s, int64_t timeout_ms, ik__etcd_answer *a,
                         char *why, size_t why_len);
/* One keepalive, one POST (a.ttl 0: the lease is gone). */
int ik__etcd_lease_keepalive(ik__etcd_gw *g, int64_t id, int64_t timeout_ms, ik__etcd_answer *a,
                             char *why, size_t why_len);
int ik__etcd_lease_revoke(ik__etcd_gw *g, int64_t id, int64_t timeout_ms, ik__etcd_answer *a,
                          char *why, size_t why_len);
int ik__etcd_status(ik__etcd_gw *g, int64_t timeout_ms, ik__etcd_answer *a, char *why,
                    size_t why_len);
int ik__etcd_members(ik__etcd_gw *g, int64_t timeout_ms, ik__etcd_answer *a, char *why,
                     size_t why_len);
/* Whether the cluster wants authentication: 1 on, 0 off, or an error. */
int ik__etcd_auth_enabled(ik__etcd_gw *g, int64_t timeout_ms, char *why, size_t why_len);
/* GET /metrics of the endpoint that answers: the value of the first sample line
 * whose name is metric (-1 with an error if none). */
int ik__etcd_metric(ik__etcd_gw *g, const char *metric, int64_t timeout_ms, double *value,
                    char *why, size_t why_len);

/* The stop of a long call (a watch): set from any thread, it ends the call at once
 * (the call's socket, one of its own, is shut), and the call checks it before it
 * starts. fini after the last call that used it returned. */
typedef struct ik__etcd_stop {
    pthread_mutex_t mu;
    int on;
    int fd; /* the call's socket while it has one, else -1 */
} ik__etcd_stop;
static inline void ik__etcd_stop_init(ik__etcd_stop *s)
{
    pthread_mutex_init(&s->mu, NULL);
    s->on = 0;
    s->fd = -1;
}
static inline void ik__etcd_stop_fini(ik__etcd_stop *s)
{
    pthread_mutex_destroy(&s->mu);
}
/* on: the call's socket is shut (it is the call's until the gateway forgets it,
 * under mu, before it closes it: never another's) */
static inline void ik__etcd_stop_set(ik__etcd_stop *s, int on)
{
    pthread_mutex_lock(&s->mu);
    s->on = on;
    if (on && s->fd >= 0) shutdown(s->fd, SHUT_RDWR);
    pthread_mutex_unlock(&s->mu);
}
static inline int ik__etcd_stop_is(ik__etcd_stop *s)
{
    pthread_mutex_lock(&s->mu);
    int on = s->on;
    pthread_mutex_unlock(&s->mu);
    return on;
}

/* Watches key (every key with the prefix key, prefix = 1) from revision from_rev on
 * (one long streamed POST) until a DELETE of it is seen (0), timeout_ms passes
 * (IK_ETIMEDOUT), stop (may be NULL) is set (IK_ECLOSED, at once), or the stream
 * breaks (IK_ESTORE: the caller reads again and watches again). */
int ik__etcd_watch_delete(ik__etcd_gw *g, const char *key, int prefix, int64_t from_rev,
                          int64_t timeout_ms, ik__etcd_stop *stop, char *why, size_t why_len);

#endif
