/* loop.c: one libuv event loop per thread: accepting, HTTP/1.1 framing with
 * http_parser (keep-alive, pipelining), the request limits and timeouts, and writing
 * responses.
 *
 * A connection's life (all on its loop's thread):
 *
 *   accept --> READING --on_message_complete: answer into c->out--> conn_flush
 *                 ^                                                     |
 *                 |   uv_try_write wrote it all                         |
 *                 +-----------------------------------------------------+
 *                 |                                                     | short write:
 *                 +------------- on_write (done) <--- WRITING <---------+ uv_write, reads
 *                                                     (reads stopped)     stopped
 *   final response (error, Connection: close, draining) --> LINGERING: shutdown(WR),
 *   read and discard until EOF or IK_LINGER_MS --> closed
 *   EOF / read error / timeout / max_connections --> closed
 *
 * Invariants
 * - Reads land in the loop's one read buffer and are parsed at once: the parser's
 *   callbacks copy what a handler needs (URL, Accept, Authorization, body) into
 *   c->req, so nothing points into the read buffer after on_read returns.
 * - c->out is never touched while a uv_write of it is pending (c->writing): reads
 *   are stopped then, and nothing else produces output for c.
 * - Pipelining: every complete request in a read is answered, in order, into c->out,
 *   and the whole batch is written at once. Above IK_OUT_HIGH bytes of output the
 *   parser is paused and the unparsed rest of the read is kept in c->stash until
 *   the output has drained (back-pressure instead of unbounded buffering).
 * - After a response that says "Connection: close" nothing more is parsed.
 * - The hot path (one keep-alive GET) allocates nothing: c->req and c->out start on
 *   storage inline in the connection and go to the heap only for large requests or
 *   responses, returning inline afterwards.
 */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct ik__conn ik__conn;

/* Which header value the parser is delivering. */
enum { HDR_NONE = 0, HDR_ACCEPT, HDR_AUTH };

struct ik__conn {
    uv_tcp_t tcp;
    http_parser parser;
    ik__worker *w;
    ik__conn *prev, *next; /* w->conns */
    uint64_t last_active;  /* loop ms of the last read or accept */
    uint64_t req_start;    /* loop ms the current request began; 0: none */
    uint64_t write_start;  /* loop ms the pending uv_write began */
    uint64_t linger_until; /* loop ms */
    unsigned reading : 1, writing : 1, close_after : 1, paused : 1, lingering : 1, closing : 1,
        eof : 1, field_open : 1, hname_over : 1, hdr : 2;
    uint16_t err_status; /* status a parser callback refused the request with */
    uint8_t hname_len;
    char hname[16];        /* header name being delivered (lower case) */
    uint32_t header_bytes; /* request line + headers so far */
    ik__buf req;           /* URL, then Accept, Authorization, body values */
    uint32_t url_len, accept_off, accept_len, auth_off, auth_len, body_off, body_len;
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

static void conn_close(ik__conn *c)
{
    if (c->closing) return;
    c->closing = 1;
    uv_close((uv_handle_t *)&c->tcp, on_close);
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

/* Appends the serialized response rs to c->out. keep: the connection stays open
 * (else "Connection: close"); http10: the client spoke HTTP/1.0 (keep-alive must
 * then be said). */
static void conn_put_response(ik__conn *c, const ik__resp *rs, int keep, int http10)
{
    ik__worker *w = c->w;
    if (uv_now(&w->loop) >= w->date_next) refresh_date(w);
    const ik__buf *b = rs->body;
    const char *st = status_text(rs->status);
    size_t stl = strlen(st), ctl = strlen(rs->ctype);
    char *start = ik__buf_reserve(&c->out, 160 + stl + ctl + w->date_len + rs->extra_len + b->len);
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
    c->out.len += (size_t)(d - start);
}

/* Answers a request the connection layer refuses (malformed, too large, too slow)
 * with a JSON error and "Connection: close"; nothing more is parsed. */
static void conn_fail(ik__conn *c, int status, const char *code, const char *msg)
{
    ik__worker *w = c->w;
    ik__resp rs;
    rs.body = &w->body;
    rs.extra_len = 0;
    ik__reply_error(&rs, status, code, "%s", msg);
    ik__count(&w->m.requests[ik__nroutes][ik__metric_code_index(status)]);
    conn_put_response(c, &rs, 0, 0);
    c->close_after = 1;
    c->req_start = 0;
}

/* ---- requests ------------------------------------------------------------------------ */

/* Splits the request target into path and query. Returns 0, or -1 if it has no
 * usable path (e.g. "*" or an authority). */
static int split_target(const char *url, size_t n, int is_connect, ik__req *rq)
{
    if (n && url[0] == '/') { /* origin-form, the common case */
        size_t i = 0;
        while (i < n && url[i] != '?' && url[i] != '#')
            i++;
        rq->path.p = url;
        rq->path.n = i;
        if (i < n && url[i] == '?') {
            size_t q = i + 1, e = q;
            while (e < n && url[e] != '#')
                e++;
            rq->query.p = url + q;
            rq->query.n = e - q;
        }
        return 0;
    }
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, n, is_connect, &u) != 0) return -1;
    if (!(u.field_set & (1 << UF_PATH))) return -1;
    rq->path.p = url + u.field_data[UF_PATH].off;
    rq->path.n = u.field_data[UF_PATH].len;
    if (u.field_set & (1 << UF_QUERY)) {
        rq->query.p = url + u.field_data[UF_QUERY].off;
        rq->query.n = u.field_data[UF_QUERY].len;
    }
    return 0;
}

