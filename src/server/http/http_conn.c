/* http_conn.c: HTTP/1.1 on the connection core (conn.h): framing with http_framing.c
 * (keep-alive, pipelining, the request limits), dispatch into the route table
 * (http_routes.c), the answers that come back, and the words of the connection layer's
 * refusals (malformed, too large, too slow: a JSON error and "Connection: close").
 *
 * Each request is answered in order: at once into the connection's output, or
 * pending (rs.pend, queued on the connection), or held behind a pending one (one
 * held entry per answer: each counts against IK_PIPE_MAX). While the server drains,
 * every answer says "Connection: close", and the last one of a connection between
 * requests closes it.
 */
#include "http_conn.h"
#include "http_routes.h"
#include "metrics.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

#define IK_CONN_REQ_INLINE 256

typedef struct http_conn {
    ik__conn c;  /* first: the core's part */
    ik__reqp rp; /* the request being parsed; rp.started: loop ms it began, 0: none */
    char req_inline[IK_CONN_REQ_INLINE];
} http_conn;

static http_conn *http_of(ik__conn *c)
{
    return (http_conn *)c;
}

/* Refreshes the loop's cached "Date:" line, and when to do it next (the next
 * second boundary on the loop's clock). */
void ik__http_refresh_date(ik__worker *w)
{
    int64_t ms = ik__now_ms();
    int64_t s = ms / 1000;
    w->date_next = uv_now(&w->loop) + (uint64_t)(1000 - ms % 1000);
    if (w->date_len && s == w->date_s) return;
    w->date_s = s;
    w->date_len = ik__fmt_http_date(w->date, s);
}

/* Appends the serialized response rs to dst, with the loop's Date line. */
static void put_response(ik__worker *w, ik__buf *dst, const ik__http_reply *rs, int keep,
                         int http10)
{
    if (uv_now(&w->loop) >= w->date_next) ik__http_refresh_date(w);
    ik__reply_serialize(dst, rs, w->date, w->date_len, keep, http10);
}

/* Writes the ready answer rs where it goes now: into c->out, or held behind a
 * pending one. */
static void answer_now(ik__conn *c, const ik__http_reply *rs, int keep, int http10)
{
    ik__buf *dst = ik__conn_ready(c);
    size_t before = dst->len;
    put_response(c->w, dst, rs, keep, http10);
    ik__conn_ready_done(c, dst, before);
}

/* Answers a request the connection layer refuses (malformed, too large, too slow)
 * with a JSON error and "Connection: close"; nothing more is parsed. */
static void conn_fail(http_conn *h, int status, const char *code, const char *msg)
{
    ik__conn *c = &h->c;
    ik__worker *w = c->w;
    ik__http_reply rs;
    memset(&rs, 0, sizeof rs);
    w->body.len = 0;
    rs.body = &w->body;
    ik__reply_error(&rs, status, code, "%s", msg);
    ik__count(&w->m.requests[ik__nroutes][ik__metric_code_index(status)]);
    answer_now(c, &rs, 0, 0);
    c->close_after = 1;
    h->rp.started = 0;
}

/* Answers the complete request now in h->rp: into c->out, or queued (pending, or
 * held behind a pending answer). Called by the parser (ik__reqp_feed). */
static void on_request(ik__reqp *rp, void *ctx)
{
    http_conn *h = ctx;
    ik__conn *c = &h->c;
    ik__worker *w = c->w;
    ik__req rq;
    w->body.len = 0;
    ik__http_reply rs;
    rs.status = 200;
    rs.ctype = "text/plain";
    rs.body = &w->body;
    rs.extra_len = 0;
    rs.pend = NULL;
    size_t route;
    if (ik__reqp_view(rp, &rq) != 0) {
        ik__reply_error(&rs, 400, "bad_request", "the request target has no path");
        route = ik__nroutes;
    } else {
        route = ik__dispatch(w, &rq, &rs);
    }
    int keep = ik__reqp_keep_alive(rp) && !w->draining;
    int http10 = rq.http_minor == 0;
    if (rs.pend) {
        ik__pend *p = rs.pend;
        p->route = (uint16_t)route;
        p->keep = (uint8_t)keep;
        p->http10 = (uint8_t)http10;
        ik__conn_push(c, p);
    } else {
        ik__count(&w->m.requests[route][ik__metric_code_index(rs.status)]);
        answer_now(c, &rs, keep, http10);
    }
    if (!keep) c->close_after = 1;
    if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    if (c->close_after || ik__conn_full(c)) ik__reqp_pause(rp);
}

