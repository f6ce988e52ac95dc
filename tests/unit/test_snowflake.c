/* test_snowflake.c: the generator's rules on a fake clock: grants, tick exhaustion,
 * clock steps back (within and beyond max_backward), floor, ceiling, deadline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_clock.h"
#include "idkeeper.h"

#include <stdlib.h>
#include <string.h>

#define START_MS INT64_C(1795000000000)

typedef struct fixture {
    fake_clock fc;
    ik_layout l;
    ik_snowflake *g;
    uint64_t now_tick;
} fixture;

static int setup(void **st)
{
    fixture *f = calloc(1, sizeof *f);
    fake_clock_init(&f->fc, START_MS);
    ik_layout_default(&f->l);
    assert_int_equal(ik_snowflake_create(&f->l, 5, &f->fc.clock, &f->g), 0);
    f->now_tick = (uint64_t)ik_layout_ticks_at(&f->l, START_MS);
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fixture *f = *st;
    ik_snowflake_destroy(f->g);
    free(f);
    return 0;
}

static void grant_forever(fixture *f, uint32_t worker)
{
    assert_int_equal(ik_snowflake_grant(f->g, worker, 0, IK_NO_CEILING, IK_FOREVER), 0);
}

static ik_id_parts parts(fixture *f, int64_t id)
{
    ik_id_parts p;
    assert_int_equal(ik_layout_decode(&f->l, id, &p), 0);
    return p;
}

static void no_grant_no_ids(void **st)
{
    fixture *f = *st;
    int64_t id;
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ENOLEASE);
    assert_int_equal(ik_snowflake_grant(f->g, 1024, 0, IK_NO_CEILING, IK_FOREVER), IK_ERANGE);
}

static void ids_increase_and_carry_the_worker(void **st)
{
    fixture *f = *st;
    grant_forever(f, 77);
    int64_t prev = 0;
    for (int i = 0; i < 1000; i++) {
        int64_t id;
        assert_int_equal(ik_snowflake_next(f->g, &id), 0);
        assert_true(id > prev);
        prev = id;
        ik_id_parts p = parts(f, id);
        assert_int_equal(p.worker, 77);
        assert_int_equal(p.ticks, f->now_tick + (uint64_t)(i / 100));
        if (i % 100 == 99) fake_clock_step(&f->fc, 1);
    }
}

static void used_up_tick_waits_for_the_next(void **st)
{
    fixture *f = *st;
    grant_forever(f, 1);
    int64_t ids[4096], id;
    assert_int_equal(ik_snowflake_next_n(f->g, 4096, ids), 0);
    assert_int_equal(parts(f, ids[4095]).sequence, 4095);
    assert_int_equal(atomic_load(&f->fc.sleeps), 0);
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
    ik_id_parts p = parts(f, id);
    assert_int_equal(p.ticks, f->now_tick + 1);
    assert_int_equal(p.sequence, 0);
    assert_int_equal(atomic_load(&f->fc.sleeps), 1);
    assert_true(atomic_load(&f->fc.slept_ns) <= 1000000);
    ik_snowflake_info si;
    ik_snowflake_get_info(f->g, &si);
    assert_int_equal(si.tick_waits, 1);
    assert_int_equal(si.issued, 4097);
}

static void clock_back_within_limit_waits(void **st)
{
    fixture *f = *st;
    grant_forever(f, 2);
    int64_t a, b;
    assert_int_equal(ik_snowflake_next(f->g, &a), 0);
    fake_clock_step(&f->fc, -3);
    assert_int_equal(ik_snowflake_next(f->g, &b), 0);
    assert_true(b > a);
    ik_snowflake_info si;
    ik_snowflake_get_info(f->g, &si);
    assert_int_equal(si.backward_waits, 1);
    assert_int_equal(si.backward_refusals, 0);
    assert_int_equal(si.last_backward_ms, 3);
    assert_true(atomic_load(&f->fc.slept_ns) >= 2000000);
}

static void clock_back_beyond_limit_refuses_until_caught_up(void **st)
{
    fixture *f = *st;
    grant_forever(f, 3);
    int64_t a, b;
    assert_int_equal(ik_snowflake_next(f->g, &a), 0);
    fake_clock_step(&f->fc, -20);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ik_snowflake_next(f->g, &b), IK_ECLOCKBACK);
    ik_snowflake_info si;
    ik_snowflake_get_info(f->g, &si);
    assert_int_equal(si.backward_refusals, 3);
    assert_int_equal(si.last_backward_ms, 20);
    assert_int_equal(atomic_load(&f->fc.sleeps), 0); /* refusing, not spinning or sleeping */
    fake_clock_step(&f->fc, 16);                     /* 4 ms behind now: within the limit */
    assert_int_equal(ik_snowflake_next(f->g, &b), 0);
    assert_true(b > a);
}

