/* test_semaphore_local_mt.c: ik_semaphore on local:, with real files and real flock
 * in a fresh directory (docs/recipes.md, "Semaphores"). Several handles in one
 * process exclude each other as processes do (flock belongs to the open file), so
 * threads stand in for processes. Checked: at most max held at once by threads
 * that hammer one semaphore (counted under a mutex), fences distinct and growing
 * with the grants, a try on a full semaphore (IK_EBUSY) and a timeout
 * (IK_ETIMEDOUT) leaving no ticket behind, leases in the order of arrival, a cancel
 * (IK_ECLOSED, and the next acquire unharmed), the stored max refused
 * (IK_ECONFLICT, naming both), kazoo's layout refused off zk:// (IK_EURI), bad
 * arguments, and ik_semaphore_holders. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef local_fx fx;

static int setup(void **st)
{
    return local_fx_setup(st, "ik-sema");
}

static int teardown(void **st)
{
    return local_fx_teardown(st);
}

static ik_semaphore *make(fx *f, const char *path, int64_t max)
{
    ik_semaphore_options o;
    ik_semaphore_options_init(&o);
    o.max = max;
    ik_semaphore *s = NULL;
    assert_int_equal(ik_semaphore_create(f->c, path, &o, &s), 0);
    return s;
}

/* Tickets in the semaphore's queue. */
static int tickets(const fx *f, const char *path)
{
    char p[256];
    snprintf(p, sizeof p, "%s/locks/%s.semq.q", f->dir, path);
    return local_dir_count(p);
}

/* ---- at most max at once ------------------------------------------------------ */
#define HAMMER_THREADS 5
#define HAMMER_ROUNDS 30

typedef struct hammer {
    fx *f;
    pthread_mutex_t mu;
    int now, most, bad;
    int64_t fences[HAMMER_THREADS * HAMMER_ROUNDS];
    int n;
} hammer;

static void *hammer_thread(void *arg)
{
    hammer *h = arg;
    ik_semaphore *s = make(h->f, "/hammer", 2);
    for (int r = 0; r < HAMMER_ROUNDS; r++) {
        int64_t fence = 0;
        if (ik_semaphore_acquire(s, -1, &fence) != 0) {
            __atomic_store_n(&h->bad, 1, __ATOMIC_SEQ_CST);
            break;
        }
        pthread_mutex_lock(&h->mu);
        h->now++;
        if (h->now > h->most) h->most = h->now;
        h->fences[h->n++] = fence;
        pthread_mutex_unlock(&h->mu);
        usleep(500);
        pthread_mutex_lock(&h->mu);
        h->now--;
        pthread_mutex_unlock(&h->mu);
        if (ik_semaphore_release(s) != 0) __atomic_store_n(&h->bad, 1, __ATOMIC_SEQ_CST);
    }
    ik_semaphore_destroy(s);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_at_most_max(void **st)
{
    hammer h;
    memset(&h, 0, sizeof h);
    h.f = *st;
    pthread_mutex_init(&h.mu, NULL);
    pthread_t t[HAMMER_THREADS];
    for (int i = 0; i < HAMMER_THREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_thread, &h), 0);
    for (int i = 0; i < HAMMER_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(h.bad, 0);
    assert_int_equal(h.n, HAMMER_THREADS * HAMMER_ROUNDS);
    assert_true(h.most <= 2);
    assert_int_equal(h.most, 2); /* they contended */
    qsort(h.fences, (size_t)h.n, sizeof h.fences[0], cmp_i64);
    for (int i = 1; i < h.n; i++)
        assert_true(h.fences[i] > h.fences[i - 1]); /* each lease its own */
    assert_int_equal(tickets(h.f, "hammer"), 0);
    pthread_mutex_destroy(&h.mu);
}

/* ---- a full semaphore: try, timeout, the order of arrival, a cancel ---------- */
typedef struct waiter {
    ik_semaphore *s;
    int rc;
    int64_t fence;
} waiter;

static void *wait_thread(void *arg)
{
    waiter *w = arg;
    w->rc = ik_semaphore_acquire(w->s, -1, &w->fence);
    return NULL;
}

static void test_full(void **st)
{
    fx *f = *st;
    ik_semaphore *a = make(f, "/full", 1), *b = make(f, "/full", 1);
    int64_t fa = 0;
    assert_int_equal(ik_semaphore_acquire(a, -1, &fa), 0);
    assert_int_equal(ik_semaphore_state(a), IK_HOLD_HELD);
    assert_int_equal(ik_semaphore_trusted_until(a), INT64_MAX);    /* local: cannot lapse */
    assert_int_equal(ik_semaphore_acquire(a, 0, NULL), IK_EINVAL); /* one lease a handle */
    assert_int_equal(ik_semaphore_acquire(b, 0, NULL), IK_EBUSY);
    int64_t t0 = mono_ms();
    assert_int_equal(ik_semaphore_acquire(b, 150, NULL), IK_ETIMEDOUT);
    assert_true(mono_ms() - t0 >= 150);
    assert_int_equal(ik_semaphore_state(b), IK_HOLD_IDLE);
    assert_int_equal(tickets(f, "full"), 0);

    /* three waiters, in turn: the leases in that order */
    waiter w[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        w[i].s = make(f, "/full", 1);
        assert_int_equal(pthread_create(&t[i], NULL, wait_thread, &w[i]), 0);
        int64_t until = mono_ms() + 5000;
        while (tickets(f, "full") < i + 1 && mono_ms() < until)
            sleep_ms(2);
        assert_int_equal(tickets(f, "full"), i + 1);
        assert_int_equal(ik_semaphore_state(w[i].s), IK_HOLD_WAITING);
    }
    assert_int_equal(ik_semaphore_release(a), 0);
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, 0);
        assert_true(w[i].fence > (i ? w[i - 1].fence : fa));
        assert_int_equal(ik_semaphore_release(w[i].s), 0); /* the next one's turn */
        ik_semaphore_destroy(w[i].s);
    }

    /* a cancel ends the wait; the next acquire is not cancelled */
    assert_int_equal(ik_semaphore_acquire(a, -1, NULL), 0);
    waiter c = {b, 0, 0};
    pthread_t ct;
    assert_int_equal(pthread_create(&ct, NULL, wait_thread, &c), 0);
    int64_t until = mono_ms() + 5000;
    while (tickets(f, "full") < 1 && mono_ms() < until)
        sleep_ms(2);
    ik_semaphore_cancel(b);
    pthread_join(ct, NULL);
    assert_int_equal(c.rc, IK_ECLOSED);
    assert_int_equal(ik_semaphore_release(a), 0);
    assert_int_equal(ik_semaphore_acquire(b, 1000, NULL), 0);
    assert_int_equal(ik_semaphore_release(b), 0);
    assert_int_equal(tickets(f, "full"), 0);
    ik_semaphore_destroy(a);
    ik_semaphore_destroy(b);
}

