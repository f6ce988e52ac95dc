/* test_rules.c: the rules the library, the daemon and the CLI share (src/lib/rules.h):
 * ISO 8601 text for every int64, app names, listen addresses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "rules.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void iso_eq(int64_t ms, const char *want)
{
    char out[IK__ISO8601_SIZE];
    memset(out, 'x', sizeof out);
    size_t n = ik__fmt_iso8601(out, ms);
    if (strcmp(out, want) != 0) fail_msg("%lld: '%s', want '%s'", (long long)ms, out, want);
    assert_int_equal(n, strlen(want));
}

static void iso_known_dates(void **state)
{
    iso_eq(0, "1970-01-01T00:00:00.000Z");
    iso_eq(1288834974657, "2010-11-04T01:42:54.657Z");
    iso_eq(-1, "1969-12-31T23:59:59.999Z");
    iso_eq(-1000, "1969-12-31T23:59:59.000Z");
    iso_eq(-1001, "1969-12-31T23:59:58.999Z");
    iso_eq(951782400000, "2000-02-29T00:00:00.000Z");  /* leap day of a century leap year */
    iso_eq(4107542400000, "2100-03-01T00:00:00.000Z"); /* 2100 is not a leap year */
    iso_eq(253402300799999, "9999-12-31T23:59:59.999Z");
    iso_eq(-62167219200000, "0000-01-01T00:00:00.000Z");
}

/* Past 9999 and before year 0: ISO 8601's expanded years, as JavaScript writes them
 * (new Date(8.64e15).toISOString() is "+275760-09-13T00:00:00.000Z"). */
static void iso_expanded_years(void **state)
{
    iso_eq(253402300800000, "+010000-01-01T00:00:00.000Z");
    iso_eq(INT64_C(8640000000000000), "+275760-09-13T00:00:00.000Z");
    iso_eq(INT64_C(-8640000000000000), "-271821-04-20T00:00:00.000Z");
    iso_eq(-62167219200001, "-000001-12-31T23:59:59.999Z");
    iso_eq(INT64_MAX, "+292278994-08-17T07:12:55.807Z");
    iso_eq(INT64_MIN, "-292275055-05-16T16:47:04.192Z");
    char out[IK__ISO8601_SIZE];
    assert_true(ik__fmt_iso8601(out, INT64_MIN) < IK__ISO8601_SIZE);
}

/* Against gmtime_r, on every day of years 1600 to 2600 and at random instants. */
static void iso_matches_gmtime(void **state)
{
    char out[IK__ISO8601_SIZE], want[64];
    srand(11);
    for (int64_t s = -11676096000; s < 19880899200; s += 86400 + rand() % 7) {
        time_t t = (time_t)s;
        struct tm tm;
        assert_non_null(gmtime_r(&t, &tm));
        int ms = rand() % 1000;
        snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
        ik__fmt_iso8601(out, s * 1000 + ms);
        if (strcmp(out, want) != 0) fail_msg("%lld s: '%s', want '%s'", (long long)s, out, want);
    }
}