static void floor_holds_back_until_passed(void **st)
{
    fixture *f = *st;
    uint64_t floor = f->now_tick + 100;
    assert_int_equal(ik_snowflake_grant(f->g, 4, floor, IK_NO_CEILING, IK_FOREVER), 0);
    int64_t id;
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ETIMEGUARD);
    fake_clock_step(&f->fc, 100); /* now == floor: still not past it */
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ETIMEGUARD);
    fake_clock_step(&f->fc, 1);
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
    assert_true(parts(f, id).ticks > floor);
}

static void ceiling_waits_then_refuses_until_extended(void **st)
{
    fixture *f = *st;
    assert_int_equal(ik_snowflake_grant(f->g, 5, 0, f->now_tick + 2, IK_FOREVER), 0);
    int64_t id;
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
    fake_clock_step(&f->fc, 3);
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ENOLEASE);
    assert_true(atomic_load(&f->fc.slept_ns) >= 50000000); /* waited ~50 ms for a record */
    assert_int_equal(ik_snowflake_extend(f->g, f->now_tick + 10000, IK_FOREVER), 0);
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
}

/* The event loop's variant never sleeps: a used-up tick and a ceiling not yet
 * extended come back as IK_AGAIN with how long to wait, the IDs issued so far kept;
 * the ceiling wait still ends in IK_ENOLEASE 50 ms after it began. */
static void try_next_never_sleeps(void **st)
{
    fixture *f = *st;
    grant_forever(f, 3);
    size_t n = 5000; /* more than one tick's 4096 */
    int64_t *ids = calloc(n, sizeof *ids);
    ik_snowflake_try t;
    memset(&t, 0, sizeof t);
    assert_int_equal(ik_snowflake_try_next_n(f->g, n, ids, &t), IK_AGAIN);
    assert_int_equal(t.done, 4096);
    assert_true(t.wait_ns > 0 && t.wait_ns <= 1000000);
    assert_int_equal(atomic_load(&f->fc.sleeps), 0);
    fake_clock_step(&f->fc, 1);
    assert_int_equal(ik_snowflake_try_next_n(f->g, n, ids, &t), IK_OK);
    assert_int_equal(t.done, n);
    for (size_t i = 1; i < n; i++)
        assert_true(ids[i] > ids[i - 1]);
    assert_int_equal(atomic_load(&f->fc.sleeps), 0);

    ik_snowflake_info gi;
    ik_snowflake_get_info(f->g, &gi);
    assert_int_equal(ik_snowflake_extend(f->g, gi.last_tick + 1, IK_FOREVER), 0);
    ik_snowflake_revoke(f->g);
    assert_int_equal(ik_snowflake_grant(f->g, 3, 0, gi.last_tick + 1, IK_FOREVER), 0);
    fake_clock_step(&f->fc, 5); /* past the ceiling */
    memset(&t, 0, sizeof t);
    assert_int_equal(ik_snowflake_try_next_n(f->g, 1, ids, &t), IK_AGAIN);
    assert_true(t.done == 0 && t.wait_ns > 0);
    fake_clock_step(&f->fc, 30);
    assert_int_equal(ik_snowflake_try_next_n(f->g, 1, ids, &t), IK_AGAIN);
    fake_clock_step(&f->fc, 30);
    assert_int_equal(ik_snowflake_try_next_n(f->g, 1, ids, &t), IK_ENOLEASE);
    assert_int_equal(atomic_load(&f->fc.sleeps), 0);
    free(ids);
}

