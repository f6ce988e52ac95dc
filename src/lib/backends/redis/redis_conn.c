/* redis_conn.c: the Redis client layer of the redis:// backend (redis_conn.h):
 * connections through hiredis (a small pool of blocking contexts, each used by one
 * call at a time), the store hazard checks (docs/hazards.md, Redis), and running
 * the scripts of redis_scripts.c.
 *
 * Invariants
 *   C1. A context is used by one thread at a time: it leaves the pool for a call
 *       and comes back only if the call read every answer it asked for; anything
 *       else (an I/O error, a timeout, a protocol error) closes it, so a late answer
 *       is never read as the answer to a later command.
 *   C2. The password is sent only in AUTH and never copied into a message, a log
 *       line or a URI.
 *   C3. ik__redis_script reports 0 only when the script's own answer was read
 *       (and, with WAIT, WAIT's count); a request written whose answer was not read
 *       is IK_EINDOUBT, never IK_ESTORE.
 *   C4. Every connection is hazard-checked when it is made, and a write goes out
 *       only on a connection checked within the hazard interval (hazard.h), and
 *       only while no check is refused (ik__redis_get_write): a setting changed
 *       on a running Redis (CONFIG SET) stops the writes of every server within
 *       one interval, whichever pooled connection they use.
 *   C5. Every script runs inside MULTI ... EXEC with the evidence (append_evidence):
 *       one round trip, judged by the same function as a check (judge), and a
 *       script's answer is reported trusted (0) only when its own evidence is safe
 *       (HZ4 in hazard.h); else IK_EUNSAFE with the answer, for the caller to
 *       undo or log (docs/hazards.md, Redis, "What rides with each write").
 *       A script's evidence stamps its connection as checked.
 *
 * Threads: any. The pool is under rc->mu; no call holds it during I/O.
 */
#include "internal.h"
#include "redis_conn.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static struct timeval tv_of(int64_t ms)
{
    if (ms < 1) ms = 1;
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    return tv;
}

/* "HOST:PORT" or the socket path, for messages. */
static void where(const ik__redis_client *rc, char *buf, size_t len)
{
    if (rc->t.is_unix)
        snprintf(buf, len, "%s", rc->t.path);
    else
        snprintf(buf, len, "%s:%d", rc->t.host, rc->t.port);
}

/* Describes a context's I/O or protocol error into why; returns IK_ESTORE. */
static int ctx_fail(ik__redis_client *rc, redisContext *ctx, const char *doing, char *why,
                    size_t why_len)
{
    char w[300];
    where(rc, w, sizeof w);
    if (ctx->err == REDIS_ERR_PROTOCOL)
        return ik__fail(IK_ESTORE, why, why_len,
                        "%s does not speak the Redis protocol (%s, %s): is it a Redis server?", w,
                        doing, ctx->errstr);
    if (ctx->err == REDIS_ERR_EOF)
        return ik__fail(IK_ESTORE, why, why_len,
                        "redis at %s closed the connection (%s): is it a Redis server, and "
                        "does it accept this client?",
                        w, doing);
    if (ctx->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK))
        return ik__fail(IK_ESTORE, why, why_len, "redis at %s did not answer in time (%s)", w,
                        doing);
    return ik__fail(IK_ESTORE, why, why_len, "redis at %s: %s (%s)", w, ctx->errstr, doing);
}

/* Runs one command (argv) on ctx and checks its answer: 0 and *out (NULL to free
 * it), or IK_ESTORE with why. An error reply is IK_ESTORE with its text. */
static int command(ik__redis_client *rc, redisContext *ctx, int argc, const char **argv,
                   const size_t *lens, redisReply **out, char *why, size_t why_len)
{
    redisReply *r = redisCommandArgv(ctx, argc, argv, lens);
    if (!r) return ctx_fail(rc, ctx, argv[0], why, why_len);
    if (r->type == REDIS_REPLY_ERROR) {
        char w[300];
        where(rc, w, sizeof w);
        int e;
        if (!strncmp(r->str, "NOAUTH", 6))
            e = ik__fail(IK_ESTORE, why, why_len,
                         "redis at %s requires a password: give it with --password-file or "
                         "IDKEEPER_PASSWORD",
                         w);
        else if (!strncmp(r->str, "WRONGPASS", 9) || strstr(r->str, "invalid password") ||
                 strstr(r->str, "invalid username-password"))
            e = ik__fail(IK_ESTORE, why, why_len,
                         "redis at %s refused the password (%.120s): check --password-file or "
                         "IDKEEPER_PASSWORD%s",
                         w, r->str, rc->t.user[0] ? " and ?user=" : "");
        else
            e = ik__fail(IK_ESTORE, why, why_len, "redis at %s answered %s with an error: %.200s",
                         w, argv[0], r->str);
        freeReplyObject(r);
        return e;
    }
    if (out)
        *out = r;
    else
        freeReplyObject(r);
    return IK_OK;
}

/* The stamp of a connection's last hazard check (C4), under rc->mu: its slot in
 * rc->stamp, or -1. */
static int stamp_find(ik__redis_client *rc, const redisContext *ctx)
{
    for (int i = 0; i < IK__REDIS_STAMPS; i++)
        if (rc->stamp[i].ctx == ctx) return i;
    return -1;
}

/* Stamps ctx as checked at ns; a full table forgets its oldest stamp (that
 * connection is then due at its next write: safe, only a check more). */