static void app_names(void **state)
{
    static const char *const good[] = {"default",
                                       "a",
                                       "billing:v2",
                                       "A.b_c-1",
                                       "...",
                                       ".a",
                                       "0123456789012345678901234567890123456789012345678901234567"
                                       "890123"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (ik__app_name_check(good[i], NULL, 0) != 0) fail_msg("'%s' refused", good[i]);
    static const char *const bad[] = {"",
                                      ".",
                                      "..",
                                      "a b",
                                      "a/b",
                                      "x\n",
                                      "\xc3\xa9",
                                      "0123456789012345678901234567890123456789012345678901234567"
                                      "8901234"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char why[128] = "";
        if (ik__app_name_check(bad[i], why, sizeof why) != IK_EINVAL)
            fail_msg("'%s' accepted", bad[i]);
        assert_string_equal(why, "app name must be " IK__APP_NAME_RULE);
    }
    assert_int_equal(ik__app_name_check(NULL, NULL, 0), IK_EINVAL);
}

/* The library applies the rule at its doors: "." and ".." would be the data
 * directory itself and its parent on local:. */
static void app_names_at_the_library(void **state)
{
    char dir[] = "/tmp/ik-test-rules-XXXXXX", uri[64], why[256] = "";
    assert_non_null(mkdtemp(dir));
    snprintf(uri, sizeof uri, "local:%s", dir);
    ik_coord *c = NULL;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    ik_slot_info *s = NULL;
    size_t n = 0;
    assert_int_equal(ik_slots_list(c, ".", &s, &n), IK_EINVAL);
    assert_int_equal(ik_slots_list(c, "..", &s, &n), IK_EINVAL);
    ik_tag_info *t = NULL;
    assert_int_equal(ik_tags_list(c, "..", &t, &n), IK_EINVAL);
    assert_int_equal(ik_slots_list(c, "billing:v2", &s, &n), 0);
    ik_free(s);
    ik_coord_close(c);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static void listen_good(void **state)
{
    static const struct {
        const char *addr, *host;
        int port;
    } good[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"localhost:0", "localhost", 0}, /* any free port */
        {":9000", "", 9000},             /* every IPv4 address */
        {":0", "", 0},
        {"[::1]:80", "::1", 80},
        {"[::]:65535", "::", 65535},
        {"[fe80::1%eth0]:1", "fe80::1%eth0", 1},
        {"0.0.0.0:00080", "0.0.0.0", 80},
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        char host[64] = "?", why[128] = "";
        int port = -1;
        if (ik__parse_listen(good[i].addr, host, sizeof host, &port, why, sizeof why) != 0)
            fail_msg("'%s' refused: %s", good[i].addr, why);
        assert_string_equal(host, good[i].host);
        assert_int_equal(port, good[i].port);
    }
}

static void listen_bad(void **state)
{
    static const char *const bad[] = {"",        "8080",    "host",    "[::1]8080", "::1:80",
                                      "[::1]",   "[]:80",   "[::1:80", "host:",     "host:65536",
                                      "host:-1", "host:+1", "h:8o",    "h: 80",     "h:123456",
                                      ":",       "h:0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char host[64] = "unchanged", why[128] = "";
        int port = -7;
        if (ik__parse_listen(bad[i], host, sizeof host, &port, why, sizeof why) != -1)
            fail_msg("'%s' accepted", bad[i]);
        assert_true(why[0] != 0);
        assert_string_equal(host, "unchanged");
        assert_int_equal(port, -7);
    }
    char tiny[4], why[128];
    int port;
    assert_int_equal(ik__parse_listen("abcd:1", tiny, sizeof tiny, &port, why, sizeof why), -1);
    assert_int_equal(ik__parse_listen("abc:1", tiny, sizeof tiny, &port, why, sizeof why), 0);
    assert_int_equal(ik__parse_listen(NULL, tiny, sizeof tiny, &port, NULL, 0), -1);
}

/* Every password a URI can carry is gone from what may be shown; the rest stays. */
static void uri_redact(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"mysql://ik:s3cret@db:3306/ids", "mysql://ik:***@db:3306/ids"},
        {"mysql://ik@db/ids", "mysql://ik@db/ids"},
        {"postgresql://ik:p%40ss@h/db?sslmode=require", "postgresql://ik:***@h/db?sslmode=require"},
        {"postgresql://h/db?user=ik&password=s3cret&sslmode=disable",
         "postgresql://h/db?user=ik&password=***&sslmode=disable"},
        {"postgresql://ik:a@h/db?password=b", "postgresql://ik:***@h/db?password=***"},
        {"redis://:s3cret@127.0.0.1:6379/2", "redis://:***@127.0.0.1:6379/2"},
        {"redis://a:b@c@host/0", "redis://a:***@host/0"},       /* the last '@' ends the userinfo */
        {"zk://h1:2181,h2:2181/ik", "zk://h1:2181,h2:2181/ik"}, /* ':' without '@' is a port */
        {"local:./data", "local:./data"},
        {"local:/x?password=y", "local:/x?password=***"},
        /* a password may hold '#', as in a userinfo: hidden to the next '&' (zk://'s
         * auth= reads "u:pa#ss" whole; a '#' ending the hiding showed "#ss") */
        {"x://h/p?password=#frag", "x://h/p?password=***"},
        {"zk://h:1/a?auth=u:pa#ss&session-timeout=4000",
         "zk://h:1/a?auth=***&session-timeout=4000"},
        /* the key percent-decoded first, as libpq reads it, case aside */
        {"postgresql://h/db?%70assword=s3cret", "postgresql://h/db?%70assword=***"},
        {"postgresql://h/db?a=1&pass%77ord=s3&b=2", "postgresql://h/db?a=1&pass%77ord=***&b=2"},
        {"postgresql://h/db?PassWord=s3", "postgresql://h/db?PassWord=***"},
        {"postgresql://h/db?%zzassword=s3", "postgresql://h/db?%zzassword=***"}, /* undecodable */
        {"postgresql://h/db?passwords=x&passfile=y", "postgresql://h/db?passwords=x&passfile=y"},
        /* one rule with the parsers (ik__uri_userinfo): '#', '?' and '@' in a password */
        {"postgresql://ik:pa#ss@h/db", "postgresql://ik:***@h/db"},
        {"redis://:pa?ss@h:1/0", "redis://:***@h:1/0"},
        {"redis://:p#w?x@y@h?prefix=a/b", "redis://:***@h?prefix=a/b"},
        {"mysql://ik:p%40ss%23@db/ids", "mysql://ik:***@db/ids"},
        /* a '/' in a password (to be written %2F; refused): all of it hidden */
        {"postgresql://ik:pa/ss@h/db", "postgresql://***@h/db"},
        {"postgresql://h/db?application_name=a@b", "postgresql://h/db?application_name=a@b"},
        {"", ""},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        assert_string_equal(ik__uri_redact(cases[i].in, out, sizeof out), cases[i].out);
    /* truncation keeps the NUL and never shows a byte of the password */
    char small[12];
    assert_string_equal(ik__uri_redact("mysql://ik:s3cret@db/ids", small, sizeof small),
                        "mysql://ik:");
    assert_string_equal(ik__uri_redact(NULL, out, sizeof out), "");
}

