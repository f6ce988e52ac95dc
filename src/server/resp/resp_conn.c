/* resp_conn.c: the Redis protocol (RESP) on the connection core (conn.h), on the
 * same loops and under the same limits as HTTP (max-connections, read and idle
 * timeouts, the pipeline's queued answers, max-header-bytes as the most bytes of
 * one command) and the same shutdown. Commands run in resp_cmds.c; parsing is
 * resp.c's.
 *
 * What RESP adds to the core:
 * - A ready answer behind a pending one is appended to the queue's last held entry
 *   (a long pipeline behind one pending answer costs one allocation, not one per
 *   command).
 * - Until an INCR has learnt its tag's kind (its answer is the connection's gate),
 *   the commands behind it wait: else a later INCR of the same tag could be
 *   committed before it, and one client's pipelined INCRs would not answer
 *   increasing IDs.
 * - QUIT and protocol errors answer, then close (lingering, as HTTP's final
 *   answers); a refused connection hears why first, as from Redis.
 */
#include "resp_conn.h"
#include "conn.h"
#include "log.h"
#include "resp_cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IK_RESP_MAX_ARGS 256 /* arguments of one command */
#define IK_RESP_AUTH_MS 5000 /* with a token: a connection must authenticate this soon */

typedef struct resp_conn {
    ik__conn c; /* first: the core's part */
    ik__respp rp;
    ik__rsess s;
    uint64_t started; /* loop ms the current partial command began (0: none) */
    uint64_t auth_by; /* loop ms by which it must authenticate (0: it has, or no token) */
    int counted;      /* counted in srv->unauthed */
    char arg_inline[256];
} resp_conn;

static atomic_uint_fast64_t next_client_id = 1;

static resp_conn *resp_of(ik__conn *c)
{
    return (resp_conn *)c;
}

/* An error answer after which nothing more is read (protocol error, timeout). */
static void rconn_fail(resp_conn *r, const char *msg)
{
    ik__conn *c = &r->c;
    ik__buf *dst = ik__conn_ready(c);
    size_t before = dst->len;
    ik__resp_error(dst, "ERR %s", msg);
    ik__conn_ready_done(c, dst, before);
    ik__count(&c->w->m.resp_cmds[ik__resp_ncmds][1]);
    c->close_after = 1;
    r->started = 0;
}

/* ---- connections that have not authenticated --------------------------------------------
 *
 * With a token set, a RESP connection that has not authenticated (since accept, or
 * since a RESET) is counted in srv->unauthed: at most half of --max-connections
 * such connections are admitted (the rest are refused as over the limit), and each
 * must authenticate within IK_RESP_AUTH_MS (or the idle timeout, if shorter) or be
 * closed. So clients that never authenticate cannot hold every connection the
 * server allows, and the HTTP API and its health checks stay reachable
 * (docs/resp.md, "Limits, timeouts, shutdown"). */

static int unauthed_max(const ik__server *srv)
{
    int half = srv->cfg->max_connections / 2;
    return half > 0 ? half : 1;
}

/* Brings r's count in srv->unauthed and its deadline in line with r->s.authed;
 * returns 1 if that would go over the share (nothing counted then). */
static int unauthed_track(resp_conn *r)
{
    ik__server *srv = r->c.w->srv;
    int want = !r->s.authed;
    if (want == r->counted) return 0;
    if (want) {
        int n = atomic_fetch_add_explicit(&srv->unauthed, 1, memory_order_relaxed) + 1;
        if (n > unauthed_max(srv)) {
            atomic_fetch_sub_explicit(&srv->unauthed, 1, memory_order_relaxed);
            return 1;
        }
        uint64_t ms = (uint64_t)srv->idle_timeout_ms < IK_RESP_AUTH_MS
                          ? (uint64_t)srv->idle_timeout_ms
                          : IK_RESP_AUTH_MS;
        r->auth_by = uv_now(&r->c.w->loop) + ms;
    } else {
        atomic_fetch_sub_explicit(&srv->unauthed, 1, memory_order_relaxed);
        r->auth_by = 0;
    }
    r->counted = want;
    return 0;
}

/* Runs the complete command in the parser. */
static void run_command(resp_conn *r)
{
    ik__conn *c = &r->c;
    ik__worker *w = c->w;
    ik__rcall call;
    call.w = w;
    call.s = &r->s;
    call.kinds = w->rkinds;
    call.rp = &r->rp;
    call.pend = NULL;
    if (!c->pend_head) {
        call.out = &c->out;
        ik__resp_dispatch(&call);
    } else { /* behind a pending answer: rendered aside, then queued */
        w->body.len = 0;
        call.out = &w->body;
        ik__resp_dispatch(&call);
        if (w->body.len) {
            ik__buf *dst = ik__conn_ready(c);
            size_t before = dst->len;
            ik__buf_append(dst, w->body.p, w->body.len);
            ik__conn_ready_done(c, dst, before);
        }
        if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    }
    if (call.pend) {
        ik__conn_push(c, call.pend);
        if (call.pend->rflip == IK_RFLIP_GUESS) c->gate = call.pend;
    }
    if (r->s.quit) c->close_after = 1;
    if (r->counted == !r->s.authed) return; /* the hot path: nothing changed */
    if (unauthed_track(r)) {                /* RESET past the share: as if refused now */
        ik__buf *dst = ik__conn_ready(c);
        size_t before = dst->len;
        ik__resp_error(dst, "ERR max number of clients reached");
        ik__conn_ready_done(c, dst, before);
        c->close_after = 1;
    }
}

