/* test_store_options.c: a backend's store options (src/lib/rules.h, "store options";
 * store_options.c). The resolution coord.c makes before a backend's open: an option
 * in the URI's query and the same in ik_coord_options.store_options give the backend
 * the same list and the same URI; an unknown name is one line naming those that
 * exist, for the query and for the list; two values of one option, a bad value, the
 * deprecated fields and their precedence; a secret never in a message. And the
 * registry's own tables: every row well-formed, its default a value its check
 * takes, its secret's query key one the redaction hides, the CLI's names unique. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* A table of the shape every backend's is, for the resolution's rules: two rows,
 * each mapped onto one of ik_coord_options' deprecated fields. */
static const ik__store_option table[] = {
    {.family = "t",
     .name = "session-timeout",
     .shape = IK__STORE_INT,
     .min = 100,
     .max = 3600000,
     .def = "10000",
     .metavar = "MS",
     .help = "a timeout",
     .legacy = offsetof(ik_coord_options, zk_session_timeout_ms)},
    {.family = "t",
     .name = "auth",
     .shape = IK__STORE_USERPASS,
     .metavar = "USER:PASSWORD",
     .help = "a login",
     .legacy = offsetof(ik_coord_options, zk_auth)},
    {.name = NULL},
};

typedef struct resolved {
    int rc;
    char why[256];
    char *uri;   /* what the backend's open would get (NULL: the URI as it is) */
    char **list; /* its options */
} resolved;

static resolved resolve(const char *keys, const char *uri, const ik_coord_options *o)
{
    resolved r = {0};
    r.rc =
        ik__store_options_resolve(table, keys, "t", uri, o, &r.uri, &r.list, r.why, sizeof r.why);
    return r;
}

static void done(resolved *r)
{
    ik__store_uri_free(r->uri);
    ik__store_options_free(r->list);
}

/* The list as one line, "a=1 b=2", for comparisons. */
static const char *joined(char **list, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; list && list[i] && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " " : "", list[i]);
    return buf;
}

static void query_and_list_reach_the_backend_alike(void **st)
{
    (void)st;
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.zk_session_timeout_ms = 0; /* a program that never set the old field */
    resolved q = resolve(NULL, "t://h:1/app?session-timeout=4000&auth=u:p%26w", &o);
    assert_int_equal(q.rc, 0);
    const char *opts[] = {"session-timeout=4000", "auth=u:p&w", NULL};
    o.store_options = opts;
    resolved l = resolve(NULL, "t://h:1/app", &o);
    assert_int_equal(l.rc, 0);
    char a[256], b[256];
    assert_string_equal(joined(q.list, a, sizeof a), "session-timeout=4000 auth=u:p&w");
    assert_string_equal(joined(l.list, b, sizeof b), a);
    assert_string_equal(q.uri, "t://h:1/app"); /* the items taken out: SO3 */
    assert_null(l.uri);
    /* the backend reads the same values from either */
    ik_coord_options qo = o, lo = o;
    qo.store_options = (const char *const *)q.list;
    lo.store_options = (const char *const *)l.list;
    assert_int_equal(ik__store_opt_int(&qo, "session-timeout", 0), 4000);
    assert_int_equal(ik__store_opt_int(&lo, "session-timeout", 0), 4000);
    assert_string_equal(ik__store_opt(&qo, "auth"), "u:p&w");
    assert_string_equal(ik__store_opt(&lo, "auth"), "u:p&w");
    done(&q);
    done(&l);
    /* the same in both, with one value: fine */
    resolved both = resolve(NULL, "t://h:1/app?session-timeout=4000", &o);
    assert_int_equal(both.rc, 0);
    done(&both);
}