static void stamp_set(ik__redis_client *rc, redisContext *ctx, int64_t ns)
{
    pthread_mutex_lock(&rc->mu);
    int at = stamp_find(rc, ctx);
    if (at < 0) at = stamp_find(rc, NULL); /* a free one */
    if (at < 0) {
        at = 0;
        for (int i = 1; i < IK__REDIS_STAMPS; i++)
            if (rc->stamp[i].ns < rc->stamp[at].ns) at = i;
    }
    rc->stamp[at].ctx = ctx;
    rc->stamp[at].ns = ns;
    pthread_mutex_unlock(&rc->mu);
}

static int64_t stamp_of(ik__redis_client *rc, const redisContext *ctx)
{
    pthread_mutex_lock(&rc->mu);
    int at = stamp_find(rc, ctx);
    int64_t ns = at < 0 ? 0 : rc->stamp[at].ns;
    pthread_mutex_unlock(&rc->mu);
    return ns;
}

/* Marks ctx out of the pool, so that a cut reaches its socket: 1, or 0 (nothing
 * marked) once the client is cut. A full table leaves ctx unmarked. */
static int live_add(ik__redis_client *rc, redisContext *ctx)
{
    pthread_mutex_lock(&rc->mu);
    int ok = !rc->cut;
    for (int i = 0; ok && i < IK__REDIS_LIVE; i++)
        if (!rc->live[i]) {
            rc->live[i] = ctx;
            break;
        }
    pthread_mutex_unlock(&rc->mu);
    return ok;
}

/* Under rc->mu: ctx is back in the pool, or freed. */
static void live_del_locked(ik__redis_client *rc, const redisContext *ctx)
{
    for (int i = 0; i < IK__REDIS_LIVE; i++)
        if (rc->live[i] == ctx) rc->live[i] = NULL;
}

void ik__redis_client_cut(ik__redis_client *rc)
{
    pthread_mutex_lock(&rc->mu);
    rc->cut = 1;
    for (int i = 0; i < IK__REDIS_LIVE; i++)
        if (rc->live[i] && rc->live[i]->fd >= 0) shutdown(rc->live[i]->fd, SHUT_RDWR);
    for (int i = 0; i < rc->nidle; i++)
        if (rc->idle[i]->fd >= 0) shutdown(rc->idle[i]->fd, SHUT_RDWR);
    pthread_mutex_unlock(&rc->mu);
}

/* Closes ctx and forgets its stamp (a later context at the same address is new). */
static void ctx_free(ik__redis_client *rc, redisContext *ctx)
{
    pthread_mutex_lock(&rc->mu);
    int at = stamp_find(rc, ctx);
    if (at >= 0) rc->stamp[at].ctx = NULL;
    live_del_locked(rc, ctx);
    pthread_mutex_unlock(&rc->mu);
    redisFree(ctx);
}

/* A new context: connected, authenticated, on its database, and hazard-checked
 * (C4): a Redis restarted meanwhile with other settings is refused like one at
 * start (the verdicts say so; ik__redis_get_write refuses the write). NULL with
 * why. */
