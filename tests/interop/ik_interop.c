/* ik_interop.c: the C side of the interop tests and benchmarks (tests/interop/,
 * tests/integration/t_lock_interop_*.sh, bench/lock_zk.sh), written against
 * include/idkeeper.h only. Built at test time by tests/interop/build.sh.
 *
 *   ik_interop now
 *       prints CLOCK_MONOTONIC in ns (the clock every helper records on)
 *   ik_interop lock URI PATH ROUNDS OUT HOLD_US START_FILE
 *       five unrecorded rounds, creates OUT (the caller's sign that it is ready),
 *       waits for START_FILE to exist, then ROUNDS times: acquire, record the
 *       enter time, hold HOLD_US, record the exit time, release. OUT gets
 *       "C ENTER_NS EXIT_NS FENCE" a line.
 *   ik_interop contend URI PATH SECONDS OUT HOLD_US TIMEOUT_MS START_FILE
 *       creates OUT, waits for START_FILE, then for SECONDS, or until START_FILE
 *       is gone (the caller has seen enough grants): acquire (waiting at
 *       most TIMEOUT_MS, -1: forever), record the enter time, hold HOLD_US, record
 *       the exit time and the grant's state then, release. OUT gets
 *       "TAG ENTER_NS EXIT_NS FENCE STATE" a line (TAG: $IK_INTEROP_TAG, else C);
 *       a failed acquire is counted, not fatal (a timeout is the point of a short
 *       TIMEOUT_MS, and ZooKeeper may be down). Prints "held N gave_up N failed N".
 *   ik_interop elect URI PATH ID OUT
 *       campaigns; OUT gets "lead NS" when it leads and "unlead NS" when it stops
 *       (resign, or a loss). Commands on stdin, one a line: resign, campaign, quit.
 *   ik_interop rw-try URI PATH read|write
 *       tries the read or write half of an ik_rwlock once: prints "got" or "busy"
 *   ik_interop rw-hold URI PATH read|write READY STOP
 *       takes that half, creates READY, holds until STOP exists; polls the
 *       grant's state meanwhile (every 2 ms) and prints each change on stdout as
 *       "STATE NS WHY", where NS is when it saw it; a lost grant is "LOST NS WHY";
 *       a poll more than 500 ms after the last one (the process did not run) is
 *       "STALL FROM_NS TO_NS ..."
 *   ik_interop leader URI PATH
 *       prints who leads at PATH (ik_election_leader), or exits 1
 *   ik_interop bench-lock URI PATH CLIENTS SECONDS
 *       CLIENTS threads, each with its own coord (session), acquire+release as fast
 *       as they can for SECONDS; prints "cycles_per_s N cycles TOTAL handover_us
 *       MEDIAN P90" (TOTAL: every cycle, the first second's too; the hand-over:
 *       from the end of a hold, its release next, to the start of the next hold,
 *       over the measured window)
 *   ik_interop bench-handover URI PATH N
 *       two candidates; N times: the leader resigns, time until the other leads
 *       (its callback); prints "handover_ms median p90".
 *   ik_interop bench-sema URI PATH MAX CLIENTS SECONDS
 *       CLIENTS threads, each with its own coord (session), acquire and release a
 *       lease of the semaphore PATH (ik_semaphore, MAX leases) as fast as they can;
 *       after a second of warm-up prints "cycles_per_s N cycles TOTAL cycle_us
 *       MEDIAN P90", a cycle being one acquire and its release (as
 *       CuratorHelper.java's bench-sema measures Curator's)
 */
#include "idkeeper.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void spin_us(int64_t us)
{
    if (us <= 0) return;
    int64_t end = now_ns() + us * 1000;
    if (us > 200) {
        struct timespec ts = {0, (long)(us - 100) * 1000};
        nanosleep(&ts, NULL);
    }
    while (now_ns() < end) {
    }
}

static ik_coord *open_coord(const char *uri)
{
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.zk_session_timeout_ms = 4000;
    const char *t = getenv("IK_INTEROP_SESSION_MS");
    if (t) o.zk_session_timeout_ms = atoi(t);
    o.password = getenv("IDKEEPER_PASSWORD");      /* SQL and Redis stores (bench/sql_lock.sh) */
    const char *ttl = getenv("IK_INTEROP_TTL_MS"); /* SQL: the lock sessions' idle limit */
    if (ttl) o.lease_ttl_ms = atoi(ttl);
    ik_coord *c = NULL;
    char why[256] = "";
    int rc = ik_coord_open(uri, &o, &c, why, sizeof why);
    if (rc) {
        fprintf(stderr, "ik_interop: cannot open %s: %s\n", uri, why[0] ? why : ik_strerror(rc));
        exit(1);
    }
    return c;
}