static void unknown_names_are_one_line_naming_the_options(void **st)
{
    (void)st;
    resolved r = resolve(NULL, "t://h:1/app?session-timout=4000", NULL);
    assert_int_equal(r.rc, IK_EURI);
    assert_string_equal(r.why, "the t backend has no option 'session-timout' (its options: "
                               "session-timeout, auth)");
    assert_null(r.uri);
    assert_null(r.list);
    done(&r);
    /* a backend with query keys of its own: those pass to it, others are named */
    r = resolve("db, prefix", "t://h:1/app?prefix=x&db=2&session-timeout=300", NULL);
    assert_int_equal(r.rc, 0);
    assert_string_equal(r.uri, "t://h:1/app?prefix=x&db=2");
    done(&r);
    r = resolve("db, prefix", "t://h:1/app?prefixx=1", NULL);
    assert_int_equal(r.rc, IK_EURI);
    assert_string_equal(r.why, "the t backend has no option 'prefixx' (its options: "
                               "session-timeout, auth; its URI's own keys: db, prefix)");
    done(&r);
    /* in the list */
    ik_coord_options o;
    ik_coord_options_init(&o);
    const char *opts[] = {"wait-replicas=1", NULL};
    o.store_options = opts;
    r = resolve(NULL, "t://h:1/app", &o);
    assert_int_equal(r.rc, IK_EINVAL);
    assert_string_equal(r.why, "the t backend has no option 'wait-replicas' (its options: "
                               "session-timeout, auth)");
    assert_null(r.list);
    done(&r);
    const char *bare[] = {"session-timeout", NULL};
    o.store_options = bare;
    r = resolve(NULL, "t://h:1/app", &o);
    assert_int_equal(r.rc, IK_EINVAL);
    assert_non_null(strstr(r.why, "NAME=VALUE"));
    done(&r);
    /* a backend without a table refuses every name */
    const char *timeout[] = {"session-timeout=4000", NULL};
    o.store_options = timeout;
    resolved none = {0};
    none.rc = ik__store_options_resolve(NULL, NULL, "local", "local:/x?y", &o, &none.uri,
                                        &none.list, none.why, sizeof none.why);
    assert_int_equal(none.rc, IK_EINVAL);
    assert_string_equal(none.why, "the local backend takes no store options ('session-timeout')");
    done(&none);
}

