/* loop.c: one libuv event loop per thread: accepting, HTTP/1.1 framing (reqparse.c:
 * http_parser with keep-alive and pipelining), the request limits and timeouts,
 * answers that wait for the store, and writing responses.
 *
 * A connection's life (all on its loop's thread):
 *
 *   accept --> READING --request complete: answer into c->out--> conn_flush
 *                 ^          (or queued as pending: c->pend_head)   |
 *                 |   uv_try_write wrote it all                     |
 *                 +-------------------------------------------------+
 *                 |                                                 | short write:
 *                 +---------- on_write (done) <--- WRITING <--------+ uv_write, reads
 *                                                  (reads stopped)    stopped
 *   WAITING (an answer pending at the head of c->pend_head): reads go on, later
 *   requests queue behind it (at most IK_PIPE_MAX), nothing is written until the
 *   head's answer comes back (on_done / the thread pool -> ik__pend_complete).
 *   final response (error, Connection: close, draining) --> LINGERING: shutdown(WR),
 *   read and discard until EOF or IK_LINGER_MS --> closed
 *   EOF / read error / timeout / max_connections --> closed (pending answers detached)
 *   EOF while an answer is pending: the client gave up (as nginx takes it) --> closed
 *
 * A closing connection drops its answers at once (conn_drop): a sequence request
 * still queued in the library is withdrawn (never committed); any other out with
 * the library is detached and freed when it comes back, and a sequence range
 * committed for it is a gap; so is a sequence answer ready but not yet written
 * whole (held, or in c->out, c->unsent). Gaps are logged and counted (SPEC 2).
 *
 * Invariants
 * - Reads land in the loop's one read buffer and are parsed at once: the parser
 *   copies what a handler needs into c->rp, so nothing points into the read buffer
 *   after on_read returns.
 * - c->out is never touched while a uv_write of it is pending (c->writing): reads
 *   are stopped then, and answers that come back wait in their ik__pend.
 * - Pipelining: every complete request in a read is answered, in order. An answer
 *   goes straight into c->out when nothing is pending before it; else it is held in
 *   an ik__pend behind the pending ones, and conn_flush moves finished answers from
 *   the head of the queue into c->out, in order. Above IK_OUT_HIGH bytes of output or
 *   IK_PIPE_MAX queued answers the parser is paused and the unparsed rest of the read
 *   is kept in c->stash (back-pressure instead of unbounded buffering).
 * - After a response that says "Connection: close" nothing more is parsed.
 * - The hot path (one keep-alive GET answered at once) allocates nothing: the request
 *   and c->out start on storage inline in the connection and go to the heap only for
 *   large requests or responses, returning inline afterwards.
 */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ik__conn ik__conn;

struct ik__conn {
    uv_tcp_t tcp;
    ik__reqp rp; /* the request being parsed; rp.started: loop ms it began, 0: none */
    ik__worker *w;
    ik__conn *prev, *next; /* w->conns */
    uint64_t last_active;  /* loop ms of the last read, accept or answer */
    uint64_t write_start;  /* loop ms the pending uv_write began */
    uint64_t linger_until; /* loop ms */
    unsigned reading : 1, writing : 1, close_after : 1, paused : 1, lingering : 1, closing : 1,
        eof : 1;
    ik__pend *pend_head, *pend_tail; /* answers not yet in c->out, in request order */
    ik__pend *unsent; /* sequence answers in c->out not yet written whole (see conn_drop) */
    int npend;
    ik__buf out;   /* responses not yet written */
    ik__buf stash; /* unparsed input kept while the parser is paused */
    size_t stash_off;
    uv_write_t wr;
    uv_shutdown_t sd;
    char req_inline[IK_CONN_REQ_INLINE];
    char out_inline[IK_CONN_OUT_INLINE];
};

static void conn_flush(ik__conn *c);

/* ---- small helpers ----------------------------------------------------------------- */

