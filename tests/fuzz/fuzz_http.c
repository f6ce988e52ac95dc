/* fuzz_http.c: the daemon's request layer without sockets: HTTP/1.x framing
 * (http_framing.c: the HTTP parser with the daemon's limits, keep-alive, pipelining, chunked
 * bodies), the request target (path, query), route matching over the daemon's own
 * route table (http_routes.h), and each route's input parsing: the query read once
 * (count, seconds, format, ids, decode), tag names in the path (percent-decoded),
 * IDs, and the JSON body of POST /v1/tags.
 *
 * Input: byte 0 picks how the stream is cut into reads (1 to 63 bytes each, or all
 * at once for 0), byte 1 the max-header-bytes limit (256 + 64 * b), the rest is what
 * a client sends on one connection. Every third request pauses the parser, as the
 * daemon does under back-pressure, and feeding resumes where it stopped.
 *
 * Checks (abort on violation): a refused stream reports one of the statuses the
 * daemon answers (400, 413, 414, 431, 505); a request that completes stayed within
 * the header limit and has a body only on POST; a matched route's pattern and
 * parameters lie within the path; an accepted tag name
 * passes ik_tag_name_check; an accepted POST /v1/tags body obeys ik_tag_create's
 * rules; decoded JSON strings hold no NUL; an Authorization value decodes as
 * base64 (Basic) within its buffer; the query, read once, keeps its rules
 * (check_query). The corpus holds long pipelines of large counts (a client
 * that never reads) and RESP commands sent to the HTTP port. Under ASan/UBSan: no
 * crash, no leak.
 */
/* clang-format off */
/* fuzz-sources: src/server/http/http_framing.c src/server/http/http_util.c src/server/http/http_query.c src/server/buf.c src/server/json.c src/server/token.c */
/* clang-format on */
#include "fuzz.h"
#include "idkeeper.h"
#include "json.h"
#include "http_framing.h"
#include "http_query.h"
#include "http_routes.h"
#include "token.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY(m, p, h, f, help) {m, p},
static const ik__route_key keys[] = {IK_ROUTE_TABLE(KEY)};
#define NKEYS (sizeof keys / sizeof keys[0])
#define MAX_COUNT 10000

typedef struct state {
    int requests;
    uint32_t max_header;
} state;

static void check(int ok)
{
    if (!ok) abort();
}

static int count_params(const char *pattern)
{
    int n = 0;
    for (; *pattern; pattern++)
        n += *pattern == '{';
    return n;
}

static void check_tag(ik__span seg)
{
    char tag[IK_TAG_NAME_MAX + 1], why[160];
    if (ik__tag_param(seg, tag, why, sizeof why) == 0) {
        check(strlen(tag) >= 1 && strlen(tag) <= IK_TAG_NAME_MAX);
        check(ik_tag_name_check(tag, NULL, 0) == 0);
    } else {
        check(why[0] != '\0');
    }
}

/* The query read once (http_query.h), on every request: each parameter found lies
 * within the query; bad ones were there; an accepted number's decoded text is its
 * plain decimal (no sign, no leading zero, no space): the same rule for count and
 * seconds; the format is one of the two; decode= fits its field. */
static void check_query(const ik__span *q, const ik__span *accept)
{
    ik__query r;
    ik__query_read(q->p, q->n, accept->p, accept->n, &r);
    check((r.bad & ~r.has) == 0 && r.has < IK_Q_BIT(IK_Q_N));
    for (int i = 0; i < IK_Q_N; i++)
        if (r.has & IK_Q_BIT(i))
            check(r.raw[i].p >= q->p && r.raw[i].p + r.raw[i].n <= q->p + q->n);
    check(r.fmt == IK_FMT_JSON || r.fmt == IK_FMT_TEXT);
    check(strlen(r.decode) < sizeof r.decode);
    const int nums[] = {IK_Q_COUNT, IK_Q_SECONDS};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        int k = nums[i];
        if ((r.has & ~r.bad & IK_Q_BIT(k)) == 0) continue;
        char d[24], canon[16];
        long n = ik__pct_decode(r.raw[k].p, r.raw[k].n, d, sizeof d);
        snprintf(canon, sizeof canon, "%u", (unsigned)(k == IK_Q_COUNT ? r.count : r.seconds));
        check(n == (long)strlen(canon) && strcmp(d, canon) == 0);
    }
}

