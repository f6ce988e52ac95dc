/* resp_conn.c: the Redis-protocol front door's connections, on the same loops as
 * HTTP (loop.c): a second listener per loop, the same limits (max-connections,
 * read and idle timeouts, the pipeline's queued answers, max-header-bytes as the
 * most bytes of one command), the same pending-answer machinery (srv.h) and the same
 * shutdown. Commands run in resp_cmds.c; parsing is resp.c's.
 *
 * A connection's life (all on its loop's thread), as loop.c's:
 *
 *   accept --> READING --command complete: answer into c->out--> rconn_flush
 *                 ^         (or queued: pending / held behind one)     |
 *                 +---------- written (uv_try_write / on_write) <------+
 *   WAITING (a pending answer at the head): reads go on, later answers queue
 *   behind it (at most IK_PIPE_MAX queued, IK_OUT_HIGH bytes, then parsing pauses
 *   and the unparsed rest of the read waits in c->stash).
 *   QUIT / protocol error --> the answer, then LINGERING: shutdown(WR), discard
 *   input until EOF or IK_LINGER_MS --> closed
 *   EOF between commands: answer what was read, then close. EOF inside a command
 *   or while an answer waits for the store, read error, timeout, max-connections
 *   --> closed (queued sequence requests withdrawn, other pending answers detached).
 *
 * Invariants
 * - Answers leave in command order. A ready answer goes straight into c->out when
 *   nothing is queued; else it is appended to the queue's last entry if that is a
 *   held (ready) one, or to a new held entry, so a long pipeline behind one pending
 *   answer costs one allocation, not one per command.
 * - c->out is not touched while a uv_write of it is pending (c->writing).
 * - What one connection holds is bounded: the parser by max-header-bytes, queued
 *   output by IK_OUT_HIGH plus one command's answer, queued answers by IK_PIPE_MAX.
 */
#include "resp_cmds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IK_RESP_MAX_ARGS 256 /* arguments of one command */

typedef struct ik__rconn ik__rconn;
typedef struct ik__rworker ik__rworker;

struct ik__rconn {
    uv_tcp_t tcp;
    ik__worker *w;
    ik__rconn *prev, *next; /* rw->conns */
    ik__respp rp;
    ik__rsess s;
    uint64_t last_active;  /* loop ms of the last read, accept or answer */
    uint64_t write_start;  /* loop ms the pending uv_write began */
    uint64_t linger_until; /* loop ms */
    uint64_t started;      /* loop ms the current partial command began (0: none) */
    unsigned reading : 1, writing : 1, close_after : 1, paused : 1, lingering : 1, closing : 1,
        eof : 1;
    ik__pend *pend_head, *pend_tail; /* answers not yet in c->out, in command order */
    int npend;
    ik__pend *probe;  /* an INCR still finding its tag's kind: parsing waits for it */
    size_t held;      /* bytes in queued ready answers */
    ik__buf out;      /* answers not yet written */
    ik__pend *unsent; /* sequence answers in c->out not yet written whole (see rconn_drop) */
    ik__buf stash;    /* unparsed input kept while parsing is paused */
    size_t stash_off;
    uv_write_t wr;
    uv_shutdown_t sd;
    char arg_inline[256];
    char out_inline[512];
};

struct ik__rworker {
    uv_tcp_t listener;
    int listener_ready;
    ik__rconn *conns;
    ik__rkinds kinds;
};

static atomic_uint_fast64_t next_client_id = 1;

static void rconn_flush(ik__rconn *c);
static void on_rclose(uv_handle_t *h);

static uint64_t now_of(const ik__rconn *c)
{
    return uv_now(&c->w->loop);
}

/* Nothing more will be written to c (why: IK_GONE_*), as loop.c's conn_drop: a
 * sequence request still queued in the library is withdrawn (never committed); one
 * out with it is detached (a range committed for it is logged as a gap when it
 * comes back); an answered sequence range not yet written whole (still queued, or
 * in c->out) is a gap now. */