static void deadline_passed_stops_issuing(void **st)
{
    fixture *f = *st;
    int64_t mono = atomic_load(&f->fc.mono_ns);
    assert_int_equal(ik_snowflake_grant(f->g, 6, 0, IK_NO_CEILING, mono + 1000000000), 0);
    int64_t id;
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
    atomic_fetch_add(&f->fc.mono_ns, 1000000000);
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ENOLEASE);
    assert_int_equal(ik_snowflake_extend(f->g, IK_NO_CEILING, mono + 5000000000), 0);
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
}

static void revoke_stops_issuing(void **st)
{
    fixture *f = *st;
    grant_forever(f, 7);
    int64_t id;
    assert_int_equal(ik_snowflake_next(f->g, &id), 0);
    ik_snowflake_revoke(f->g);
    assert_int_equal(ik_snowflake_next(f->g, &id), IK_ENOLEASE);
    assert_int_equal(ik_snowflake_extend(f->g, IK_NO_CEILING, IK_FOREVER), IK_ENOLEASE);
}

static void new_worker_in_same_tick_still_increases(void **st)
{
    fixture *f = *st;
    grant_forever(f, 900);
    int64_t a, b;
    assert_int_equal(ik_snowflake_next(f->g, &a), 0);
    grant_forever(f, 3); /* a lower worker number, same millisecond */
    assert_int_equal(ik_snowflake_next(f->g, &b), 0);
    assert_true(b > a);
    assert_int_equal(parts(f, b).worker, 3);
    assert_true(parts(f, b).ticks > parts(f, a).ticks);
}

static void batch_spans_ticks_strictly_increasing(void **st)
{
    fixture *f = *st;
    grant_forever(f, 8);
    static int64_t ids[10000];
    assert_int_equal(ik_snowflake_next_n(f->g, 10000, ids), 0);
    for (int i = 1; i < 10000; i++)
        assert_true(ids[i] > ids[i - 1]);
    assert_int_equal(parts(f, ids[9999]).ticks, f->now_tick + 2);
}

static void random_sequence_start_below_bound(void **st)
{
    fixture *f = *st;
    ik_snowflake_destroy(f->g);
    f->l.seq_random_bound = 100;
    assert_int_equal(ik_snowflake_create(&f->l, 5, &f->fc.clock, &f->g), 0);
    grant_forever(f, 9);
    int nonzero = 0;
    for (int i = 0; i < 200; i++) {
        int64_t id;
        assert_int_equal(ik_snowflake_next(f->g, &id), 0);
        uint32_t s = parts(f, id).sequence;
        assert_true(s < 100);
        nonzero += s != 0;
        fake_clock_step(&f->fc, 1);
    }
    assert_true(nonzero > 150);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_grant_no_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(ids_increase_and_carry_the_worker, setup, teardown),
        cmocka_unit_test_setup_teardown(used_up_tick_waits_for_the_next, setup, teardown),
        cmocka_unit_test_setup_teardown(clock_back_within_limit_waits, setup, teardown),
        cmocka_unit_test_setup_teardown(clock_back_beyond_limit_refuses_until_caught_up, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(floor_holds_back_until_passed, setup, teardown),
        cmocka_unit_test_setup_teardown(ceiling_waits_then_refuses_until_extended, setup, teardown),
        cmocka_unit_test_setup_teardown(try_next_never_sleeps, setup, teardown),
        cmocka_unit_test_setup_teardown(deadline_passed_stops_issuing, setup, teardown),
        cmocka_unit_test_setup_teardown(revoke_stops_issuing, setup, teardown),
        cmocka_unit_test_setup_teardown(new_worker_in_same_tick_still_increases, setup, teardown),
        cmocka_unit_test_setup_teardown(batch_spans_ticks_strictly_increasing, setup, teardown),
        cmocka_unit_test_setup_teardown(random_sequence_start_below_bound, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