static redisContext *connect_one(ik__redis_client *rc, int64_t timeout_ms, int *err, char *why,
                                 size_t why_len)
{
    struct timeval tv = tv_of(timeout_ms);
    redisContext *ctx = rc->t.is_unix ? redisConnectUnixWithTimeout(rc->t.path, tv)
                                      : redisConnectWithTimeout(rc->t.host, rc->t.port, tv);
    if (!ctx) {
        *err = IK_ENOMEM;
        return NULL;
    }
    char w[300];
    where(rc, w, sizeof w);
    if (ctx->err) {
        *err = ik__fail(IK_ESTORE, why, why_len, "cannot reach redis at %s: %s", w, ctx->errstr);
        redisFree(ctx);
        return NULL;
    }
    if (!live_add(rc, ctx)) {
        *err = ik__fail(IK_ESTORE, why, why_len, "redis at %s: the stop's deadline passed", w);
        redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, tv);
    int e = IK_OK;
    if (rc->password) {
        const char *argv[3] = {"AUTH", rc->t.user, rc->password};
        size_t lens[3] = {4, strlen(rc->t.user), strlen(rc->password)};
        if (rc->t.user[0])
            e = command(rc, ctx, 3, argv, lens, NULL, why, why_len);
        else {
            argv[1] = rc->password;
            lens[1] = lens[2];
            e = command(rc, ctx, 2, argv, lens, NULL, why, why_len);
        }
    }
    if (!e && rc->t.db) {
        char db[16];
        snprintf(db, sizeof db, "%d", rc->t.db);
        const char *argv[2] = {"SELECT", db};
        size_t lens[2] = {6, strlen(db)};
        e = command(rc, ctx, 2, argv, lens, NULL, why, why_len);
    }
    if (!e) {
        const char *argv[1] = {"PING"};
        size_t lens[1] = {4};
        redisReply *r = NULL;
        e = command(rc, ctx, 1, argv, lens, &r, why, why_len);
        if (!e && (!r || r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG")))
            e = ik__fail(IK_ESTORE, why, why_len,
                         "%s answered PING without PONG: is it a Redis server?", w);
        if (r) freeReplyObject(r);
    }
    if (!e && rc->hz) {
        e = ik__redis_hazards(rc, ctx, why, why_len);
        if (e == IK_EUNSAFE) e = IK_OK; /* a usable connection; writes are refused */
    }
    if (e) {
        ctx_free(rc, ctx);
        *err = e;
        return NULL;
    }
    pthread_mutex_lock(&rc->mu);
    rc->connects++;
    pthread_mutex_unlock(&rc->mu);
    return ctx;
}

/* 1 if an idle context has something to read (the server closed it, or said
 * something unasked): it cannot be trusted with a call. */
static int stale(redisContext *ctx)
{
    struct pollfd p = {.fd = ctx->fd, .events = POLLIN};
    return poll(&p, 1, 0) != 0;
}

redisContext *ik__redis_get(ik__redis_client *rc, int64_t timeout_ms, int *err, char *why,
                            size_t why_len)
{
    for (;;) {
        pthread_mutex_lock(&rc->mu);
        int cut = rc->cut;
        redisContext *ctx = rc->nidle && !cut ? rc->idle[--rc->nidle] : NULL;
        pthread_mutex_unlock(&rc->mu);
        if (cut) {
            *err = ik__fail(IK_ESTORE, why, why_len, "redis: the stop's deadline passed");
            return NULL;
        }
        if (!ctx) break;
        if (stale(ctx)) {
            ctx_free(rc, ctx);
            continue;
        }
        if (!live_add(rc, ctx)) { /* cut: nothing more is sent */
            ctx_free(rc, ctx);
            break;
        }
        redisSetTimeout(ctx, tv_of(timeout_ms));
        return ctx;
    }
    return connect_one(rc, timeout_ms, err, why, why_len);
}

void ik__redis_put(ik__redis_client *rc, redisContext *ctx, int broken)
{
    if (!ctx) return;
    pthread_mutex_lock(&rc->mu);
    live_del_locked(rc, ctx);
    pthread_mutex_unlock(&rc->mu);
    if (!broken && !ctx->err) {
        pthread_mutex_lock(&rc->mu);
        if (rc->nidle < IK__REDIS_POOL && !rc->cut) {
            rc->idle[rc->nidle++] = ctx;
            ctx = NULL;
        }
        pthread_mutex_unlock(&rc->mu);
    }
    if (ctx) ctx_free(rc, ctx);
}

redisContext *ik__redis_get_write(ik__redis_client *rc, int64_t timeout_ms, int *err, char *why,
                                  size_t why_len)
{
    redisContext *ctx = ik__redis_get(rc, timeout_ms, err, why, why_len);
    if (!ctx) return NULL;
    int e = IK_OK;
    if (ik__hazards_due(rc->hz, stamp_of(rc, ctx))) e = ik__redis_hazards(rc, ctx, why, why_len);
    if (e == IK_OK || e == IK_EUNSAFE) e = ik__hazards_refused(rc->hz, why, why_len);
    if (e) {
        ik__redis_put(rc, ctx, e != IK_EUNSAFE);
        *err = e;
        return NULL;
    }
    return ctx;
}

void ik__redis_key(const ik__redis_client *rc, const char *app, const char *sub, char *out,
                   size_t len)
{
    snprintf(out, len, "%sidkeeper/%s/%s", rc->t.prefix, app, sub);
}

void ik__redis_counter_key(const ik__redis_client *rc, const char *app, const char *tag, char *out,
                           size_t len)
{
    if (!strcmp(app, "default"))
        snprintf(out, len, "%s%s", rc->t.prefix, tag);
    else
        snprintf(out, len, "%s%s/%s", rc->t.prefix, app, tag);
}

void ik__redis_log_limited(ik__redis_client *rc, const char *fmt, ...)
{
    char line[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    int64_t now = ik__mono_ns();
    pthread_mutex_lock(&rc->mu);
    int go = strcmp(line, rc->last_log) != 0 || now - rc->last_err_log_ns >= INT64_C(10000000000);
    if (go) {
        rc->last_err_log_ns = now;
        snprintf(rc->last_log, sizeof rc->last_log, "%s", line);
    }
    pthread_mutex_unlock(&rc->mu);
    if (go) ik__logf("%s", line);
}

/* One CONFIG GET answer's value into val ("" if the server has no such setting);
 * 0, or -1 for an error reply (CONFIG refused: renamed, disabled or not allowed),
 * whose text goes into err. */
static int config_value(const redisReply *r, char *val, size_t len, char *err, size_t err_len)
{
    val[0] = '\0';
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err, err_len, "%.80s", r->str);
        return -1;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        snprintf(val, len, "%s", r->element[1]->str);
    return 0;
}

void ik__redis_info_field(const char *info, const char *name, char *val, size_t len)
{
    size_t nl = strlen(name);
    val[0] = '\0';
    for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, nl) || p[nl] != ':') continue;
        size_t n = strcspn(p + nl + 1, "\r\n");
        snprintf(val, len, "%.*s", (int)(n < len ? n : len - 1), p + nl + 1);
        return;
    }
}

/* The evidence (docs/hazards.md, Redis): the commands whose answers say whether
 * Redis keeps a write, in the order they are sent: CONFIG GET of the settings, ROLE,
 * INFO persistence. The interval's check sends them alone, a write inside its
 * MULTI ... EXEC (ik__redis_script). */
enum { H_AOF, H_FSYNC, H_REWRITE, H_MAXMEM, H_POLICY, H_CLUSTER, H_ROLE, H_INFO, H_N };
static const char *const h_config[H_ROLE] = {
    "appendonly", "appendfsync",      "no-appendfsync-on-rewrite",
    "maxmemory",  "maxmemory-policy", "cluster-enabled"};

