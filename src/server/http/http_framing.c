/* http_framing.c: HTTP/1.x request framing with http_parser and the daemon's limits;
 * see http_framing.h. No sockets, no loops, no globals.
 *
 * Invariant: nothing points into the bytes being fed after ik__reqp_feed returns.
 * What a handler needs (URL, Accept, Authorization, body) stays where the parser
 * found it while the feed runs, so a request read whole is answered without a copy;
 * a value in pieces, and at the end of a feed whatever the request still needs, is
 * copied into rp->req, so a request split over many reads needs no read buffer kept.
 */
#include "http_framing.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

_Static_assert(IK_HTTP_GET == HTTP_GET && IK_HTTP_POST == HTTP_POST,
               "IK_HTTP_* must be http_parser's method numbers");

/* Which header a name is. */
enum { HDR_NONE = 0, HDR_ACCEPT, HDR_AUTH };

static ik__reqp *rp_of(http_parser *p)
{
    return p->data;
}

/* Refuses the request being parsed with status (reported by ik__reqp_error). */
static int refuse(ik__reqp *rp, int status)
{
    rp->err_status = (uint16_t)status;
    return -1;
}

static void keep_piece(ik__reqp *rp);

/* Copies v out of the bytes being fed, to the end of rp->req. */
static void val_keep(ik__reqp *rp, ik__reqp_val *v)
{
    v->off = (uint32_t)rp->req.len;
    ik__buf_append(&rp->req, v->view, v->len);
    v->view = NULL;
}

/* Copies every value still in the bytes being fed into rp->req, rp->last last: a
 * value that goes on is then the last one there. */
static void keep_vals(ik__reqp *rp)
{
    ik__reqp_val *vals[] = {&rp->url, &rp->accept, &rp->auth, &rp->body};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
        if (vals[i]->view && vals[i] != rp->last) val_keep(rp, vals[i]);
    if (rp->last && rp->last->view) val_keep(rp, rp->last);
}

/* Adds the piece at[0..len-1] to v. A first piece stays where it is (a request read
 * whole is not copied); a later one (a folded header value, a chunked body, the rest
 * after a read ended) joins the value in rp->req. Values arrive in the order of the
 * request, so v is the latest, and once copied the last one in rp->req. */
static void val_add(ik__reqp *rp, ik__reqp_val *v, const char *at, size_t len)
{
    if (!len) return;
    rp->last = v;
    if (!v->len) {
        v->view = at;
        v->len = (uint32_t)len;
        return;
    }
    keep_vals(rp);
    ik__buf_append(&rp->req, at, len);
    v->len += (uint32_t)len;
}

/* At the end of a feed: copies what the request still needs out of the bytes fed. */
static void keep_views(ik__reqp *rp)
{
    keep_vals(rp);
    rp->last = NULL;
    if (rp->hpiece) keep_piece(rp); /* a header name goes on in the next read */
}

static ik__span val_span(const ik__reqp *rp, const ik__reqp_val *v)
{
    if (!v->len) return (ik__span){NULL, 0};
    return (ik__span){v->view ? v->view : rp->req.p + v->off, v->len};
}

/* Between requests: nothing of the last one is kept. */
static void reset_request(ik__reqp *rp)
{
    rp->started = 0;
    if (rp->req.p != rp->req.inline_p) ik__buf_reset(&rp->req);
    rp->req.len = 0;
    rp->url.len = rp->accept.len = rp->auth.len = rp->body.len = 0;
    rp->url.view = rp->accept.view = rp->auth.view = rp->body.view = NULL;
    rp->hval = rp->last = NULL;
    rp->header_bytes = 12; /* "GET " ... " HTTP/1.1\r\n", roughly */
    rp->err_status = 0;
    rp->field_open = 0;
    rp->hpiece = NULL;
}

static int on_message_begin(http_parser *p)
{
    ik__reqp *rp = rp_of(p);
    rp->started = rp->now ? rp->now : 1;
    return 0;
}

static int on_url(http_parser *p, const char *at, size_t len)
{
    ik__reqp *rp = rp_of(p);
    rp->header_bytes += (uint32_t)len;
    if (rp->header_bytes > rp->max_header_bytes) return refuse(rp, 414);
    val_add(rp, &rp->url, at, len);
    return 0;
}