static void rconn_drop(ik__rconn *c, int why)
{
    ik__worker *w = c->w;
    for (ik__pend *p = c->unsent, *nx; p; p = nx) { /* in c->out, never written whole */
        nx = p->next;
        p->gone = (uint8_t)why;
        ik__pend_orphaned(w, p);
        ik__pend_free(p);
    }
    c->unsent = NULL;
    for (ik__pend *p = c->pend_head, *nx; p; p = nx) {
        nx = p->next;
        p->gone = (uint8_t)why;
        p->next = NULL;
        if (p->done) {
            ik__pend_orphaned(w, p);
            ik__pend_free(p);
            continue;
        }
        p->rconn = NULL;
        if (!ik__pend_withdraw(w, p)) continue; /* comes back to nobody */
        w->inflight--;
        atomic_store_explicit(&w->m.pending,
                              atomic_load_explicit(&w->m.pending, memory_order_relaxed) - 1,
                              memory_order_relaxed);
        ik__pend_free(p);
    }
    c->pend_head = c->pend_tail = NULL;
    c->npend = 0;
    c->probe = NULL;
}

static void rconn_close_why(ik__rconn *c, int why)
{
    if (c->closing) return;
    c->closing = 1;
    rconn_drop(c, why);
    uv_close((uv_handle_t *)&c->tcp, on_rclose);
}

static void rconn_close(ik__rconn *c)
{
    rconn_close_why(c, IK_GONE_CLIENT);
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    ik__rconn *c = h->data;
    (void)hint;
    buf->base = c->w->rbuf;
    buf->len = IK_READ_BUF;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void read_start(ik__rconn *c)
{
    if (c->reading || c->closing) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        rconn_close(c);
        return;
    }
    c->reading = 1;
}

static void read_stop(ik__rconn *c)
{
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

/* ---- the answer queue -------------------------------------------------------------------- */

static void push(ik__rconn *c, ik__pend *p)
{
    p->next = NULL;
    if (c->pend_tail) {
        c->pend_tail->next = p;
    } else {
        c->pend_head = p;
    }
    c->pend_tail = p;
    c->npend++;
}

/* Where a ready answer goes: c->out when nothing is queued, else the queue's last
 * held entry (a new one if the last is pending). */
static ik__buf *ready_dst(ik__rconn *c)
{
    if (!c->pend_head) return &c->out;
    ik__pend *t = c->pend_tail;
    if (t->op == IK_OP_HELD && t->done) return &t->out;
    ik__pend *p = ik__pend_new(c->w);
    p->op = IK_OP_HELD;
    p->resp = 1;
    p->done = 1;
    p->rconn = c;
    push(c, p);
    return &p->out;
}

/* An error answer after which nothing more is read (protocol error, timeout). */
static void rconn_fail(ik__rconn *c, const char *msg)
{
    ik__buf *dst = ready_dst(c);
    size_t before = dst->len;
    ik__resp_error(dst, "ERR %s", msg);
    if (dst != &c->out) c->held += dst->len - before;
    ik__count(&c->w->m.resp_cmds[ik__resp_ncmds][1]);
    c->close_after = 1;
    c->started = 0;
}

/* Runs the complete command in the parser. */
static void run_command(ik__rconn *c)
{
    ik__worker *w = c->w;
    ik__rcall call;
    call.w = w;
    call.s = &c->s;
    call.kinds = &w->rw->kinds;
    call.rp = &c->rp;
    call.pend = NULL;
    if (!c->pend_head) {
        call.out = &c->out;
        ik__resp_dispatch(&call);
    } else { /* behind a pending answer: rendered aside, then queued */
        w->body.len = 0;
        call.out = &w->body;
        ik__resp_dispatch(&call);
        if (w->body.len) {
            ik__buf *dst = ready_dst(c);
            ik__buf_append(dst, w->body.p, w->body.len);
            c->held += w->body.len;
        }
        if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
    }
    if (call.pend) {
        call.pend->rconn = c;
        push(c, call.pend);
        /* Until INCR has learnt its tag's kind, the commands behind it wait: else a
         * later INCR of the same tag could be committed before it, and one client's
         * pipelined INCRs would not answer increasing IDs. */
        if (call.pend->rflip == IK_RFLIP_GUESS) c->probe = call.pend;
    }
    if (c->s.quit) c->close_after = 1;
}

/* Parses data[0..len-1], running every complete command. Returns the bytes used:
 * less than len only when parsing paused (c->paused: too much output or too many
 * queued answers) or the connection is to close after its last answer. */
static size_t rconn_feed(ik__rconn *c, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len && !c->close_after) {
        if (c->out.len + c->held >= IK_OUT_HIGH || c->npend >= IK_PIPE_MAX || c->probe) {
            c->paused = 1;
            break;
        }
        size_t used;
        int r = ik__respp_feed(&c->rp, data + off, len - off, &used);
        off += used;
        if (r == IK_RESPP_ERROR) {
            rconn_fail(c, c->rp.err);
            break;
        }
        if (r == IK_RESPP_MORE) break;
        c->started = 0;
        run_command(c);
    }
    if (ik__respp_busy(&c->rp)) {
        if (!c->started) c->started = now_of(c) ? now_of(c) : 1;
    } else {
        c->started = 0;
    }
    return off;
}