/* ---- the protocol's hooks ------------------------------------------------------------------ */

static void resp_init(ik__conn *c)
{
    resp_conn *r = resp_of(c);
    ik__server *srv = c->w->srv;
    ik__respp_init(&r->rp, r->arg_inline, sizeof r->arg_inline, IK_RESP_MAX_ARGS,
                   srv->max_header_bytes);
    r->s.id = atomic_fetch_add(&next_client_id, 1);
    r->s.proto = 2;
    r->s.authed = srv->token == NULL;
    r->s.since_ms = ik__now_ms();
}

static void resp_free(ik__conn *c)
{
    resp_conn *r = resp_of(c);
    if (r->counted) atomic_fetch_sub_explicit(&c->w->srv->unauthed, 1, memory_order_relaxed);
    r->counted = 0;
    ik__respp_free(&r->rp);
}

static void addr_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
    char host[INET6_ADDRSTRLEN + 1] = "?";
    int port = 0;
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        uv_ip4_name(a, host, sizeof host);
        port = ntohs(a->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        uv_ip6_name(a, host, sizeof host);
        port = ntohs(a->sin6_port);
    }
    snprintf(out, len, "%s:%d", host, port);
}

/* Admits c within the unauthenticated share (above), and notes CLIENT INFO's
 * addresses. */
static int resp_admit(ik__conn *c)
{
    resp_conn *r = resp_of(c);
    if (unauthed_track(r)) return 1;
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0)
        addr_text(&ss, r->s.peer, sizeof r->s.peer);
    sl = sizeof ss;
    if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &sl) == 0)
        addr_text(&ss, r->s.local, sizeof r->s.local);
    return 0;
}

/* As Redis: say why, then close. */
static void resp_refused(ik__conn *c, int draining)
{
    static const char msg[] = "-ERR max number of clients reached\r\n";
    static const char bye[] = "-TRYAGAIN this server is shutting down; ask another\r\n";
    uv_buf_t b = draining ? uv_buf_init((char *)bye, sizeof bye - 1)
                          : uv_buf_init((char *)msg, sizeof msg - 1);
    uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
}

/* Parses data[0..len-1], running every complete command. */
static size_t resp_feed(ik__conn *c, const char *data, size_t len)
{
    resp_conn *r = resp_of(c);
    size_t off = 0;
    while (off < len && !c->close_after) {
        if (ik__conn_full(c)) {
            c->paused = 1;
            break;
        }
        size_t used;
        int rc = ik__respp_feed(&r->rp, data + off, len - off, &used);
        off += used;
        if (rc == IK_RESPP_ERROR) {
            rconn_fail(r, r->rp.err);
            break;
        }
        if (rc == IK_RESPP_MORE) break;
        r->started = 0;
        run_command(r);
    }
    if (ik__respp_busy(&r->rp)) {
        uint64_t now = uv_now(&c->w->loop);
        if (!r->started) r->started = now ? now : 1;
    } else {
        r->started = 0;
    }
    return off;
}

static uint64_t resp_started(const ik__conn *c)
{
    return ((const resp_conn *)c)->started;
}

static uint64_t resp_deadline(const ik__conn *c)
{
    return ((const resp_conn *)c)->auth_by;
}

/* A pending answer came back: the command renders it (it may ask again). */
static void resp_answer(ik__conn *c, ik__pend *p)
{
    if (ik__resp_render(c->w, c->w->rkinds, p) == IK_PENDING) return; /* asked again */
    if (c->gate == p) c->gate = NULL;
    ik__conn_answered(c, p);
}

static void resp_timeout(ik__conn *c, uint64_t rto)
{
    char msg[96];
    snprintf(msg, sizeof msg, "the command did not complete within %llu ms",
             (unsigned long long)rto);
    rconn_fail(resp_of(c), msg);
}

static void resp_shutdown_answer(ik__conn *c, const ik__pend *p, ik__buf *out)
{
    ik__resp_error(out, "TRYAGAIN this server is shutting down and its store did not "
                        "answer in time; ask another");
    ik__count(&c->w->m.resp_cmds[p->route][1]);
}

static const ik__proto resp_proto = {
    .size = sizeof(resp_conn),
    .hold_each = 0,
    .init = resp_init,
    .free_conn = resp_free,
    .admit = resp_admit,
    .refused = resp_refused,
    .feed = resp_feed,
    .started = resp_started,
    .deadline = resp_deadline,
    .answer = resp_answer,
    .timeout = resp_timeout,
    .shutdown_answer = resp_shutdown_answer,
};

/* ---- the worker's part ------------------------------------------------------------------------
 */

int ik__resp_worker_init(ik__worker *w)
{
    w->rkinds = calloc(1, sizeof *w->rkinds);
    if (!w->rkinds) return UV_ENOMEM;
    int fd = w->resp_fd;
    w->resp_fd = -1; /* the listener owns it now */
    return ik__listener_open(w, &w->resp_listener, fd, &resp_proto);
}

void ik__resp_teardown(ik__worker *w)
{
    free(w->rkinds);
    w->rkinds = NULL;
}