static int cmd_lock(char **a)
{
    const char *uri = a[0], *path = a[1], *out = a[3], *start = a[5];
    long rounds = atol(a[2]);
    int64_t hold = atoll(a[4]);
    ik_coord *c = open_coord(uri);
    ik_lock *lk;
    if (ik_lock_create(c, path, NULL, &lk)) return 1;
    /* Unrecorded rounds before OUT exists (the caller's sign that we are ready),
     * as the Java and Python helpers do. */
    for (int i = 0; i < 5; i++) {
        int64_t fence;
        if (ik_lock_acquire(lk, -1, &fence) || ik_lock_release(lk)) return 1;
    }
    FILE *f = fopen(out, "w");
    if (!f) return 1;
    while (access(start, F_OK) != 0)
        usleep(1000);
    for (long i = 0; i < rounds; i++) {
        int64_t fence = 0;
        int rc = ik_lock_acquire(lk, -1, &fence);
        if (rc) {
            fprintf(stderr, "ik_interop: acquire: %s\n", ik_strerror(rc));
            return 1;
        }
        int64_t enter = now_ns();
        spin_us(hold);
        int64_t exit_ = now_ns();
        ik_hold_info hi;
        ik_lock_get_info(lk, &hi);
        if (hi.state != IK_HOLD_HELD) {
            fprintf(stderr, "ik_interop: lock %s at the end of round %ld: %s\n",
                    ik_hold_state_name(hi.state), i, hi.why);
            ik_lock_destroy(lk);
            ik_coord_close(c);
            return 1;
        }
        rc = ik_lock_release(lk);
        if (rc) {
            fprintf(stderr, "ik_interop: release: %s\n", ik_strerror(rc));
            return 1;
        }
        fprintf(f, "C %" PRId64 " %" PRId64 " %" PRId64 "\n", enter, exit_, fence);
    }
    fclose(f);
    ik_lock_destroy(lk);
    ik_coord_close(c);
    return 0;
}

static int cmd_contend(char **a)
{
    const char *uri = a[0], *path = a[1], *out = a[3], *start = a[6];
    double secs = atof(a[2]);
    int64_t hold = atoll(a[4]), timeout = atoll(a[5]);
    const char *tag = getenv("IK_INTEROP_TAG");
    ik_coord *c = open_coord(uri);
    ik_lock *lk;
    if (ik_lock_create(c, path, NULL, &lk)) return 1;
    FILE *f = fopen(out, "w");
    if (!f) return 1;
    while (access(start, F_OK) != 0)
        usleep(1000);
    long held = 0, gave_up = 0, failed = 0;
    int64_t until = now_ns() + (int64_t)(secs * 1e9);
    while (now_ns() < until && access(start, F_OK) == 0) {
        int64_t fence = 0;
        int rc = ik_lock_acquire(lk, timeout, &fence);
        if (rc == IK_ETIMEDOUT || rc == IK_EBUSY) {
            gave_up++;
            continue;
        }
        if (rc) {
            failed++;
            usleep(10000);
            continue;
        }
        int64_t enter = now_ns();
        spin_us(hold);
        int64_t exit_ = now_ns();
        ik_hold_info hi;
        ik_lock_get_info(lk, &hi);
        ik_lock_release(lk);
        held++;
        fprintf(f, "%s %" PRId64 " %" PRId64 " %" PRId64 " %s\n", tag ? tag : "C", enter, exit_,
                fence, ik_hold_state_name(hi.state));
        fflush(f);
    }
    fclose(f);
    printf("held %ld gave_up %ld failed %ld\n", held, gave_up, failed);
    ik_lock_destroy(lk);
    ik_coord_close(c);
    return 0;
}

/* ---- elect ---------------------------------------------------------------- */
static FILE *elect_out;
static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;
static int leading;

static void record(const char *what)
{
    pthread_mutex_lock(&out_mu);
    fprintf(elect_out, "%s %" PRId64 "\n", what, now_ns());
    fflush(elect_out);
    pthread_mutex_unlock(&out_mu);
}

static void on_elect(void *ctx, ik_hold_state s, const char *why)
{
    (void)ctx;
    pthread_mutex_lock(&out_mu);
    int was = leading;
    leading = s == IK_HOLD_HELD;
    pthread_mutex_unlock(&out_mu);
    if (leading && !was) record("lead");
    if (!leading && was) record("unlead");
    if (s == IK_HOLD_LOST) fprintf(stderr, "ik_interop: lost leadership: %s\n", why);
}