/* ---- writing -----------------------------------------------------------------------------------
 */

/* c->out has been written whole: the sequence answers in it were delivered. */
static void out_done(ik__rconn *c)
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
    ik__rconn *c = wr->data;
    c->writing = 0;
    if (status < 0) {
        rconn_close(c);
        return;
    }
    out_done(c);
    rconn_flush(c);
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    if (status < 0) rconn_close(r->data);
}

static void linger(ik__rconn *c)
{
    if (c->lingering || c->closing) return;
    c->lingering = 1;
    c->linger_until = now_of(c) + IK_LINGER_MS;
    c->sd.data = c;
    if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        rconn_close(c);
        return;
    }
    read_start(c);
}

/* Parses the kept input again after a pause. */
static void resume(ik__rconn *c)
{
    c->paused = 0;
    if (c->stash.len > c->stash_off) {
        c->stash_off += rconn_feed(c, c->stash.p + c->stash_off, c->stash.len - c->stash_off);
        if (c->stash_off >= c->stash.len || c->close_after) {
            ik__buf_reset(&c->stash);
            c->stash_off = 0;
        }
    }
}

/* Moves the connection on (loop.c's conn_flush, for RESP): ready answers at the
 * head of the queue into c->out, c->out to the socket, then wait, close, parse kept
 * input, or read again. */
static void rconn_flush(ik__rconn *c)
{
    ik__worker *w = c->w;
    if (c->writing) return;
    while (!c->closing) {
        while (c->pend_head && c->pend_head->done) {
            ik__pend *p = c->pend_head;
            ik__buf_append(&c->out, p->out.p, p->out.len);
            if (p->op == IK_OP_HELD) c->held -= p->out.len;
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
                rconn_close(c);
                return;
            }
            if (r < 0) r = 0;
            b = uv_buf_init(c->out.p + r, (unsigned)(c->out.len - (size_t)r));
            c->wr.data = c;
            if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
                rconn_close(c);
                return;
            }
            c->writing = 1;
            c->write_start = now_of(c);
            read_stop(c);
            return;
        }
        if (c->pend_head) { /* waiting for an answer: parse what is behind it */
            if (c->close_after || c->eof) return;
            if (c->paused) {
                if (c->npend >= IK_PIPE_MAX || c->held >= IK_OUT_HIGH || c->probe) return;
                resume(c);
                continue;
            }
            read_start(c);
            return;
        }
        if (c->close_after) {
            if (c->eof) {
                rconn_close(c);
            } else {
                linger(c);
            }
            return;
        }
        if (c->paused) {
            resume(c);
            continue;
        }
        if (w->draining && !ik__respp_busy(&c->rp)) {
            rconn_close(c);
            return;
        }
        read_start(c);
        return;
    }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    ik__rconn *c = s->data;
    if (nread == 0) return;
    if (nread < 0) {
        /* EOF between commands: answer what is ready, then close. EOF inside a
         * command (a client gone mid-command), EOF while an answer waits for the
         * store (a client that gave up: its sequence requests are withdrawn, as on
         * HTTP) or a read error: just close. */
        if (nread != UV_EOF || c->lingering || ik__respp_busy(&c->rp) || c->pend_head) {
            rconn_close(c);
            return;
        }
        read_stop(c);
        c->eof = 1;
        c->close_after = 1;
        rconn_flush(c);
        return;
    }
    c->last_active = now_of(c);
    if (c->lingering) return;
    size_t used = rconn_feed(c, buf->base, (size_t)nread);
    if (c->paused && !c->close_after && used < (size_t)nread) {
        read_stop(c);
        ik__buf_append(&c->stash, buf->base + used, (size_t)nread - used);
    }
    rconn_flush(c);
}