/* Answers the complete request now in c->req into c->out. */
static void conn_answer(ik__conn *c)
{
    ik__worker *w = c->w;
    const char *base = c->req.p;
    ik__req rq;
    memset(&rq, 0, sizeof rq);
    rq.method = c->parser.method;
    rq.http_minor = c->parser.http_major == 1 ? c->parser.http_minor : 0;
    if (c->accept_len) rq.accept = (ik__span){base + c->accept_off, c->accept_len};
    if (c->auth_len) rq.auth = (ik__span){base + c->auth_off, c->auth_len};
    if (c->body_len) rq.body = (ik__span){base + c->body_off, c->body_len};

    w->body.len = 0;
    ik__resp rs;
    rs.status = 200;
    rs.ctype = "text/plain";
    rs.body = &w->body;
    rs.extra_len = 0;
    size_t route;
    if (split_target(base, c->url_len, c->parser.method == HTTP_CONNECT, &rq) != 0) {
        ik__reply_error(&rs, 400, "bad_request", "the request target has no path");
        route = ik__nroutes;
    } else {
        route = ik__dispatch(w, &rq, &rs);
    }
    ik__count(&w->m.requests[route][ik__metric_code_index(rs.status)]);

    int keep = http_should_keep_alive(&c->parser) && !w->draining && !c->parser.upgrade;
    conn_put_response(c, &rs, keep, rq.http_minor == 0);
    if (!keep) c->close_after = 1;
    if (w->body.cap > 1024 * 1024) ik__buf_reset(&w->body);
}

/* ---- parser callbacks ----------------------------------------------------------------- */

/* Refuses the request being parsed with status (answered by conn_parse_error). */
static int too_big(ik__conn *c, int status)
{
    c->err_status = (uint16_t)status;
    return -1;
}

static int on_message_begin(http_parser *p)
{
    ik__conn *c = p->data;
    if (c->req.p != c->req.inline_p) ik__buf_reset(&c->req);
    c->req.len = 0;
    c->url_len = c->accept_len = c->auth_len = c->body_len = 0;
    c->accept_off = c->auth_off = c->body_off = 0;
    c->header_bytes = 12; /* "GET " ... " HTTP/1.1\r\n", roughly */
    c->err_status = 0;
    c->field_open = 0;
    c->hdr = HDR_NONE;
    c->req_start = loop_now(c);
    if (!c->req_start) c->req_start = 1;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    ik__conn *c = p->data;
    c->header_bytes += (uint32_t)len;
    if (c->header_bytes > c->w->srv->max_header_bytes) return too_big(c, 414);
    ik__buf_append(&c->req, at, len);
    c->url_len += (uint32_t)len;
    return 0;
}