static int cmd_elect(char **a)
{
    ik_coord *c = open_coord(a[0]);
    elect_out = fopen(a[3], "a");
    if (!elect_out) return 1;
    ik_election_options o;
    ik_election_options_init(&o);
    o.on_change = on_elect;
    ik_election *e;
    if (ik_election_create(c, a[1], a[2], &o, &e)) return 1;
    ik_election_campaign(e);
    char line[64];
    while (fgets(line, sizeof line, stdin)) {
        if (!strncmp(line, "resign", 6)) {
            pthread_mutex_lock(&out_mu);
            int was = leading;
            leading = 0;
            pthread_mutex_unlock(&out_mu);
            if (was) record("unlead"); /* before the node goes: no overlap by design */
            ik_election_resign(e);
        } else if (!strncmp(line, "campaign", 8)) {
            ik_election_campaign(e);
        } else if (!strncmp(line, "quit", 4)) {
            break;
        }
    }
    pthread_mutex_lock(&out_mu);
    int was = leading;
    leading = 0;
    pthread_mutex_unlock(&out_mu);
    if (was) record("unlead");
    ik_election_destroy(e);
    ik_coord_close(c);
    return 0;
}

/* ---- benchmarks ----------------------------------------------------------- */
static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return a < b ? -1 : a > b;
}

#define BENCH_MAX 200000 /* holds recorded per client */
typedef struct bench_arg {
    const char *uri, *path;
    int64_t until;
    long cycles;
    int64_t *iv; /* enter, exit of each hold: 2 * BENCH_MAX */
    long n;
} bench_arg;

static void *bench_thread(void *p)
{
    bench_arg *b = p;
    ik_coord *c = open_coord(b->uri);
    ik_lock *lk;
    if (ik_lock_create(c, b->path, NULL, &lk)) exit(1);
    while (now_ns() < b->until) {
        if (ik_lock_acquire(lk, -1, NULL)) exit(1);
        int64_t enter = now_ns();
        if (b->n < BENCH_MAX) {
            b->iv[2 * b->n] = enter;
            b->iv[2 * b->n + 1] = now_ns(); /* the release's delete is sent next */
            b->n++;
        }
        if (ik_lock_release(lk)) exit(1);
        __atomic_fetch_add(&b->cycles, 1, __ATOMIC_RELAXED);
    }
    ik_lock_destroy(lk);
    ik_coord_close(c);
    return NULL;
}

static int cmd_bench_lock(char **a)
{
    int n = atoi(a[2]);
    double secs = atof(a[3]);
    bench_arg *b = calloc((size_t)n, sizeof *b);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int64_t until = now_ns() + (int64_t)(secs * 1e9) + 1000000000; /* +1 s to connect */
    for (int i = 0; i < n; i++) {
        b[i] = (bench_arg){a[0], a[1], until, 0, malloc(2 * BENCH_MAX * sizeof(int64_t)), 0};
        if (!b[i].iv) return 1;
        pthread_create(&t[i], NULL, bench_thread, &b[i]);
    }
    /* count only the measured window: a second for the sessions to open first */
    usleep(1000000);
    long c0 = 0;
    for (int i = 0; i < n; i++)
        c0 += __atomic_load_n(&b[i].cycles, __ATOMIC_RELAXED);
    int64_t t0 = now_ns();
    long c1 = 0;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < n; i++)
        c1 += b[i].cycles;
    double el = (double)(now_ns() - t0) / 1e9;
    /* the hand-over: from one hold's end (its release's delete sent next) to the
     * next hold's start, whoever holds next, over the measured window */
    long m = 0, k = 0;
    for (int i = 0; i < n; i++)
        m += b[i].n;
    int64_t *all = malloc(2 * (size_t)(m + 1) * sizeof(int64_t)),
            *gap = malloc((size_t)(m + 1) * sizeof(int64_t));
    if (!all || !gap) return 1;
    m = 0;
    for (int i = 0; i < n; i++)
        for (long j = 0; j < b[i].n; j++)
            if (b[i].iv[2 * j] >= t0) {
                all[2 * m] = b[i].iv[2 * j];
                all[2 * m + 1] = b[i].iv[2 * j + 1];
                m++;
            }
    qsort(all, (size_t)m, 2 * sizeof(int64_t), cmp_i64);
    for (long j = 1; j < m; j++)
        gap[k++] = all[2 * j] - all[2 * j - 1];
    qsort(gap, (size_t)k, sizeof(int64_t), cmp_i64);
    printf("cycles_per_s %.0f cycles %ld handover_us %.0f %.0f\n", (double)(c1 - c0) / el, c1,
           k ? (double)gap[k / 2] / 1e3 : 0.0, k ? (double)gap[k * 9 / 10] / 1e3 : 0.0);
    free(all);
    free(gap);
    for (int i = 0; i < n; i++)
        free(b[i].iv);
    free(b);
    free(t);
    return 0;
}