static uint64_t loop_now(const ik__conn *c)
{
    return uv_now(&c->w->loop);
}

static void on_close(uv_handle_t *h);
static void pend_detach(ik__worker *w, ik__pend *p, int why);

/* Nothing more will be written to c (why: IK_GONE_*): the answers it still holds
 * come back to nobody. A sequence request still queued in the library is
 * withdrawn; one out with it is detached (a range committed for it is logged as a
 * gap when it comes back); a sequence range already answered but not yet written
 * whole (held behind a pending answer, or in c->out) is a gap now, logged. */
static void conn_drop(ik__conn *c, int why)
{
    ik__worker *w = c->w;
    for (ik__pend *p = c->unsent, *nx; p; p = nx) {
        nx = p->next;
        p->gone = (uint8_t)why;
        ik__pend_orphaned(w, p);
        ik__pend_free(p);
    }
    c->unsent = NULL;
    for (ik__pend *p = c->pend_head, *nx; p; p = nx) {
        nx = p->next;
        if (p->done) {
            p->gone = (uint8_t)why;
            ik__pend_orphaned(w, p);
            ik__pend_free(p);
        } else {
            pend_detach(w, p, why);
        }
    }
    c->pend_head = c->pend_tail = NULL;
    c->npend = 0;
}

/* Closes c; its answers not yet written are dropped at once (conn_drop), so that
 * none that comes back meanwhile is taken for delivered. */
static void conn_close_why(ik__conn *c, int why)
{
    if (c->closing) return;
    c->closing = 1;
    conn_drop(c, why);
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void conn_close(ik__conn *c)
{
    conn_close_why(c, IK_GONE_CLIENT);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    ik__conn *c = h->data;
    buf->base = c->w->rbuf;
    buf->len = IK_READ_BUF;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_read_start(ik__conn *c)
{
    if (c->reading || c->closing) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
        return;
    }
    c->reading = 1;
}

static void conn_read_stop(ik__conn *c)
{
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

/* Refreshes the loop's cached "Date:" line, and when to do it next (the next
 * second boundary on the loop's clock). */
static void refresh_date(ik__worker *w)
{
    int64_t ms = ik__now_ms();
    int64_t s = ms / 1000;
    w->date_next = uv_now(&w->loop) + (uint64_t)(1000 - ms % 1000);
    if (w->date_len && s == w->date_s) return;
    w->date_s = s;
    w->date_len = ik__fmt_http_date(w->date, s);
}

/* ---- responses --------------------------------------------------------------------- */

static const char *status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Unknown";
    }
}

#define PUT_LIT(d, lit) (memcpy((d), (lit), sizeof(lit) - 1), (d) += sizeof(lit) - 1)
#define PUT_MEM(d, p, n) (memcpy((d), (p), (n)), (d) += (n))

/* Appends the serialized response rs to dst. keep: the connection stays open (else
 * "Connection: close"); http10: the client spoke HTTP/1.0 (keep-alive must then be
 * said). */
static void put_response(ik__worker *w, ik__buf *dst, const ik__resp *rs, int keep, int http10)
{
    if (uv_now(&w->loop) >= w->date_next) refresh_date(w);
    const ik__buf *b = rs->body;
    const char *st = status_text(rs->status);
    size_t stl = strlen(st), ctl = strlen(rs->ctype);
    char *start = ik__buf_reserve(dst, 160 + stl + ctl + w->date_len + rs->extra_len + b->len);
    char *d = start;
    PUT_LIT(d, "HTTP/1.1 ");
    d += ik__fmt_u64(d, (uint64_t)rs->status);
    *d++ = ' ';
    PUT_MEM(d, st, stl);
    PUT_LIT(d, "\r\nContent-Type: ");
    PUT_MEM(d, rs->ctype, ctl);
    PUT_LIT(d, "\r\nContent-Length: ");
    d += ik__fmt_u64(d, b->len);
    PUT_LIT(d, "\r\n");
    PUT_MEM(d, w->date, w->date_len);
    PUT_MEM(d, rs->extra, rs->extra_len);
    if (!keep) {
        PUT_LIT(d, "Connection: close\r\n");
    } else if (http10) {
        PUT_LIT(d, "Connection: keep-alive\r\n");
    }
    PUT_LIT(d, "\r\n");
    PUT_MEM(d, b->p, b->len);
    dst->len += (size_t)(d - start);
}

