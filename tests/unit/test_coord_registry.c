/* test_coord_registry.c: coord.c is the one place a backend is chosen. Every URI
 * check goes through its table (the backend's own uri_check), an unknown scheme is
 * answered with the forms the table knows, and each backend's table names its lock
 * protocol (recipe.c chooses nothing by scheme string). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "recipe.h"

#include <stdio.h>
#include <string.h>

static void unknown_scheme_lists_every_backend(void **st)
{
    (void)st;
    char why[512] = "";
    assert_int_equal(ik_coord_uri_check("etcd://h:2379", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "unknown coordination URI 'etcd://h:2379'"));
    size_t n = 0;
    for (const ik__backend_ops *const *b = ik__coord_backends(&n); n--; b++) {
        assert_non_null((*b)->uri_form);
        if (!strstr(why, (*b)->uri_form)) fail_msg("'%s' does not name %s", why, (*b)->uri_form);
    }
    assert_int_equal(ik_coord_uri_check(NULL, why, sizeof why), IK_EURI);
    assert_int_equal(ik_coord_uri_check("", why, sizeof why), IK_EURI);
    assert_int_equal(ik_coord_uri_check("nocolon", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "unknown coordination URI"));
}

/* Each backend's own check is the one coord reaches: same answer, same reason. */
static void each_backend_check_is_reached_through_coord(void **st)
{
    (void)st;
    static const char *const samples[] = {
        "local:",          "local:/tmp/x", "local:/a\tb",
        "zk://",           "zk://h:1/",    "zk://h:0",
        "zk:h:1",          "zk://h:1,",    "zk://[::1]:2181/a/../b",
        "zk://h:2181/a/b",
    };
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    assert_true(n >= 1);
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        const ik__backend_ops *ops = NULL;
        for (size_t k = 0; k < n; k++) {
            size_t sl = strlen(v[k]->scheme);
            if (!strncmp(samples[i], v[k]->scheme, sl) && samples[i][sl] == ':') ops = v[k];
        }
        if (!ops) continue; /* a scheme this build left out */
        char w1[256] = "", w2[256] = "";
        int r1 = ik_coord_uri_check(samples[i], w1, sizeof w1);
        int r2 = ops->uri_check(samples[i], w2, sizeof w2);
        assert_int_equal(r1, r2);
        assert_string_equal(w1, w2);
    }
}

static void local_uri_rules(void **st)
{
    (void)st;
    char why[256] = "";
    assert_int_equal(ik_coord_uri_check("local:", why, sizeof why), IK_EURI);
    assert_string_equal(why, "local: needs a directory");
    assert_int_equal(ik_coord_uri_check("local:/a\nb", why, sizeof why), IK_EURI);
    assert_string_equal(why, "control character in local: directory");
    assert_int_equal(ik_coord_uri_check("local:./data", why, sizeof why), IK_OK);
}

static void zk_uri_rules(void **st)
{
    (void)st;
    char why[256] = "";
#ifdef IK_HAVE_ZK
    assert_int_equal(ik_coord_uri_check("zk://h:2181,[::1]:2182/app/x", why, sizeof why), IK_OK);
    assert_int_equal(ik_coord_uri_check("zk://h:2181/", why, sizeof why), IK_OK);
    assert_int_equal(ik_coord_uri_check("zk:///x", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "names no host"));
    assert_int_equal(ik_coord_uri_check("zk://h:70000", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "port out of range"));
    assert_int_equal(ik_coord_uri_check("zk://h:1/a//b", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "bad zk chroot path"));
    assert_int_equal(ik_coord_uri_check("zk:h:1", why, sizeof why), IK_EURI);
#else
    assert_int_equal(ik_coord_uri_check("zk://h:2181", why, sizeof why), IK_EURI);
    assert_string_equal(why, "this build has no ZooKeeper backend");
#endif
}

/* The lock protocol comes with the backend's table, not from a scheme lookup. */
static void each_backend_names_its_lock_protocol(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    for (size_t k = 0; k < n; k++) {
        assert_non_null(v[k]->uri_check);
        assert_non_null(v[k]->recipe); /* both backends of today have locks */
    }
    assert_ptr_equal(ik__backend_local_ops.recipe, &ik__recipe_local_ops);
#ifdef IK_HAVE_ZK
    assert_ptr_equal(ik__backend_zk_ops.recipe, &ik__recipe_zk_ops);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_scheme_lists_every_backend),
        cmocka_unit_test(each_backend_check_is_reached_through_coord),
        cmocka_unit_test(local_uri_rules),
        cmocka_unit_test(zk_uri_rules),
        cmocka_unit_test(each_backend_names_its_lock_protocol),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