/* How one evidence is asked: one CONFIG GET of every setting (Redis 7 takes several
 * names; rc->one_get) or one per setting; with INFO persistence or without it. A
 * check always asks INFO; a write asks it only while the append-only file is not
 * trusted (rc->aof_trusted), since INFO shows nothing else a CONFIG GET does not
 * that can change between two writes and that Redis does not enforce itself (a
 * failed AOF write makes Redis refuse writes under appendfsync always). */
typedef struct ev_shape {
    int one_get, info;
} ev_shape;

/* The commands, so the answers, of an evidence of shape sh. */
static int ev_count(ev_shape sh)
{
    return (sh.one_get ? 1 : H_ROLE) + 1 + (sh.info ? 1 : 0);
}

/* The commands of an evidence of shape sh, formatted once (ev_format), appended to a
 * write's MULTI as they are: a write formats nothing of them. */
static int ev_format(ev_shape sh, char **out)
{
    const char *argv[2 + H_ROLE] = {"CONFIG", "GET"};
    char *part[H_ROLE + 2] = {0};
    int len[H_ROLE + 2], n = 0, total = 0;
    if (sh.one_get) {
        for (int i = 0; i < H_ROLE; i++)
            argv[2 + i] = h_config[i];
        len[n] = redisFormatCommandArgv(&part[n], 2 + H_ROLE, argv, NULL);
        n++;
    } else {
        for (int i = 0; i < H_ROLE; i++, n++) {
            argv[2] = h_config[i];
            len[n] = redisFormatCommandArgv(&part[n], 3, argv, NULL);
        }
    }
    const char *role[] = {"ROLE"}, *info[] = {"INFO", "persistence"};
    len[n] = redisFormatCommandArgv(&part[n], 1, role, NULL);
    n++;
    if (sh.info) {
        len[n] = redisFormatCommandArgv(&part[n], 2, info, NULL);
        n++;
    }
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= part[i] != NULL && len[i] > 0;
    for (int i = 0; ok && i < n; i++)
        total += len[i];
    char *buf = ok ? malloc((size_t)total + 1) : NULL;
    for (int i = 0, at = 0; buf && i < n; at += len[i], i++)
        memcpy(buf + at, part[i], (size_t)len[i]);
    for (int i = 0; i < n; i++)
        redisFreeCommand(part[i]);
    *out = buf;
    return buf ? total : -1;
}

static void append_evidence(ik__redis_client *rc, redisContext *ctx, ev_shape sh)
{
    const char *pre = rc->ev_cmd[sh.one_get][sh.info];
    if (pre) {
        redisAppendFormattedCommand(ctx, pre, (size_t)rc->ev_len[sh.one_get][sh.info]);
        return;
    }
    if (sh.one_get) {
        const char *argv[2 + H_ROLE] = {"CONFIG", "GET"};
        for (int i = 0; i < H_ROLE; i++)
            argv[2 + i] = h_config[i];
        redisAppendCommandArgv(ctx, 2 + H_ROLE, argv, NULL);
    } else {
        for (int i = 0; i < H_ROLE; i++)
            redisAppendCommand(ctx, "CONFIG GET %s", h_config[i]);
    }
    redisAppendCommand(ctx, "ROLE");
    if (sh.info) redisAppendCommand(ctx, "INFO persistence");
}

/* The settings' values from the CONFIG GET answer(s) of shape sh into v, bad, err
 * (indexed as h_config). */
static void config_values(const redisReply *const *r, ev_shape sh, char v[][96], int *bad,
                          char err[][96])
{
    if (!sh.one_get) {
        for (int i = 0; i < H_ROLE; i++)
            bad[i] = config_value(r[i], v[i], sizeof v[i], err[i], sizeof err[i]);
        return;
    }
    const redisReply *c = r[0]; /* [NAME, VALUE, ...], in any order */
    for (int i = 0; i < H_ROLE; i++) {
        v[i][0] = '\0';
        bad[i] = c->type == REDIS_REPLY_ERROR ? -1 : 0;
        if (bad[i]) snprintf(err[i], sizeof err[i], "%.80s", c->str);
        for (size_t j = 0; !bad[i] && c->type == REDIS_REPLY_ARRAY && j + 1 < c->elements; j += 2)
            if (c->element[j]->type == REDIS_REPLY_STRING &&
                c->element[j + 1]->type == REDIS_REPLY_STRING &&
                !strcmp(c->element[j]->str, h_config[i]))
                snprintf(v[i], sizeof v[i], "%s", c->element[j + 1]->str);
    }
}

#define UNREADABLE_FIX                                                                             \
    "cannot be read (%.60s); allow CONFIG GET, ROLE, INFO to idkeeper (no rename-command; ACL "    \
    "+config|get +role +info) or check docs/hazards.md's rows by hand, and pass "                  \
    "--allow-unsafe-store"

/* One answer to the evidence, read (ev_read): what the rows are made of. Zeroed
 * before it is filled, so that two answers compare with memcmp. */
typedef struct ev_raw {
    char v[H_N][96], err[H_N][96];
    int bad[H_N];
    int info; /* INFO was asked */
    char aof_on[8], rw_now[8], rw_next[8], wstat[16];
} ev_raw;