/* Copies the header name's piece in the bytes being fed (rp->hpiece) into rp->hname,
 * before those bytes go away (the end of a feed) or another piece follows. Only names
 * of up to 16 bytes are kept: longer ones are none the daemon reads. */
static void keep_piece(ik__reqp *rp)
{
    if (rp->hname_len + rp->hpiece_len > sizeof rp->hname) {
        rp->hname_over = 1;
    } else {
        memcpy(rp->hname + rp->hname_len, rp->hpiece, rp->hpiece_len);
        rp->hname_len = (uint8_t)(rp->hname_len + rp->hpiece_len);
    }
    rp->hpiece = NULL;
}

/* Bytes s[0..3] / s[0..7] as one word, for comparisons a word at a time. */
static uint32_t ld32(const char *s)
{
    uint32_t v;
    memcpy(&v, s, sizeof v);
    return v;
}

static uint64_t ld64(const char *s)
{
    uint64_t v;
    memcpy(&v, s, sizeof v);
    return v;
}

/* Which header the complete name s[0..n-1] is (HDR_*): told apart by its length,
 * then compared a word at a time in any case. OR-ing 0x20 into a byte lowers a
 * capital letter and leaves a small one; of all bytes only those two give a small
 * letter, so the names compare exactly (overlapping words cover their tails). */
static int hdr_of(const char *s, size_t n)
{
    if (n == 6)
        return ((ld32(s) | 0x20202020u) == ld32("acce") &&
                (ld32(s + 2) | 0x20202020u) == ld32("cept"))
                   ? HDR_ACCEPT
                   : HDR_NONE;
    if (n == 13)
        return ((ld64(s) | 0x2020202020202020u) == ld64("authoriz") &&
                (ld64(s + 5) | 0x2020202020202020u) == ld64("rization"))
                   ? HDR_AUTH
                   : HDR_NONE;
    return HDR_NONE;
}

/* A piece of a header name. The name is complete when its value begins
 * (on_header_value); until then its piece stays where the parser found it, and is
 * copied only if the feed ends first (a name split between reads). */
static int on_header_field(http_parser *p, const char *at, size_t len)
{
    ik__reqp *rp = rp_of(p);
    if (!rp->field_open) {
        rp->field_open = 1;
        rp->hname_len = 0;
        rp->hname_over = 0;
        rp->header_bytes += 4; /* ": " and CRLF */
    } else if (rp->hpiece) {
        keep_piece(rp);
    }
    rp->header_bytes += (uint32_t)len;
    if (rp->header_bytes > rp->max_header_bytes) return refuse(rp, 431);
    rp->hpiece = at;
    rp->hpiece_len = (uint32_t)len;
    return 0;
}

static int on_header_value(http_parser *p, const char *at, size_t len)
{
    ik__reqp *rp = rp_of(p);
    if (rp->field_open) { /* first piece of this value: the name is complete */
        int h;
        rp->field_open = 0;
        if (rp->hname_len == 0 && rp->hpiece) { /* the whole name in this feed */
            h = hdr_of(rp->hpiece, rp->hpiece_len);
            rp->hpiece = NULL;
        } else {
            if (rp->hpiece) keep_piece(rp);
            h = rp->hname_over ? HDR_NONE : hdr_of(rp->hname, rp->hname_len);
        }
        rp->hval = h == HDR_ACCEPT ? &rp->accept : h == HDR_AUTH ? &rp->auth : NULL;
        if (rp->hval) { /* a repeated header: the last one counts */
            rp->hval->len = 0;
            rp->hval->view = NULL;
        }
    }
    rp->header_bytes += (uint32_t)len;
    if (rp->header_bytes > rp->max_header_bytes) return refuse(rp, 431);
    if (rp->hval) val_add(rp, rp->hval, at, len);
    return 0;
}

static int on_headers_complete(http_parser *p)
{
    ik__reqp *rp = rp_of(p);
    if (p->http_major != 1) return refuse(rp, 505);
    uint64_t limit = p->method == HTTP_POST ? IK_MAX_BODY : 0;
    if ((p->flags & F_CHUNKED) && limit == 0) return refuse(rp, 413);
    if (p->content_length != ULLONG_MAX && p->content_length > limit) return refuse(rp, 413);
    return 0;
}

