/* test_cli_output.c: the CLI's pure helpers: ISO times, JSON written and read,
 * server URLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "options.h"
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CLI's times are the library's (ik__fmt_iso8601; its own tests: test_rules.c). */
static void iso_times(void **state)
{
    char buf[IK__ISO8601_SIZE];
    ik_layout l;
    ik_layout_default(&l);
    assert_int_equal(ik_layout_end_ms(&l), IK_DEFAULT_EPOCH_MS + (INT64_C(1) << 41));
    ik__fmt_iso8601(buf, ik_layout_end_ms(&l));
    assert_string_equal(buf, "2080-07-10T17:30:30.209Z");
    json_t *t = ik__cli_json_time(IK_DEFAULT_EPOCH_MS);
    assert_string_equal(json_string_value(t), "2010-11-04T01:42:54.657Z");
    json_decref(t);
}

/* Prints v as ik__cli_json_print does, into a string (freed by the caller). */
static char *printed(json_t *v)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    assert_int_equal(ik__cli_json_print(f, v), 0);
    fclose(f);
    return out;
}

static void json_strings(void **state)
{
    char *out = printed(
        json_pack("{s:o,s:I}", "s", ik__cli_json_text("a\"b\\c\nd\x01"), "n", (json_int_t)-5));
    assert_string_equal(out, "{\"s\":\"a\\\"b\\\\c\\nd\\u0001\",\"n\":-5}\n");
    free(out);
    /* UTF-8 passes as it is; bytes that are not UTF-8 become U+FFFD */
    out = printed(ik__cli_json_text("\xc3\xa9 \xff \xed\xa0\x80 \xe2\x82"));
    assert_string_equal(out, "\"\xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd "
                             "\xef\xbf\xbd\xef\xbf\xbd\"\n");
    free(out);
    assert_int_equal(ik__cli_json_print(stdout, NULL), -1); /* a failed build */
}

static void json_get_string(void **state)
{
    const char *body =
        "{\"error\":\"unknown_tag\", \"message\" : \"no tag \\\"x\\\" \\u0041\\u00e9\"}";
    char out[64];
    assert_int_equal(ik__cli_json_get_string(body, strlen(body), "message", out, sizeof out), 0);
    /* \u escapes outside ASCII are characters, written as UTF-8 */
    assert_string_equal(out, "no tag \"x\" A\xc3\xa9");
    assert_int_equal(ik__cli_json_get_string(body, strlen(body), "error", out, sizeof out), 0);
    assert_string_equal(out, "unknown_tag");
    assert_int_equal(ik__cli_json_get_string(body, strlen(body), "nope", out, sizeof out), -1);
    /* a cut never splits a character */
    assert_int_equal(ik__cli_json_get_string(body, strlen(body), "message", out, 14), 0);
    assert_string_equal(out, "no tag \"x\" A");
    /* truncated input and small buffers never overrun */
    for (size_t n = 0; n < strlen(body); n++)
        (void)ik__cli_json_get_string(body, n, "message", out, 4);
    assert_int_equal(ik__cli_json_get_string("{\"message\":5}", 13, "message", out, sizeof out),
                     -1);
}

/* A string member with the key, nested in an object before the top-level one, is
 * not the top-level member; non-ASCII escapes, surrogate pairs included, become
 * UTF-8 and not '?'. */
static void json_get_string_top_level_only(void **state)
{
    char out[64];
    const char *nested = "{\"detail\":{\"message\":\"inner\"},\"message\":\"outer\"}";
    assert_int_equal(ik__cli_json_get_string(nested, strlen(nested), "message", out, sizeof out),
                     0);
    assert_string_equal(out, "outer");
    const char *only_nested = "{\"detail\":{\"error\":\"inner\"}}";
    assert_int_equal(
        ik__cli_json_get_string(only_nested, strlen(only_nested), "error", out, sizeof out), -1);
    const char *emoji = "{\"message\":\"\\u00e9t\\u00e9 \\ud83d\\ude00 \\u4e2d\"}";
    assert_int_equal(ik__cli_json_get_string(emoji, strlen(emoji), "message", out, sizeof out), 0);
    assert_string_equal(out, "\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad");
}

/* The server's --max-batch is the "max_batch" of the "http" object of /v1/status,
 * not the first "max_batch" anywhere in the answer. */
