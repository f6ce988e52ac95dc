/* bench_segment.c: segment IDs in-process on local: (SQLite), 1 thread.
 *
 *  1. IDs a second from ik_segment_next, one ID a call and 64 a call (the same
 *     call with n = 64: the batch API), next to an atomic fetch-add on a shared
 *     counter (the limit of any shared counter; goal: at least 0.7 of it) and to
 *     the snowflake generator's unthrottled ik_snowflake_next, in the same run.
 *  2. With 50 ms added to every store write (the IDKEEPER_TEST_WRITE_DELAY_MS hook), at a
 *     paced 100,000 IDs a second for 5 s: the longest time any request waited.
 *     Goal: no request waits on the store (the preloaded block is always there).
 *
 * Usage: bench_segment [seconds, default 2]
 */
#include "idkeeper.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile int pending_done;
static void on_ids(void *ctx, int status, const int64_t *ids, size_t n)
{
    (void)ctx, (void)status, (void)ids, (void)n;
    pending_done = 1;
}

/* One ID the way the daemon asks: ik_segment_next, and only if it must wait, wait. */
static int one(ik_segment *s, const char *tag, int64_t *id)
{
    pending_done = 0;
    int rc = ik_segment_next(s, tag, 1, id, on_ids, NULL);
    if (rc == IK_PENDING) {
        while (!pending_done) {
        }
        rc = 0;
    }
    return rc;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static ik_segment *open_tag(const char *dir, int delay_ms, ik_coord **c)
{
    char uri[300];
    snprintf(uri, sizeof uri, "local:%s", dir);
    char ms[16];
    snprintf(ms, sizeof ms, "%d", delay_ms);
    setenv("IDKEEPER_TEST_WRITE_DELAY_MS", ms, 1); /* read by ik_coord_open */
    ik_segment *s;
    int rc = ik_coord_open(uri, NULL, c, NULL, 0);
    unsetenv("IDKEEPER_TEST_WRITE_DELAY_MS");
    if (rc || ik_segment_create(*c, "bench", NULL, &s)) exit(1);
    return s;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2.0;
    char dir[] = "/tmp/ik-bench-seg-XXXXXX";
    if (!mkdtemp(dir)) return 1;
    ik_coord *c;
    ik_segment *s = open_tag(dir, 0, &c);
    if (ik_tag_create(c, "bench", "t", IK_TAG_SEGMENT, 1, 1000, NULL, NULL, 0)) return 1;
    int64_t id;
    if (ik_segment_next_wait(s, "t", 1, &id)) return 1; /* first block */
    uint64_t n = 0;
    double t0 = now_s(), end = t0 + secs;
    while (now_s() < end) {
        for (int i = 0; i < 4096; i++)
            if (one(s, "t", &id)) return 1;
        n += 4096;
    }
    double seg_rate = (double)n / (now_s() - t0);

    /* the same call, 64 IDs a call (increasing within and across calls) */
    int64_t batch[64], last = id;
    n = 0;
    t0 = now_s();
    end = t0 + secs;
    while (now_s() < end) {
        for (int i = 0; i < 64; i++) {
            pending_done = 0;
            int rc = ik_segment_next(s, "t", 64, batch, on_ids, NULL);
            if (rc == IK_PENDING) { /* both blocks empty: the IDs come through on_ids */
                while (!pending_done) {
                }
                continue;
            }
            if (rc || batch[0] <= last) return 1;
            last = batch[63];
            n += 64;
        }
    }
    double seg_batch_rate = (double)n / (now_s() - t0);
    ik_segment_destroy(s);

    /* peer: an atomic fetch-add on a shared counter, one at a time */
    static _Atomic int64_t counter;
    int64_t sink = 0;
    n = 0;
    t0 = now_s();
    end = t0 + secs;
    while (now_s() < end) {
        for (int i = 0; i < 4096; i++)
            sink += atomic_fetch_add(&counter, 1);
        n += 4096;
    }
    double fa_rate = (double)n / (now_s() - t0);
    if (sink == -1) return 1; /* keeps the loop */

    ik_layout u;
    ik_layout_default(&u);
    u.time_bits = 31;
    u.seq_bits = 22;
    u.epoch_ms = (int64_t)time(NULL) * 1000 - 86400000;
    ik_snowflake *g;
    if (ik_snowflake_create(&u, 5, NULL, &g) ||
        ik_snowflake_grant(g, 1, 0, IK_NO_CEILING, IK_FOREVER))
        return 1;
    n = 0;
    t0 = now_s();
    end = t0 + secs;
    while (now_s() < end) {
        for (int i = 0; i < 4096; i++)
            if (ik_snowflake_next(g, &id)) return 1;
        n += 4096;
    }
    double sf_rate = (double)n / (now_s() - t0);
    ik_snowflake_destroy(g);
    printf("segment in-process, 1 thread: %.0f IDs/s (goal 50,000,000); peer unthrottled snowflake "
           "next: %.0f IDs/s; ratio %.2f\n",
           seg_rate, sf_rate, seg_rate / sf_rate);
    printf("segment in-process, 1 thread, 1 ID a call: %.0f IDs/s; peer atomic fetch-add: %.0f "
           "IDs/s; ratio %.2f (goal >= 0.70)\n",
           seg_rate, fa_rate, seg_rate / fa_rate);
    printf("segment in-process, 1 thread, 64 IDs a call (ik_segment_next n=64): %.0f IDs/s; peer "
           "atomic fetch-add: %.0f IDs/s; ratio %.2f (goal >= 0.70)\n",
           seg_batch_rate, fa_rate, seg_batch_rate / fa_rate);

    ik_coord_close(c);

    /* 2: 50 ms per store write, 100,000 IDs a second */
    s = open_tag(dir, 50, &c);
    if (ik_tag_create(c, "bench", "slow", IK_TAG_SEGMENT, 1, 1000, NULL, NULL, 0)) return 1;
    if (ik_segment_next_wait(s, "slow", 1, &id)) return 1;
    double worst = 0, worst_after_1s = 0, start = now_s();
    uint64_t k = 0, total = (uint64_t)(5 * 100000);
    while (k < total) {
        double due = start + (double)k / 100000.0;
        while (now_s() < due) {
        }
        double a = now_s();
        if (one(s, "slow", &id)) return 1;
        double w = now_s() - a;
        if (w > worst) worst = w;
        if (a - start >= 1.0 && w > worst_after_1s) worst_after_1s = w;
        k++;
    }
    printf("segment with 50 ms per store write at 100,000 IDs/s for 5 s: longest wait %.3f ms "
           "(after the first second: %.3f ms); a store write alone: 50 ms\n",
           worst * 1e3, worst_after_1s * 1e3);
    ik_segment_destroy(s);
    ik_coord_close(c);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}
