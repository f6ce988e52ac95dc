/* test_options.c: the public options structs and what left them. The size rule
 * (include/idkeeper.h, "Options structs"): a caller built against an older, smaller
 * struct still works, the fields beyond its size taking their defaults; a newer,
 * larger one works if the fields this library does not know are zero. And the
 * counter-write delay, a test hook that is no longer a public option but an
 * IDKEEPER_TEST_ variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <stdlib.h>
#include <string.h>

/* Every counter write of a coord opened with IDKEEPER_TEST_WRITE_DELAY_MS set
 * sleeps that long first (a lower bound only: the machine may be slow). */
static void write_delay_comes_from_the_environment(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256];
    local_dir_make(dir, uri, "ik-opts");
    setenv("IDKEEPER_TEST_WRITE_DELAY_MS", "300", 1);
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    unsetenv("IDKEEPER_TEST_WRITE_DELAY_MS");
    assert_int_equal(ik_tag_create(c, "app", "q", IK_TAG_SEQUENCE, 1, 1, NULL, why, sizeof why), 0);
    ik_sequence *s;
    assert_int_equal(ik_sequence_create(c, "app", &s), 0);
    int64_t id = 0, t0 = mono_ms();
    assert_int_equal(ik_sequence_next_wait(s, "q", 1, &id), 0);
    int64_t took = mono_ms() - t0;
    assert_int_equal(id, 1);
    if (took < 300)
        fail_msg("the write took %lld ms, not the 300 ms the hook asks", (long long)took);
    ik_sequence_destroy(s);
    ik_coord_close(c);
    local_dir_remove(dir);
}

/* The options of a program built against an older header: the same first fields,
 * fewer of them. Placed at the start of a buffer whose later bytes are garbage, so
 * a library that read past o->size would see nonsense (and ASan a wild pointer). */
typedef struct old_lease_options {
    size_t size;
    const char *app;
    const char *identity;
} old_lease_options;

typedef struct old_lock_options {
    size_t size;
    ik_hold_cb on_change;
} old_lock_options;

typedef union garbage {
    unsigned char bytes[512];
    old_lease_options lease;
    old_lock_options lock;
    size_t size;
} garbage;