static void check_body(const ik__span *b)
{
    ik__json_field f[8];
    char why[256], out[512];
    int n = ik__json_flat(b->p ? b->p : "", b->n, f, 8, why, sizeof why);
    check(n >= -1 && n <= 8);
    for (int i = 0; i < n; i++) {
        check(f[i].key.p >= b->p && f[i].key.p + f[i].key.n <= b->p + b->n);
        long k = ik__json_unescape(f[i].key, out, sizeof out);
        check(k < 0 || (size_t)k == strlen(out));
        if (f[i].type == IK_JSON_STRING) {
            k = ik__json_unescape(f[i].val, out, sizeof out);
            check(k < 0 || (size_t)k == strlen(out));
        }
    }
    ik__tag_body tb;
    const char *code = NULL;
    if (ik__tag_body_parse(b->p ? b->p : "", b->n, &tb, &code, why, sizeof why) == 0) {
        check(ik_tag_name_check(tb.tag, NULL, 0) == 0);
        check(tb.kind == IK_TAG_SEGMENT || tb.kind == IK_TAG_SEQUENCE);
        check(tb.start >= 0);
        check(tb.step >= 1 && tb.step <= 1000000);
        check(tb.kind == IK_TAG_SEGMENT || tb.step == 1);
        check(strlen(tb.description) < sizeof tb.description);
    } else {
        check(code != NULL && why[0] != '\0');
    }
}

static void on_request(ik__reqp *rp, void *ctx)
{
    state *st = ctx;
    st->requests++;
    check(rp->header_bytes <= rp->max_header_bytes);
    check(rp->body.len == 0 || ik__reqp_method(rp) == IK_HTTP_POST);
    ik__req rq;
    if (ik__reqp_view(rp, &rq) != 0) return;
    ik__span u = ik__reqp_url(rp);
    const char *url = u.p;
    check(rq.path.p >= url && rq.path.p + rq.path.n <= url + u.n);
    if (rq.query.n) check(rq.query.p >= url && rq.query.p + rq.query.n <= url + u.n);

    uint64_t allow;
    size_t first;
    int np;
    size_t i = ik__route_find(keys, NKEYS, rq.method, rq.path.p, rq.path.n, rq.params, &np, &allow,
                              &first);
    check(i <= NKEYS && first <= NKEYS);
    if (i == NKEYS) {
        check(allow == 0 || first < NKEYS);
        return;
    }
    check(keys[i].method == rq.method && np == count_params(keys[i].pattern));
    for (int k = 0; k < np; k++)
        check(rq.params[k].n > 0 && rq.params[k].p >= rq.path.p &&
              rq.params[k].p + rq.params[k].n <= rq.path.p + rq.path.n &&
              !memchr(rq.params[k].p, '/', rq.params[k].n));

    const char *pat = keys[i].pattern;
    if (strstr(pat, "{tag}")) check_tag(rq.params[0]);
    if (strstr(pat, "{id}")) {
        int64_t id;
        if (ik_parse_id(rq.params[0].p, rq.params[0].n, &id) == 0) check(id >= 0);
    }
    if (rq.method == IK_HTTP_POST) check_body(&rq.body);
    if (rq.auth.n > 6) { /* as http_routes.c's authorized() reads "Basic <base64>" */
        char plain[768];
        long pl = ik__base64_decode(rq.auth.p + 6, rq.auth.n - 6, plain, sizeof plain);
        check(pl >= -1 && pl <= (long)sizeof plain);
    }
    check_query(&rq.query, &rq.accept);
    if (st->requests % 3 == 0) ik__reqp_pause(rp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t chunk = data[0] & 63;
    state st = {0, 256u + 64u * data[1]};
    const char *in = (const char *)data + 2;
    size_t len = size - 2, off = 0;
    char inline_buf[256];
    ik__reqp rp;
    ik__reqp_init(&rp, inline_buf, sizeof inline_buf, st.max_header, on_request, &st);
    int done = 0;
    while (off < len && !done) {
        size_t piece = chunk ? (len - off < chunk ? len - off : chunk) : len - off;
        size_t used = 0;
        int r = ik__reqp_feed(&rp, in + off, piece, &used);
        check(used <= piece);
        switch (r) {
        case IK_FEED_OK:
            check(used == piece);
            off += piece;
            break;
        case IK_FEED_PAUSED:
            off += used;
            ik__reqp_resume(&rp);
            break;
        case IK_FEED_ERROR: {
            const char *code;
            char msg[160];
            int status = ik__reqp_error(&rp, &code, msg, sizeof msg);
            check(status == 400 || status == 413 || status == 414 || status == 431 ||
                  status == 505);
            check(code && msg[0]);
            done = 1;
            break;
        }
        default: /* an upgrade: the rest is not HTTP */
            done = 1;
            break;
        }
    }
    ik__reqp_free(&rp);
    return 0;
}
