/* test_mysql_uri.c: the mysql:// URI (mysql_uri.c): what it accepts, what it
 * refuses and why, and that no refusal repeats a password given in the URI. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"

#include <string.h>

#include "mysql_uri.h"

static void accepts_the_forms(void **st)
{
    (void)st;
    ik__mysql_uri u;
    char why[256] = "", buf[512];
    assert_int_equal(ik__mysql_uri_parse("mysql://ik@127.0.0.1:3307/ids", &u, why, sizeof why), 0);
    assert_string_equal(u.user, "ik");
    assert_string_equal(u.host, "127.0.0.1");
    assert_int_equal(u.port, 3307);
    assert_string_equal(u.db, "ids");
    assert_int_equal(
        ik__mysql_uri_parse("mysql://leaf_user@db-1.example.com/leaf$ids-2", &u, why, sizeof why),
        0);
    assert_int_equal(u.port, 3306);
    ik__mysql_uri_format(&u, buf, sizeof buf);
    assert_string_equal(buf, "mysql://leaf_user@db-1.example.com:3306/leaf$ids-2");
    assert_int_equal(ik__mysql_uri_parse("mysql://a@[::1]:3306/d", &u, why, sizeof why), 0);
    assert_string_equal(u.host, "::1");
    ik__mysql_uri_format(&u, buf, sizeof buf);
    assert_string_equal(buf, "mysql://a@[::1]:3306/d");
    assert_int_equal(ik__mysql_uri_parse("mysql://a@[::1]/d", &u, why, sizeof why), 0);
    assert_int_equal(u.port, 3306);
    /* through the registry too */
    assert_int_equal(ik_coord_uri_check("mysql://a@h:1/d", why, sizeof why), 0);
}

/* uri -> the part of the reason it must give */
static const struct {
    const char *uri, *reason;
} bad[] = {
    {"mysql://", "names its user"},
    {"mysql://h/d", "names its user"},
    {"mysql://u@h", "names its database"},
    {"mysql://u@h/", "bad database"},
    {"mysql://u@h:3306/", "bad database"},
    {"mysql://u@h/d?ssl=1", "bad database"},
    {"mysql://u@h/a/b", "bad database"},
    {"mysql://u@/d", "bad host"},
    {"mysql://u@h_x/d", "bad host"},
    {"mysql://u@h:/d", "bad port"},
    {"mysql://u@h:0/d", "port out of range"},
    {"mysql://u@h:65536/d", "port out of range"},
    {"mysql://u@h:123456/d", "bad port"},
    {"mysql://u@h:3x/d", "bad port"},
    {"mysql://u@[::1/d", "bad [IPv6] host"},
    {"mysql://u@[]:1/d", "bad [IPv6] host"},
    {"mysql://u@[::1]x/d", "bad [IPv6]:PORT"},
    {"mysql://@h/d", "bad user"},
    {"mysql://u v@h/d", "bad user"},
    {"mysql:u@h/d", "begins mysql://"},
    {"mysql://u@h/012345678901234567890123456789012345678901234567890123456789012345",
     "bad database"},
};

static void refuses_with_a_reason(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ik__mysql_uri u;
        char why[256] = "";
        int rc = ik__mysql_uri_parse(bad[i].uri, &u, why, sizeof why);
        if (rc != IK_EURI) fail_msg("%s: %d, not IK_EURI", bad[i].uri, rc);
        if (!strstr(why, bad[i].reason))
            fail_msg("%s: '%s' lacks '%s'", bad[i].uri, why, bad[i].reason);
        char why2[256] = "";
        assert_int_equal(ik_coord_uri_check(bad[i].uri, why2, sizeof why2), IK_EURI);
        assert_string_equal(why, why2);
    }
}

/* A password in the URI is refused, and the reason never repeats it. */
static void password_in_uri_is_refused_unshown(void **st)
{
    (void)st;
    ik__mysql_uri u;
    char why[256] = "";
    assert_int_equal(ik__mysql_uri_parse("mysql://ik:s3cr3t-pw@h:3306/d", &u, why, sizeof why),
                     IK_EURI);
    assert_non_null(strstr(why, "--password-file"));
    assert_null(strstr(why, "s3cr3t"));
    assert_int_equal(ik_coord_uri_check("mysql://ik:s3cr3t-pw@h/d", why, sizeof why), IK_EURI);
    assert_null(strstr(why, "s3cr3t"));
    assert_int_equal(ik_coord_uri_check("mysql://ik:s3cr3t@pw@h/d", why, sizeof why), IK_EURI);
    assert_null(strstr(why, "s3cr3t"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_the_forms),
        cmocka_unit_test(refuses_with_a_reason),
        cmocka_unit_test(password_in_uri_is_refused_unshown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