/* ---- the protocol's hooks ------------------------------------------------------------------ */

static void http_init(ik__conn *c)
{
    http_conn *h = http_of(c);
    ik__reqp_init(&h->rp, h->req_inline, sizeof h->req_inline, c->w->srv->max_header_bytes,
                  on_request, h);
}

static void http_free(ik__conn *c)
{
    ik__reqp_free(&http_of(c)->rp);
}

/* Parses data[0..len-1], answering every complete request. */
static size_t http_feed(ik__conn *c, const char *data, size_t len)
{
    http_conn *h = http_of(c);
    size_t used;
    h->rp.now = uv_now(&c->w->loop);
    switch (ik__reqp_feed(&h->rp, data, len, &used)) {
    case IK_FEED_PAUSED:
        c->paused = 1;
        break;
    case IK_FEED_ERROR:
        if (!c->close_after) {
            char msg[160];
            const char *code;
            int st = ik__reqp_error(&h->rp, &code, msg, sizeof msg);
            conn_fail(h, st, code, msg);
        }
        break;
    case IK_FEED_UPGRADE:
        c->close_after = 1; /* we answered it; the rest is not HTTP */
        break;
    default:
        break;
    }
    return used;
}

static void http_resume(ik__conn *c)
{
    ik__reqp_resume(&http_of(c)->rp);
}

static uint64_t http_started(const ik__conn *c)
{
    return ((const http_conn *)c)->rp.started;
}

/* A pending answer came back: the route that left it renders it (p->render). */
static void http_answer(ik__conn *c, ik__pend *p)
{
    ik__worker *w = c->w;
    w->body.len = 0;
    ik__http_reply rs;
    memset(&rs, 0, sizeof rs);
    rs.status = 200;
    rs.ctype = "text/plain";
    rs.body = &w->body;
    p->render(w, p, &rs);
    ik__count(&w->m.requests[p->route][ik__metric_code_index(rs.status)]);
    /* While draining, the last answer of a connection between requests says close. */
    int keep = p->keep && !(w->draining && !p->next && !http_of(c)->rp.started);
    put_response(w, &p->out, &rs, keep, p->http10);
    if (!keep) c->close_after = 1;
    if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    ik__conn_answered(c, p);
}

static void http_timeout(ik__conn *c, uint64_t rto)
{
    char msg[96];
    snprintf(msg, sizeof msg, "the request did not complete within %llu ms",
             (unsigned long long)rto);
    conn_fail(http_of(c), 408, "request_timeout", msg);
}

static void http_shutdown_answer(ik__conn *c, const ik__pend *p, ik__buf *out)
{
    ik__worker *w = c->w;
    w->body.len = 0;
    ik__http_reply rs;
    memset(&rs, 0, sizeof rs);
    rs.body = &w->body;
    ik__reply_error(&rs, 503, "shutting_down",
                    "this server is shutting down and its store did not answer in time; "
                    "ask another");
    ik__count(&w->m.requests[p->route][ik__metric_code_index(503)]);
    put_response(w, out, &rs, 0, p->http10);
}

const ik__proto ik__http_proto = {
    .size = sizeof(http_conn),
    .hold_each = 1,
    .init = http_init,
    .free_conn = http_free,
    .feed = http_feed,
    .resume = http_resume,
    .started = http_started,
    .answer = http_answer,
    .timeout = http_timeout,
    .shutdown_answer = http_shutdown_answer,
};
