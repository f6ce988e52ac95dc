/* zk_seqnode.c: the peer of bench/zk_sequence.sh, the ID generator of the ZooKeeper
 * recipe articles: one PERSISTENT_SEQUENTIAL znode created per ID, the ID being the
 * sequence number ZooKeeper appends to its name. C client (libzookeeper_mt), W
 * asynchronous creates always in flight on one session, for S seconds.
 *
 *   zk_seqnode HOST:PORT PARENT W SECONDS
 *
 * Creates PARENT if need be, then prints "ids_per_s N p50_ms A p99_ms B" (latency of
 * each create, from its send to its completion). Exit 1 on any error.
 */
#include <zookeeper/zookeeper.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static zhandle_t *zh;
static char prefix[512];
static int connected, stopping, inflight, failed;
static uint64_t done;
static double *lat;
static size_t nlat, caplat;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void watcher(zhandle_t *z, int type, int state, const char *path, void *ctx)
{
    (void)z, (void)path, (void)ctx;
    if (type != ZOO_SESSION_EVENT) return;
    pthread_mutex_lock(&mu);
    connected = state == ZOO_CONNECTED_STATE;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}

static void send_one(void);

static void on_created(int rc, const char *name, const void *data)
{
    (void)name;
    double *sent = (double *)data;
    double l = now_s() - *sent;
    free(sent);
    pthread_mutex_lock(&mu);
    inflight--;
    if (rc != ZOK) {
        if (!failed) fprintf(stderr, "zk_seqnode: create: %s\n", zerror(rc));
        failed = 1;
    } else if (!stopping) {
        done++;
        if (nlat == caplat) {
            caplat = caplat ? caplat * 2 : 65536;
            lat = realloc(lat, caplat * sizeof *lat);
        }
        if (lat) lat[nlat++] = l;
    }
    int more = !stopping && !failed;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    if (more) send_one();
}

static void send_one(void)
{
    double *sent = malloc(sizeof *sent);
    *sent = now_s();
    pthread_mutex_lock(&mu);
    inflight++;
    pthread_mutex_unlock(&mu);
    int rc = zoo_acreate(zh, prefix, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT_SEQUENTIAL,
                         on_created, sent);
    if (rc != ZOK) {
        free(sent);
        pthread_mutex_lock(&mu);
        inflight--;
        failed = 1;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
        fprintf(stderr, "zk_seqnode: zoo_acreate: %s\n", zerror(rc));
    }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: zk_seqnode HOST:PORT PARENT W SECONDS\n");
        return 2;
    }
    const char *parent = argv[2];
    int w = atoi(argv[3]);
    double secs = atof(argv[4]);
    zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
    zh = zookeeper_init(argv[1], watcher, 10000, NULL, NULL, 0);
    if (!zh) return 1;
    pthread_mutex_lock(&mu);
    while (!connected)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    /* the parent and its ancestors */
    char p[512];
    for (const char *s = strchr(parent + 1, '/');; s = strchr(s + 1, '/')) {
        size_t n = s ? (size_t)(s - parent) : strlen(parent);
        snprintf(p, sizeof p, "%.*s", (int)n, parent);
        int rc = zoo_create(zh, p, NULL, -1, &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, NULL, 0);
        if (rc != ZOK && rc != ZNODEEXISTS) {
            fprintf(stderr, "zk_seqnode: create %s: %s\n", p, zerror(rc));
            return 1;
        }
        if (!s) break;
    }
    snprintf(prefix, sizeof prefix, "%s/id-", parent);
    double t0 = now_s();
    for (int i = 0; i < w; i++)
        send_one();
    struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&mu);
    stopping = 1;
    double t1 = now_s();
    uint64_t n = done;
    while (inflight > 0)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    zookeeper_close(zh);
    if (failed || nlat == 0) return 1;
    qsort(lat, nlat, sizeof *lat, cmp);
    printf("ids_per_s %.0f p50_ms %.3f p99_ms %.3f\n", (double)n / (t1 - t0), lat[nlat / 2] * 1e3,
           lat[(size_t)((double)nlat * 0.99)] * 1e3);
    free(lat);
    return 0;
}
