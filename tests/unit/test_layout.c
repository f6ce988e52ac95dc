/* test_layout.c: the bit layout: round trips over random layouts, checks, parsing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const int64_t NOW_MS = INT64_C(1795000000000); /* 2026-11-18 */

static uint64_t rnd64(void)
{
    return ((uint64_t)rand() << 42) ^ ((uint64_t)rand() << 21) ^ (uint64_t)rand();
}

static void default_layout_is_valid_and_leaf_compatible(void **st)
{
    ik_layout l;
    char why[200];
    ik_layout_default(&l);
    assert_int_equal(ik_layout_check(&l, NOW_MS, why, sizeof why), 0);
    assert_int_equal(l.epoch_ms, INT64_C(1288834974657));
    /* 41 bits of ms from the Twitter epoch run out on 2080-07-10T17:30:30.208Z */
    assert_int_equal(ik_layout_end_ms(&l), INT64_C(1288834974657) + (INT64_C(1) << 41));
    /* a known Twitter-style ID: time 1000 ms after the epoch, worker 5, seq 7 */
    int64_t id;
    assert_int_equal(ik_layout_compose(&l, 1000, 5, 7, &id), 0);
    assert_int_equal(id, (INT64_C(1000) << 22) | (5 << 12) | 7);
}

static void random_layouts_round_trip(void **st)
{
    srand(12345);
    int checked = 0;
    for (int i = 0; i < 20000; i++) {
        ik_layout l;
        ik_layout_default(&l);
        l.seq_bits = 1 + (unsigned)(rand() % 30);
        l.worker_bits = (unsigned)(rand() % 21);
        if (l.seq_bits + l.worker_bits > 43) continue;
        /* a quarter of the layouts leave top bits unused (js53-like) */
        l.time_bits =
            63 - l.seq_bits - l.worker_bits - (rand() % 4 == 0 ? (unsigned)(rand() % 12) : 0);
        static const int64_t units[] = {1, 10, 1000};
        l.unit_ms = units[rand() % 3];
        l.worker_min = 0;
        l.worker_max = (1u << l.worker_bits) - 1;
        char why[200];
        if (ik_layout_check(&l, NOW_MS, why, sizeof why)) continue;
        for (int k = 0; k < 50; k++) {
            uint64_t t = rnd64() & ((UINT64_C(1) << l.time_bits) - 1);
            uint32_t w = (uint32_t)(rnd64() & ((UINT64_C(1) << l.worker_bits) - 1));
            uint32_t s = (uint32_t)(rnd64() & ((UINT64_C(1) << l.seq_bits) - 1));
            int64_t id;
            assert_int_equal(ik_layout_compose(&l, t, w, s, &id), 0);
            assert_true(id >= 0);
            ik_id_parts p;
            assert_int_equal(ik_layout_decode(&l, id, &p), 0);
            assert_int_equal(p.ticks, t);
            assert_int_equal(p.worker, w);
            assert_int_equal(p.sequence, s);
            assert_int_equal(p.time_ms, l.epoch_ms + (int64_t)t * l.unit_ms);
            /* the bits above the layout's fields stay zero */
            unsigned total = l.time_bits + l.worker_bits + l.seq_bits;
            if (total < 63) {
                assert_true((uint64_t)id >> total == 0);
                assert_int_equal(ik_layout_decode(&l, id | (INT64_C(1) << total), &p), IK_ERANGE);
            }
        }
        /* a field one past its width is refused */
        int64_t id;
        assert_int_equal(ik_layout_compose(&l, UINT64_C(1) << l.time_bits, 0, 0, &id), IK_ERANGE);
        assert_int_equal(ik_layout_compose(&l, 0, 0, 1u << l.seq_bits, &id), IK_ERANGE);
        /* the canonical text parses back to the same layout */
        char text[200];
        ik_layout_format(&l, text, sizeof text);
        ik_layout back;
        ik_layout_default(&back);
        assert_int_equal(ik_layout_parse(&back, text, why, sizeof why), 0);
        assert_memory_equal(&back, &l, sizeof l);
        checked++;
    }
    assert_true(checked > 1000);
}

static void invalid_layouts_rejected_with_reason(void **st)
{
    struct {
        const char *spec;
        const char *needle;
    } cases[] = {
        {"bits=41/10/13", "sum to 63 or fewer"},
        {"bits=20/10/33", "sequence bits"},
        {"bits=30/21/12", "worker bits"},
        {"bits=35/10/18", "10 years"}, /* 2^35 ms from 2010 ends in 2011 */
        {"bits=41/10/12,unit=1s,epoch=2100-01-01", "epoch"},
        {"bits=41/10/12,workers=5-2000", "worker range"},
        {"bits=41/10/12,seq-start=random:4000", "half the sequence"},
        {"bits=62/0/1,unit=1s", "Unix milliseconds"}, /* 2^62 s overflows int64 ms */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ik_layout l;
        char why[200] = "";
        ik_layout_default(&l);
        assert_int_equal(ik_layout_parse(&l, cases[i].spec, why, sizeof why), 0);
        assert_int_equal(ik_layout_check(&l, NOW_MS, why, sizeof why), IK_ELAYOUT);
        if (!strstr(why, cases[i].needle))
            fail_msg("%s: reason '%s' lacks '%s'", cases[i].spec, why, cases[i].needle);
    }
}