/* The userinfo rule and percent-decoding, as psql reads them. */
static void uri_userinfo(void **state)
{
    (void)state;
    const char *colon;
    const char *u = "postgresql://ik:p#w?x@y@h:5432/db?sslmode=disable";
    const char *at = ik__uri_userinfo(u, &colon);
    assert_non_null(at);
    assert_string_equal(at, "@h:5432/db?sslmode=disable");
    assert_string_equal(colon, ":p#w?x@y@h:5432/db?sslmode=disable");
    assert_null(ik__uri_userinfo("postgresql://h/db?x=a@b", &colon));
    assert_null(colon);
    assert_null(ik__uri_userinfo("local:/x@y", &colon));
    assert_non_null(ik__uri_userinfo("redis://u@h", &colon));
    assert_null(colon);
    char out[16];
    assert_int_equal(ik__pct_decode("p%40ss%2F%3a", 12, out, sizeof out), 6);
    assert_string_equal(out, "p@ss/:");
    assert_int_equal(ik__pct_decode("a#b", 3, out, sizeof out), 3);
    assert_int_equal(ik__pct_decode("%4", 2, out, sizeof out), -1);
    assert_int_equal(ik__pct_decode("%zz", 3, out, sizeof out), -1);
    assert_int_equal(ik__pct_decode("%00", 3, out, sizeof out), -1);
    assert_int_equal(ik__pct_decode("a\0b", 3, out, sizeof out), -1); /* a NUL byte as it is */
    assert_int_equal(ik__pct_decode("0123456789abcdef", 16, out, sizeof out), -1); /* no room */
    assert_int_equal(ik__pct_decode("", 0, out, sizeof out), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(iso_known_dates),
        cmocka_unit_test(iso_expanded_years),
        cmocka_unit_test(iso_matches_gmtime),
        cmocka_unit_test(app_names),
        cmocka_unit_test(app_names_at_the_library),
        cmocka_unit_test(listen_good),
        cmocka_unit_test(listen_bad),
        cmocka_unit_test(uri_redact),
        cmocka_unit_test(uri_userinfo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