static void bad_and_twice_given_values_are_refused(void **st)
{
    (void)st;
    static const struct {
        const char *uri, *opt, *why;
        int rc;
    } cases[] = {
        {"t://h/a?session-timeout=50", NULL, "session-timeout in the t URI: 50 is out of range",
         IK_EURI},
        {"t://h/a?session-timeout=4s", NULL, "is not a number", IK_EURI},
        {"t://h/a?session-timeout=1000&session-timeout=1000", NULL, "gives session-timeout twice",
         IK_EURI},
        {"t://h/a?auth=%zz", NULL, "bad %-escape", IK_EURI},
        {"t://h/a?auth", NULL, "NAME=VALUE items, not 'auth'", IK_EURI},
        {"t://h/a", "session-timeout=-1", "store option session-timeout: '-1' is not a number",
         IK_EINVAL},
        {"t://h/a?session-timeout=1000", "session-timeout=2000",
         "given in the URI and in the options, with two values", IK_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ik_coord_options o;
        ik_coord_options_init(&o);
        const char *opts[] = {cases[i].opt, NULL};
        o.store_options = opts;
        resolved r = resolve(NULL, cases[i].uri, &o);
        if (r.rc != cases[i].rc || !strstr(r.why, cases[i].why))
            fail_msg("%s %s: rc %d, '%s'", cases[i].uri, cases[i].opt ? cases[i].opt : "", r.rc,
                     r.why);
        assert_null(strchr(r.why, '\n'));
        done(&r);
    }
}

/* SO2: the value of a USER:PASSWORD option is never in a message. */
static void a_secret_is_never_shown(void **st)
{
    (void)st;
    const char *bad[] = {":s3cret-Horse", "s3cret-Horse", "u\x01s3cret-Horse"};
    for (size_t i = 0; i < 3; i++) {
        ik_coord_options o;
        ik_coord_options_init(&o);
        const char *opts[] = {NULL, NULL};
        char item[64];
        snprintf(item, sizeof item, "auth=%s", bad[i]);
        opts[0] = item;
        o.store_options = opts;
        resolved r = resolve(NULL, "t://h/a", &o);
        assert_int_equal(r.rc, IK_EINVAL);
        if (strstr(r.why, "s3cret")) fail_msg("the secret shown: %s", r.why);
        done(&r);
        char uri[96];
        snprintf(uri, sizeof uri, "t://h/a?auth=%s",
                 bad[i][0] == 'u' ? "u%01s3cret-Horse" : bad[i]);
        r = resolve(NULL, uri, NULL);
        assert_int_equal(r.rc, IK_EURI);
        if (strstr(r.why, "s3cret")) fail_msg("the secret shown: %s", r.why);
        done(&r);
    }
    /* and a URI that carries one is shown without it (rules.c, ik__uri_redact) */
    char shown[128];
    ik__uri_redact("zk://h:2181/app?session-timeout=4000&auth=u:s3cret-Horse", shown, sizeof shown);
    assert_string_equal(shown, "zk://h:2181/app?session-timeout=4000&auth=***");
    /* a '#' in it is not a fragment there: the store option reads it as the
     * password's, and so does the redaction */
    ik__uri_redact("zk://h:2181/app?auth=u:Pw#26x@y&session-timeout=4000", shown, sizeof shown);
    assert_string_equal(shown, "zk://h:2181/app?auth=***&session-timeout=4000");
    resolved r = resolve(NULL, "t://h/a?auth=u:Pw#26x@y", NULL);
    assert_int_equal(r.rc, 0);
    char buf[128];
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=10000 auth=u:Pw#26x@y");
    done(&r);
}

/* The old fields: honoured where neither the URI nor the list gives the option;
 * the list and the URI win; an unset field (0, NULL) leaves the default. */
static void deprecated_fields_map_onto_the_rows(void **st)
{
    (void)st;
    ik_coord_options o;
    ik_coord_options_init(&o);
    char buf[256];
    resolved r = resolve(NULL, "t://h/a", &o); /* init's 10000 */
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=10000");
    done(&r);
    o.zk_session_timeout_ms = 4000;
    o.zk_auth = "u:pw";
    r = resolve(NULL, "t://h/a", &o);
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=4000 auth=u:pw");
    done(&r);
    r = resolve(NULL, "t://h/a?session-timeout=5000", &o);
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=5000 auth=u:pw");
    done(&r);
    const char *opts[] = {"auth=v:pw2", NULL};
    o.store_options = opts;
    r = resolve(NULL, "t://h/a", &o);
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=4000 auth=v:pw2");
    done(&r);
    o.store_options = NULL;
    o.zk_session_timeout_ms = 0;
    o.zk_auth = NULL;
    r = resolve(NULL, "t://h/a", &o);
    assert_string_equal(joined(r.list, buf, sizeof buf), "session-timeout=10000");
    done(&r);
    o.zk_session_timeout_ms = 50; /* checked by the row like any other value */
    r = resolve(NULL, "t://h/a", &o);
    assert_int_equal(r.rc, IK_EINVAL);
    assert_non_null(strstr(r.why, "session-timeout (its old field): 50 is out of range"));
    done(&r);
}

/* The registry's tables: what the CLI, coord.c and the docs generator rely on. */
static void the_backends_tables_are_well_formed(void **st)
{
    (void)st;
    size_t nb;
    const ik__backend_ops *const *b = ik__coord_backends(&nb);
    size_t rows = 0;
    for (size_t i = 0; ik__coord_store_option(i); i++, rows++) {
        const ik__store_option *r = ik__coord_store_option(i);
        assert_non_null(r->family);
        assert_non_null(r->help);
        assert_non_null(r->metavar);
        for (const char *p = r->name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
                fail_msg("option %s-%s: a name is [a-z0-9-]", r->family, r->name);
        char why[200] = "";
        if (r->def && ik__store_option_check(r, r->def, why, sizeof why) != 0)
            fail_msg("option %s-%s: its default '%s' is refused: %s", r->family, r->name, r->def,
                     why);
        if (r->shape == IK__STORE_USERPASS) {
            char item[64];
            snprintf(item, sizeof item, "%s=u:p", r->name);
            if (!ik__uri_query_password(item, strlen(item)) || r->def)
                fail_msg("option %s-%s holds a password: its query key must be one the "
                         "redaction hides (ik__uri_query_password), and it has no default",
                         r->family, r->name);
        }
        for (size_t j = 0; j < i; j++) {
            const ik__store_option *q = ik__coord_store_option(j);
            if (!strcmp(q->family, r->family) && !strcmp(q->name, r->name))
                fail_msg("two options --%s-%s", r->family, r->name);
        }
        /* it is the option of a backend whose scheme is its family's */
        int owned = 0;
        for (size_t k = 0; k < nb; k++)
            for (size_t x = 0; b[k]->options && b[k]->options[x].name; x++)
                owned |=
                    &b[k]->options[x] == r && !strncmp(b[k]->scheme, r->family, strlen(r->family));
        if (!owned)
            fail_msg("option %s-%s: no backend of scheme %s... has it", r->family, r->name,
                     r->family);
    }
    (void)rows;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(query_and_list_reach_the_backend_alike),
        cmocka_unit_test(unknown_names_are_one_line_naming_the_options),
        cmocka_unit_test(bad_and_twice_given_values_are_refused),
        cmocka_unit_test(a_secret_is_never_shown),
        cmocka_unit_test(deprecated_fields_map_onto_the_rows),
        cmocka_unit_test(the_backends_tables_are_well_formed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