static int on_header_field(http_parser *p, const char *at, size_t len)
{
    ik__conn *c = p->data;
    if (!c->field_open) {
        c->field_open = 1;
        c->hname_len = 0;
        c->hname_over = 0;
        c->header_bytes += 4; /* ": " and CRLF */
    }
    c->header_bytes += (uint32_t)len;
    if (c->header_bytes > c->w->srv->max_header_bytes) return too_big(c, 431);
    if (c->hname_len + len > sizeof c->hname) {
        c->hname_over = 1;
    } else {
        memcpy(c->hname + c->hname_len, at, len);
        c->hname_len = (uint8_t)(c->hname_len + len);
    }
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    ik__conn *c = p->data;
    if (c->field_open) { /* first piece of this value */
        c->field_open = 0;
        c->hdr = HDR_NONE;
        if (!c->hname_over) {
            if (ik__ieq(c->hname, c->hname_len, "accept")) {
                c->hdr = HDR_ACCEPT;
                c->accept_off = (uint32_t)c->req.len;
                c->accept_len = 0;
            } else if (ik__ieq(c->hname, c->hname_len, "authorization")) {
                c->hdr = HDR_AUTH;
                c->auth_off = (uint32_t)c->req.len;
                c->auth_len = 0;
            }
        }
    }
    c->header_bytes += (uint32_t)len;
    if (c->header_bytes > c->w->srv->max_header_bytes) return too_big(c, 431);
    if (c->hdr == HDR_NONE || !len) return 0;
    ik__buf_append(&c->req, at, len);
    if (c->hdr == HDR_ACCEPT) {
        c->accept_len += (uint32_t)len;
    } else {
        c->auth_len += (uint32_t)len;
    }
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    ik__conn *c = p->data;
    if (p->http_major != 1) return too_big(c, 505);
    uint64_t limit = p->method == HTTP_POST ? IK_MAX_BODY : 0;
    if ((p->flags & F_CHUNKED) && limit == 0) return too_big(c, 413);
    if (p->content_length != ULLONG_MAX && p->content_length > limit) return too_big(c, 413);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    ik__conn *c = p->data;
    if (c->body_len + len > IK_MAX_BODY) return too_big(c, 413);
    if (!c->body_len) c->body_off = (uint32_t)c->req.len;
    ik__buf_append(&c->req, at, len);
    c->body_len += (uint32_t)len;
    return 0;
}

static int on_message_complete(http_parser *p)
{
    ik__conn *c = p->data;
    conn_answer(c);
    c->req_start = 0;
    if (c->req.p != c->req.inline_p) ik__buf_reset(&c->req);
    c->req.len = 0;
    if (c->close_after || c->out.len >= IK_OUT_HIGH) http_parser_pause(p, 1);
    return 0;
}

static const http_parser_settings parser_settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* Answers a parse error: the status a callback chose, or 400. */
static void conn_parse_error(ik__conn *c, enum http_errno e)
{
    char msg[160];
    uint32_t max = c->w->srv->max_header_bytes;
    int st = c->err_status;
    if (e == HPE_HEADER_OVERFLOW) st = 431;
    switch (st) {
    case 414:
        snprintf(msg, sizeof msg, "the request URL is longer than %u bytes (max-header-bytes)",
                 max);
        conn_fail(c, 414, "uri_too_long", msg);
        break;
    case 431:
        snprintf(msg, sizeof msg, "the request line and headers exceed %u bytes (max-header-bytes)",
                 max);
        conn_fail(c, 431, "headers_too_large", msg);
        break;
    case 413:
        snprintf(msg, sizeof msg, "request bodies are accepted only on POST, up to %d bytes",
                 IK_MAX_BODY);
        conn_fail(c, 413, "body_too_large", msg);
        break;
    case 505:
        conn_fail(c, 505, "http_version", "only HTTP/1.1 and HTTP/1.0 are served");
        break;
    default:
        snprintf(msg, sizeof msg, "malformed HTTP request: %s", http_errno_description(e));
        conn_fail(c, 400, "bad_request", msg);
        break;
    }
}

/* Parses data[0..len-1], answering every complete request into c->out. Returns the
 * bytes consumed: less than len only when the parser paused (c->paused) or the
 * connection is to close after its last answer (c->close_after). */
static size_t conn_feed(ik__conn *c, const char *data, size_t len)
{
    size_t n = http_parser_execute(&c->parser, &parser_settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&c->parser);
    if (e == HPE_PAUSED) {
        c->paused = 1;
        return n;
    }
    if (e != HPE_OK) {
        if (!c->close_after) conn_parse_error(c, e);
        return len;
    }
    if (n < len) c->close_after = 1; /* an upgrade: we answered it; the rest is not HTTP */
    return n;
}

/* ---- writing and the connection's state machine --------------------------------------- */

