/* conn.c: the connection core (conn.h has the life of a connection and its
 * invariants). One copy of accepting, reading, the answer queue, writing,
 * lingering, the timeouts and closing, for every protocol: the protocol is reached
 * only through its ik__proto hooks.
 *
 * Calls go down only: pend.c (dropping and detaching answers), metrics and log.
 */
#include "conn.h"
#include "log.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_close(uv_handle_t *h);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static uint64_t loop_now(const ik__conn *c)
{
    return uv_now(&c->w->loop);
}

/* Nothing more will be written to c (why: IK_GONE_*): the answers it still holds
 * come back to nobody. A sequence request still queued in the library is
 * withdrawn; one out with it is detached (a range committed for it is logged as a
 * gap when it comes back); a sequence range already answered but not yet written
 * whole (held behind a pending answer, or in c->out) is a gap now, logged. */
static void drop(ik__conn *c, int why)
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
            ik__pend_detach(w, p, why);
        }
    }
    c->pend_head = c->pend_tail = NULL;
    c->npend = 0;
    c->charged = 0;
    c->gate = NULL;
}

/* Closes c; its answers not yet written are dropped at once, so that none that
 * comes back meanwhile is taken for delivered. */
static void close_why(ik__conn *c, int why)
{
    if (c->closing) return;
    c->closing = 1;
    drop(c, why);
    uv_close((uv_handle_t *)&c->tcp, on_close);
}

static void conn_close(ik__conn *c)
{
    close_why(c, IK_GONE_CLIENT);
}

/* 1 if the peer has closed or shut down its side of c, or reset it, and this loop
 * has not read that yet (POLLRDHUP, POLLHUP, POLLERR; nothing is read). */
static int peer_gone(ik__conn *c)
{
    uv_os_fd_t fd;
    if (c->closing || uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0) return 0;
    struct pollfd pf = {.fd = fd, .events = POLLIN | POLLRDHUP};
    if (poll(&pf, 1, 0) != 1) return 0;
    return (pf.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    ik__conn *c = h->data;
    (void)hint;
    buf->base = c->w->rbuf;
    buf->len = IK_READ_BUF;
}

static void read_start(ik__conn *c)
{
    if (c->reading || c->closing) return;
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_close(c);
        return;
    }
    c->reading = 1;
}

void ik__conn_read_stop(ik__conn *c)
{
    if (!c->reading) return;
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = 0;
}

/* ---- the answer queue ------------------------------------------------------------------ */

static void push(ik__conn *c, ik__pend *p)
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

void ik__conn_push(ik__conn *c, ik__pend *p)
{
    if (!p->charge) {
        uint64_t b = IK_ANSWER_BYTES + (uint64_t)IK_ID_BYTES * p->n;
        p->charge = b < UINT32_MAX ? (uint32_t)b : UINT32_MAX;
    }
    c->charged += p->charge;
    p->answer = c->proto->answer;
    push(c, p);
}

/* A new held (ready) entry of c, not yet linked. */
static ik__pend *held_new(ik__conn *c)
{
    ik__pend *p = ik__pend_new(c->w);
    p->op = IK_OP_HELD;
    p->done = 1;
    p->conn = c;
    return p;
}

ik__buf *ik__conn_ready(ik__conn *c)
{
    if (!c->pend_head) return &c->out;
    ik__pend *t = c->pend_tail;
    if (!c->proto->hold_each && t->op == IK_OP_HELD && t->done) return &t->out;
    ik__pend *p = held_new(c);
    push(c, p);
    return &p->out;
}

void ik__conn_ready_done(ik__conn *c, const ik__buf *dst, size_t before)
{
    if (dst != &c->out) c->held += dst->len - before;
}

int ik__conn_full(const ik__conn *c)
{
    return c->out.len + c->held + c->charged >= IK_OUT_HIGH || c->npend >= IK_PIPE_MAX || c->gate;
}