static pthread_mutex_t ho_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ho_cv = PTHREAD_COND_INITIALIZER;
static int64_t ho_lead_at[2];

static void on_ho(void *ctx, ik_hold_state s, const char *why)
{
    (void)why;
    int i = (int)(intptr_t)ctx;
    if (s != IK_HOLD_HELD) return;
    pthread_mutex_lock(&ho_mu);
    ho_lead_at[i] = now_ns();
    pthread_cond_broadcast(&ho_cv);
    pthread_mutex_unlock(&ho_mu);
}

static int cmd_bench_handover(char **a)
{
    int n = atoi(a[2]);
    ik_coord *c[2] = {open_coord(a[0]), open_coord(a[0])};
    ik_election *e[2];
    for (int i = 0; i < 2; i++) {
        ik_election_options o;
        ik_election_options_init(&o);
        o.on_change = on_ho;
        o.ctx = (void *)(intptr_t)i;
        char id[16];
        snprintf(id, sizeof id, "c%d", i);
        if (ik_election_create(c[i], a[1], id, &o, &e[i])) return 1;
    }
    ik_election_campaign(e[0]);
    ik_election_await(e[0], -1);
    ik_election_campaign(e[1]);
    usleep(200000);
    int64_t *ms = calloc((size_t)n, sizeof *ms);
    int leader = 0;
    for (int k = 0; k < n; k++) {
        int other = 1 - leader;
        pthread_mutex_lock(&ho_mu);
        ho_lead_at[other] = 0;
        pthread_mutex_unlock(&ho_mu);
        int64_t t0 = now_ns();
        ik_election_resign(e[leader]);
        pthread_mutex_lock(&ho_mu);
        while (!ho_lead_at[other])
            pthread_cond_wait(&ho_cv, &ho_mu);
        ms[k] = ho_lead_at[other] - t0;
        pthread_mutex_unlock(&ho_mu);
        ik_election_campaign(e[leader]); /* queue behind the new leader */
        usleep(50000);
        leader = other;
    }
    qsort(ms, (size_t)n, sizeof *ms, cmp_i64);
    printf("handover_ms %.3f %.3f\n", (double)ms[n / 2] / 1e6, (double)ms[n * 9 / 10] / 1e6);
    free(ms);
    for (int i = 0; i < 2; i++) {
        ik_election_destroy(e[i]);
        ik_coord_close(c[i]);
    }
    return 0;
}

static int cmd_rw(char **a, int hold)
{
    ik_coord *c = open_coord(a[0]);
    ik_rwlock *rw;
    if (ik_rwlock_create(c, a[1], NULL, &rw)) return 1;
    ik_lock *lk = strcmp(a[2], "read") == 0 ? ik_rwlock_read(rw) : ik_rwlock_write(rw);
    int rc = ik_lock_acquire(lk, hold ? -1 : 0, NULL);
    if (!hold) {
        printf("%s\n", rc == 0 ? "got" : rc == IK_EBUSY ? "busy" : ik_strerror(rc));
    } else if (rc == 0) {
        /* The grant's state is polled through the hold: a session that expires (a
         * starved machine) is LOST, not a double grant, and the caller must be able
         * to tell the two apart (t_rwlock_interop counts only overlaps with a holder
         * that was not LOST then). */
        ik_hold_state was = IK_HOLD_HELD;
        FILE *f = fopen(a[3], "w");
        if (f) fclose(f);
        int64_t polled = now_ns();
        while (access(a[4], F_OK) != 0) {
            /* a process that did not run for a while (SIGSTOP, a starved machine)
             * can miss its LOST notice: said so, for whoever reads a failure */
            int64_t t = now_ns();
            if (t - polled > 500 * 1000000LL) {
                printf("STALL %" PRId64 " %" PRId64 " not run for %" PRId64 " ms\n", polled, t,
                       (t - polled) / 1000000);
                fflush(stdout);
            }
            polled = t;
            ik_hold_state s = ik_lock_state(lk);
            if (s != was) {
                int64_t at = now_ns();
                ik_hold_info hi;
                ik_lock_get_info(lk, &hi);
                printf("%s %" PRId64 " %s\n", s == IK_HOLD_LOST ? "LOST" : ik_hold_state_name(s),
                       at, hi.why);
                fflush(stdout);
                was = s;
            }
            usleep(2000);
        }
    }
    ik_rwlock_destroy(rw);
    ik_coord_close(c);
    return rc == 0 || rc == IK_EBUSY ? 0 : 1;
}