/* Reads the answer r[ev_count(sh)] to an evidence of shape sh into *x. */
static void ev_read(redisReply *const *r, ev_shape sh, ev_raw *x)
{
    memset(x, 0, sizeof *x);
    char(*v)[96] = x->v, (*err)[96] = x->err;
    int *bad = x->bad;
    config_values((const redisReply *const *)r, sh, v, bad, err);
    int at = sh.one_get ? 1 : H_ROLE;
    /* ROLE: ["master", ...], ["slave", HOST, PORT, ...], ["sentinel", ...] */
    const redisReply *ro = r[at];
    if (ro->type == REDIS_REPLY_ERROR) {
        snprintf(err[H_ROLE], sizeof err[H_ROLE], "%.80s", ro->str);
        bad[H_ROLE] = -1;
    } else if (ro->type == REDIS_REPLY_ARRAY && ro->elements >= 1 &&
               ro->element[0]->type == REDIS_REPLY_STRING) {
        if (!strcmp(ro->element[0]->str, "slave") && ro->elements >= 3 &&
            ro->element[1]->type == REDIS_REPLY_STRING &&
            ro->element[2]->type == REDIS_REPLY_INTEGER)
            snprintf(v[H_ROLE], sizeof v[H_ROLE], "replica of %.60s:%lld", ro->element[1]->str,
                     (long long)ro->element[2]->integer);
        else
            snprintf(v[H_ROLE], sizeof v[H_ROLE], "%.40s", ro->element[0]->str);
    }
    /* INFO persistence: whether the append-only file is complete, and writable */
    const redisReply *in = sh.info ? r[at + 1] : NULL;
    x->info = in != NULL;
    bad[H_INFO] = in && in->type != REDIS_REPLY_STRING;
    if (!in) {
        snprintf(x->aof_on, sizeof x->aof_on, "1"); /* not asked: what was seen last holds */
    } else if (bad[H_INFO]) {
        snprintf(err[H_INFO], sizeof err[H_INFO], "%.80s",
                 in->type == REDIS_REPLY_ERROR ? in->str : "not a text");
    } else {
        ik__redis_info_field(in->str, "aof_enabled", x->aof_on, sizeof x->aof_on);
        ik__redis_info_field(in->str, "aof_rewrite_in_progress", x->rw_now, sizeof x->rw_now);
        ik__redis_info_field(in->str, "aof_rewrite_scheduled", x->rw_next, sizeof x->rw_next);
        ik__redis_info_field(in->str, "aof_last_write_status", x->wstat, sizeof x->wstat);
    }
}

/* The rows of one answer read (x) into row[] (returns how many: without INFO, no
 * aof-* rows), and whether any could not be read (*blind). aof_trusted: the
 * append-only file had been seen complete (on, no rewrite pending) since it was
 * last seen off; updated. */
static int evidence_rows(ik__hazards *hz, const ev_raw *x, int *aof_trusted, int *blind,
                         ik_hazard *row)
{
    const char(*v)[96] = x->v, (*err)[96] = x->err;
    const int *bad = x->bad;
    const char *aof_on = x->aof_on, *rw_now = x->rw_now, *rw_next = x->rw_next, *wstat = x->wstat;
    int in = x->info;
    int rewriting = !strcmp(rw_now, "1") || !strcmp(rw_next, "1");
    if (bad[H_INFO] || bad[H_AOF] || strcmp(v[H_AOF], "yes") != 0 || strcmp(aof_on, "1") != 0)
        *aof_trusted = 0; /* off (or unknown): its next rewrite is a first one */
    else if (in && !rewriting)
        *aof_trusted = 1;
    int first_rewrite = !*aof_trusted && !strcmp(v[H_AOF], "yes") && rewriting;
    *blind = 0;
    for (int i = 0; i < H_N; i++)
        *blind |= bad[i] != 0;

    int n = 0;
    /* an unreadable setting is unverifiable: refused, or a risk (hazard.h) */
#define ROW(I, CHECK, VALUE, UNSAFE, ...)                                                          \
    do {                                                                                           \
        if (bad[I])                                                                                \
            ik__hazard_row(hz, &row[n++], CHECK, "unreadable", 1, UNREADABLE_FIX, err[I]);         \
        else                                                                                       \
            ik__hazard_row(hz, &row[n++], CHECK, VALUE, UNSAFE, __VA_ARGS__);                      \
    } while (0)
    ROW(H_AOF, "appendonly", v[H_AOF], strcmp(v[H_AOF], "yes") != 0,
        "set appendonly yes (redis.conf, and CONFIG SET on a running Redis): without the "
        "append-only file a restart loses the writes since the last RDB snapshot: counters go "
        "back, slot keys and time records vanish");
    if (in)
        ROW(H_INFO, "aof-rewrite",
            first_rewrite ? "the first since appendonly yes, running"
            : rewriting   ? "running"
                          : "none",
            first_rewrite,
            "wait for it to end (INFO persistence: aof_rewrite_in_progress:0): until Redis has "
            "written its first append-only file since appendonly yes, a crash brings back the old "
            "file (or none) and loses every write since");
    if (in)
        ROW(H_INFO, "aof-last-write", wstat[0] ? wstat : "?",
            !strcmp(aof_on, "1") && strcmp(wstat, "ok"),
            "free the disk of Redis's append-only file (INFO persistence: aof_last_write_status): "
            "Redis could not write it");
    ROW(H_FSYNC, "appendfsync", v[H_FSYNC], strcmp(v[H_FSYNC], "always") != 0,
        "set appendfsync always: with everysec or no, a crash of Redis or of its host loses the "
        "last acknowledged writes");
    ROW(H_REWRITE, "no-appendfsync-on-rewrite", v[H_REWRITE], strcmp(v[H_REWRITE], "no") != 0,
        "set no-appendfsync-on-rewrite no: with yes, Redis skips fsync while a rewrite or BGSAVE "
        "child runs, and a crash then loses acknowledged writes");
    /* maxmemory-policy only matters with a limit: one row, both values */
    char pol[96];
    snprintf(pol, sizeof pol, "%.40s (maxmemory %.40s)", v[H_POLICY], v[H_MAXMEM]);
    int evicts = strcmp(v[H_MAXMEM], "0") != 0 && strcmp(v[H_POLICY], "noeviction") != 0;
    if (bad[H_MAXMEM] || bad[H_POLICY])
        ik__hazard_row(hz, &row[n++], "maxmemory-policy", "unreadable", 1, UNREADABLE_FIX,
                       bad[H_MAXMEM] ? err[H_MAXMEM] : err[H_POLICY]);
    else
        ik__hazard_row(hz, &row[n++], "maxmemory-policy", pol, evicts,
                       "set maxmemory-policy noeviction (or maxmemory 0): an eviction policy "
                       "deletes slot keys, time records and counters (every volatile-* one "
                       "the slot keys, which have a TTL), and duplicate IDs follow");
    ROW(H_ROLE, "role", v[H_ROLE], strcmp(v[H_ROLE], "master") != 0,
        "point idkeeper at the primary: a replica's own writes vanish at its next resync "
        "with the primary");
    /* a setting this server may not know (before Redis 3): "" is no cluster */
    ROW(H_CLUSTER, "cluster-enabled", v[H_CLUSTER][0] ? v[H_CLUSTER] : "no",
        !strcmp(v[H_CLUSTER], "yes"),
        "point idkeeper at a standalone Redis (or a primary with replicas): a Redis Cluster "
        "node refuses the scripts' keys of other hash slots (CROSSSLOT), and idkeeper does not "
        "follow a cluster's slots or its failovers");
#undef ROW
    return n;
}