/* js53: every ID it can make is a safe JavaScript integer (below 2^53) for at least
 * 30 years from its epoch, and it still runs 10 years past now. */
static void js53_preset_stays_below_2_53(void **st)
{
    ik_layout l;
    char why[200] = "";
    ik_layout_default(&l);
    assert_int_equal(ik_layout_parse(&l, "js53", why, sizeof why), 0);
    assert_int_equal(ik_layout_check(&l, NOW_MS, why, sizeof why), 0);
    assert_true(l.time_bits + l.worker_bits + l.seq_bits <= 53);
    assert_int_equal(l.epoch_ms, IK_JS53_EPOCH_MS);
    const int64_t thirty_years_ms = INT64_C(30) * 36525 * 864 * 1000;
    assert_true(ik_layout_end_ms(&l) - l.epoch_ms >= thirty_years_ms);
    int64_t id;
    assert_int_equal(ik_layout_compose(&l, (UINT64_C(1) << l.time_bits) - 1, l.worker_max,
                                       (1u << l.seq_bits) - 1, &id),
                     0);
    assert_true(id < (INT64_C(1) << 53));
    /* a default-layout ID is not a js53 ID */
    ik_id_parts p;
    assert_int_equal(ik_layout_decode(&l, INT64_C(1) << 53, &p), IK_ERANGE);
    /* items after the preset override it; the canonical text parses back */
    assert_int_equal(ik_layout_parse(&l, "js53,workers=0-7", why, sizeof why), 0);
    assert_int_equal(l.worker_max, 7);
    assert_int_equal(l.unit_ms, 10);
    char text[200];
    ik_layout_format(&l, text, sizeof text);
    ik_layout back;
    ik_layout_default(&back);
    assert_int_equal(ik_layout_parse(&back, text, why, sizeof why), 0);
    assert_memory_equal(&back, &l, sizeof l);
    /* "default" resets a js53 start; a preset name is not a key */
    assert_int_equal(ik_layout_parse(&l, "default", why, sizeof why), 0);
    assert_int_equal(l.time_bits, 41);
    assert_int_equal(ik_layout_parse(&l, "js53x", why, sizeof why), IK_ELAYOUT);
    assert_int_equal(ik_layout_parse(&l, "js53,", why, sizeof why), IK_ELAYOUT);
}

static void malformed_layout_text_rejected_unchanged(void **st)
{
    const char *bad[] = {
        "",          "bits",           "bits=41/10",       "bits=a/b/c",
        "unit=5ms",  "epoch=tomorrow", "workers=3",        "seq-start=random:",
        "color=red", "bits=41/10/12,", "epoch=2023-02-30", "bits=99999999999999999999/1/1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ik_layout l, before;
        char why[200] = "";
        ik_layout_default(&l);
        before = l;
        assert_int_equal(ik_layout_parse(&l, bad[i], why, sizeof why), IK_ELAYOUT);
        assert_true(why[0] != '\0');
        assert_memory_equal(&l, &before, sizeof l);
    }
}

static void parse_sets_fields(void **st)
{
    ik_layout l;
    char why[200];
    ik_layout_default(&l);
    assert_int_equal(
        ik_layout_parse(&l, "bits=39/8/16,unit=10ms,epoch=2020-01-01", why, sizeof why), 0);
    assert_int_equal(l.time_bits, 39);
    assert_int_equal(l.worker_max, 255); /* bits without workers: the full range */
    assert_int_equal(l.unit_ms, 10);
    assert_int_equal(l.epoch_ms, INT64_C(1577836800000));
    assert_int_equal(ik_layout_parse(&l, "workers=3-9,seq-start=random:100", why, sizeof why), 0);
    assert_int_equal(l.worker_min, 3);
    assert_int_equal(l.worker_max, 9);
    assert_int_equal(l.seq_random_bound, 100);
}

static void parse_id_strict(void **st)
{
    int64_t v;
    assert_int_equal(ik_parse_id("0", 1, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(ik_parse_id("9223372036854775807", 19, &v), 0);
    assert_int_equal(v, INT64_MAX);
    const char *bad[] = {
        "",   "-1",  "+1", "01", " 1", "1 ", "9223372036854775808", "12345678901234567890",
        "1a", "0x10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(ik_parse_id(bad[i], strlen(bad[i]), &v), IK_EINVAL);
}

static void ticks_at_floors(void **st)
{
    ik_layout l;
    ik_layout_default(&l);
    l.unit_ms = 10;
    assert_int_equal(ik_layout_ticks_at(&l, l.epoch_ms + 25), 2);
    assert_int_equal(ik_layout_ticks_at(&l, l.epoch_ms - 5), -1);
    assert_int_equal(ik_layout_ticks_at(&l, l.epoch_ms), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(default_layout_is_valid_and_leaf_compatible),
        cmocka_unit_test(random_layouts_round_trip),
        cmocka_unit_test(invalid_layouts_rejected_with_reason),
        cmocka_unit_test(js53_preset_stays_below_2_53),
        cmocka_unit_test(malformed_layout_text_rejected_unchanged),
        cmocka_unit_test(parse_sets_fields),
        cmocka_unit_test(parse_id_strict),
        cmocka_unit_test(ticks_at_floors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
