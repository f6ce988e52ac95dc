/* bench_snowflake.c: in-process snowflake throughput and cost per ID.
 *
 *  1. default layout (41/10/12, 1 ms), 1 and 2 threads: IDs a second as a share of
 *     the layout's limit (4,096,000 a second per worker).
 *  2. unthrottled (22 sequence bits, so ticks never run out): ns per ID, 1 thread,
 *     next to its peer measured in the same run: a bare clock_gettime(REALTIME)
 *     plus an atomic increment, the least any clock-reading generator can cost.
 *
 * Usage: bench_snowflake [seconds per measurement, default 2]
 */
#include "idkeeper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct run_arg {
    ik_snowflake *g;
    double seconds;
    uint64_t count;
    int batch; /* 1: ik_snowflake_next; else ik_snowflake_next_n of this size */
} run_arg;

static void *run(void *p)
{
    run_arg *a = p;
    double end = now_s() + a->seconds;
    uint64_t n = 0;
    int64_t ids[64];
    while (1) {
        for (int i = 0; i < 4096; i += a->batch) {
            int rc = a->batch == 1 ? ik_snowflake_next(a->g, ids)
                                   : ik_snowflake_next_n(a->g, (size_t)a->batch, ids);
            if (rc) {
                fprintf(stderr, "bench: generator refused: %s\n", ik_strerror(rc));
                exit(1);
            }
        }
        n += 4096;
        if (now_s() >= end) break;
    }
    a->count = n;
    return NULL;
}

static double measure(const ik_layout *l, int threads, int batch, double seconds)
{
    ik_snowflake *g;
    if (ik_snowflake_create(l, 5, NULL, &g) ||
        ik_snowflake_grant(g, 1, 0, IK_NO_CEILING, IK_FOREVER))
        exit(1);
    pthread_t t[8];
    run_arg a[8];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        a[i] = (run_arg){g, seconds, 0, batch};
        pthread_create(&t[i], NULL, run, &a[i]);
    }
    uint64_t total = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(t[i], NULL);
        total += a[i].count;
    }
    double el = now_s() - t0;
    ik_snowflake_destroy(g);
    return (double)total / el;
}

static double peer_ns(double seconds)
{
    static _Atomic uint64_t counter;
    struct timespec ts;
    uint64_t n = 0;
    int64_t sink = 0;
    double t0 = now_s(), end = t0 + seconds;
    while (now_s() < end) {
        for (int i = 0; i < 4096; i++) {
            clock_gettime(CLOCK_REALTIME, &ts);
            sink += ts.tv_nsec + (int64_t)atomic_fetch_add(&counter, 1);
        }
        n += 4096;
    }
    if (sink == 42) puts("");
    return (now_s() - t0) * 1e9 / (double)n;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    ik_layout l;
    ik_layout_default(&l);
    const double limit = 4096000.0;
    for (int th = 1; th <= 2; th++) {
        double r = measure(&l, th, 1, secs);
        printf("snowflake default layout, %d thread%s: %.0f IDs/s = %.1f%% of the layout limit "
               "(%.0f/s)\n",
               th, th > 1 ? "s" : "", r, 100.0 * r / limit, limit);
    }
    ik_layout u;
    ik_layout_default(&u);
    u.time_bits = 31;
    u.worker_bits = 10;
    u.seq_bits = 22;
    u.worker_max = 1023;
    u.epoch_ms = (int64_t)time(NULL) * 1000 - 86400000; /* 2^31 ms = 24 days from yesterday */
    double peer = peer_ns(secs);
    double ns1 = 1e9 / measure(&u, 1, 1, secs);
    double ns64 = 1e9 / measure(&u, 1, 64, secs);
    printf("snowflake unthrottled (bits=31/10/22), 1 thread, ik_snowflake_next: %.1f ns/ID; "
           "peer clock_gettime(REALTIME)+atomic increment: %.1f ns; ratio %.2f\n",
           ns1, peer, ns1 / peer);
    printf("snowflake unthrottled (bits=31/10/22), 1 thread, ik_snowflake_next_n(64): %.1f ns/ID; "
           "ratio to the peer %.2f\n",
           ns64, ns64 / peer);
    return 0;
}