#define H_ROWS 9 /* the rows evidence_rows fills */

/* Judges one answer to the evidence, read on ctx whose check number is seq: installs
 * its rows (C4: only over those of checks begun before it) and stamps ctx as checked.
 * An answer the same as the last one installed (and the same trust in the AOF) is
 * judged as that one was, without building its rows again: most writes' are.
 * Returns this evidence's own verdict (ik__hazards_proof): 0, or IK_EUNSAFE with why
 * naming the first refused setting. */
static int judge(ik__redis_client *rc, redisContext *ctx, redisReply *const *r, ev_shape sh,
                 uint64_t seq, int64_t now, char *why, size_t why_len)
{
    ev_raw *x = malloc(sizeof *x);
    if (!x) return ik__fail(IK_ENOMEM, why, why_len, "no memory for the store's evidence");
    ev_read(r, sh, x);
    ik_hazard row[H_ROWS];
    int rc_proof;
    pthread_mutex_lock(&rc->mu);
    int late = seq < rc->checks_installed;
    int trusted = rc->aof_trusted, blind = 0;
    struct ik__redis_judged *j = &rc->judged;
    if (j->raw && j->trusted_in == trusted && !memcmp(x, j->raw, sizeof *x)) {
        /* the same answer as the last one judged: the same verdict, rows installed */
        if (!late) rc->checks_installed = seq;
        rc_proof = j->unsafe ? ik__fail(IK_EUNSAFE, why, why_len, "%s", j->why) : IK_OK;
        pthread_mutex_unlock(&rc->mu);
        free(x);
        stamp_set(rc, ctx, now);
        return rc_proof;
    }
    int n = evidence_rows(rc->hz, x, &trusted, &blind, row);
    char pwhy[sizeof j->why] = "";
    rc_proof = ik__hazards_proof(rc->hz, row, (size_t)n, pwhy, sizeof pwhy);
    if (!late) {
        rc->checks_installed = seq;
        ik__hazards_update(rc->hz, row, (size_t)n, NULL, 0);
        j->trusted_in = rc->aof_trusted;
        rc->aof_trusted = trusted;
        rc->blind = blind;
        j->unsafe = rc_proof != IK_OK;
        memcpy(j->why, pwhy, sizeof j->why);
        free(j->raw);
        j->raw = x; /* kept */
        x = NULL;
    }
    pthread_mutex_unlock(&rc->mu);
    free(x);
    stamp_set(rc, ctx, now);
    if (rc_proof) ik__fail(rc_proof, why, why_len, "%s", pwhy);
    return rc_proof;
}

int ik__redis_hazards(ik__redis_client *rc, redisContext *ctx, char *why, size_t why_len)
{
    pthread_mutex_lock(&rc->mu);
    uint64_t seq = ++rc->checks_begun;
    ev_shape sh = {rc->one_get, 1};
    pthread_mutex_unlock(&rc->mu);
    append_evidence(rc, ctx, sh);
    redisReply *r[H_N] = {0};
    int e = IK_OK, n = ev_count(sh);
    for (int i = 0; i < n && !e; i++)
        if (redisGetReply(ctx, (void **)&r[i]) != REDIS_OK)
            e = ctx_fail(rc, ctx, "the hazard checks", why, why_len);
    if (!e) {
        judge(rc, ctx, r, sh, seq, ik__mono_ns(), NULL, 0);
        e = ik__hazards_refused(rc->hz, why, why_len);
    }
    for (int i = 0; i < n; i++)
        if (r[i]) freeReplyObject(r[i]);
    return e;
}