static int on_body(http_parser *p, const char *at, size_t len)
{
    ik__reqp *rp = rp_of(p);
    if (rp->body.len + len > IK_MAX_BODY) return refuse(rp, 413);
    val_add(rp, &rp->body, at, len);
    return 0;
}

static int on_message_complete(http_parser *p)
{
    ik__reqp *rp = rp_of(p);
    rp->on_request(rp, rp->ctx);
    reset_request(rp);
    return 0;
}

static const http_parser_settings settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_url,
    .on_header_field = on_header_field,
    .on_header_value = on_header_value,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

void ik__reqp_init(ik__reqp *rp, char *storage, size_t cap, uint32_t max_header_bytes,
                   ik__reqp_cb on_request, void *ctx)
{
    memset(rp, 0, sizeof *rp);
    http_parser_init(&rp->parser, HTTP_REQUEST);
    rp->parser.data = rp;
    rp->on_request = on_request;
    rp->ctx = ctx;
    rp->max_header_bytes = max_header_bytes;
    ik__buf_init(&rp->req, storage, cap);
    reset_request(rp);
}

void ik__reqp_free(ik__reqp *rp)
{
    ik__buf_reset(&rp->req);
}

int ik__reqp_feed(ik__reqp *rp, const char *data, size_t len, size_t *used)
{
    size_t n = http_parser_execute(&rp->parser, &settings, data, len);
    if (rp->last || rp->hpiece) keep_views(rp);
    enum http_errno e = HTTP_PARSER_ERRNO(&rp->parser);
    *used = n;
    if (e == HPE_PAUSED) return IK_FEED_PAUSED;
    if (e != HPE_OK) {
        *used = len;
        return IK_FEED_ERROR;
    }
    return n < len ? IK_FEED_UPGRADE : IK_FEED_OK;
}

void ik__reqp_pause(ik__reqp *rp)
{
    http_parser_pause(&rp->parser, 1);
}

void ik__reqp_resume(ik__reqp *rp)
{
    http_parser_pause(&rp->parser, 0);
}

int ik__reqp_keep_alive(const ik__reqp *rp)
{
    return http_should_keep_alive(&rp->parser) && !rp->parser.upgrade;
}

unsigned ik__reqp_method(const ik__reqp *rp)
{
    return rp->parser.method;
}

const char *ik__http_method_name(unsigned method)
{
    return http_method_str((enum http_method)method);
}

int ik__reqp_error(const ik__reqp *rp, const char **code, char *msg, size_t msg_len)
{
    enum http_errno e = HTTP_PARSER_ERRNO(&rp->parser);
    int st = rp->err_status;
    if (e == HPE_HEADER_OVERFLOW) st = 431;
    switch (st) {
    case 414:
        *code = "uri_too_long";
        snprintf(msg, msg_len, "the request URL is longer than %u bytes (max-header-bytes)",
                 rp->max_header_bytes);
        return 414;
    case 431:
        *code = "headers_too_large";
        snprintf(msg, msg_len, "the request line and headers exceed %u bytes (max-header-bytes)",
                 rp->max_header_bytes);
        return 431;
    case 413:
        *code = "body_too_large";
        snprintf(msg, msg_len, "request bodies are accepted only on POST, up to %d bytes",
                 IK_MAX_BODY);
        return 413;
    case 505:
        *code = "http_version";
        snprintf(msg, msg_len, "only HTTP/1.1 and HTTP/1.0 are served");
        return 505;
    default:
        *code = "bad_request";
        snprintf(msg, msg_len, "malformed HTTP request: %s", http_errno_description(e));
        return 400;
    }
}

