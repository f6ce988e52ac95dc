/* test_recipe_names.c: recipe paths, and which ZooKeeper children are contenders,
 * in which order, and whom each waits for (Curator's and kazoo's names alike). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "recipe_zk_names.h"

#include <string.h>

static void test_paths(void **st)
{
    (void)st;
    char out[512], why[128];
    assert_int_equal(ik__recipe_path("jobs/nightly", out, sizeof out, why, sizeof why), 0);
    assert_string_equal(out, "/jobs/nightly");
    assert_int_equal(ik__recipe_path("/a", out, sizeof out, why, sizeof why), 0);
    assert_string_equal(out, "/a");
    const char *bad[] = {"",    "/",    "//a",        "/a/",          "/a//b", "/a/./b",
                         "/..", "a\nb", "/zookeeper", "/zookeeper/x", NULL};
    for (int i = 0; bad[i]; i++) {
        why[0] = '\0';
        assert_int_equal(ik__recipe_path(bad[i], out, sizeof out, why, sizeof why), IK_EINVAL);
        assert_true(why[0] != '\0');
    }
    assert_int_equal(ik__recipe_path("/zookeeperish", out, sizeof out, NULL, 0), 0);
    char longp[420];
    memset(longp, 'x', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(ik__recipe_path(longp, out, sizeof out, NULL, 0), IK_EINVAL);
}

static void test_mutex_names(void **st)
{
    (void)st;
    ik__contender c;
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX,
                                         "_c_0f8e1c39-5b4a-4a57-9f2c-1b3f2d7e9a10-lock-0000000007",
                                         &c),
                     1);
    assert_int_equal(c.seq, 7);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "3f2a9c__lock__0000000012", &c), 1);
    assert_int_equal(c.seq, 12);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "lock-0000000003", &c),
                     0); /* no '-' before */
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "x-lock-0000000003", &c), 1);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--2147483648", &c), 1);
    assert_int_equal(c.seq, INT32_MIN);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-2147483647", &c), 1);
    assert_int_equal(c.seq, INT32_MAX);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-2147483648", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-000000001", &c), 0);
    /* exactly 10 digits after the pattern, as kazoo's regex wants */
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-00000000012", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "lease_holder", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-latch-0000000001", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-__WRIT__0000000001", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_LATCH, "_c_u-latch-0000000001", &c), 1);
    assert_int_equal(ik__contender_parse(IK__LOCK_LATCH, "latch-0000000001", &c), 1);
    assert_int_equal(ik__contender_parse(IK__LOCK_LATCH, "_c_u-lock-0000000001", &c), 0);
}

static void test_order_and_blockers(void **st)
{
    (void)st;
    const char *names[] = {"k__lock__0000000005", "_c_b-lock-0000000002", "_c_a-lock-0000000009",
                           "junk", "_c_w-lock-0000000001"};
    ik__contender v[5];
    size_t n = 0;
    for (int i = 0; i < 5; i++)
        if (ik__contender_parse(IK__LOCK_MUTEX, names[i], &v[n])) n++;
    assert_int_equal(n, 4);
    assert_int_equal(ik__contenders_need_czxid(v, n), 0);
    ik__contenders_sort(v, n, 0);
    assert_string_equal(v[0].name, "_c_w-lock-0000000001");
    assert_string_equal(v[1].name, "_c_b-lock-0000000002");
    assert_string_equal(v[2].name, "k__lock__0000000005");
    assert_string_equal(v[3].name, "_c_a-lock-0000000009");
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, n, "_c_w-lock-0000000001"), -1);
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, n, "_c_a-lock-0000000009"), 2);
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, n, "_c_zz-lock-0000000001"), -2);
}