/* Appends EVALSHA (or EVAL with the source). */
static void append_script(ik__redis_client *rc, redisContext *ctx, int id, int by_sha, int nk,
                          const char *const *keys, int na, const char *const *args)
{
    const char *argv[32];
    size_t lens[32];
    char nks[8];
    snprintf(nks, sizeof nks, "%d", nk);
    int n = 0;
    argv[n++] = by_sha ? "EVALSHA" : "EVAL";
    argv[n++] = by_sha ? rc->sha[id] : ik__redis_lua[id];
    argv[n++] = nks;
    for (int i = 0; i < nk && n < 32; i++)
        argv[n++] = keys[i];
    for (int i = 0; i < na && n < 32; i++)
        argv[n++] = args[i];
    for (int i = 0; i < n; i++)
        lens[i] = strlen(argv[i]);
    redisAppendCommandArgv(ctx, n, argv, lens);
}

/* One sending of a script (with the proof: MULTI, the evidence, the script, EXEC;
 * then WAIT if asked) and its answers: 0 with *r the script's answer and ev[] the
 * evidence's (proof) or NULLs; IK_EINDOUBT when an answer was not read (C3);
 * IK_ESTORE when Redis refused the transaction (nothing ran). */
static int send_script(ik__redis_client *rc, redisContext *ctx, int id, int by_sha, int proof,
                       ev_shape sh, int nk, const char *const *keys, int na,
                       const char *const *args, int do_wait, redisReply **r, redisReply **ev,
                       redisReply **wr, char *why, size_t why_len)
{
    int nev = ev_count(sh);
    if (proof) {
        redisAppendCommand(ctx, "MULTI");
        append_evidence(rc, ctx, sh);
    }
    append_script(rc, ctx, id, by_sha, nk, keys, na, args);
    if (proof) redisAppendCommand(ctx, "EXEC");
    if (do_wait)
        redisAppendCommand(ctx, "WAIT %d %d", rc->wait_replicas,
                           (int)(rc->lease_ttl_ms / 5 > 100 ? rc->lease_ttl_ms / 5 : 100));
    char queued[200] = "";
    /* MULTI's +OK and each command's +QUEUED (or its error, which aborts EXEC) */
    for (int i = 0; proof && i < nev + 2; i++) {
        redisReply *q = NULL;
        if (redisGetReply(ctx, (void **)&q) != REDIS_OK) {
            ctx_fail(rc, ctx, "a transaction", why, why_len);
            return IK_EINDOUBT;
        }
        if (q->type == REDIS_REPLY_ERROR && !queued[0])
            snprintf(queued, sizeof queued, "%.190s", q->str);
        freeReplyObject(q);
    }
    redisReply *x = NULL;
    if (redisGetReply(ctx, (void **)&x) != REDIS_OK) {
        ctx_fail(rc, ctx, proof ? "EXEC" : "a script", why, why_len);
        return IK_EINDOUBT; /* C3: written, its answer not read */
    }
    if (do_wait && redisGetReply(ctx, (void **)wr) != REDIS_OK) {
        freeReplyObject(x);
        ctx_fail(rc, ctx, "WAIT", why, why_len);
        return IK_EINDOUBT;
    }
    if (!proof) {
        *r = x;
        return IK_OK;
    }
    if (x->type != REDIS_REPLY_ARRAY || x->elements != (size_t)nev + 1) {
        char w[300];
        where(rc, w, sizeof w);
        int e = ik__fail(IK_ESTORE, why, why_len, "redis at %s refused the transaction: %.200s", w,
                         queued[0]                      ? queued
                         : x->type == REDIS_REPLY_ERROR ? x->str
                                                        : "?");
        freeReplyObject(x);
        if (*wr) freeReplyObject(*wr);
        *wr = NULL;
        return e;
    }
    for (int i = 0; i < nev; i++) { /* detached: each is freed on its own */
        ev[i] = x->element[i];
        x->element[i] = NULL;
    }
    *r = x->element[nev];
    x->element[nev] = NULL;
    freeReplyObject(x);
    return IK_OK;
}

int ik__redis_script(ik__redis_client *rc, redisContext *ctx, int id, int nk,
                     const char *const *keys, int na, const char *const *args, int wait,
                     redisReply **out, int *waited, char *why, size_t why_len)
{
    *out = NULL;
    if (waited) *waited = rc->wait_replicas;
    if (nk + na > 29) return ik__fail(IK_EINVAL, why, why_len, "too many script arguments");
    int do_wait = wait && rc->wait_replicas > 0;
    pthread_mutex_lock(&rc->mu);
    int proof = !rc->blind;
    uint64_t seq = proof ? ++rc->checks_begun : 0;
    ev_shape sh = {rc->one_get, !rc->aof_trusted};
    pthread_mutex_unlock(&rc->mu);
    for (int by_sha = 1; by_sha >= 0; by_sha--) {
        redisReply *r = NULL, *wr = NULL, *ev[H_N] = {0};
        int e = send_script(rc, ctx, id, by_sha, proof, sh, nk, keys, na, args, do_wait, &r, ev,
                            &wr, why, why_len);
        if (e) return e;
        int64_t now = ik__mono_ns();
        if (r->type == REDIS_REPLY_ERROR && by_sha && !strncmp(r->str, "NOSCRIPT", 8)) {
            freeReplyObject(r); /* not run: the server lost its script cache */
            if (wr) freeReplyObject(wr);
            for (int i = 0; i < H_N; i++)
                if (ev[i]) freeReplyObject(ev[i]);
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            char w[300];
            where(rc, w, sizeof w);
            e = ik__fail(IK_ESTORE, why, why_len, "redis at %s: %.200s", w, r->str);
        } else if (do_wait) {
            if (wr->type == REDIS_REPLY_INTEGER) {
                if (waited) *waited = (int)wr->integer;
            } else {
                e = ik__fail(IK_EINDOUBT, why, why_len, "WAIT answered %.100s",
                             wr->type == REDIS_REPLY_ERROR ? wr->str : "no count");
                if (waited) *waited = 0;
            }
        }
        /* the proof: this write is trusted only on its own evidence (HZ4) */
        if (proof && e != IK_ESTORE) {
            int pe = judge(rc, ctx, ev, sh, seq, now, e ? NULL : why, e ? 0 : why_len);
            if (pe && !e) e = pe;
        }
        for (int i = 0; i < H_N; i++)
            if (ev[i]) freeReplyObject(ev[i]);
        if (wr) freeReplyObject(wr);
        if (e == IK_ESTORE) {
            freeReplyObject(r);
            return e;
        }
        *out = r;
        return e;
    }
    return IK_ESTORE; /* not reached */
}