static void out_done(ik__conn *c)
{
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

/* Moves the connection on after new output or a finished write: writes c->out
 * (uv_try_write first, uv_write for what is left), then closes, parses kept input,
 * or reads again. */
static void conn_flush(ik__conn *c)
{
    ik__worker *w = c->w;
    while (!c->closing) {
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
        if (c->close_after) {
            if (c->eof) {
                conn_close(c);
            } else {
                conn_linger(c);
            }
            return;
        }
        if (c->paused) {
            http_parser_pause(&c->parser, 0);
            c->paused = 0;
            if (c->stash.len > c->stash_off) {
                c->stash_off +=
                    conn_feed(c, c->stash.p + c->stash_off, c->stash.len - c->stash_off);
                if (c->stash_off >= c->stash.len || c->close_after) {
                    ik__buf_reset(&c->stash);
                    c->stash_off = 0;
                }
            }
            continue;
        }
        if (w->draining && !c->req_start) {
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
        /* EOF between requests: answer what is pending, then close. EOF inside a
         * request (a client gone mid-request) or a read error: just close. */
        if (nread != UV_EOF || c->lingering || c->req_start) {
            conn_close(c);
            return;
        }
        conn_read_stop(c);
        c->eof = 1;
        c->close_after = 1;
        if (!c->writing) conn_flush(c);
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
    ik__buf_reset(&c->req);
    ik__buf_reset(&c->out);
    ik__buf_reset(&c->stash);
    free(c);
    atomic_fetch_sub_explicit(&w->srv->connections, 1, memory_order_relaxed);
    atomic_store_explicit(&w->m.open, atomic_load_explicit(&w->m.open, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    if (w->draining && !w->conns) {
        if (!uv_is_closing((uv_handle_t *)&w->sweep)) uv_close((uv_handle_t *)&w->sweep, NULL);
        if (!uv_is_closing((uv_handle_t *)&w->stop)) uv_close((uv_handle_t *)&w->stop, NULL);
    }
}

static void on_connection(uv_stream_t *server, int status)
{
    ik__worker *w = server->data;
    ik__server *srv = w->srv;
    if (status < 0) {
        ik__log("accept failed: %s", uv_strerror(status));
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
    ik__buf_init(&c->req, c->req_inline, sizeof c->req_inline);
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
    http_parser_init(&c->parser, HTTP_REQUEST);
    c->parser.data = c;
    c->last_active = uv_now(&w->loop);
    conn_read_start(c);
}

/* ---- timeouts and shutdown --------------------------------------------------------------- */

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
            conn_close(c);
        } else if (c->lingering) {
            if (now >= c->linger_until) conn_close(c);
        } else if (c->writing) { /* a peer that does not read */
            if (now - c->write_start >= rto) {
                ik__count(&w->m.timeouts);
                conn_close(c);
            }
        } else if (c->req_start) { /* a request that does not complete (slowloris) */
            if (now - c->req_start >= rto) {
                char msg[96];
                snprintf(msg, sizeof msg, "the request did not complete within %llu ms",
                         (unsigned long long)rto);
                ik__count(&w->m.timeouts);
                conn_read_stop(c);
                conn_fail(c, 408, "request_timeout", msg);
                conn_flush(c);
            }
        } else if (w->draining) {
            conn_close(c);
        } else if (now - c->last_active >= ito) {
            ik__count(&w->m.timeouts);
            conn_close(c);
        }
    }
}

/* Starts draining: no more accepting; the sweep, now every 50 ms, closes idle
 * connections from its first run on (requests that were already on their way in
 * that moment are still answered, with "Connection: close") and everything left at
 * the drain deadline. The loop ends when its last connection has closed. */
static void on_stop(uv_async_t *a)
{
    ik__worker *w = a->data;
    if (w->draining) return;
    w->draining = 1;
    w->drain_deadline = uv_now(&w->loop) + (uint64_t)w->srv->shutdown_timeout_ms;
    if (!uv_is_closing((uv_handle_t *)&w->listener)) uv_close((uv_handle_t *)&w->listener, NULL);
    if (!w->conns) {
        uv_close((uv_handle_t *)&w->sweep, NULL);
        uv_close((uv_handle_t *)&w->stop, NULL);
        return;
    }
    uv_timer_start(&w->sweep, on_sweep, 50, 50);
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
    uv_timer_init(&w->loop, &w->sweep);
    w->sweep.data = w;
    int shortest =
        srv->read_timeout_ms < srv->idle_timeout_ms ? srv->read_timeout_ms : srv->idle_timeout_ms;
    w->sweep_ms = (uint64_t)(shortest / 4);
    if (w->sweep_ms < 20) w->sweep_ms = 20;
    if (w->sweep_ms > 1000) w->sweep_ms = 1000;
    uv_timer_start(&w->sweep, on_sweep, w->sweep_ms, w->sweep_ms);
    refresh_date(w);
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
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    free(w->rbuf);
    w->rbuf = NULL;
    ik__buf_reset(&w->body);
    free(w->ids);
    w->ids = NULL;
}