static void flush_later(ik__conn *c, int wake);
static void on_idle(uv_idle_t *h)
{
    (void)h; /* its being active is the point: the loop polls without waiting */
}

void ik__conn_answered(ik__conn *c, ik__pend *p)
{
    p->done = 1;
    c->last_active = loop_now(c);
    flush_later(c, 1); /* from the done queue, or a timer: maybe before the poll */
}

/* ---- writing ----------------------------------------------------------------------------- */

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
    ik__conn_flush(c);
}

static void on_shutdown(uv_shutdown_t *r, int status)
{
    if (status < 0) conn_close(r->data);
}

/* After a final answer has been written: half-close and read until the peer closes
 * (or IK_LINGER_MS), so that unread input does not turn our close into a reset
 * that destroys the answer in flight. */
static void linger(ik__conn *c)
{
    if (c->lingering || c->closing) return;
    c->lingering = 1;
    c->linger_until = loop_now(c) + IK_LINGER_MS;
    c->sd.data = c;
    if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
        conn_close(c);
        return;
    }
    read_start(c);
}

/* Parses the kept input again after a pause. */
static void resume(ik__conn *c)
{
    if (c->proto->resume) c->proto->resume(c);
    c->paused = 0;
    if (c->stash.len > c->stash_off) {
        c->stash_off += c->proto->feed(c, c->stash.p + c->stash_off, c->stash.len - c->stash_off);
        if (c->stash_off >= c->stash.len || c->close_after) {
            ik__buf_reset(&c->stash);
            c->stash_off = 0;
        }
    }
}

/* Writes what c->out's socket takes now: the bytes written (0: it takes none now),
 * or -1 on an error (the peer gone). What uv_try_write does, without its layers
 * (one write(2) on the descriptor, on the path of every answer): allowed because
 * libuv has nothing of c's to write (no uv_write pending: !c->writing). */
static ssize_t try_write(ik__conn *c)
{
    ssize_t r;
    do {
        r = write(c->fd, c->out.p, c->out.len);
    } while (r < 0 && errno == EINTR);
    if (r >= 0) return r;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? 0 : -1;
}

void ik__conn_flush(ik__conn *c)
{
    ik__worker *w = c->w;
    if (c->writing) return; /* on_write comes back here */
    while (!c->closing) {
        while (c->pend_head && c->pend_head->done) {
            ik__pend *p = c->pend_head;
            ik__buf_append(&c->out, p->out.p, p->out.len);
            if (p->op == IK_OP_HELD) c->held -= p->out.len;
            c->charged -= p->charge;
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
        if (c->unsent && peer_gone(c)) {
            /* Sequence ranges about to be written to a client that has gone (an
             * answer that came back while it was still there, held behind one that
             * came later; a server stalled past the client's timeout; the shutdown
             * deadline's flush): written, they would count as delivered. Instead
             * they are gaps, logged and counted (docs/guarantees.md promise 4). */
            close_why(c, IK_GONE_CLIENT);
            ik__worker_maybe_end(w);
            return;
        }
        if (c->out.len) {
            ssize_t r = try_write(c);
            if (r >= 0 && (size_t)r == c->out.len) {
                out_done(c);
                continue;
            }
            if (r < 0) {
                conn_close(c);
                return;
            }
            uv_buf_t b = uv_buf_init(c->out.p + r, (unsigned)(c->out.len - (size_t)r));
            c->wr.data = c;
            if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) {
                conn_close(c);
                return;
            }
            c->writing = 1;
            c->write_start = loop_now(c);
            ik__conn_read_stop(c);
            return;
        }
        if (c->pend_head) { /* waiting for an answer: go on parsing what is behind it */
            if (c->close_after || c->eof) return;
            if (c->paused) {
                if (ik__conn_full(c)) return;
                resume(c);
                continue;
            }
            read_start(c);
            return;
        }
        if (c->close_after) {
            if (c->eof) {
                conn_close(c);
            } else {
                linger(c);
            }
            return;
        }
        if (c->paused) {
            resume(c);
            continue;
        }
        if (w->draining && !c->proto->started(c)) {
            conn_close(c);
            return;
        }
        read_start(c);
        return;
    }
}