void ik__resp_complete(ik__worker *w, ik__pend *p)
{
    ik__rconn *c = p->rconn;
    if (!c) { /* its connection closed meanwhile: a range committed for it is a gap */
        ik__pend_orphaned(w, p);
        ik__pend_free(p);
        ik__worker_maybe_end(w);
        return;
    }
    if (ik__resp_render(w, &w->rw->kinds, p) == IK_PENDING) return; /* asked again */
    if (c->probe == p) c->probe = NULL;
    p->done = 1;
    c->last_active = now_of(c);
    rconn_flush(c);
}

/* ---- accepting and closing ------------------------------------------------------------------ */

static void on_rclose(uv_handle_t *h)
{
    ik__rconn *c = h->data;
    ik__worker *w = c->w;
    ik__rworker *rw = w->rw;
    if (c->prev) {
        c->prev->next = c->next;
    } else {
        rw->conns = c->next;
    }
    if (c->next) c->next->prev = c->prev;
    rconn_drop(c, IK_GONE_CLIENT); /* nothing left unless closed by ik__worker_teardown */
    ik__respp_free(&c->rp);
    ik__buf_reset(&c->out);
    ik__buf_reset(&c->stash);
    free(c);
    atomic_fetch_sub_explicit(&w->srv->connections, 1, memory_order_relaxed);
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    ik__worker_maybe_end(w);
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

static void on_rconnection(uv_stream_t *server, int status)
{
    ik__worker *w = server->data;
    ik__server *srv = w->srv;
    if (status < 0) {
        ik__count(&w->m.rejected);
        return;
    }
    ik__rconn *c = calloc(1, sizeof *c);
    if (!c) {
        fprintf(stderr, "idkeeper: out of memory; aborting\n");
        abort();
    }
    c->w = w;
    c->tcp.data = c;
    uv_tcp_init(&w->loop, &c->tcp);
    c->next = w->rw->conns;
    if (w->rw->conns) w->rw->conns->prev = c;
    w->rw->conns = c;
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    int open = atomic_fetch_add_explicit(&srv->connections, 1, memory_order_relaxed) + 1;
    uint32_t max_bytes = srv->max_header_bytes;
    ik__respp_init(&c->rp, c->arg_inline, sizeof c->arg_inline, IK_RESP_MAX_ARGS, max_bytes);
    ik__buf_init(&c->out, c->out_inline, sizeof c->out_inline);
    ik__buf_init(&c->stash, NULL, 0);
    c->s.id = atomic_fetch_add(&next_client_id, 1);
    c->s.proto = 2;
    c->s.authed = srv->token == NULL;
    c->s.since_ms = ik__now_ms();
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        rconn_close(c);
        return;
    }
    ik__count(&w->m.accepted);
    if (open > srv->cfg->max_connections || w->draining) {
        /* as Redis: say why, then close */
        static const char msg[] = "-ERR max number of clients reached\r\n";
        static const char bye[] = "-TRYAGAIN this server is shutting down; ask another\r\n";
        uv_buf_t b = w->draining ? uv_buf_init((char *)bye, sizeof bye - 1)
                                 : uv_buf_init((char *)msg, sizeof msg - 1);
        uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        ik__count(&w->m.rejected);
        rconn_close(c);
        return;
    }
    struct sockaddr_storage ss;
    int sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &sl) == 0)
        addr_text(&ss, c->s.peer, sizeof c->s.peer);
    sl = sizeof ss;
    if (uv_tcp_getsockname(&c->tcp, (struct sockaddr *)&ss, &sl) == 0)
        addr_text(&ss, c->s.local, sizeof c->s.local);
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_active = uv_now(&w->loop);
    read_start(c);
}

