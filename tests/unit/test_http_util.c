/* test_http_util.c: the daemon's pure helpers (src/server/http/http_util.c,
 * http_query.c): route patterns, the query read once and the format it chooses,
 * numbers, listen addresses, buffers, JSON strings and dates; the request framing (http_framing.c)
 * with its header names and request targets cut at every byte, and the serialized answer
 * (http_reply.c). The helpers touch no socket, so the files are compiled in directly; the test
 * links libidkeeper and the HTTP parser. */
#include "buf.c"
#include "http_reply.c"
#include "http_query.c"
#include "http_util.c"
#include "json.c"
#include "http_framing.c"
#include "token.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static int match(const char *pattern, const char *path, ik__span *params)
{
    return ik__path_match(pattern, path, strlen(path), params);
}

static void span_eq(ik__span s, const char *want)
{
    assert_int_equal(s.n, strlen(want));
    assert_memory_equal(s.p, want, s.n);
}

static void test_path_match(void **state)
{
    ik__span p[IK_MAX_PARAMS];
    assert_int_equal(match("/healthz", "/healthz", p), 0);
    assert_int_equal(match("/healthz", "/healthz/", p), -1);
    assert_int_equal(match("/healthz", "/health", p), -1);
    assert_int_equal(match("/healthz", "/healthzz", p), -1);
    assert_int_equal(match("/", "/", p), 0);
    assert_int_equal(match("/", "", p), -1);
    assert_int_equal(match("/v1/decode/{id}", "/v1/decode/123", p), 1);
    span_eq(p[0], "123");
    assert_int_equal(match("/v1/decode/{id}", "/v1/decode/", p), -1);
    assert_int_equal(match("/v1/decode/{id}", "/v1/decode/1/2", p), -1);
    assert_int_equal(match("/v1/decode/{id}", "/v1/decode", p), -1);
    assert_int_equal(match("/a/{x}/b/{y}", "/a/one/b/two", p), 2);
    span_eq(p[0], "one");
    span_eq(p[1], "two");
    assert_int_equal(match("/a/{x}/b/{y}", "/a/one/c/two", p), -1);
    /* the path is not NUL-terminated: only plen bytes count */
    assert_int_equal(ik__path_match("/healthz", "/healthzXYZ", 8, p), 0);
    assert_int_equal(ik__path_match("/v1/decode/{id}", "/v1/decode/12?x", 13, p), 1);
    span_eq(p[0], "12");
}

static ik__query qread(const char *q, size_t qlen, const char *accept)
{
    ik__query r;
    memset(&r, 0x5a, sizeof r); /* nothing left from before the read */
    ik__query_read(q, qlen, accept, accept ? strlen(accept) : 0, &r);
    return r;
}

static int has(const ik__query *r, int i)
{
    return (r->has & IK_Q_BIT(i)) != 0;
}

static int bad(const ik__query *r, int i)
{
    return (r->bad & IK_Q_BIT(i)) != 0;
}

/* The query read once (http_query.h): the first occurrence of a name counts, names
 * are compared as sent, an item without '=' is there with an empty value, only
 * qlen bytes count. */
static void test_query_read(void **state)
{
    (void)state;
    const char *q = "count=5&format=text&ids&decode=&count=7&coun=1&counts=2";
    ik__query r = qread(q, strlen(q), NULL);
    assert_true(has(&r, IK_Q_COUNT) && !bad(&r, IK_Q_COUNT));
    assert_int_equal(r.count, 5);
    span_eq(r.raw[IK_Q_COUNT], "5");
    assert_true(has(&r, IK_Q_FORMAT) && !bad(&r, IK_Q_FORMAT));
    assert_int_equal(r.fmt, IK_FMT_TEXT);
    span_eq(r.raw[IK_Q_FORMAT], "text");
    assert_true(has(&r, IK_Q_IDS) && bad(&r, IK_Q_IDS)); /* "": neither string nor number */
    assert_int_equal(r.raw[IK_Q_IDS].n, 0);
    assert_true(has(&r, IK_Q_DECODE) && !bad(&r, IK_Q_DECODE));
    assert_string_equal(r.decode, "");
    assert_false(has(&r, IK_Q_SECONDS));
    r = qread("", 0, NULL);
    assert_int_equal(r.has, 0);
    assert_int_equal(r.bad, 0);
    assert_int_equal(r.fmt, IK_FMT_JSON);
    assert_int_equal(r.ids_number, 0);
    assert_string_equal(r.decode, "");
    r = qread(NULL, 0, NULL);
    assert_int_equal(r.has, 0);
    r = qread("a=1&count=2", 3, NULL); /* only qlen bytes count */
    assert_int_equal(r.has, 0);
    r = qread("format=x&format=json", 20, NULL); /* the first counts, even a bad one */
    assert_true(bad(&r, IK_Q_FORMAT));
}