/* ---- the end of a turn ------------------------------------------------------------------- */

/* After a read or an answer: c's answers are written when the loop's turn has read
 * from every connection that was ready and rendered every answer that came back
 * (on_turn), not one connection, or one answer, at a time. With many clients the
 * loop then writes its answers together and the clients send their next requests
 * together, so that one epoll_wait finds many connections ready, instead of the loop
 * waking for each (docs/BENCHMARKS.md, "RESP -P 16"); a sequence write's answers
 * leave in one write a connection, not one an answer. The idle handle keeps a turn
 * whose answer came from a timer from sleeping in epoll_wait before its check. */
static void flush_later(ik__conn *c, int wake)
{
    ik__turn *t = &c->w->turn;
    if (wake && !t->waking) { /* a read needs none: it runs in the poll, before the check */
        t->waking = 1;
        uv_idle_start(&t->idle, on_idle);
    }
    if (c->queued) return;
    c->queued = 1;
    c->wnext = t->head;
    t->head = c;
}

static void on_turn(uv_check_t *h)
{
    ik__worker *w = h->data;
    ik__conn *c;
    while ((c = w->turn.head)) {
        w->turn.head = c->wnext;
        c->queued = 0;
        ik__conn_flush(c);
    }
    if (w->turn.waking) {
        w->turn.waking = 0;
        uv_idle_stop(&w->turn.idle);
    }
}

int ik__turn_init(ik__worker *w)
{
    int r = uv_check_init(&w->loop, &w->turn.check);
    if (r != 0) return r;
    w->turn.ready = 1;
    w->turn.check.data = w;
    if ((r = uv_check_start(&w->turn.check, on_turn)) != 0) return r;
    uv_unref((uv_handle_t *)&w->turn.check); /* the loop ends without waiting for it */
    if ((r = uv_idle_init(&w->loop, &w->turn.idle)) != 0) return r;
    uv_unref((uv_handle_t *)&w->turn.idle);
    return 0;
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
        if (nread != UV_EOF || c->lingering || c->proto->started(c) || c->pend_head) {
            conn_close(c);
            return;
        }
        ik__conn_read_stop(c);
        c->eof = 1;
        c->close_after = 1;
        ik__conn_flush(c);
        return;
    }
    c->last_active = loop_now(c);
    if (c->lingering) return; /* discarding */
    size_t used = c->proto->feed(c, buf->base, (size_t)nread);
    if (c->paused && !c->close_after && used < (size_t)nread) {
        ik__conn_read_stop(c);
        ik__buf_append(&c->stash, buf->base + used, (size_t)nread - used);
    }
    flush_later(c, 0);
}

/* ---- accepting and closing --------------------------------------------------------------- */

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
    if (c->queued) /* closed in the turn that read from it (rare): unlinked */
        for (ik__conn **q = &w->turn.head; *q; q = &(*q)->wnext)
            if (*q == c) {
                *q = c->wnext;
                break;
            }
    drop(c, IK_GONE_CLIENT); /* nothing left unless closed by the loop's teardown */
    c->proto->free_conn(c);
    ik__buf_reset(&c->out);
    ik__buf_reset(&c->stash);
    free(c);
    atomic_fetch_sub_explicit(&w->srv->connections, 1, memory_order_relaxed);
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    ik__worker_maybe_end(w);
}

void ik__conn_closed(uv_handle_t *h)
{
    on_close(h);
}

