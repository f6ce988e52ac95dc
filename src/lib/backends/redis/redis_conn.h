/* redis_conn.h: the Redis client layer under every redis:// file of the library:
 * the URI (redis_uri.c, pure), the connections (a small pool of hiredis contexts,
 * each authenticated and on its database), the store hazard checks (docs/hazards.md,
 * Redis: at open, on every new connection, and before a write on a connection whose
 * last check is older than the hazard interval), the Lua scripts and the one way to
 * run them (EVALSHA, EVAL when the server lost its script cache), and what a reply
 * means (every script inside MULTI with the checks' evidence: the proof that rides
 * with each write). backend_redis_slots.c and
 * backend_redis_tags.c sit on it; backend_redis.c (the ops table) sits on those.
 * Nothing in here calls up. Not a public API. docs/redis.md has the key layout.
 *
 * What it deliberately does not do: it never retries a write whose answer was lost
 * (the caller is told IK_EINDOUBT and decides), never prints or logs the password,
 * and never talks to a Redis Cluster (scripts name keys they build themselves).
 */
#ifndef IK_REDIS_CONN_H
#define IK_REDIS_CONN_H

#include "backend.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------
 * The URI (redis_uri.c; pure, no I/O):
 *   redis://HOST[:PORT][/DB][?prefix=P][&user=U]        TCP (port 6379, db 0 if omitted)
 *   redis+unix:///ABS/PATH[?db=N][&prefix=P][&user=U]  a unix socket
 * HOST: a name, an IPv4 address or [IPv6]; DB 0-9999; P: 1-100 bytes of
 * [A-Za-z0-9._:/-], prepended to every key (a namespace on a shared server); U: an
 * ACL user name (AUTH U PASSWORD), same characters. The password comes from
 * ik_coord_options.password (--password-file, IDKEEPER_PASSWORD), or else from the
 * URI's userinfo, redis://[USER][:PASSWORD]@HOST..., which no canonical URI,
 * message or log line shows.
 */
#define IK__REDIS_PREFIX_MAX 100
typedef struct ik__redis_target {
    int is_unix;
    char host[256]; /* without the brackets of [IPv6] */
    int port;
    char path[108]; /* the socket (is_unix) */
    int db;
    char prefix[IK__REDIS_PREFIX_MAX + 1];
    char user[IK__REDIS_PREFIX_MAX + 1];
    char password[1024]; /* from the URI's userinfo ("" if none) */
} ik__redis_target;

/* Parses uri into *t (which may be NULL: a check only). 0, or IK_EURI with a
 * one-line reason (the URI is quoted cut to 64 bytes). */
int ik__redis_uri_parse(const char *uri, ik__redis_target *t, char *why, size_t why_len);
/* The canonical URI of t ("redis://h:p/db?prefix=P&user=U"): its length, or -1 if
 * it does not fit. Never holds a password. */
int ik__redis_uri_format(const ik__redis_target *t, char *out, size_t len);
/* The seam's uri_check for both schemes. */
int ik__redis_uri_check(const char *uri, char *why, size_t why_len);

/* ------------------------------------------------------------------------------
 * The client.
 */
enum {
    IK__RS_ACQUIRE,     /* backend_redis_slots.c */
    IK__RS_RENEW,       /* backend_redis_slots.c */
    IK__RS_RELEASE,     /* backend_redis_slots.c */
    IK__RS_TAG_CREATE,  /* backend_redis_tags.c */
    IK__RS_TAG_ADVANCE, /* backend_redis_tags.c */
    IK__RS_TAG_SETTLE,  /* backend_redis_tags.c: the doubts open at close */
    IK__RS_COUNT
};

/* The scripts' sources (redis_scripts.c), by id. */
extern const char *const ik__redis_lua[IK__RS_COUNT];

#define IK__REDIS_POOL 8    /* idle connections kept */
#define IK__REDIS_STAMPS 64 /* connections whose last hazard check is remembered */
#define IK__REDIS_LIVE 128  /* connections out of the pool, for the cut */

struct redisContext;
struct redisReply;

