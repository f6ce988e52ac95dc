/* test_http_util.c: the daemon's pure helpers (src/server/httputil.c): route
 * patterns, query strings, numbers, listen addresses, content negotiation, buffers,
 * JSON strings and dates. The helpers touch no socket, so the file is compiled in
 * directly; the test links only libidkeeper. */
#include "buf.c"
#include "httputil.c"
#include "json.c"
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

static void test_query_get(void **state)
{
    const char *v;
    size_t n;
    const char *q = "count=5&format=text&flag&empty=&count=7";
    assert_int_equal(ik__query_get(q, strlen(q), "count", &v, &n), 1);
    assert_int_equal(n, 1);
    assert_memory_equal(v, "5", 1);
    assert_int_equal(ik__query_get(q, strlen(q), "format", &v, &n), 1);
    assert_int_equal(n, 4);
    assert_memory_equal(v, "text", 4);
    assert_int_equal(ik__query_get(q, strlen(q), "flag", &v, &n), 1);
    assert_int_equal(n, 0);
    assert_int_equal(ik__query_get(q, strlen(q), "empty", &v, &n), 1);
    assert_int_equal(n, 0);
    assert_int_equal(ik__query_get(q, strlen(q), "coun", &v, &n), 0);
    assert_int_equal(ik__query_get(q, strlen(q), "counts", &v, &n), 0);
    assert_int_equal(ik__query_get("", 0, "count", &v, &n), 0);
    assert_int_equal(ik__query_get(NULL, 0, "count", &v, &n), 0);
    /* only qlen bytes count */
    assert_int_equal(ik__query_get("a=1&count=2", 3, "count", &v, &n), 0);
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

static int neg(const char *query, const char *accept)
{
    return ik__negotiate(query, query ? strlen(query) : 0, accept, accept ? strlen(accept) : 0);
}

static void test_negotiate(void **state)
{
    assert_int_equal(neg(NULL, NULL), IK_FMT_JSON);
    assert_int_equal(neg("count=3", NULL), IK_FMT_JSON);
    assert_int_equal(neg("count=3&format=text", NULL), IK_FMT_TEXT);
    assert_int_equal(neg("format=TEXT", NULL), IK_FMT_TEXT);
    assert_int_equal(neg("format=json", "text/plain"), IK_FMT_JSON);
    assert_int_equal(neg("format=xml", NULL), -1);
    assert_int_equal(neg("format=", NULL), -1);
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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_path_match), cmocka_unit_test(test_query_get),
        cmocka_unit_test(test_parse_u32),  cmocka_unit_test(test_parse_listen),
        cmocka_unit_test(test_negotiate),  cmocka_unit_test(test_buf),
        cmocka_unit_test(test_json_str),   cmocka_unit_test(test_dates),
        cmocka_unit_test(test_misc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