int ik__split_target(const char *url, size_t n, int is_connect, ik__span *path, ik__span *query)
{
    query->p = NULL;
    query->n = 0;
    if (n && url[0] == '/') { /* origin-form, the common case */
        /* the path ends at the first '?' or '#'; a query, after a '?', at a '#' */
        const char *q = memchr(url, '?', n);
        size_t pe = q ? (size_t)(q - url) : n;
        const char *h = memchr(url, '#', pe);
        path->p = url;
        path->n = h ? (size_t)(h - url) : pe;
        if (q && !h) {
            const char *e = memchr(q + 1, '#', n - pe - 1);
            query->p = q + 1;
            query->n = (size_t)((e ? e : url + n) - (q + 1));
        }
        return 0;
    }
    struct http_parser_url u;
    http_parser_url_init(&u);
    if (http_parser_parse_url(url, n, is_connect, &u) != 0) return -1;
    if (!(u.field_set & (1 << UF_PATH))) return -1;
    path->p = url + u.field_data[UF_PATH].off;
    path->n = u.field_data[UF_PATH].len;
    if (u.field_set & (1 << UF_QUERY)) {
        query->p = url + u.field_data[UF_QUERY].off;
        query->n = u.field_data[UF_QUERY].len;
    }
    return 0;
}

int ik__reqp_view(const ik__reqp *rp, ik__req *rq)
{
    rq->method = rp->parser.method;
    rq->http_minor = rp->parser.http_major == 1 ? rp->parser.http_minor : 0;
    rq->nparams = 0; /* params[]: filled by the route lookup */
    rq->accept = val_span(rp, &rp->accept);
    rq->auth = val_span(rp, &rp->auth);
    rq->body = val_span(rp, &rp->body);
    ik__span u = val_span(rp, &rp->url);
    if (!u.p) u.p = ""; /* no target at all: not a path */
    return ik__split_target(u.p, u.n, rp->parser.method == HTTP_CONNECT, &rq->path, &rq->query);
}

ik__span ik__reqp_url(const ik__reqp *rp)
{
    return val_span(rp, &rp->url);
}

/* ---- responses ------------------------------------------------------------------ */

static int resp_on_message_begin(http_parser *p)
{
    ik__httpresp *hr = p->data;
    if (hr->cbs->on_begin) hr->cbs->on_begin(hr->ctx);
    return 0;
}

static int resp_on_body(http_parser *p, const char *at, size_t len)
{
    ik__httpresp *hr = p->data;
    return hr->cbs->on_body ? hr->cbs->on_body(hr->ctx, at, len) : 0;
}

static int resp_on_message_complete(http_parser *p)
{
    ik__httpresp *hr = p->data;
    if (hr->cbs->on_complete) hr->cbs->on_complete(hr, hr->ctx);
    return 0;
}

static const http_parser_settings resp_settings = {
    .on_message_begin = resp_on_message_begin,
    .on_body = resp_on_body,
    .on_message_complete = resp_on_message_complete,
};

void ik__httpresp_init(ik__httpresp *hr, const ik__httpresp_cbs *cbs, void *ctx)
{
    memset(hr, 0, sizeof *hr);
    http_parser_init(&hr->parser, HTTP_RESPONSE);
    hr->parser.data = hr;
    hr->cbs = cbs;
    hr->ctx = ctx;
}

int ik__httpresp_feed(ik__httpresp *hr, const char *data, size_t len, size_t *used)
{
    *used = http_parser_execute(&hr->parser, &resp_settings, data, len);
    enum http_errno e = HTTP_PARSER_ERRNO(&hr->parser);
    if (e == HPE_PAUSED) return IK_FEED_PAUSED;
    return e == HPE_OK ? IK_FEED_OK : IK_FEED_ERROR;
}

void ik__httpresp_pause(ik__httpresp *hr)
{
    http_parser_pause(&hr->parser, 1);
}

int ik__httpresp_status(const ik__httpresp *hr)
{
    return (int)hr->parser.status_code;
}

int ik__httpresp_keep_alive(const ik__httpresp *hr)
{
    return http_should_keep_alive(&hr->parser);
}

const char *ik__httpresp_error(const ik__httpresp *hr)
{
    return http_errno_description(HTTP_PARSER_ERRNO(&hr->parser));
}

void ik__http_lib_version(char *out, size_t cap)
{
    unsigned long v = http_parser_version();
    snprintf(out, cap, "http_parser %lu.%lu.%lu", (v >> 16) & 255, (v >> 8) & 255, v & 255);
}
