/* slot_latency.c: worker-slot acquire, renewal and release latency on a running
 * store of any kind, through the backend's own ops (bench/zk_acquire.sh,
 * redis_acquire.sh and sql_acquire.sh run it; the build makes it with the library):
 * slot_acquire, slot_persist (the renewal: a token or version check, the new
 * expiry, the record) and slot_release, N times each; prints the median and p99.
 *   slot_latency URI APP RANGE_MIN RANGE_MAX N [lowest|random] [HELD] [sticky|fresh]
 * HELD other slots of the range are held (on another coord) while it measures.
 * sticky: one identity throughout (a restart takes back its slot); fresh: a new
 * identity each time (a new server: a free slot by the choice). The store's password,
 * if it needs one, is $IDKEEPER_PASSWORD. */
#include "backend.h"
#include "idkeeper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void report(const char *what, int64_t *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp64);
    printf("%-8s n=%d  median %.3f ms  p99 %.3f ms  max %.3f ms\n", what, n, v[n / 2] / 1e6,
           v[(n * 99) / 100] / 1e6, v[n - 1] / 1e6);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr,
                "usage: slot_latency URI APP MIN MAX N [lowest|random] [HELD] [sticky|fresh]\n");
        return 2;
    }
    const char *uri = argv[1], *app = argv[2];
    uint32_t lo = (uint32_t)atol(argv[3]), hi = (uint32_t)atol(argv[4]);
    int n = atoi(argv[5]);
    ik_slot_choice choice =
        argc > 6 && !strcmp(argv[6], "lowest") ? IK_SLOT_LOWEST : IK_SLOT_RANDOM;
    int held = argc > 7 ? atoi(argv[7]) : 0;
    int fresh = argc > 8 && !strcmp(argv[8], "fresh");
    char why[512];
    ik_coord_options co;
    ik_coord_options_init(&co);
    co.password = getenv("IDKEEPER_PASSWORD"); /* the SQL and Redis stores' */
    ik_coord *c, *other;
    if (ik_coord_open(uri, &co, &c, why, sizeof why) ||
        ik_coord_open(uri, &co, &other, why, sizeof why)) {
        fprintf(stderr, "open: %s\n", why);
        return 1;
    }
    ik__backend *b = ik__coord_backend(c), *ob = ik__coord_backend(other);
    for (int i = 0; i < held; i++) {
        char ident[32];
        snprintf(ident, sizeof ident, "other-%d", i);
        ik__slot_request r = {app, ident, lo, hi, IK_SLOT_RANDOM, wall_ms()};
        ik__slot_grant g;
        if (ob->ops->slot_acquire(ob, &r, &g, why, sizeof why)) {
            fprintf(stderr, "holding: %s\n", why);
            return 1;
        }
    }
    int64_t *acq = calloc((size_t)n, sizeof *acq), *ren = calloc((size_t)n, sizeof *ren),
            *rel = calloc((size_t)n, sizeof *rel);
    for (int i = 0; i < n; i++) {
        char ident[32] = "bench";
        if (fresh) snprintf(ident, sizeof ident, "bench-%d", i);
        ik__slot_request r = {app, ident, lo, hi, choice, wall_ms()};
        ik__slot_grant g;
        int64_t t0 = now_ns();
        int rc = b->ops->slot_acquire(b, &r, &g, why, sizeof why);
        int64_t t1 = now_ns();
        if (rc) {
            fprintf(stderr, "acquire: %s: %s\n", ik_errname(rc), why);
            return 1;
        }
        ik__lease_proof proof;
        int64_t written = 0;
        rc = b->ops->slot_persist(b, g.handle, wall_ms() + 1000, &proof, &written);
        int64_t t2 = now_ns();
        if (rc) {
            fprintf(stderr, "renew: %s\n", ik_errname(rc));
            return 1;
        }
        rc = b->ops->slot_release(b, g.handle, g.record_ms);
        int64_t t3 = now_ns();
        if (rc) {
            fprintf(stderr, "release: %s\n", ik_errname(rc));
            return 1;
        }
        acq[i] = t1 - t0;
        ren[i] = t2 - t1;
        rel[i] = t3 - t2;
    }
    printf("range %u-%u, %s choice, %s identity, %d held by others\n", lo, hi,
           choice == IK_SLOT_LOWEST ? "lowest" : "random", fresh ? "a new" : "the same", held);
    report("acquire", acq, n);
    report("renew", ren, n);
    report("release", rel, n);
    free(acq);
    free(ren);
    free(rel);
    ik_coord_close(other);
    ik_coord_close(c);
    return 0;
}