typedef struct ik__redis_client {
    ik__redis_target t;
    char uri[512];  /* canonical, no password */
    char *password; /* NULL: no AUTH */
    int64_t lease_ttl_ms;
    int wait_replicas; /* --redis-wait-replicas (0: no WAIT) */
    /* IDKEEPER_TEST_REDIS_WRITE_HOLD at open (tests only; NULL: none): the path of
     * ik__test_hold, between a tag advance's gate and its script (docs/testing.md) */
    char *test_hold;
    ik__hazards *hz; /* the backend's verdicts (backend.h): installed by every check */

    pthread_mutex_t mu; /* guards what follows */
    struct redisContext *idle[IK__REDIS_POOL];
    int nidle;
    uint64_t connects;       /* connections made, for the session description */
    int64_t last_err_log_ns; /* ik__redis_log_limited: when last_log was logged */
    char last_log[600];
    char sha[IK__RS_COUNT][41]; /* of each script, from SCRIPT LOAD at open */
    char last_token[33];        /* the token of the last slot taken (session_desc) */
    /* the mono ns of each live connection's last hazard check (a connection not
     * found here is due); checks are numbered so that a slow one never installs
     * its verdicts over those of a later one */
    struct {
        struct redisContext *ctx;
        int64_t ns;
    } stamp[IK__REDIS_STAMPS];
    uint64_t checks_begun, checks_installed;
    /* connections out of the pool (in a call, or connecting), whose sockets
     * ik__redis_client_cut shuts; cut: no call waits on Redis any more */
    struct redisContext *live[IK__REDIS_LIVE];
    int cut;
    int aof_trusted;    /* the AOF was seen complete since it was last seen off (or never) */
    int blind;          /* the latest evidence had an unreadable row: writes carry none */
    int one_get;        /* the server reads several settings in one CONFIG GET (Redis 7) */
    char *ev_cmd[2][2]; /* the evidence's commands, formatted at open, by [one_get][info] */
    int ev_len[2][2];
    struct ik__redis_judged { /* the last evidence installed, and its verdict */
        void *raw;            /* its answer as read (redis_conn.c), NULL: none yet */
        int trusted_in;       /* aof_trusted before it */
        int unsafe;           /* its own verdict was IK_EUNSAFE, why: */
        char why[400];
    } judged;
} ik__redis_client;

/* Reads the URI and the options (password, lease TTL, wait replicas), initialises
 * *hz (unsafe store), connects once (AUTH, SELECT, PING) and runs the hazard checks
 * (ik__redis_hazards): a refused one fails IK_EUNSAFE with why naming the setting,
 * its value and what to change, unless o->check_only. 0, or an ik_error with why; on
 * failure ik__redis_client_close still frees what was made (ik__hazards_free *hz). */
int ik__redis_client_open(ik__redis_client *rc, const char *uri, const ik_coord_options *o,
                          ik__hazards *hz, char *why, size_t why_len);
void ik__redis_client_close(ik__redis_client *rc);
/* The seam's cut (backend.h): every socket of rc is shut (a call blocked on one
 * fails at once, as one whose answer was lost) and every later get fails with
 * IK_ESTORE without connecting. Any thread. */
void ik__redis_client_cut(ik__redis_client *rc);

/* A connection for one call, its reads and writes timing out after timeout_ms:
 * an idle one, or a new one (AUTH, SELECT). NULL with IK_ESTORE and why if none
 * can be made (nothing was sent). Give it back with put; broken = 1 (an error
 * other than an error reply, or an answer not read) closes it. Any thread. */
struct redisContext *ik__redis_get(ik__redis_client *rc, int64_t timeout_ms, int *err, char *why,
                                   size_t why_len);
void ik__redis_put(ik__redis_client *rc, struct redisContext *ctx, int broken);

/* The hazard checks of Redis (docs/hazards.md) on ctx, now, in one round trip: the
 * evidence that also rides with every write (ik__redis_script): CONFIG GET
 * appendonly, appendfsync, no-appendfsync-on-rewrite, maxmemory, maxmemory-policy,
 * cluster-enabled, ROLE and INFO persistence. A setting CONFIG GET (or ROLE) cannot read is
 * unverifiable: refused, or a risk under --allow-unsafe-store. Installs the verdicts
 * in rc->hz (ik__hazards_update) and stamps ctx as checked. 0, IK_EUNSAFE (why names
 * the first refused setting), or IK_ESTORE (no answer: put ctx with broken = 1). */
int ik__redis_hazards(ik__redis_client *rc, struct redisContext *ctx, char *why, size_t why_len);

/* The value of field name ("NAME:VALUE" at the start of a line) in the text of an
 * INFO answer into val, cut to len - 1 bytes, without its line end; "" if absent.
 * Pure (tests/fuzz/fuzz_redis_info.c). */
