/* test_coord_registry.c: coord.c is the one place a backend is chosen. Every URI
 * check goes through its table (the backend's own uri_check), an unknown scheme is
 * answered with the forms the table knows, each backend's table names its lock
 * protocol (recipe.c chooses nothing by scheme string), and says when a dead
 * holder's slot frees (the CLI's help lists it from there). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "recipe.h"
#include "rules.h"
#ifdef IK_HAVE_REDIS
#include "redis_conn.h"
#endif

#include <stdio.h>
#include <string.h>

static void unknown_scheme_lists_every_backend(void **st)
{
    (void)st;
    char why[512] = "";
    assert_int_equal(ik_coord_uri_check("consul://h:8500", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "unknown coordination URI 'consul://h:8500'"));
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

/* Each backend's own check is the one coord reaches: same answer, same reason. Its
 * row's examples pass; the scheme alone and an example with a control character
 * are refused, in the same words both ways. */
static void each_backend_check_is_reached_through_coord(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    assert_true(n >= 1);
    for (size_t k = 0; k < n; k++) {
        const ik__backend_ops *ops = v[k];
        if (!ops->uri_examples || !ops->uri_examples[0])
            fail_msg("%s: no uri_examples in its ops table", ops->scheme);
        char bad[2][80];
        snprintf(bad[0], sizeof bad[0], "%s:", ops->scheme);
        snprintf(bad[1], sizeof bad[1], "%s\n", ops->uri_examples[0]);
        size_t ne = 0;
        while (ops->uri_examples[ne])
            ne++;
        for (size_t i = 0; i < ne + 2; i++) {
            int good = i < ne;
            const char *uri = good ? ops->uri_examples[i] : bad[i - ne];
            char w1[256] = "", w2[256] = "";
            int r1 = ik_coord_uri_check(uri, w1, sizeof w1);
            int r2 = ops->uri_check(uri, w2, sizeof w2);
            if (r1 != (good ? IK_OK : IK_EURI))
                fail_msg("%s: ik_coord_uri_check(\"%s\") = %d (%s)", ops->scheme, uri, r1, w1);
            assert_int_equal(r1, r2);
            assert_string_equal(w1, w2);
            if (!good) continue;
            size_t sl = strlen(ops->scheme);
            if (strncmp(uri, ops->scheme, sl) || uri[sl] != ':')
                fail_msg("%s: example '%s' is not of its scheme", ops->scheme, uri);
        }
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

/* redis:// and redis+unix:// (redis_uri.c): the forms of docs/redis.md, their
 * canonical URIs, and a password in the URI used but never shown. */
static void redis_uri_rules(void **st)
{
    (void)st;
    char why[256] = "", canon[600];
#ifdef IK_HAVE_REDIS
    ik__redis_target t;
    assert_int_equal(ik_coord_uri_check("redis://h", why, sizeof why), IK_OK);
    assert_int_equal(ik__redis_uri_parse("redis://h", &t, why, sizeof why), IK_OK);
    assert_int_equal(t.port, 6379);
    assert_int_equal(t.db, 0);
    ik__redis_uri_format(&t, canon, sizeof canon);
    assert_string_equal(canon, "redis://h:6379/0");
    assert_int_equal(
        ik__redis_uri_parse("redis://bob:s3cret@[::1]:7000/12?prefix=ik/a/", &t, why, sizeof why),
        IK_OK);
    assert_string_equal(t.host, "::1");
    assert_string_equal(t.user, "bob");
    assert_string_equal(t.password, "s3cret");
    assert_string_equal(t.prefix, "ik/a/");
    ik__redis_uri_format(&t, canon, sizeof canon);
    assert_string_equal(canon, "redis://[::1]:7000/12?prefix=ik/a/&user=bob");
    assert_int_equal(ik_coord_uri_check("redis+unix:///run/r.sock?db=3", why, sizeof why), IK_OK);
    assert_int_equal(ik_coord_uri_check("redis+unix://run/r.sock", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "absolute socket path"));
    assert_int_equal(ik_coord_uri_check("redis://h:0", why, sizeof why), IK_EURI);
    assert_non_null(strstr(why, "port must be 1-65535"));
    assert_int_equal(ik_coord_uri_check("redis://h/10000", why, sizeof why), IK_EURI);
    assert_int_equal(ik_coord_uri_check("redis://:pw@h/x", why, sizeof why), IK_EURI);
    assert_null(strstr(why, "pw@"));
    assert_int_equal(ik_coord_uri_check("redis://h?prefix=a b", why, sizeof why), IK_EURI);
    assert_int_equal(ik_coord_uri_check("redis://h?db=1", why, sizeof why), IK_EURI);
#else
    (void)canon;
    assert_int_equal(ik_coord_uri_check("redis://h", why, sizeof why), IK_EURI);
    assert_string_equal(why, "this build has no Redis backend");
#endif
}

/* The list `idkeeper version`, `serve --help` and the man pages show is the
 * registry's: every backend's form, in its order, and nothing after the last. */
static void the_listed_forms_are_the_registry(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    char all[1024];
    ik__coord_uri_forms(all, sizeof all);
    for (size_t k = 0; k < n; k++) {
        assert_string_equal(ik__coord_uri_form(k), v[k]->uri_form);
        if (!strstr(all, v[k]->uri_form)) fail_msg("'%s' does not name %s", all, v[k]->uri_form);
    }
    assert_null(ik__coord_uri_form(n));
}

/* The registry's table of scheme, NULL if this build has none. */
static const ik__backend_ops *ops_of(const char *scheme)
{
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    for (size_t k = 0; k < n; k++)
        if (!strcmp(v[k]->scheme, scheme)) return v[k];
    return NULL;
}

/* The lock protocol comes with the backend's table, not from a scheme lookup. */
static void each_backend_names_its_lock_protocol(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    for (size_t k = 0; k < n; k++) {
        assert_non_null(v[k]->uri_check);
        /* a backend without locks says why (ik_coord_locks_check) */
        assert_true(v[k]->recipe != NULL || v[k]->no_locks != NULL);
    }
    const ik__backend_ops *redis = ops_of("redis"), *zk = ops_of("zk");
    if (redis) {
        assert_null(redis->recipe);
        assert_non_null(strstr(redis->no_locks, "cannot fence"));
    }
    assert_non_null(ops_of("local")->recipe);
    if (zk) assert_non_null(zk->recipe);
}

/* Each backend names its client library, "NAME VERSION" (`idkeeper version`), and
 * the list names each once: redis:// and redis+unix:// share hiredis. */
static void each_backend_names_its_client(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    char all[1024];
    ik__coord_client_versions(all, sizeof all);
    for (size_t k = 0; k < n; k++) {
        assert_non_null(v[k]->client_version);
        char line[128], name[64], version[64], rest[2];
        v[k]->client_version(line, sizeof line);
        if (sscanf(line, "%63s %63s %1s", name, version, rest) != 2)
            fail_msg("%s: client_version '%s' is not NAME VERSION", v[k]->scheme, line);
        char want[130];
        snprintf(want, sizeof want, "%s\n", line);
        const char *at = strstr(all, want);
        if (!at) fail_msg("'%s' is not in the list '%s'", line, all);
        if (strstr(at + 1, want)) fail_msg("'%s' twice in '%s'", line, all);
    }
    assert_non_null(strstr(all, "sqlite 3."));
    /* a short buffer holds whole lines only */
    char small[20];
    ik__coord_client_versions(small, sizeof small);
    assert_true(small[0] == '\0' || small[strlen(small) - 1] == '\n');
}

/* When a dead holder's slot frees is the row's word (slot_frees_after), which the
 * help of --slot-wait and --lease-ttl lists: a row says so exactly when it has a
 * slot_free_ms, and each list names every scheme of its rows and no other. */
static void each_backend_says_when_its_slots_free(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    char leases[1024], all[1024];
    ik__coord_slot_frees(leases, sizeof leases, 1);
    ik__coord_slot_frees(all, sizeof all, 0);
    for (size_t k = 0; k < n; k++) {
        const char *after = v[k]->slot_frees_after;
        if ((after == NULL) != (v[k]->slot_free_ms == NULL))
            fail_msg("%s: slot_frees_after and slot_free_ms disagree", v[k]->scheme);
        char scheme[64];
        size_t sl = strlen(v[k]->scheme);
        snprintf(scheme, sizeof scheme, "%s%s", v[k]->scheme,
                 strncmp(v[k]->uri_form + sl, "://", 3) == 0 ? "://" : ":");
        int lease = after && strcmp(after, IK__FREES_AFTER_LEASE_TTL) == 0;
        const char *at = strstr(leases, scheme);
        if (lease != (at != NULL && (at == leases || at[-1] == ' ')))
            fail_msg("'%s' %s %s", leases, lease ? "does not name" : "names", scheme);
        if (!strstr(all, scheme)) fail_msg("'%s' does not name %s", all, scheme);
    }
    assert_null(ops_of("local")->slot_frees_after);
    /* local:'s group, the last, frees at once: "...; local:[, X:...] 0" */
    const char *loc = strstr(all, "local:");
    assert_non_null(loc);
    assert_null(strchr(loc, ';'));
    assert_int_equal(strcmp(all + strlen(all) - 2, " 0"), 0);
    const ik__backend_ops *zk = ops_of("zk");
    if (zk) assert_non_null(strstr(all, "zk:// the session timeout + 2000"));
    /* a short buffer is cut, never overrun */
    char small[8];
    ik__coord_slot_frees(small, sizeof small, 0);
    assert_true(strlen(small) < sizeof small);
}

/* Which backends log in with a password is the row's word (takes_password), which the
 * help of --password lists: every such scheme of this build, and no other. */
static void the_password_list_is_the_rows(void **st)
{
    (void)st;
    size_t n = 0;
    const ik__backend_ops *const *v = ik__coord_backends(&n);
    char all[1024];
    ik__coord_password_schemes(all, sizeof all);
    for (size_t k = 0; k < n; k++) {
        char scheme[64];
        size_t sl = strlen(v[k]->scheme);
        snprintf(scheme, sizeof scheme, "%s%s", v[k]->scheme,
                 strncmp(v[k]->uri_form + sl, "://", 3) == 0 ? "://" : ":");
        const char *at = strstr(all, scheme);
        int listed = at != NULL && (at == all || at[-1] == ' ');
        if (listed != (v[k]->takes_password != 0))
            fail_msg("'%s' %s %s", all, listed ? "names" : "does not name", scheme);
    }
    assert_int_equal(ops_of("local")->takes_password, 0);
    const ik__backend_ops *zk = ops_of("zk"), *redis = ops_of("redis");
    if (zk) assert_int_equal(zk->takes_password, 0); /* --zk-auth, a store option */
    if (redis) assert_int_equal(redis->takes_password, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unknown_scheme_lists_every_backend),
        cmocka_unit_test(the_listed_forms_are_the_registry),
        cmocka_unit_test(each_backend_check_is_reached_through_coord),
        cmocka_unit_test(local_uri_rules),
        cmocka_unit_test(zk_uri_rules),
        cmocka_unit_test(redis_uri_rules),
        cmocka_unit_test(each_backend_names_its_lock_protocol),
        cmocka_unit_test(each_backend_names_its_client),
        cmocka_unit_test(each_backend_says_when_its_slots_free),
        cmocka_unit_test(the_password_list_is_the_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