typedef struct sema_arg {
    const char *uri, *path;
    int64_t max, start, until;
    long cycles;
    int64_t *took; /* each measured cycle's time: BENCH_MAX */
    long n;
} sema_arg;

static void *sema_thread(void *p)
{
    sema_arg *b = p;
    ik_coord *c = open_coord(b->uri);
    ik_semaphore_options o;
    ik_semaphore_options_init(&o);
    o.max = b->max;
    ik_semaphore *s;
    if (ik_semaphore_create(c, b->path, &o, &s)) exit(1);
    while (now_ns() < b->until) {
        int64_t t0 = now_ns();
        if (ik_semaphore_acquire(s, -1, NULL)) exit(1);
        if (ik_semaphore_release(s)) exit(1);
        int64_t t1 = now_ns();
        b->cycles++;
        if (t0 >= b->start && b->n < BENCH_MAX) b->took[b->n++] = t1 - t0;
    }
    ik_semaphore_destroy(s);
    ik_coord_close(c);
    return NULL;
}

static int cmd_bench_sema(char **a)
{
    int n = atoi(a[3]);
    double secs = atof(a[4]);
    sema_arg *b = calloc((size_t)n, sizeof *b);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    int64_t start = now_ns() + 1000000000; /* a second to connect and warm up */
    int64_t until = start + (int64_t)(secs * 1e9);
    for (int i = 0; i < n; i++) {
        b[i] = (sema_arg){
            a[0], a[1], atoll(a[2]), start, until, 0, malloc(BENCH_MAX * sizeof(int64_t)), 0};
        if (!b[i].took) return 1;
        pthread_create(&t[i], NULL, sema_thread, &b[i]);
    }
    long cycles = 0, m = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        cycles += b[i].cycles;
        m += b[i].n;
    }
    int64_t *all = malloc((size_t)(m + 1) * sizeof(int64_t));
    if (!all) return 1;
    m = 0;
    for (int i = 0; i < n; i++)
        for (long j = 0; j < b[i].n; j++)
            all[m++] = b[i].took[j];
    qsort(all, (size_t)m, sizeof(int64_t), cmp_i64);
    printf("cycles_per_s %.0f cycles %ld cycle_us %.0f %.0f\n", (double)m / secs, cycles,
           m ? (double)all[m / 2] / 1e3 : 0.0, m ? (double)all[m * 9 / 10] / 1e3 : 0.0);
    free(all);
    for (int i = 0; i < n; i++)
        free(b[i].took);
    free(b);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "now")) {
        printf("%" PRId64 "\n", now_ns());
        return 0;
    }
    if (argc == 8 && !strcmp(argv[1], "lock")) return cmd_lock(argv + 2);
    if (argc == 5 && !strcmp(argv[1], "rw-try")) return cmd_rw(argv + 2, 0);
    if (argc == 7 && !strcmp(argv[1], "rw-hold")) return cmd_rw(argv + 2, 1);
    if (argc == 4 && !strcmp(argv[1], "leader")) {
        ik_coord *c = open_coord(argv[2]);
        char *id = NULL;
        int rc = ik_election_leader(c, argv[3], &id);
        if (rc == 0)
            printf("%s\n", id);
        else
            fprintf(stderr, "ik_interop: leader: %s\n", ik_strerror(rc));
        ik_free(id);
        ik_coord_close(c);
        return rc ? 1 : 0;
    }
    if (argc == 6 && !strcmp(argv[1], "elect")) return cmd_elect(argv + 2);
    if (argc == 6 && !strcmp(argv[1], "bench-lock")) return cmd_bench_lock(argv + 2);
    if (argc == 9 && !strcmp(argv[1], "contend")) return cmd_contend(argv + 2);
    if (argc == 5 && !strcmp(argv[1], "bench-handover")) return cmd_bench_handover(argv + 2);
    if (argc == 7 && !strcmp(argv[1], "bench-sema")) return cmd_bench_sema(argv + 2);
    fprintf(stderr, "usage: see the top of tests/interop/ik_interop.c\n");
    return 2;
}