void ik__redis_info_field(const char *info, const char *name, char *val, size_t len);

/* ik__redis_get for a write (a slot take, renewal or release, a counter create or
 * advance): on a connection whose last hazard check is due (ik__hazards_due) the
 * checks run first, and while a check is refused nothing is sent: NULL with
 * IK_EUNSAFE and why naming the setting (docs/hazards.md). */
struct redisContext *ik__redis_get_write(ik__redis_client *rc, int64_t timeout_ms, int *err,
                                         char *why, size_t why_len);

/* Runs script id with nk keys then na arguments (keys[], args[] NUL-terminated
 * strings), by EVALSHA, by EVAL if the server answers NOSCRIPT, inside MULTI ... EXEC
 * with the evidence of ik__redis_hazards (the proof: docs/hazards.md, "What rides
 * with each write"); with wait (and the client's wait_replicas > 0) it then sends
 * WAIT N, in the same round trip. 0 and *out (freed with freeReplyObject) once the
 * script answered under safe evidence; IK_EUNSAFE and *out when it ran but its
 * evidence is unsafe (why names the setting; the verdicts are installed): the caller
 * must not trust that write (a take is released, a renewal proves nothing, an
 * advance's range is a gap). *waited = the replicas WAIT counted (wait_replicas when
 * not asked). IK_EINDOUBT if it was sent and its answer is not known (the connection
 * is broken: put it with broken = 1); IK_ESTORE if it certainly did not run. why says
 * what happened. Where the evidence cannot be read (an ACL without CONFIG, accepted
 * with --allow-unsafe-store) the script goes alone. */
int ik__redis_script(ik__redis_client *rc, struct redisContext *ctx, int id, int nk,
                     const char *const *keys, int na, const char *const *args, int wait,
                     struct redisReply **out, int *waited, char *why, size_t why_len);

/* The key PREFIX + "idkeeper/" + APP + "/" + sub (sub may hold '/'), cut to len. */
void ik__redis_key(const ik__redis_client *rc, const char *app, const char *sub, char *out,
                   size_t len);

/* Logs a line through ik__logf; the same line as the last one logged, at most once
 * every 10 s per client. */
void ik__redis_log_limited(ik__redis_client *rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A redis:// backend object: what backend_redis.c allocates. */
typedef struct ik__redis_backend {
    ik__backend base;
    ik__redis_client rc;
} ik__redis_backend;

static inline ik__redis_backend *ik__redis_backend_of(ik__backend *be)
{
    return (ik__redis_backend *)be;
}

/* backend_redis.c: the ops tables, named by the registry (coord.c). */
extern const ik__backend_ops ik__backend_redis_ops, ik__backend_redis_unix_ops;

/* The seam's calls (backend.h) made below the ops table. */
const char *ik__redis_uri(const ik__backend *be);
int64_t ik__redis_slot_free_ms(ik__backend *be);
void ik__redis_session_desc(ik__backend *be, char *buf, size_t len);

int ik__redis_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                           char *why, size_t why_len);
int ik__redis_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                           int64_t *written_ms);
int ik__redis_slot_release(ik__backend *be, void *handle, int64_t record_ms);
void ik__redis_slot_forget(ik__backend *be, void *handle);
int ik__redis_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n);

#define IK__REDIS_KEY_MAX 512
#define IK__REDIS_TAG_TIMEOUT_MS 5000 /* one counter call waits this long for its answer */
/* backend_redis_tagmeta.c: a tag's hash key and counter key into meta and counter
 * (IK__REDIS_KEY_MAX each); a decimal int64 from s (0, or -1). */
void ik__redis_tag_keys(ik__redis_client *rc, const char *app, const char *name, char *meta,
                        char *counter);
int ik__redis_parse_i64(const char *s, int64_t *v);
int ik__redis_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len);
int ik__redis_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len);
int ik__redis_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n);
int ik__redis_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first);
/* The stop's settle of one writer's doubts of a tag (backend_redis_tags.c, RT5). */
void ik__redis_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                          int64_t deadline_ns);

/* The tag's counter key: PREFIX + TAG for the app "default" (so that an existing
 * INCR key of that name is the tag's counter, docs/redis.md "Adopting a key"),
 * PREFIX + APP + "/" + TAG for any other app ('/' is in no tag or app name). */
void ik__redis_counter_key(const ik__redis_client *rc, const char *app, const char *tag, char *out,
                           size_t len);

#endif