/* ---- the stored max, the layout, the arguments, the holders --------------------- */
static void test_max_layout_args(void **st)
{
    fx *f = *st;
    ik_semaphore *two = make(f, "/max", 2), *three = make(f, "/max", 3);
    assert_int_equal(ik_semaphore_acquire(two, -1, NULL), 0);
    assert_int_equal(ik_semaphore_acquire(three, 0, NULL), IK_ECONFLICT);
    ik_hold_info hi;
    ik_semaphore_get_info(three, &hi);
    assert_int_equal(hi.state, IK_HOLD_IDLE);
    assert_non_null(strstr(hi.why, "at most 2"));
    assert_non_null(strstr(hi.why, "not 3"));

    int64_t max = 0;
    ik_semaphore_holder *h = NULL;
    size_t n = 0;
    assert_int_equal(ik_semaphore_holders(f->c, "/max", IK_SEMAPHORE_CURATOR, &max, &h, &n), 0);
    assert_int_equal(max, 2);
    assert_int_equal(n, 1);
    assert_non_null(strstr(h[0].data, "pid="));
    assert_true(h[0].fence > 0);
    ik_free(h);
    assert_int_equal(ik_semaphore_release(two), 0);
    assert_int_equal(ik_semaphore_holders(f->c, "/max", IK_SEMAPHORE_CURATOR, &max, &h, &n), 0);
    assert_int_equal(n, 0);
    assert_null(h);
    assert_int_equal(ik_semaphore_holders(f->c, "/max", IK_SEMAPHORE_KAZOO, &max, &h, &n), IK_EURI);
    ik_semaphore_destroy(two);
    ik_semaphore_destroy(three);

    ik_semaphore_options o;
    ik_semaphore_options_init(&o);
    ik_semaphore *s = NULL;
    assert_int_equal(ik_semaphore_create(f->c, "/x", &o, &s), IK_EINVAL); /* no max */
    o.max = IK_SEMAPHORE_MAX_LEASES + 1;
    assert_int_equal(ik_semaphore_create(f->c, "/x", &o, &s), IK_EINVAL);
    o.max = 1;
    o.layout = (ik_semaphore_layout)7;
    assert_int_equal(ik_semaphore_create(f->c, "/x", &o, &s), IK_EINVAL);
    o.layout = IK_SEMAPHORE_KAZOO;
    assert_int_equal(ik_semaphore_create(f->c, "/x", &o, &s), IK_EURI); /* a zk:// layout */
    o.layout = IK_SEMAPHORE_CURATOR;
    assert_int_equal(ik_semaphore_create(f->c, "/a/../b", &o, &s), IK_EINVAL);
    char longp[400];
    memset(longp, 'p', sizeof longp - 1);
    longp[sizeof longp - 1] = '\0';
    assert_int_equal(ik_semaphore_create(f->c, longp, &o, &s), IK_EINVAL); /* > 390 */
    assert_int_equal(ik_semaphore_create(NULL, "/x", &o, &s), IK_EINVAL);
    assert_int_equal(ik_semaphore_create(f->c, "/x", NULL, &s), IK_EINVAL);
    assert_null(s);
    assert_int_equal(ik_semaphore_acquire(NULL, -1, NULL), IK_EINVAL);
    assert_int_equal(ik_semaphore_release(NULL), IK_EINVAL);
    assert_int_equal(ik_semaphore_state(NULL), IK_HOLD_IDLE);
    ik_semaphore_cancel(NULL);
    ik_semaphore_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_at_most_max, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_layout_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