int ik__redis_client_open(ik__redis_client *rc, const char *uri, const ik_coord_options *o,
                          ik__hazards *hz, char *why, size_t why_len)
{
    memset(rc, 0, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
    int e = ik__redis_uri_parse(uri, &rc->t, why, why_len);
    if (e) return e;
    if (ik__redis_uri_format(&rc->t, rc->uri, sizeof rc->uri) < 0)
        return ik__fail(IK_EURI, why, why_len, "redis URI too long");
    const char *pw = o->password && o->password[0] ? o->password : rc->t.password;
    if (pw[0] && !(rc->password = strdup(pw))) return IK_ENOMEM;
    const char *hold = getenv("IDKEEPER_TEST_REDIS_WRITE_HOLD"); /* tests only */
    if (hold && *hold && !(rc->test_hold = strdup(hold))) return IK_ENOMEM;
    memset(rc->t.password, 0, sizeof rc->t.password); /* kept once, in rc->password */
    rc->lease_ttl_ms = o->lease_ttl_ms > 0 ? o->lease_ttl_ms : 10000;
    if (rc->lease_ttl_ms < 300 || rc->lease_ttl_ms > 3600000)
        return ik__fail(IK_EINVAL, why, why_len, "lease TTL must be 300 to 3600000 ms");
    /* a store option, checked by its row (backend_redis.c) */
    rc->wait_replicas = (int)ik__store_opt_int(o, "wait-replicas", 0);
    ik__hazards_init(hz, o, rc->lease_ttl_ms, rc->uri);
    rc->hz = hz;
    int64_t t = ik__proof_slack_ms(rc->lease_ttl_ms);
    if (t < 2000) t = 2000;
    redisContext *ctx = connect_one(rc, t, &e, why, why_len); /* checks the hazards */
    if (!ctx) return e;
    char inner[600];
    e = ik__hazards_refused(hz, inner, sizeof inner);
    if (e && o->check_only) e = IK_OK; /* idkeeper check reports it; writes stay refused */
    if (e)
        ik__fail(e, why, why_len,
                 "%s (docs/hazards.md; --allow-unsafe-store serves anyway, without this "
                 "guarantee)",
                 inner);
    if (!e) { /* Redis 7 takes several names in one CONFIG GET: a cheaper evidence */
        redisReply *r = redisCommand(ctx, "CONFIG GET appendonly appendfsync");
        rc->one_get = r && r->type == REDIS_REPLY_ARRAY && r->elements == 4;
        if (r) freeReplyObject(r);
        if (!r) e = ctx_fail(rc, ctx, "CONFIG GET", why, why_len);
    }
    for (int one = 0; !e && one < 2; one++)
        for (int info = 0; !e && info < 2; info++) {
            ev_shape sh = {one, info};
            rc->ev_len[one][info] = ev_format(sh, &rc->ev_cmd[one][info]);
            if (rc->ev_len[one][info] < 0) e = IK_ENOMEM;
        }
    for (int i = 0; !e && i < IK__RS_COUNT; i++) {
        const char *argv[3] = {"SCRIPT", "LOAD", ik__redis_lua[i]};
        size_t lens[3] = {6, 4, strlen(ik__redis_lua[i])};
        redisReply *r = NULL;
        e = command(rc, ctx, 3, argv, lens, &r, why, why_len);
        if (!e && (!r || r->type != REDIS_REPLY_STRING || r->len != 40))
            e = ik__fail(IK_ESTORE, why, why_len, "SCRIPT LOAD answered no SHA1");
        if (!e && r) memcpy(rc->sha[i], r->str, 41);
        if (r) freeReplyObject(r);
    }
    ik__redis_put(rc, ctx, e != IK_OK);
    return e;
}

void ik__redis_client_close(ik__redis_client *rc)
{
    while (rc->nidle)
        ctx_free(rc, rc->idle[--rc->nidle]);
    free(rc->judged.raw);
    rc->judged.raw = NULL;
    for (int i = 0; i < 4; i++) {
        free(rc->ev_cmd[i / 2][i % 2]);
        rc->ev_cmd[i / 2][i % 2] = NULL;
    }
    if (rc->password) {
        memset(rc->password, 0, strlen(rc->password));
        free(rc->password);
    }
    rc->password = NULL;
    free(rc->test_hold);
    rc->test_hold = NULL;
    pthread_mutex_destroy(&rc->mu);
}