static void status_max_batch(void **state)
{
    const char *plain = "{\"app\":\"a\",\"http\":{\"listen\":\"127.0.0.1:1\",\"threads\":2,"
                        "\"connections\":1,\"max_batch\":100},\"tags\":[]}";
    assert_int_equal(ik__cli_status_max_batch(plain, strlen(plain)), 100);
    const char *nested_first =
        "{\"app\":\"a\",\"limits\":{\"max_batch\":5},\"tags\":[{\"tag\":\"t\",\"max_batch\":7}],"
        "\"http\":{\"max_batch\":100}}";
    assert_int_equal(ik__cli_status_max_batch(nested_first, strlen(nested_first)), 100);
    const char *only_elsewhere = "{\"tags\":[{\"max_batch\":7}],\"http\":{\"threads\":2}}";
    assert_int_equal(ik__cli_status_max_batch(only_elsewhere, strlen(only_elsewhere)), -1);
    const char *top_level = "{\"max_batch\":9,\"http\":{}}";
    assert_int_equal(ik__cli_status_max_batch(top_level, strlen(top_level)), -1);
    const char *not_json = "max_batch: 10";
    assert_int_equal(ik__cli_status_max_batch(not_json, strlen(not_json)), -1);
}

static void urls(void **state)
{
    char host[64], prefix[64], why[128];
    int port;
    assert_int_equal(ik__cli_parse_url("http://127.0.0.1:8080", host, sizeof host, &port, prefix,
                                       sizeof prefix, why, sizeof why),
                     0);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 8080);
    assert_string_equal(prefix, "");
    assert_int_equal(ik__cli_parse_url("http://[::1]:9/base/", host, sizeof host, &port, prefix,
                                       sizeof prefix, why, sizeof why),
                     0);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 9);
    assert_string_equal(prefix, "/base");
    assert_int_equal(ik__cli_parse_url("localhost", host, sizeof host, &port, prefix, sizeof prefix,
                                       why, sizeof why),
                     0);
    assert_string_equal(host, "localhost");
    assert_int_equal(port, 80);
    assert_int_equal(ik__cli_parse_url("host:81/x", host, sizeof host, &port, prefix, sizeof prefix,
                                       why, sizeof why),
                     0);
    assert_int_equal(port, 81);
    assert_string_equal(prefix, "/x");
    static const char *const bad[] = {"http://:80",    "https://h:1", "http://",
                                      "http://h:0",    "http://h:x",  "http://::1:80",
                                      "http://h:1/?q", "ftp://h",     "http://[::1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        if (ik__cli_parse_url(bad[i], host, sizeof host, &port, prefix, sizeof prefix, why,
                              sizeof why) == 0)
            fail_msg("%s accepted", bad[i]);
        assert_true(why[0] != 0);
    }
}

/* `idkeeper check`'s table: a header, the columns as wide as their widest cell, "-"
 * for an ok row's empty fix; the JSON: ok only when every verdict is ok. */
static void hazard_table(void **state)
{
    ik_hazard rows[2];
    memset(rows, 0, sizeof rows);
    snprintf(rows[0].check, sizeof rows[0].check, "appendonly");
    snprintf(rows[0].value, sizeof rows[0].value, "yes");
    rows[0].verdict = IK_VERDICT_OK;
    snprintf(rows[1].check, sizeof rows[1].check, "maxmemory-policy");
    snprintf(rows[1].value, sizeof rows[1].value, "allkeys-lru");
    rows[1].verdict = IK_VERDICT_REFUSED;
    snprintf(rows[1].fix, sizeof rows[1].fix, "set noeviction");
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    assert_non_null(f);
    ik__cli_hazard_table(f, rows, 2);
    fclose(f);
    assert_string_equal(out, "CHECK             VALUE        VERDICT  WHAT TO CHANGE\n"
                             "appendonly        yes          ok       -\n"
                             "maxmemory-policy  allkeys-lru  refused  set noeviction\n");
    free(out);
    /* no rows: the header alone */
    f = open_memstream(&out, &len);
    ik__cli_hazard_table(f, rows, 0);
    fclose(f);
    assert_string_equal(out, "CHECK  VALUE  VERDICT  WHAT TO CHANGE\n");
    free(out);

    out = printed(ik__cli_hazard_json("redis://h:1", rows, 2));
    assert_string_equal(out,
                        "{\"coord\":\"redis://h:1\",\"ok\":false,\"checks\":["
                        "{\"check\":\"appendonly\",\"value\":\"yes\",\"verdict\":\"ok\","
                        "\"fix\":\"\"},{\"check\":\"maxmemory-policy\",\"value\":"
                        "\"allkeys-lru\",\"verdict\":\"refused\",\"fix\":\"set noeviction\"}]}\n");
    free(out);
    rows[1].verdict = IK_VERDICT_RISK;
    out = printed(ik__cli_hazard_json("redis://h:1", rows, 2));
    assert_non_null(strstr(out, "\"ok\":false"));
    assert_non_null(strstr(out, "\"verdict\":\"risk\""));
    free(out);
    out = printed(ik__cli_hazard_json("redis://h:1", rows, 1));
    assert_non_null(strstr(out, "\"ok\":true"));
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iso_times),
        cmocka_unit_test(json_strings),
        cmocka_unit_test(json_get_string),
        cmocka_unit_test(urls),
        cmocka_unit_test(json_get_string_top_level_only),
        cmocka_unit_test(status_max_batch),
        cmocka_unit_test(hazard_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