static void on_connection(uv_stream_t *server, int status)
{
    ik__listener *l = (ik__listener *)server;
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
    ik__conn *c = ik__xcalloc(1, l->proto->size);
    c->w = w;
    c->proto = l->proto;
    c->tcp.data = c;
    uv_tcp_init(&w->loop, &c->tcp);
    c->next = w->conns;
    if (w->conns) w->conns->prev = c;
    w->conns = c;
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    int open = atomic_fetch_add_explicit(&srv->connections, 1, memory_order_relaxed) + 1;
    ik__buf_init(&c->out, c->out_inline, sizeof c->out_inline);
    ik__buf_init(&c->stash, NULL, 0);
    c->proto->init(c);
    uv_os_fd_t fd;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0 ||
        uv_fileno((uv_handle_t *)&c->tcp, &fd) != 0) {
        conn_close(c);
        return;
    }
    c->fd = fd;
    ik__count(&w->m.accepted);
    if (open > srv->cfg->max_connections || w->draining ||
        (c->proto->admit && c->proto->admit(c) != 0)) {
        if (c->proto->refused) c->proto->refused(c, w->draining);
        ik__count(&w->m.rejected);
        conn_close(c);
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    c->last_active = uv_now(&w->loop);
    read_start(c);
}

int ik__listener_open(ik__worker *w, ik__listener *l, int fd, const ik__proto *proto)
{
    int r;
    l->proto = proto;
    uv_tcp_init(&w->loop, &l->tcp);
    l->tcp.data = w;
    l->ready = 1;
    if ((r = uv_tcp_open(&l->tcp, fd)) != 0) {
        close(fd);
        return r;
    }
    return uv_listen((uv_stream_t *)&l->tcp, 511, on_connection);
}

void ik__listener_close(ik__listener *l)
{
    if (l->ready && !uv_is_closing((uv_handle_t *)&l->tcp)) uv_close((uv_handle_t *)&l->tcp, NULL);
}

/* ---- timeouts and shutdown ------------------------------------------------------------------- */

/* The drain deadline came with answers still pending on c: each gets the protocol's
 * shutdown answer in its place (the ik__pend itself is detached and freed when the
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
        ik__pend *q = held_new(c);
        q->next = nx;
        c->proto->shutdown_answer(c, p, &q->out);
        c->held += q->out.len;
        if (prev) {
            prev->next = q;
        } else {
            c->pend_head = q;
        }
        if (c->pend_tail == p) c->pend_tail = q;
        c->charged -= p->charge;
        ik__pend_detach(w, p, IK_GONE_SHUTDOWN);
        prev = q;
    }
    c->close_after = 1;
    ik__conn_flush(c);
}

void ik__conn_sweep(ik__worker *w, uint64_t now)
{
    ik__server *srv = w->srv;
    uint64_t rto = (uint64_t)srv->read_timeout_ms, ito = (uint64_t)srv->idle_timeout_ms;
    ik__conn *next;
    for (ik__conn *c = w->conns; c; c = next) {
        next = c->next;
        if (c->closing) continue;
        uint64_t started, due;
        if (w->draining && now >= w->drain_deadline) {
            if (c->pend_head && !c->writing) fail_pending(c);
            close_why(c, IK_GONE_SHUTDOWN);
        } else if (c->lingering) {
            if (now >= c->linger_until) conn_close(c);
        } else if (c->writing) { /* a peer that does not read */
            if (now - c->write_start >= rto) {
                ik__count(&w->m.timeouts);
                conn_close(c);
            }
        } else if ((started = c->proto->started(c)) && !c->paused) {
            /* a request that does not complete (slowloris; while paused, the wait
             * is ours) */
            if (now - started >= rto) {
                ik__count(&w->m.timeouts);
                ik__conn_read_stop(c);
                c->proto->timeout(c, rto);
                ik__conn_flush(c);
            }
        } else if (c->pend_head || c->paused) {
            /* waiting for the store, or for our own output: not idle */
        } else if (w->draining) {
            conn_close(c);
        } else if (now - c->last_active >= ito ||
                   (c->proto->deadline && (due = c->proto->deadline(c)) && now >= due)) {
            /* idle, or past the protocol's deadline (RESP: not authenticated in time) */
            ik__count(&w->m.timeouts);
            conn_close(c);
        }
    }
}