static void test_rw_blockers(void **st)
{
    (void)st;
    const char *names[] = {"_c_1-__READ__0000000001", "_c_2-__WRIT__0000000002",
                           "_c_3-__READ__0000000003", "_c_4-__READ__0000000004",
                           "_c_5-__WRIT__0000000005", "_c_6-__READ__0000000006"};
    ik__contender v[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(ik__contender_parse(IK__LOCK_READ, names[i], &v[i]), 1);
    ik__contenders_sort(v, 6, 0);
    assert_int_equal(v[1].writer, 1);
    assert_int_equal(v[0].writer, 0);
    /* readers: the nearest writer ahead */
    assert_int_equal(ik__contender_blocker(IK__LOCK_READ, v, 6, names[0]), -1);
    assert_int_equal(ik__contender_blocker(IK__LOCK_READ, v, 6, names[2]), 1);
    assert_int_equal(ik__contender_blocker(IK__LOCK_READ, v, 6, names[3]), 1);
    assert_int_equal(ik__contender_blocker(IK__LOCK_READ, v, 6, names[5]), 4);
    /* writers: whoever is just ahead */
    assert_int_equal(ik__contender_blocker(IK__LOCK_WRITE, v, 6, names[1]), 0);
    assert_int_equal(ik__contender_blocker(IK__LOCK_WRITE, v, 6, names[4]), 3);
}

/* ZooKeeper names a sequential node with Java's "%010d" of the parent's counter:
 * -5 is "-000000005" (a minus and 9 digits), -2147483648 "-2147483648". */
static void test_negative_names(void **st)
{
    (void)st;
    ik__contender c;
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--000000005", &c), 1);
    assert_int_equal(c.seq, -5);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--000000001", &c), 1);
    assert_int_equal(c.seq, -1);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "k__lock__-999999999", &c), 1);
    assert_int_equal(c.seq, -999999999);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--1000000000", &c), 1);
    assert_int_equal(c.seq, -1000000000);
    assert_int_equal(ik__contender_parse(IK__LOCK_LATCH, "_c_u-latch--000000042", &c), 1);
    assert_int_equal(c.seq, -42);
    assert_int_equal(ik__contender_parse(IK__LOCK_WRITE, "_c_u-__WRIT__-000000007", &c), 1);
    assert_int_equal(c.seq, -7);
    assert_int_equal(c.writer, 1);
    /* only what "%010d" prints: no padding beyond 10 characters, no "-0" */
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--0000000005", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--0999999999", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--000000000", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--00000005", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock--2147483649", &c), 0);
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-+000000005", &c), 0);
    /* the sign is not part of the pattern: "-lock" then "-000000005" is no contender */
    assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, "_c_u-lock-000000005", &c), 0);
}

/* The wrap: a holder made before ZooKeeper's counter reached 2^31 - 1 must stay ahead
 * of every node made after it, whether the counter wrapped (-2147483648, ...) or
 * stayed at 2147483647 (ZooKeeper 3.8: every later node is 2147483647). */
static void test_order_at_the_counters_end(void **st)
{
    (void)st;
    ik__contender v[4];
    /* below the end: the names order them, no creation zxids needed */
    const char *low[] = {"_c_a-lock-2147483646", "_c_b-lock-0000000003"};
    for (int i = 0; i < 2; i++)
        assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, low[i], &v[i]), 1);
    assert_int_equal(ik__contenders_need_czxid(v, 2), 0);

    /* a clean wrap: the holder (2147483647) was made first */
    const char *wrap[] = {"_c_new-lock--2147483648", "_c_old-lock-2147483647"};
    for (int i = 0; i < 2; i++)
        assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, wrap[i], &v[i]), 1);
    assert_int_equal(ik__contenders_need_czxid(v, 2), 1);
    v[0].czxid = 0x200000010; /* the newer one */
    v[1].czxid = 0x200000008;
    ik__contenders_sort(v, 2, 1);
    assert_string_equal(v[0].name, "_c_old-lock-2147483647");
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, 2, "_c_new-lock--2147483648"), 0);
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, 2, "_c_old-lock-2147483647"), -1);

    /* a counter stuck at its end: equal sequences, whatever the names */
    const char *stuck[] = {"_c_0-lock-2147483647", "_c_f-lock-2147483647", "_c_8-lock--2147483648",
                           "_c_9-lock-2147483646"};
    for (int i = 0; i < 4; i++)
        assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, stuck[i], &v[i]), 1);
    assert_int_equal(ik__contenders_need_czxid(v, 4), 1);
    v[0].czxid = 40; /* newest */
    v[1].czxid = 20;
    v[2].czxid = 30;
    v[3].czxid = 10; /* oldest */
    ik__contenders_sort(v, 4, 1);
    assert_string_equal(v[0].name, "_c_9-lock-2147483646");
    assert_string_equal(v[1].name, "_c_f-lock-2147483647");
    assert_string_equal(v[2].name, "_c_8-lock--2147483648");
    assert_string_equal(v[3].name, "_c_0-lock-2147483647");
    assert_int_equal(ik__contender_blocker(IK__LOCK_MUTEX, v, 4, "_c_0-lock-2147483647"), 2);

    /* negative sequences alone (after a wrap) are ordered by creation too */
    const char *neg[] = {"_c_a-lock--000000005", "_c_b-lock--000000001"};
    for (int i = 0; i < 2; i++)
        assert_int_equal(ik__contender_parse(IK__LOCK_MUTEX, neg[i], &v[i]), 1);
    assert_int_equal(ik__contenders_need_czxid(v, 2), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_mutex_names),
        cmocka_unit_test(test_order_and_blockers),
        cmocka_unit_test(test_rw_blockers),
        cmocka_unit_test(test_negative_names),
        cmocka_unit_test(test_order_at_the_counters_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
