/* test_hazards.c: the store hazards' verdicts (src/lib/hazard.c): a finding becomes
 * refused, or a risk under --allow-unsafe-store; every change of verdict is logged
 * once (HZ2); writes are refused while a row is refused (HZ1); a refused store is
 * due at every ask (HZ3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "hazard.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

static char lines[8][512];
static int nlines;

static void capture(void *ctx, const char *line)
{
    (void)ctx;
    if (nlines < 8) snprintf(lines[nlines], sizeof lines[0], "%s", line);
    nlines++;
}

static void setup_hz(ik__hazards *h, int allow)
{
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.allow_unsafe_store = allow;
    ik__hazards_init(h, &o, 9000, "redis at h:1");
    nlines = 0;
    ik_set_log(capture, NULL);
}

static void refused_until_fixed(void **state)
{
    ik__hazards h;
    setup_hz(&h, 0);
    assert_int_equal(h.interval_ms, 3000);
    assert_int_equal(ik__hazards_due(&h, 0), 1); /* never checked */
    ik_hazard r[2];
    ik__hazard_row(&h, &r[0], "appendonly", "yes", 0, "unused %d", 1);
    ik__hazard_row(&h, &r[1], "appendfsync", "everysec", 1, "set appendfsync %s", "always");
    assert_int_equal(r[0].verdict, IK_VERDICT_OK);
    assert_string_equal(r[0].fix, "");
    assert_int_equal(r[1].verdict, IK_VERDICT_REFUSED);
    char why[300];
    assert_int_equal(ik__hazards_update(&h, r, 2, why, sizeof why), IK_EUNSAFE);
    assert_string_equal(why, "appendfsync is everysec (redis at h:1): set appendfsync always");
    assert_int_equal(nlines, 1); /* the ok row of a first check says nothing */
    assert_non_null(strstr(lines[0], "store hazard: redis at h:1: appendfsync is everysec"));
    assert_int_equal(ik__hazards_refused(&h, NULL, 0), IK_EUNSAFE);
    assert_int_equal(ik__hazards_due(&h, ik__mono_ns()), 1); /* HZ3 */
    /* the same finding again: no new line */
    assert_int_equal(ik__hazards_update(&h, &r[1], 1, NULL, 0), IK_EUNSAFE);
    assert_int_equal(nlines, 1);
    /* fixed: one line, writes allowed, not due before the interval */
    ik__hazard_row(&h, &r[1], "appendfsync", "always", 0, NULL);
    assert_int_equal(ik__hazards_update(&h, &r[1], 1, NULL, 0), IK_OK);
    assert_int_equal(nlines, 2);
    assert_non_null(strstr(lines[1], "store hazard cleared: redis at h:1: appendfsync is always"));
    assert_int_equal(ik__hazards_refused(&h, why, sizeof why), IK_OK);
    assert_int_equal(ik__hazards_due(&h, ik__mono_ns()), 0);
    assert_int_equal(ik__hazards_due(&h, ik__mono_ns() - INT64_C(3001) * 1000000), 1);
    ik_hazard *out = NULL;
    size_t n = 0;
    assert_int_equal(ik__hazards_copy(&h, &out, &n), IK_OK);
    assert_int_equal(n, 2);
    assert_string_equal(out[0].check, "appendonly");
    assert_string_equal(out[1].value, "always");
    ik_free(out);
    ik__hazards_free(&h);
    ik_set_log(NULL, NULL);
}

static void allowed_is_a_risk(void **state)
{
    ik__hazards h;
    setup_hz(&h, 1);
    ik_hazard r;
    ik__hazard_row(&h, &r, "maxmemory-policy", "allkeys-lru", 1, "set noeviction");
    assert_int_equal(r.verdict, IK_VERDICT_RISK);
    assert_int_equal(ik__hazards_update(&h, &r, 1, NULL, 0), IK_OK);
    assert_int_equal(nlines, 1);
    assert_non_null(strstr(lines[0], "accepted by --allow-unsafe-store"));
    assert_int_equal(ik__hazards_refused(&h, NULL, 0), IK_OK);
    ik__hazards_free(&h);
    ik_set_log(NULL, NULL);
}

/* A backend without checks leaves its ik__hazards zeroed: no rows, nothing refused. */
static void no_checks(void **state)
{
    ik__hazards h;
    memset(&h, 0, sizeof h);
    ik_hazard *out = (ik_hazard *)&h;
    size_t n = 7;
    assert_int_equal(ik__hazards_copy(&h, &out, &n), IK_OK);
    assert_null(out);
    assert_int_equal(n, 0);
    assert_int_equal(ik__hazards_refused(&h, NULL, 0), IK_OK);
    assert_int_equal(ik__hazards_due(&h, 0), 0);
    assert_string_equal(ik_verdict_name(IK_VERDICT_REFUSED), "refused");
    assert_string_equal(ik_strerror(IK_EUNSAFE),
                        "the store's settings can lose an acknowledged write now");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused_until_fixed),
        cmocka_unit_test(allowed_is_a_risk),
        cmocka_unit_test(no_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