/* ---- the worker's part ------------------------------------------------------------------------
 */

int ik__resp_worker_init(ik__worker *w)
{
    int r;
    ik__rworker *rw = calloc(1, sizeof *rw);
    if (!rw) return UV_ENOMEM;
    w->rw = rw;
    uv_tcp_init(&w->loop, &rw->listener);
    rw->listener.data = w;
    rw->listener_ready = 1;
    if ((r = uv_tcp_open(&rw->listener, w->resp_fd)) != 0) return r;
    w->resp_fd = -1;
    return uv_listen((uv_stream_t *)&rw->listener, 511, on_rconnection);
}

void ik__resp_stop(ik__worker *w)
{
    ik__rworker *rw = w->rw;
    if (rw && rw->listener_ready && !uv_is_closing((uv_handle_t *)&rw->listener))
        uv_close((uv_handle_t *)&rw->listener, NULL);
}

int ik__resp_busy(const ik__worker *w)
{
    return w->rw && w->rw->conns;
}

void ik__resp_teardown(ik__worker *w)
{
    free(w->rw);
    w->rw = NULL;
}

/* The drain deadline came with answers still pending on c: each gets -TRYAGAIN in
 * its place (the ik__pend itself is detached, freed when it comes back), what is
 * ready is written as far as the socket takes it, and the caller closes c. */
static void fail_pending(ik__rconn *c)
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
        q->resp = 1;
        q->done = 1;
        q->rconn = c;
        q->next = nx;
        ik__resp_error(&q->out, "TRYAGAIN this server is shutting down and its store did not "
                                "answer in time; ask another");
        c->held += q->out.len;
        ik__count(&w->m.resp_cmds[p->route][1]);
        if (prev) {
            prev->next = q;
        } else {
            c->pend_head = q;
        }
        if (c->pend_tail == p) c->pend_tail = q;
        p->rconn = NULL;
        p->next = NULL;
        p->gone = IK_GONE_SHUTDOWN;
        if (ik__pend_withdraw(w, p)) {
            w->inflight--;
            atomic_store_explicit(&w->m.pending,
                                  atomic_load_explicit(&w->m.pending, memory_order_relaxed) - 1,
                                  memory_order_relaxed);
            ik__pend_free(p);
        }
        prev = q;
    }
    c->close_after = 1;
    rconn_flush(c);
}

void ik__resp_sweep(ik__worker *w, uint64_t now)
{
    if (!w->rw) return;
    ik__server *srv = w->srv;
    uint64_t rto = (uint64_t)srv->read_timeout_ms, ito = (uint64_t)srv->idle_timeout_ms;
    ik__rconn *next;
    for (ik__rconn *c = w->rw->conns; c; c = next) {
        next = c->next;
        if (c->closing) continue;
        if (w->draining && now >= w->drain_deadline) {
            if (c->pend_head && !c->writing) fail_pending(c);
            rconn_close_why(c, IK_GONE_SHUTDOWN);
        } else if (c->lingering) {
            if (now >= c->linger_until) rconn_close(c);
        } else if (c->writing) { /* a peer that does not read */
            if (now - c->write_start >= rto) {
                ik__count(&w->m.timeouts);
                rconn_close(c);
            }
        } else if (c->started && !c->paused) { /* a command that does not complete (while
                                                    paused, the wait is ours) */
            if (now - c->started >= rto) {
                char msg[96];
                snprintf(msg, sizeof msg, "the command did not complete within %llu ms",
                         (unsigned long long)rto);
                ik__count(&w->m.timeouts);
                read_stop(c);
                rconn_fail(c, msg);
                rconn_flush(c);
            }
        } else if (c->pend_head || c->paused) {
            /* waiting for the store, or for our own output: not idle */
        } else if (w->draining) {
            rconn_close(c);
        } else if (now - c->last_active >= ito) {
            ik__count(&w->m.timeouts);
            rconn_close(c);
        }
    }
}
