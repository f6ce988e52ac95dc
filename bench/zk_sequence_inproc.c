/* zk_sequence_inproc.c: sequence IDs per second through libidkeeper itself (no HTTP),
 * for bench/zk_sequence.sh: the capacity of the group commit on a zk:// tag store
 * without the daemon's and the load client's share of the CPU.
 *
 *   zk_sequence_inproc URI TAG THREADS SECONDS
 *
 * THREADS threads call ik_sequence_next_wait(TAG, 1) back to back for SECONDS on one
 * ik_sequence (one committer), as THREADS HTTP clients would. Prints
 * "ids_per_s N p50_ms A p99_ms B errors E". The tag must exist (sequence kind).
 */
#include "idkeeper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static ik_sequence *seq;
static const char *tag;
static atomic_int stop;
static atomic_long errors;

typedef struct {
    double *lat;
    size_t n, cap;
} worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *run(void *arg)
{
    worker *w = arg;
    while (!atomic_load(&stop)) {
        int64_t id;
        double t0 = now_s();
        if (ik_sequence_next_wait(seq, tag, 1, &id) != IK_OK) {
            atomic_fetch_add(&errors, 1);
            continue;
        }
        if (w->n == w->cap) {
            w->cap = w->cap ? w->cap * 2 : 4096;
            w->lat = realloc(w->lat, w->cap * sizeof *w->lat);
            if (!w->lat) abort();
        }
        w->lat[w->n++] = now_s() - t0;
    }
    return NULL;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: zk_sequence_inproc URI TAG THREADS SECONDS\n");
        return 2;
    }
    tag = argv[2];
    int nt = atoi(argv[3]);
    double secs = atof(argv[4]);
    ik_coord_options o;
    ik_coord_options_init(&o);
    ik_coord *c;
    char why[256];
    if (ik_coord_open(argv[1], &o, &c, why, sizeof why) != IK_OK) {
        fprintf(stderr, "zk_sequence_inproc: %s\n", why);
        return 1;
    }
    if (ik_sequence_create(c, NULL, &seq) != IK_OK) return 1;
    pthread_t *th = calloc((size_t)nt, sizeof *th);
    worker *ws = calloc((size_t)nt, sizeof *ws);
    double t0 = now_s();
    for (int i = 0; i < nt; i++)
        pthread_create(&th[i], NULL, run, &ws[i]);
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    atomic_store(&stop, 1);
    double t1 = now_s();
    size_t total = 0;
    for (int i = 0; i < nt; i++) {
        pthread_join(th[i], NULL);
        total += ws[i].n;
    }
    double *all = malloc((total ? total : 1) * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < nt; i++)
        for (size_t j = 0; j < ws[i].n; j++)
            all[k++] = ws[i].lat[j];
    qsort(all, total, sizeof *all, cmp);
    printf("ids_per_s %.0f p50_ms %.3f p99_ms %.3f errors %ld\n", (double)total / (t1 - t0),
           total ? all[total / 2] * 1e3 : 0, total ? all[(size_t)((double)total * 0.99)] * 1e3 : 0,
           atomic_load(&errors));
    ik_sequence_destroy(seq);
    ik_coord_close(c);
    return 0;
}
