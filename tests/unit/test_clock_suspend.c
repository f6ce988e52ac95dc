/* test_clock_suspend.c: deadlines that stand for time the rest of the world sees
 * passing (the lease's validity, the hold monitor's and the ZooKeeper session's
 * proofs) must count a system suspend: while this host sleeps, ZooKeeper's session
 * clock runs on. CLOCK_MONOTONIC stops during a suspend; CLOCK_BOOTTIME does not.
 *
 * A suspend cannot be made here, so this program stands in for the kernel: it
 * defines clock_gettime itself (the library is linked in statically, so its calls
 * land here), passes every clock through to the kernel, and adds `suspended` to the
 * clocks that run on during a suspend (BOOTTIME, REALTIME) but not to those that
 * stop (MONOTONIC and its variants). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "internal.h"

#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static _Atomic int64_t suspended_ns;

int clock_gettime(clockid_t id, struct timespec *ts)
{
    if (syscall(SYS_clock_gettime, id, ts) != 0) return -1;
    if (id == CLOCK_BOOTTIME || id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) {
        int64_t ns = (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec + atomic_load(&suspended_ns);
        ts->tv_sec = ns / 1000000000;
        ts->tv_nsec = ns % 1000000000;
    }
    return 0;
}

static void suspend_for(int64_t ms)
{
    atomic_fetch_add(&suspended_ns, ms * 1000000);
}

/* The clocks the library measures deadlines with count a suspend. */
static void the_library_clocks_count_a_suspend(void **st)
{
    (void)st;
    const ik_clock *c = ik_clock_system();
    int64_t m0 = c->mono_ns(c->ctx), i0 = ik__mono_ns();
    suspend_for(60000);
    int64_t m1 = c->mono_ns(c->ctx), i1 = ik__mono_ns();
    if (m1 - m0 < INT64_C(60000000000))
        fail_msg("ik_clock_system()->mono_ns moved %lld ms across a 60 s suspend",
                 (long long)((m1 - m0) / 1000000));
    if (i1 - i0 < INT64_C(60000000000))
        fail_msg("the library's deadline clock (ik__mono_ns: lease, hold monitor, session "
                 "proofs) moved %lld ms across a 60 s suspend",
                 (long long)((i1 - i0) / 1000000));
}

/* A generator on the system clock whose grant is valid for 2 s more stops issuing
 * after a 5 s suspend: the slot's ZooKeeper session may have expired meanwhile. */
static void a_grant_lapses_across_a_suspend(void **st)
{
    (void)st;
    ik_layout l;
    ik_layout_default(&l);
    ik_snowflake *g;
    assert_int_equal(ik_snowflake_create(&l, 5, NULL, &g), 0);
    const ik_clock *c = ik_clock_system();
    assert_int_equal(
        ik_snowflake_grant(g, 7, 0, IK_NO_CEILING, c->mono_ns(c->ctx) + INT64_C(2000000000)), 0);
    int64_t id;
    assert_int_equal(ik_snowflake_next(g, &id), 0);
    suspend_for(5000);
    int rc = ik_snowflake_next(g, &id);
    if (rc == 0) fail_msg("issued an ID 3 s after its grant lapsed, across a 5 s suspend");
    assert_int_equal(rc, IK_ENOLEASE);
    ik_snowflake_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_library_clocks_count_a_suspend),
        cmocka_unit_test(a_grant_lapses_across_a_suspend),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
