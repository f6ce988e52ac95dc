/* test_snowflake_mt.c: 2 threads x 1,000,000 IDs from one generator on the real
 * clock: each thread's IDs strictly increase, and no ID is issued twice. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"

#include <pthread.h>
#include <stdlib.h>

#define PER_THREAD 1000000
#define THREADS 2

typedef struct worker_arg {
    ik_snowflake *g;
    int64_t *ids;
    int batch; /* 1: ik_snowflake_next; else next_n of this size */
    int rc;
} worker_arg;

static void *run(void *p)
{
    worker_arg *a = p;
    for (int i = 0; i < PER_THREAD;) {
        int n = a->batch;
        if (n > PER_THREAD - i) n = PER_THREAD - i;
        int rc = n == 1 ? ik_snowflake_next(a->g, &a->ids[i])
                        : ik_snowflake_next_n(a->g, (size_t)n, &a->ids[i]);
        if (rc) {
            a->rc = rc;
            return NULL;
        }
        i += n;
    }
    return NULL;
}

static int cmp64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

static void two_threads_unique_and_increasing(int batch)
{
    ik_layout l;
    ik_layout_default(&l);
    ik_snowflake *g;
    assert_int_equal(ik_snowflake_create(&l, 5, NULL, &g), 0);
    assert_int_equal(ik_snowflake_grant(g, 42, 0, IK_NO_CEILING, IK_FOREVER), 0);
    int64_t *all = malloc(sizeof(int64_t) * PER_THREAD * THREADS);
    worker_arg args[THREADS];
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (worker_arg){g, all + (size_t)i * PER_THREAD, batch, 0};
        pthread_create(&t[i], NULL, run, &args[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < THREADS; i++) {
        assert_int_equal(args[i].rc, 0);
        for (int k = 1; k < PER_THREAD; k++)
            if (args[i].ids[k] <= args[i].ids[k - 1])
                fail_msg("thread %d: id %d not increasing", i, k);
    }
    qsort(all, (size_t)PER_THREAD * THREADS, sizeof *all, cmp64);
    for (size_t k = 1; k < (size_t)PER_THREAD * THREADS; k++)
        if (all[k] == all[k - 1]) fail_msg("duplicate id %lld", (long long)all[k]);
    free(all);
    ik_snowflake_destroy(g);
}

static void single_ids(void **st)
{
    two_threads_unique_and_increasing(1);
}
static void batches(void **st)
{
    two_threads_unique_and_increasing(777);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(single_ids),
        cmocka_unit_test(batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