/* ---- pending answers ------------------------------------------------------------------ */

ik__pend *ik__pend_new(ik__worker *w)
{
    ik__pend *p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "idkeeper: out of memory; aborting\n");
        abort();
    }
    p->w = w;
    ik__buf_init(&p->out, p->out_inline, sizeof p->out_inline);
    return p;
}

void ik__pend_free(ik__pend *p)
{
    if (!p) return;
    if (p->ids && p->ids != p->ids_inline) free(p->ids);
    if (p->tagop) {
        ik_free(p->tagop->list);
        ik_free(p->tagop->slots);
        free(p->tagop);
    }
    ik__buf_reset(&p->out);
    free(p);
}

/* Appends p to c's answers. */
static void pend_push(ik__conn *c, ik__pend *p)
{
    p->conn = c;
    p->next = NULL;
    if (c->pend_tail) {
        c->pend_tail->next = p;
    } else {
        c->pend_head = p;
    }
    c->pend_tail = p;
    c->npend++;
}

/* p, out with the library, loses its connection (why: IK_GONE_*): withdrawn and
 * freed if the library still had it queued (sequence), else detached: it comes
 * back to nobody (ik__pend_complete). */
static void pend_detach(ik__worker *w, ik__pend *p, int why)
{
    p->conn = NULL;
    p->next = NULL;
    p->gone = (uint8_t)why;
    if (!ik__pend_withdraw(w, p)) return;
    w->inflight--;
    atomic_store_explicit(&w->m.pending,
                          atomic_load_explicit(&w->m.pending, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    ik__pend_free(p);
}

/* Publishes whether w has drained, and ends the loop once it may: draining, the
 * allocators closed for it, no connection, nothing in flight. */
static void maybe_end(ik__worker *w)
{
    if (!w->draining || w->conns || w->inflight || ik__resp_busy(w)) return;
    atomic_store(&w->drained, 1);
    if (!w->stores_closed) return;
    if (!uv_is_closing((uv_handle_t *)&w->sweep)) uv_close((uv_handle_t *)&w->sweep, NULL);
    if (!uv_is_closing((uv_handle_t *)&w->sf_timer)) uv_close((uv_handle_t *)&w->sf_timer, NULL);
    if (!uv_is_closing((uv_handle_t *)&w->stop)) uv_close((uv_handle_t *)&w->stop, NULL);
    if (!uv_is_closing((uv_handle_t *)&w->done)) uv_close((uv_handle_t *)&w->done, NULL);
}

void ik__worker_maybe_end(ik__worker *w)
{
    maybe_end(w);
}

void ik__pend_post(ik__pend *p)
{
    ik__worker *w = p->w;
    /* The send happens under the lock: the loop can only see p (and then end and
     * close w->done) after this thread has let go of the handle. */
    pthread_mutex_lock(&w->done_mu);
    p->qnext = NULL;
    if (w->done_tail) {
        w->done_tail->qnext = p;
    } else {
        w->done_head = p;
    }
    w->done_tail = p;
    uv_async_send(&w->done);
    pthread_mutex_unlock(&w->done_mu);
}

void ik__pend_complete(ik__worker *w, ik__pend *p)
{
    w->inflight--;
    atomic_store_explicit(&w->m.pending,
                          atomic_load_explicit(&w->m.pending, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    if (p->resp) { /* the RESP front door's */
        ik__resp_complete(w, p);
        return;
    }
    ik__conn *c = p->conn;
    if (!c) { /* its connection closed meanwhile: a range committed for it is a gap */
        ik__pend_orphaned(w, p);
        ik__pend_free(p);
        maybe_end(w);
        return;
    }
    w->body.len = 0;
    ik__resp rs;
    memset(&rs, 0, sizeof rs);
    rs.status = 200;
    rs.ctype = "text/plain";
    rs.body = &w->body;
    ik__pend_render(w, p, &rs);
    ik__count(&w->m.requests[p->route][ik__metric_code_index(rs.status)]);
    /* While draining, the last answer of a connection between requests says close. */
    int keep = p->keep && !(w->draining && !p->next && !c->rp.started);
    put_response(w, &p->out, &rs, keep, p->http10);
    if (!keep) c->close_after = 1;
    if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    p->done = 1;
    c->last_active = uv_now(&w->loop);
    conn_flush(c);
}

/* Answers that came back from library threads. */
static void on_done(uv_async_t *a)
{
    ik__worker *w = a->data;
    pthread_mutex_lock(&w->done_mu);
    ik__pend *p = w->done_head;
    w->done_head = w->done_tail = NULL;
    pthread_mutex_unlock(&w->done_mu);
    while (p) {
        ik__pend *nx = p->qnext;
        ik__pend_complete(w, p);
        p = nx;
    }
}

/* ---- requests ------------------------------------------------------------------------ */

/* Queues an answer that is ready but must wait behind a pending one. */
static void hold_response(ik__conn *c, const ik__resp *rs, int keep, int http10)
{
    ik__pend *p = ik__pend_new(c->w);
    p->op = IK_OP_HELD;
    put_response(c->w, &p->out, rs, keep, http10);
    p->done = 1;
    pend_push(c, p);
}

/* Answers a request the connection layer refuses (malformed, too large, too slow)
 * with a JSON error and "Connection: close"; nothing more is parsed. */
static void conn_fail(ik__conn *c, int status, const char *code, const char *msg)
{
    ik__worker *w = c->w;
    ik__resp rs;
    memset(&rs, 0, sizeof rs);
    w->body.len = 0;
    rs.body = &w->body;
    ik__reply_error(&rs, status, code, "%s", msg);
    ik__count(&w->m.requests[ik__nroutes][ik__metric_code_index(status)]);
    if (c->pend_head) {
        hold_response(c, &rs, 0, 0);
    } else {
        put_response(w, &c->out, &rs, 0, 0);
    }
    c->close_after = 1;
    c->rp.started = 0;
}

/* Answers the complete request now in c->rp: into c->out, or queued (pending, or
 * held behind a pending answer). Called by the parser (ik__reqp_feed). */
static void on_request(ik__reqp *rp, void *ctx)
{
    ik__conn *c = ctx;
    ik__worker *w = c->w;
    ik__req rq;
    w->body.len = 0;
    ik__resp rs;
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
    int keep = http_should_keep_alive(&rp->parser) && !w->draining && !rp->parser.upgrade;
    int http10 = rq.http_minor == 0;
    if (rs.pend) {
        ik__pend *p = rs.pend;
        p->route = (uint16_t)route;
        p->keep = (uint8_t)keep;
        p->http10 = (uint8_t)http10;
        pend_push(c, p);
    } else {
        ik__count(&w->m.requests[route][ik__metric_code_index(rs.status)]);
        if (c->pend_head) {
            hold_response(c, &rs, keep, http10);
        } else {
            put_response(w, &c->out, &rs, keep, http10);
        }
    }
    if (!keep) c->close_after = 1;
    if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    if (c->close_after || c->out.len >= IK_OUT_HIGH || c->npend >= IK_PIPE_MAX)
        http_parser_pause(&rp->parser, 1);
}

/* Parses data[0..len-1], answering every complete request. Returns the bytes
 * consumed: less than len only when the parser paused (c->paused) or the connection
 * is to close after its last answer (c->close_after). */
static size_t conn_feed(ik__conn *c, const char *data, size_t len)
{
    size_t used;
    c->rp.now = loop_now(c);
    switch (ik__reqp_feed(&c->rp, data, len, &used)) {
    case IK_FEED_PAUSED:
        c->paused = 1;
        break;
    case IK_FEED_ERROR:
        if (!c->close_after) {
            char msg[160];
            const char *code;
            int st = ik__reqp_error(&c->rp, &code, msg, sizeof msg);
            conn_fail(c, st, code, msg);
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

/* ---- writing and the connection's state machine --------------------------------------- */

/* c->out has been written whole: the sequence answers in it were delivered. */
static void out_done(ik__conn *c)
{
    for (ik__pend *p = c->unsent, *nx; p; p = nx) {
        nx = p->next;
        ik__pend_free(p);
    }
    c->unsent = NULL;
    if (c->out.p != c->out.inline_p) ik__buf_reset(&c->out);
    c->out.len = 0;
}

static void on_write(uv_write_t *wr, int status)
{
    ik__conn *c = wr->data;
    c->writing = 0;
    if (status < 0) { /* peer gone, or we are closing (UV_ECANCELED) */
        conn_close(c);
        return;
    }
    out_done(c);
    conn_flush(c);
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    if (status < 0) conn_close(r->data);
}

/* After a final response has been written: half-close and read until the peer
 * closes (or IK_LINGER_MS), so that unread input does not turn our close into a
 * reset that destroys the response in flight. */
static void conn_linger(ik__conn *c)
{
    if (c->lingering || c->closing) return;
    c->lingering = 1;
    c->linger_until = loop_now(c) + IK_LINGER_MS;
    c->sd.data = c;
    if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        conn_close(c);
        return;
    }
    conn_read_start(c);
}

/* Resumes the paused parser on the kept input. */
static void conn_resume(ik__conn *c)
{
    ik__reqp_resume(&c->rp);
    c->paused = 0;
    if (c->stash.len > c->stash_off) {
        c->stash_off += conn_feed(c, c->stash.p + c->stash_off, c->stash.len - c->stash_off);
        if (c->stash_off >= c->stash.len || c->close_after) {
            ik__buf_reset(&c->stash);
            c->stash_off = 0;
        }
    }
}

/* Moves the connection on after new output, a finished write or an answer that came
 * back: moves the finished answers at the head of the queue into c->out, writes
 * c->out (uv_try_write first, uv_write for what is left), then waits for a pending
 * answer, closes, parses kept input, or reads again. */
static void conn_flush(ik__conn *c)
{
    ik__worker *w = c->w;
    if (c->writing) return; /* on_write comes back here */
    while (!c->closing) {
        while (c->pend_head && c->pend_head->done) {
            ik__pend *p = c->pend_head;
            ik__buf_append(&c->out, p->out.p, p->out.len);
            c->pend_head = p->next;
            if (!c->pend_head) c->pend_tail = NULL;
            c->npend--;
            if (p->op == IK_OP_SEQUENCE && p->rc == 0 && p->nids) {
                p->next = c->unsent; /* a gap if the write fails: kept until out_done */
                c->unsent = p;
            } else {
                ik__pend_free(p);
            }
        }
        if (c->out.len) {
            uv_buf_t b = uv_buf_init(c->out.p, (unsigned)c->out.len);
            int r = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
            if (r >= 0 && (size_t)r == c->out.len) {
                out_done(c);
                continue;
            }
            if (r < 0 && r != UV_EAGAIN) {
                conn_close(c);
                return;
            }
            if (r < 0) r = 0;
            b = uv_buf_init(c->out.p + r, (unsigned)(c->out.len - (size_t)r));
            c->wr.data = c;
            if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
                conn_close(c);
                return;
            }
            c->writing = 1;
            c->write_start = loop_now(c);
            conn_read_stop(c);
            return;
        }
        if (c->pend_head) { /* waiting for an answer: go on parsing what is behind it */
            if (c->close_after || c->eof) return;
            if (c->paused) {
                if (c->npend >= IK_PIPE_MAX) return;
                conn_resume(c);
                continue;
            }
            conn_read_start(c);
            return;
        }
        if (c->close_after) {
            if (c->eof) {
                conn_close(c);
            } else {
                conn_linger(c);
            }
            return;
        }
        if (c->paused) {
            conn_resume(c);
            continue;
        }
        if (w->draining && !c->rp.started) {
            conn_close(c);
            return;
        }
        conn_read_start(c);
        return;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ik__conn *c = s->data;
    if (nread == 0) return;
    if (nread < 0) {
        /* EOF between requests: answer what is ready, then close. EOF inside a
         * request (a client gone mid-request), EOF while an answer waits for the
         * store (a client that gave up: its sequence requests are withdrawn) or a
         * read error: just close. */
        if (nread != UV_EOF || c->lingering || c->rp.started || c->pend_head) {
            conn_close(c);
            return;
        }
        conn_read_stop(c);
        c->eof = 1;
        c->close_after = 1;
        conn_flush(c);
        return;
    }
    c->last_active = loop_now(c);
    if (c->lingering) return; /* discarding */
    size_t used = conn_feed(c, buf->base, (size_t)nread);
    if (c->paused && !c->close_after && used < (size_t)nread) {
        conn_read_stop(c);
        ik__buf_append(&c->stash, buf->base + used, (size_t)nread - used);
    }
    conn_flush(c);
}

/* ---- accepting and closing -------------------------------------------------------------- */

static void on_close(uv_handle_t *h)
{
    ik__conn *c = h->data;
    ik__worker *w = c->w;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        w->conns = c->next;
    }
    if (c->next) c->next->prev = c->prev;
    conn_drop(c, IK_GONE_CLIENT); /* closed without conn_close (ik__worker_teardown) */
    ik__reqp_free(&c->rp);
    ik__buf_reset(&c->out);
    ik__buf_reset(&c->stash);
    free(c);
    atomic_fetch_sub_explicit(&w->srv->connections, 1, memory_order_relaxed);
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    maybe_end(w);
}

static void on_connection(uv_stream_t *server, int status)
{
    ik__worker *w = server->data;
    ik__server *srv = w->srv;
    if (status < 0) {
        /* Out of descriptors (libuv has already closed the waiting connection), or a
         * rarer failure: counted, and logged at most once a minute per loop. */
        ik__count(&w->m.rejected);
        uint64_t now = uv_now(&w->loop);
        if (w->accept_logged_ms == 0 || now - w->accept_logged_ms >= 60000) {
            w->accept_logged_ms = now;
            ik__log("accept failed: %s (connection refused; see ulimit -n and max-connections)",
                    uv_strerror(status));
        }
        return;
    }
    ik__conn *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "idkeeper: out of memory; aborting\n");
        abort();
    }
    c->w = w;
    c->tcp.data = c;
    uv_tcp_init(&w->loop, &c->tcp);
    c->next = w->conns;
    if (w->conns) w->conns->prev = c;
    w->conns = c;
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    int open = atomic_fetch_add_explicit(&srv->connections, 1, memory_order_relaxed) + 1;
    ik__reqp_init(&c->rp, c->req_inline, sizeof c->req_inline, srv->max_header_bytes, on_request,
                  c);
    ik__buf_init(&c->out, c->out_inline, sizeof c->out_inline);
    ik__buf_init(&c->stash, NULL, 0);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    ik__count(&w->m.accepted);
    if (open > srv->cfg->max_connections || w->draining) {
        ik__count(&w->m.rejected);
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_active = uv_now(&w->loop);
    conn_read_start(c);
}

/* ---- timeouts and shutdown --------------------------------------------------------------- */

/* The drain deadline came with answers still pending on c: each gets "503
 * shutting_down" in its place (the ik__pend itself is detached and freed when the
 * library gives it back), the answers are written as far as the socket takes them
 * at once, and the caller closes c. A sequence request failed this way is withdrawn
 * if still queued; if its write had begun and succeeds, its IDs are a gap, logged
 * and counted (why=shutdown deadline), as with a crash in flight. */
static void fail_pending(ik__conn *c)
{
    ik__worker *w = c->w;
    ik__pend *prev = NULL;
    for (ik__pend *p = c->pend_head, *nx; p; p = nx) {
        nx = p->next;
        if (p->done) {
            prev = p;
            continue;
        }
        ik__pend *q = ik__pend_new(w);
        q->op = IK_OP_HELD;
        q->done = 1;
        q->next = nx;
        w->body.len = 0;
        ik__resp rs;
        memset(&rs, 0, sizeof rs);
        rs.body = &w->body;
        ik__reply_error(&rs, 503, "shutting_down",
                        "this server is shutting down and its store did not answer in time; "
                        "ask another");
        ik__count(&w->m.requests[p->route][ik__metric_code_index(503)]);
        put_response(w, &q->out, &rs, 0, p->http10);
        if (prev) {
            prev->next = q;
        } else {
            c->pend_head = q;
        }
        if (c->pend_tail == p) c->pend_tail = q;
        pend_detach(w, p, IK_GONE_SHUTDOWN);
        prev = q;
    }
    c->close_after = 1;
    conn_flush(c);
}

static void on_sweep(uv_timer_t *t)
{
    ik__worker *w = t->data;
    ik__server *srv = w->srv;
    uint64_t now = uv_now(&w->loop);
    uint64_t rto = (uint64_t)srv->read_timeout_ms, ito = (uint64_t)srv->idle_timeout_ms;
    ik__conn *next;
    for (ik__conn *c = w->conns; c; c = next) {
        next = c->next;
        if (c->closing) continue;
        if (w->draining && now >= w->drain_deadline) {
            if (c->pend_head && !c->writing) fail_pending(c);
            conn_close_why(c, IK_GONE_SHUTDOWN);
        } else if (c->lingering) {
            if (now >= c->linger_until) conn_close(c);
        } else if (c->writing) { /* a peer that does not read */
            if (now - c->write_start >= rto) {
                ik__count(&w->m.timeouts);
                conn_close(c);
            }
        } else if (c->rp.started) { /* a request that does not complete (slowloris) */
            if (now - c->rp.started >= rto) {
                char msg[96];
                snprintf(msg, sizeof msg, "the request did not complete within %llu ms",
                         (unsigned long long)rto);
                ik__count(&w->m.timeouts);
                conn_read_stop(c);
                conn_fail(c, 408, "request_timeout", msg);
                conn_flush(c);
            }
        } else if (c->pend_head) {
            /* waiting for the store: not idle; the library answers or fails it */
        } else if (w->draining) {
            conn_close(c);
        } else if (now - c->last_active >= ito) {
            ik__count(&w->m.timeouts);
            conn_close(c);
        }
    }
    ik__resp_sweep(w, now);
}

/* The main thread's requests (srv->phase): 1, start draining: no more accepting;
 * the sweep, now every 50 ms, closes idle connections from its first run on
 * (requests that were already on their way in that moment are still answered, with
 * "Connection: close"; pending answers are awaited) and everything left at the
 * drain deadline. 2: the allocators are about to be destroyed: no more calls into
 * them (handlers answer 503), acknowledged through w->stores_acked. The loop ends
 * once both happened and its last connection and pending answer are gone. */
static void on_stop(uv_async_t *a)
{
    ik__worker *w = a->data;
    int phase = atomic_load(&w->srv->phase);
    if (!w->draining) {
        w->draining = 1;
        w->drain_deadline = uv_now(&w->loop) + (uint64_t)w->srv->shutdown_timeout_ms;
        if (!uv_is_closing((uv_handle_t *)&w->listener))
            uv_close((uv_handle_t *)&w->listener, NULL);
        ik__resp_stop(w);
        uv_timer_start(&w->sweep, on_sweep, 50, 50);
    }
    if (phase >= 2 && !w->stores_closed) {
        w->stores_closed = 1;
        atomic_store(&w->stores_acked, 1);
    }
    maybe_end(w);
}

/* ---- the worker's life --------------------------------------------------------------------- */

int ik__worker_init(ik__server *srv, ik__worker *w)
{
    int r;
    w->srv = srv;
    ik__buf_init(&w->body, NULL, 0);
    w->rbuf = malloc(IK_READ_BUF);
    if (!w->rbuf) return UV_ENOMEM;
    if ((r = uv_loop_init(&w->loop)) != 0) return r;
    w->loop_ready = 1;
    w->loop.data = w;
    uv_tcp_init(&w->loop, &w->listener);
    w->listener.data = w;
    w->listener_ready = 1;
    if ((r = uv_tcp_open(&w->listener, w->fd)) != 0) return r;
    w->fd = -1; /* the handle owns it now */
    if ((r = uv_listen((uv_stream_t *)&w->listener, 511, on_connection)) != 0) return r;
    if ((r = uv_async_init(&w->loop, &w->stop, on_stop)) != 0) return r;
    w->stop.data = w;
    if (pthread_mutex_init(&w->done_mu, NULL) != 0) return UV_ENOMEM;
    if ((r = uv_async_init(&w->loop, &w->done, on_done)) != 0) {
        pthread_mutex_destroy(&w->done_mu);
        return r;
    }
    w->done.data = w;
    w->done_ready = 1;
    uv_timer_init(&w->loop, &w->sweep);
    w->sweep.data = w;
    uv_timer_init(&w->loop, &w->sf_timer);
    w->sf_timer.data = w;
    int shortest =
        srv->read_timeout_ms < srv->idle_timeout_ms ? srv->read_timeout_ms : srv->idle_timeout_ms;
    w->sweep_ms = (uint64_t)(shortest / 4);
    if (w->sweep_ms < 20) w->sweep_ms = 20;
    if (w->sweep_ms > 1000) w->sweep_ms = 1000;
    uv_timer_start(&w->sweep, on_sweep, w->sweep_ms, w->sweep_ms);
    refresh_date(w);
    if (w->resp_fd >= 0 && (r = ik__resp_worker_init(w)) != 0) return r;
    return 0;
}

void *ik__worker_main(void *arg)
{
    ik__worker *w = arg;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    return NULL;
}

void ik__worker_stop(ik__worker *w)
{
    uv_async_send(&w->stop);
}

void ik__worker_close_stores(ik__worker *w)
{
    uv_async_send(&w->stop);
}

static void close_any(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h)) uv_close(h, h->type == UV_TCP && h->data != arg ? on_close : NULL);
}

void ik__worker_teardown(ik__worker *w)
{
    if (w->loop_ready) {
        uv_walk(&w->loop, close_any, w);
        uv_run(&w->loop, UV_RUN_DEFAULT);
        uv_loop_close(&w->loop);
        w->loop_ready = 0;
    }
    if (w->done_ready) {
        pthread_mutex_destroy(&w->done_mu);
        w->done_ready = 0;
    }
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->resp_fd >= 0) close(w->resp_fd);
    w->resp_fd = -1;
    ik__resp_teardown(w);
    free(w->rbuf);
    w->rbuf = NULL;
    ik__buf_reset(&w->body);
    free(w->ids);
    w->ids = NULL;
    ik__pend_free(w->spare);
    w->spare = NULL;
}