/* One decoder and one number rule for every query parameter (docs/http.md, "Query
 * parameters"). */
static void test_query_rules(void **state)
{
    (void)state;
    const char *q = "count=%31&seconds=%2B5&format=%74ext&ids=NUMBER&decode=%3";
    ik__query r = qread(q, strlen(q), NULL);
    assert_true(!bad(&r, IK_Q_COUNT) && r.count == 1);
    assert_true(bad(&r, IK_Q_SECONDS)); /* "+5" */
    span_eq(r.raw[IK_Q_SECONDS], "%2B5");
    assert_int_equal(r.fmt, IK_FMT_TEXT);
    assert_true(!bad(&r, IK_Q_IDS) && r.ids_number);
    assert_true(bad(&r, IK_Q_DECODE)); /* a broken escape: shown as sent */
    assert_string_equal(r.decode, "%3");
    static const char *const nums[] = {"count=0007", "count=",           "count=+1", "count=-1",
                                       "count=1%20", "count=4294967296", "count=%00"};
    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        r = qread(nums[i], strlen(nums[i]), NULL);
        assert_true(has(&r, IK_Q_COUNT) && bad(&r, IK_Q_COUNT));
    }
    r = qread("count=0&seconds=4294967295", 26, NULL); /* the range is the route's */
    assert_true(!bad(&r, IK_Q_COUNT) && r.count == 0);
    assert_true(!bad(&r, IK_Q_SECONDS) && r.seconds == UINT32_MAX);
    r = qread("count=123456789012345", 21, NULL); /* decodes past its room */
    assert_true(bad(&r, IK_Q_COUNT));
    q = "decode=123456789012345678901234567890";
    r = qread(q, strlen(q), NULL); /* too long to decode: as sent, cut to 23 bytes */
    assert_true(bad(&r, IK_Q_DECODE));
    assert_string_equal(r.decode, "12345678901234567890123");
    q = "decode=%31%32";
    r = qread(q, strlen(q), NULL);
    assert_string_equal(r.decode, "12");
    r = qread("ids=String", 10, NULL);
    assert_true(!bad(&r, IK_Q_IDS) && !r.ids_number);
    r = qread("ids=numbers", 11, NULL);
    assert_true(bad(&r, IK_Q_IDS));
}