static void old_smaller_structs_take_defaults(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256] = "";
    local_dir_make(dir, uri, "ik-opts");
    ik_coord *c;
    garbage g;
    memset(&g, 0xa5, sizeof g);
    g.size = sizeof(size_t); /* the size field alone: every option takes its default */
    assert_int_equal(ik_coord_open(uri, (const ik_coord_options *)&g, &c, why, sizeof why), 0);

    ik_layout l;
    ik_layout_default(&l);
    ik_snowflake *sf;
    assert_int_equal(ik_snowflake_create(&l, 5, NULL, &sf), 0);
    memset(&g, 0xa5, sizeof g);
    g.lease.size = sizeof g.lease;
    g.lease.app = "old";
    g.lease.identity = "old-program";
    ik_slot_lease *lease;
    /* persist_interval_ms, slot_wait_ms, on_state lie beyond: 1000, the backend's, NULL */
    assert_int_equal(
        ik_slot_lease_start(c, sf, (const ik_lease_options *)&g, &lease, why, sizeof why), 0);
    ik_slot_info *slots;
    size_t n = 0;
    assert_int_equal(ik_slots_list(c, "old", &slots, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(slots[0].holder, "old-program");
    ik_free(slots);
    int64_t id;
    assert_int_equal(ik_snowflake_next(sf, &id), 0);
    assert_int_equal(ik_slot_lease_release(lease), 0);
    ik_snowflake_destroy(sf);

    memset(&g, 0xa5, sizeof g);
    g.size = sizeof(size_t);
    ik_segment *seg;
    assert_int_equal(ik_segment_create(c, "old", (const ik_segment_options *)&g, &seg), 0);
    ik_segment_destroy(seg);

    memset(&g, 0xa5, sizeof g);
    g.lock.size = sizeof g.lock;
    g.lock.on_change = NULL; /* ctx and data lie beyond: NULL and "pid=PID host=HOST" */
    ik_lock *lk;
    assert_int_equal(ik_lock_create(c, "/old", (const ik_lock_options *)&g, &lk), 0);
    int64_t fence = 0;
    assert_int_equal(ik_lock_acquire(lk, 0, &fence), 0);
    assert_true(fence > 0);
    assert_int_equal(ik_lock_release(lk), 0);
    ik_lock_destroy(lk);
    ik_rwlock *rw;
    assert_int_equal(ik_rwlock_create(c, "/old", (const ik_lock_options *)&g, &rw), 0);
    ik_rwlock_destroy(rw);

    memset(&g, 0xa5, sizeof g);
    g.size = sizeof(size_t);
    ik_election *e;
    assert_int_equal(ik_election_create(c, "/old", "me", (const ik_election_options *)&g, &e), 0);
    ik_election_destroy(e);
    ik_coord_close(c);
    local_dir_remove(dir);
}

/* A program built against a newer header: accepted when the fields this library
 * does not know are zero (their defaults), refused when one is set. */
static void newer_larger_structs_need_zero_tails(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256] = "";
    local_dir_make(dir, uri, "ik-opts");
    struct {
        ik_lock_options o;
        int64_t later_field;
    } big;
    memset(&big, 0, sizeof big);
    ik_lock_options_init(&big.o);
    assert_int_equal(big.o.size, sizeof big.o);
    big.o.size = sizeof big;
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    ik_lock *lk;
    assert_int_equal(ik_lock_create(c, "/new", &big.o, &lk), 0);
    ik_lock_destroy(lk);
    big.later_field = 7;
    assert_int_equal(ik_lock_create(c, "/new", &big.o, &lk), IK_EINVAL);

    struct {
        ik_coord_options o;
        int later_field;
    } bigc;
    memset(&bigc, 0, sizeof bigc);
    ik_coord_options_init(&bigc.o);
    bigc.o.size = sizeof bigc;
    ik_coord *c2;
    assert_int_equal(ik_coord_open(uri, &bigc.o, &c2, why, sizeof why), 0);
    ik_coord_close(c2);
    bigc.later_field = 1;
    assert_int_equal(ik_coord_open(uri, &bigc.o, &c2, why, sizeof why), IK_EINVAL);
    assert_non_null(strstr(why, "ik_coord_options"));
    ik_coord_close(c);
    local_dir_remove(dir);
}

/* A struct never given to its init (size 0) is refused, not read as defaults. */
static void uninitialised_structs_are_refused(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256] = "";
    local_dir_make(dir, uri, "ik-opts");
    ik_coord_options co;
    memset(&co, 0, sizeof co);
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, &co, &c, why, sizeof why), IK_EINVAL);
    ik_coord_options_init(&co);
    assert_int_equal(co.size, sizeof co);
    assert_int_equal(ik_coord_open(uri, &co, &c, why, sizeof why), 0);
    ik_segment_options so;
    memset(&so, 0, sizeof so);
    ik_segment *seg;
    assert_int_equal(ik_segment_create(c, "a", &so, &seg), IK_EINVAL);
    ik_election_options eo;
    memset(&eo, 0, sizeof eo);
    ik_election *e;
    assert_int_equal(ik_election_create(c, "/x", "me", &eo, &e), IK_EINVAL);
    ik_lease_options lo;
    ik_lease_options_init(&lo);
    assert_int_equal(lo.size, sizeof lo);
    lo.size = 0;
    lo.identity = "x";
    ik_layout l;
    ik_layout_default(&l);
    ik_snowflake *sf;
    assert_int_equal(ik_snowflake_create(&l, 5, NULL, &sf), 0);
    ik_slot_lease *lease;
    assert_int_equal(ik_slot_lease_begin(c, sf, &lo, &lease, why, sizeof why), IK_EINVAL);
    ik_snowflake_destroy(sf);
    ik_coord_close(c);
    local_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_delay_comes_from_the_environment),
        cmocka_unit_test(old_smaller_structs_take_defaults),
        cmocka_unit_test(newer_larger_structs_need_zero_tails),
        cmocka_unit_test(uninitialised_structs_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