static void test_parse_u32(void **state)
{
    uint32_t v = 99;
    assert_int_equal(ik__parse_u32("0", 1, 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(ik__parse_u32("10000", 5, 10000, &v), 0);
    assert_int_equal(v, 10000);
    assert_int_equal(ik__parse_u32("10001", 5, 10000, &v), -1);
    assert_int_equal(ik__parse_u32("4294967295", 10, UINT32_MAX, &v), 0);
    assert_int_equal(v, UINT32_MAX);
    assert_int_equal(ik__parse_u32("4294967296", 10, UINT32_MAX, &v), -1);
    assert_int_equal(ik__parse_u32("99999999999", 11, UINT32_MAX, &v), -1);
    assert_int_equal(ik__parse_u32("", 0, 10, &v), -1);
    assert_int_equal(ik__parse_u32("abc", 3, 10, &v), -1);
    assert_int_equal(ik__parse_u32("1a", 2, 10, &v), -1);
    assert_int_equal(ik__parse_u32("-1", 2, 10, &v), -1);
    assert_int_equal(ik__parse_u32(" 1", 2, 10, &v), -1);
    assert_int_equal(ik__parse_u32("+1", 2, 10, &v), -1);
    assert_int_equal(ik__parse_u32("007", 3, 10, &v), -1); /* no leading zero */
    assert_int_equal(ik__parse_u32("00", 2, 10, &v), -1);
}

static void test_parse_listen(void **state)
{
    char host[64], why[128];
    int port = -1;
    assert_int_equal(ik__parse_listen("127.0.0.1:8080", host, sizeof host, &port, why, sizeof why),
                     0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_int_equal(ik__parse_listen("[::1]:80", host, sizeof host, &port, why, sizeof why), 0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    assert_int_equal(ik__parse_listen(":9000", host, sizeof host, &port, why, sizeof why), 0);
    assert_string_equal(host, "");
    assert_int_equal(port, 9000);
    assert_int_equal(ik__parse_listen("localhost:0", host, sizeof host, &port, why, sizeof why), 0);
    assert_int_equal(port, 0);
    const char *bad[] = {"",      "8080",    "[::1]8080", "::1:80", "host:65536",
                         "host:", "host:-1", "[]:80",     "h:8o"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        assert_int_equal(ik__parse_listen(bad[i], host, sizeof host, &port, why, sizeof why), -1);
        assert_true(why[0] != 0);
    }
    char tiny[4];
    assert_int_equal(ik__parse_listen("abcdef:1", tiny, sizeof tiny, &port, why, sizeof why), -1);
}

/* The format: the query's format= wins (any case), else Accept's text/plain before
 * any JSON type; a bad format= is marked for the route's 400. */
static int neg(const char *query, const char *accept)
{
    ik__query r = qread(query, query ? strlen(query) : 0, accept);
    return bad(&r, IK_Q_FORMAT) ? -1 : r.fmt;
}

static void test_query_format(void **state)
{
    (void)state;
    assert_int_equal(neg(NULL, NULL), IK_FMT_JSON);
    assert_int_equal(neg("count=3", NULL), IK_FMT_JSON);
    assert_int_equal(neg("count=3&format=text", NULL), IK_FMT_TEXT);
    assert_int_equal(neg("format=TEXT", NULL), IK_FMT_TEXT);
    assert_int_equal(neg("format=json", "text/plain"), IK_FMT_JSON);
    assert_int_equal(neg("format=xml", NULL), -1);
    assert_int_equal(neg("format=", NULL), -1);
    assert_int_equal(neg("format=jsonjsonjson", NULL), -1);
    assert_int_equal(neg(NULL, "text/plain"), IK_FMT_TEXT);
    assert_int_equal(neg(NULL, "Text/Plain; charset=utf-8"), IK_FMT_TEXT);
    assert_int_equal(neg(NULL, "*/*"), IK_FMT_JSON);
    assert_int_equal(neg(NULL, "application/json, text/plain"), IK_FMT_JSON);
    assert_int_equal(neg(NULL, "text/plain, application/json"), IK_FMT_TEXT);
    assert_int_equal(neg(NULL, "text/html"), IK_FMT_JSON);
}

static void test_buf(void **state)
{
    char store[8];
    ik__buf b;
    ik__buf_init(&b, store, sizeof store);
    ik__buf_puts(&b, "abc");
    assert_ptr_equal(b.p, store);
    ik__buf_puts(&b, "defghij"); /* 10 bytes: moves to the heap */
    assert_ptr_not_equal(b.p, store);
    assert_int_equal(b.len, 10);
    assert_memory_equal(b.p, "abcdefghij", 10);
    ik__buf_printf(&b, "%0300d", 7); /* longer than the first reservation */
    assert_int_equal(b.len, 310);
    assert_int_equal(b.p[309], '7');
    ik__buf_reset(&b);
    assert_ptr_equal(b.p, store);
    assert_int_equal(b.len, 0);

    ik__buf h;
    ik__buf_init(&h, NULL, 0);
    ik__buf_append_u64(&h, 0);
    ik__buf_puts(&h, " ");
    ik__buf_append_u64(&h, UINT64_MAX);
    ik__buf_puts(&h, " ");
    ik__buf_append_i64(&h, INT64_MIN);
    ik__buf_puts(&h, " ");
    ik__buf_append_i64(&h, 2124337306562879488);
    const char *want = "0 18446744073709551615 -9223372036854775808 2124337306562879488";
    assert_int_equal(h.len, strlen(want));
    assert_memory_equal(h.p, want, h.len);
    ik__buf_reset(&h);
    assert_null(h.p);
}

static void json_eq(const char *in, size_t n, const char *want)
{
    ik__buf b;
    ik__buf_init(&b, NULL, 0);
    ik__buf_append_json_str(&b, in, n);
    ik__buf_append(&b, "", 1);
    assert_string_equal(b.p, want);
    ik__buf_reset(&b);
}

static void test_json_str(void **state)
{
    json_eq("plain", 5, "\"plain\"");
    json_eq("", 0, "\"\"");
    json_eq("a\"b\\c", 5, "\"a\\\"b\\\\c\"");
    json_eq("l1\nl2\t\r", 7, "\"l1\\nl2\\t\\r\"");
    json_eq("\x01\x1f", 2, "\"\\u0001\\u001f\"");
    json_eq("\0", 1, "\"\\u0000\"");
    json_eq("caf\xc3\xa9", 5, "\"caf\xc3\xa9\"");                           /* valid UTF-8 kept */
    json_eq("\xf0\x9f\x98\x80", 4, "\"\xf0\x9f\x98\x80\"");                 /* 4-byte sequence */
    json_eq("\xff", 1, "\"\xef\xbf\xbd\"");                                 /* invalid byte */
    json_eq("\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");                 /* overlong '/' */
    json_eq("\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* surrogate */
    json_eq("\xe2\x82", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\"");                 /* truncated */
}

static void test_dates(void **state)
{
    char s[48];
    assert_int_equal(ik__fmt_iso8601(s, 0), 24);
    assert_string_equal(s, "1970-01-01T00:00:00.000Z");
    ik__fmt_iso8601(s, 1288834974657);
    assert_string_equal(s, "2010-11-04T01:42:54.657Z");
    ik__fmt_iso8601(s, -1);
    assert_string_equal(s, "1969-12-31T23:59:59.999Z");
    ik__fmt_http_date(s, 784111777);
    assert_string_equal(s, "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
}

static void test_misc(void **state)
{
    assert_true(ik__ieq("Accept", 6, "accept"));
    assert_true(ik__ieq("AUTHORIZATION", 13, "authorization"));
    assert_false(ik__ieq("Accep", 5, "accept"));
    assert_false(ik__ieq("Accepts", 7, "accept"));
    assert_true(ik__ct_equal("secret", 6, "secret", 6));
    assert_false(ik__ct_equal("secret", 6, "secreT", 6));
    assert_false(ik__ct_equal("secret", 6, "secret!", 7));
    assert_false(ik__ct_equal("", 0, "x", 1));
    assert_true(ik__ct_equal("", 0, "", 0));
    char d[20];
    assert_int_equal(ik__fmt_u64(d, 1234567890), 10);
    assert_memory_equal(d, "1234567890", 10);
    /* every length, and each side of each power of ten, as printf writes them */
    for (uint64_t p = 1, k = 0; k < 20; k++, p *= 10) {
        uint64_t vs[] = {p - 1, p, p + 1, p * 7 + 3, UINT64_MAX - k};
        for (size_t j = 0; j < sizeof vs / sizeof vs[0]; j++) {
            char want[24];
            int wn = snprintf(want, sizeof want, "%" PRIu64, vs[j]);
            assert_int_equal(ik__fmt_u64(d, vs[j]), (size_t)wn);
            assert_memory_equal(d, want, (size_t)wn);
        }
    }
    /* and numbers of every bit length, as printf writes them */
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t v = x >> (i % 64);
        char want[24];
        int wn = snprintf(want, sizeof want, "%" PRIu64, v);
        assert_int_equal(ik__fmt_u64(d, v), (size_t)wn);
        assert_memory_equal(d, want, (size_t)wn);
    }
}

/* ---- request framing (http_framing.c) --------------------------------------------------- */

typedef struct seen {
    int n;
    char path[4][64], query[4][64], accept[4][64], auth[4][64], body[4][64];
} seen;

static void copy_span(char *out, ik__span s)
{
    assert_true(s.n < 64);
    memcpy(out, s.p ? s.p : "", s.n);
    out[s.n] = 0;
}

static void on_req(ik__reqp *rp, void *ctx)
{
    seen *sn = ctx;
    ik__req rq;
    assert_true(sn->n < 4);
    assert_int_equal(ik__reqp_view(rp, &rq), 0);
    copy_span(sn->path[sn->n], rq.path);
    copy_span(sn->query[sn->n], rq.query);
    copy_span(sn->accept[sn->n], rq.accept);
    copy_span(sn->auth[sn->n], rq.auth);
    copy_span(sn->body[sn->n], rq.body);
    sn->n++;
}

/* Feeds req[0..n-1] as reads of `cut` bytes each (the last one shorter), each read in
 * a buffer of its own freed right after (ASan: nothing may point into it later). */
static void feed_cut(ik__reqp *rp, const char *req, size_t n, size_t cut)
{
    for (size_t off = 0; off < n;) {
        size_t k = cut < n - off ? cut : n - off, used;
        char *part = malloc(k);
        memcpy(part, req + off, k);
        assert_int_equal(ik__reqp_feed(rp, part, k, &used), IK_FEED_OK);
        assert_int_equal(used, k);
        free(part);
        off += k;
    }
}

/* Four requests on one connection: header names the daemon reads and others like
 * them, a repeated header, a folded value, a body, a chunked body. */
static const char stream[] = "GET /v1/segment/t?count=3#frag HTTP/1.1\r\n"
                             "Host: x\r\n"
                             "Accept-Encoding: gzip\r\n"
                             "X-A-Header-Name-Longer-Than-Sixteen: 1\r\n"
                             "ACCEPT: text/plain\r\n"
                             "Acceptx: no\r\n"
                             "Authorizatio: no\r\n"
                             "authorization: Bearer abc\r\n"
                             "\r\n"
                             "POST /v1/tags HTTP/1.1\r\n"
                             "Accept: a\r\n"
                             "Accept: text/plain,\r\n"
                             "  application/json\r\n"
                             "Content-Length: 11\r\n"
                             "\r\n"
                             "{\"tag\":\"x\"}"
                             "GET /x HTTP/1.0\r\n"
                             "\r\n"
                             "POST /y HTTP/1.1\r\n"
                             "Transfer-Encoding: chunked\r\n"
                             "\r\n"
                             "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";

static void seen_eq(const seen *a, const seen *b)
{
    assert_int_equal(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        assert_string_equal(a->path[i], b->path[i]);
        assert_string_equal(a->query[i], b->query[i]);
        assert_string_equal(a->accept[i], b->accept[i]);
        assert_string_equal(a->auth[i], b->auth[i]);
        assert_string_equal(a->body[i], b->body[i]);
    }
}

static void test_framing_headers(void **state)
{
    size_t n = sizeof stream - 1;
    char storage[64];
    ik__reqp rp;
    seen whole;
    memset(&whole, 0, sizeof whole);
    ik__reqp_init(&rp, storage, sizeof storage, 8192, on_req, &whole);
    feed_cut(&rp, stream, n, n);
    ik__reqp_free(&rp);
    assert_int_equal(whole.n, 4);
    assert_string_equal(whole.path[0], "/v1/segment/t");
    assert_string_equal(whole.query[0], "count=3");
    assert_string_equal(whole.accept[0], "text/plain");
    assert_string_equal(whole.auth[0], "Bearer abc");
    assert_string_equal(whole.body[0], "");
    assert_string_equal(whole.path[1], "/v1/tags");
    assert_string_equal(whole.accept[1],
                        "text/plain,  application/json"); /* as the parser gives it */
    assert_string_equal(whole.auth[1], "");
    assert_string_equal(whole.body[1], "{\"tag\":\"x\"}");
    assert_string_equal(whole.path[2], "/x");
    assert_string_equal(whole.accept[2], "");
    assert_string_equal(whole.body[3], "abcde");
    /* the same in two reads cut at every byte, and in reads of 1 to 7 bytes */
    for (size_t first = 1; first < n + 7; first++) {
        seen sn;
        memset(&sn, 0, sizeof sn);
        ik__reqp_init(&rp, storage, sizeof storage, 8192, on_req, &sn);
        if (first < n) {
            feed_cut(&rp, stream, first, first);
            feed_cut(&rp, stream + first, n - first, n);
        } else {
            feed_cut(&rp, stream, n, first - n + 1);
        }
        seen_eq(&sn, &whole);
        ik__reqp_free(&rp);
    }
}

/* The header names the daemon reads, in any case, and every one-byte change of them. */
static void test_header_names(void **state)
{
    static const char *const names[] = {"accept", "authorization"};
    static const int kinds[] = {HDR_ACCEPT, HDR_AUTH};
    for (size_t k = 0; k < 2; k++) {
        size_t n = strlen(names[k]);
        char s[16];
        for (size_t i = 0; i < n; i++) {
            for (int c = 0; c < 256; c++) {
                memcpy(s, names[k], n);
                s[i] = (char)c;
                int same = c == names[k][i] || c == names[k][i] - 'a' + 'A';
                assert_int_equal(hdr_of(s, n), same ? kinds[k] : HDR_NONE);
            }
        }
        for (size_t i = 0; i < n; i++) /* all capitals */
            s[i] = (char)(names[k][i] - 'a' + 'A');
        assert_int_equal(hdr_of(s, n), kinds[k]);
        assert_int_equal(hdr_of(names[k], n - 1), HDR_NONE);
    }
    assert_int_equal(hdr_of("Host", 4), HDR_NONE);
}

static void target(const char *url, const char *path, const char *query)
{
    ik__span p, q;
    assert_int_equal(ik__split_target(url, strlen(url), 0, &p, &q), 0);
    span_eq(p, path);
    if (query) {
        assert_non_null(q.p);
        span_eq(q, query);
    } else {
        assert_null(q.p);
        assert_int_equal(q.n, 0);
    }
}

static void test_split_target(void **state)
{
    target("/", "/", NULL);
    target("/a/b", "/a/b", NULL);
    target("/a?b=1", "/a", "b=1");
    target("/a?", "/a", "");
    target("/a?b?c", "/a", "b?c");
    target("/a?b#c?d", "/a", "b");
    target("/a#b?c", "/a", NULL);
    target("/#", "/", NULL);
    target("/?#", "/", "");
    target("http://h:1/p/q?x=1#f", "/p/q", "x=1");
    ik__span p, q;
    assert_int_equal(ik__split_target("example.com:443", 15, 1, &p, &q), -1); /* CONNECT */
}

static void serialized(int status, const char *ctype, const char *body, int keep, int http10,
                       const char *want)
{
    ik__buf b, out;
    ik__buf_init(&b, NULL, 0);
    ik__buf_init(&out, NULL, 0);
    ik__buf_puts(&b, body);
    ik__http_reply rs;
    memset(&rs, 0, sizeof rs);
    rs.status = status;
    rs.ctype = ctype;
    rs.body = &b;
    if (status == 503) ik__reply_header(&rs, "Retry-After: %d", 1);
    const char *date = "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n";
    ik__reply_serialize(&out, &rs, date, strlen(date), keep, http10);
    assert_int_equal(out.len, strlen(want));
    assert_memory_equal(out.p, want, out.len);
    ik__buf_reset(&b);
    ik__buf_reset(&out);
}

static void test_reply_serialize(void **state)
{
#define DATE "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
    serialized(200, "text/plain", "1859299536916623360", 1, 0,
               "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 19\r\n" DATE
               "\r\n1859299536916623360");
    serialized(404, "application/json", "", 0, 0,
               "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: "
               "0\r\n" DATE "Connection: close\r\n\r\n");
    serialized(503, "text/plain", "x", 1, 1,
               "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: "
               "1\r\n" DATE "Retry-After: 1\r\nConnection: keep-alive\r\n\r\nx");
    serialized(299, "text/plain", "", 1, 0,
               "HTTP/1.1 299 Unknown\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n" DATE
               "\r\n");
    serialized(431, "text/plain", "", 1, 0,
               "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: "
               "text/plain\r\nContent-Length: 0\r\n" DATE "\r\n");
    /* Content-Length at every number of digits the inline writer handles, and past it */
    static const size_t lens[] = {9, 10, 99, 100, 999, 1000, 9999, 10000, 123456};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        char *body = malloc(lens[i] + 1), want[512];
        memset(body, 'a', lens[i]);
        body[lens[i]] = 0;
        int hn = snprintf(want, sizeof want,
                          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                          "%zu\r\n" DATE "\r\n",
                          lens[i]);
        char *all = malloc((size_t)hn + lens[i] + 1);
        memcpy(all, want, (size_t)hn);
        memcpy(all + hn, body, lens[i] + 1);
        serialized(200, "text/plain", body, 1, 0, all);
        free(all);
        free(body);
    }
#undef DATE
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_match),
        cmocka_unit_test(test_query_read),
        cmocka_unit_test(test_parse_u32),
        cmocka_unit_test(test_query_rules),
        cmocka_unit_test(test_parse_listen),
        cmocka_unit_test(test_query_format),
        cmocka_unit_test(test_buf),
        cmocka_unit_test(test_json_str),
        cmocka_unit_test(test_dates),
        cmocka_unit_test(test_misc),
        cmocka_unit_test(test_framing_headers),
        cmocka_unit_test(test_header_names),
        cmocka_unit_test(test_split_target),
        cmocka_unit_test(test_reply_serialize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
