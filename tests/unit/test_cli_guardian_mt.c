/* test_cli_guardian_mt.c: CMD started again and again while other threads of the
 * process come and go, as they do in `idkeeper lock` and `semaphore` (the hold
 * monitor's two threads start at the grant, just before CMD does).
 *
 * The guardian is a fork() of a process with threads: whatever lock one of them held
 * at that instant stays held in the child for good, so the child may call nothing
 * that takes one (guardian.c's async-signal-safe part). The sanitizers' runtimes
 * replace some libc calls with their own: ASan's prctl(PR_SET_NAME) takes its thread
 * registry's lock, which every thread's start and end takes too. CI's hang
 * (t_semaphore_interop_kazoo, 300 s): the guardian waited for that lock in its
 * prctl forever, CMD never ran, and idkeeper held its lease, waiting for CMD's exec.
 *
 * Here CHURNERS threads start and join threads without a pause, and name
 * themselves, while the main thread starts FRESH threads and runs CMD (/bin/true)
 * through the guardian, RUNS times. Every run must end: a watchdog thread fails the
 * test, naming the run, if one has not ended WATCHDOG_S seconds after the last (a
 * hang, not a slow machine: one run takes milliseconds). Before the fix it hung at
 * run 39, 131, 298 and 493 of four runs (docs/testing.md, "A fork beside threads"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "supervise.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RUNS 600
#define CHURNERS 4
#define FRESH 8 /* threads started just before each CMD */
#define WATCHDOG_S 120

static int churn_stop;   /* __atomic */
static long churn_count; /* __atomic: threads started and joined */

static void *nothing(void *arg)
{
    return arg;
}

static void *churn(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&churn_stop, __ATOMIC_ACQUIRE)) {
        pthread_t t;
        if (pthread_create(&t, NULL, nothing, NULL) == 0) pthread_join(t, NULL);
        for (int i = 0; i < 64; i++) /* a thread that names itself, as many do */
            pthread_setname_np(pthread_self(), i & 1 ? "churn-a" : "churn-b");
        __atomic_add_fetch(&churn_count, 1, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* The watchdog: fails the test if a run has not ended WATCHDOG_S after the last. */
typedef struct watch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    long runs; /* ended */
    int done;
    const char *mode;
    const ik_sup *sup; /* its guardian, killed on a hang: no child outlives the test */
} watch;

static void *watchdog(void *arg)
{
    watch *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        long seen = w->runs;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += WATCHDOG_S;
        while (!w->done && w->runs == seen)
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0) {
                fprintf(stderr,
                        "test_cli_guardian_mt: --contain %s: run %ld has not ended after %d s: "
                        "the guardian (or its init) is stuck between its fork and CMD's exec\n",
                        w->mode, seen + 1, WATCHDOG_S);
                if (w->sup->child > 0) kill(w->sup->child, SIGKILL);
                abort();
            }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void watch_set(watch *w, long runs, int done)
{
    pthread_mutex_lock(&w->mu);
    w->runs = runs;
    w->done = done;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* RUNS of /bin/true through the guardian under mode, CHURNERS threads beside. */
static void runs_under(ik_contain mode)
{
    ik_sup sup;
    assert_int_equal(ik__sup_init(&sup, "test"), 0);
    /* auto always finds one (the guardian alone at least): a refusal fails the test */
    assert_int_equal(ik__sup_contain(&sup, mode), 0);
    watch w = {PTHREAD_MUTEX_INITIALIZER,
               PTHREAD_COND_INITIALIZER,
               0,
               0,
               ik__contain_name(sup.tree.mode),
               &sup};
    /* after ik__sup_init: the threads inherit its blocked SIGCHLD, which its
     * signalfd reads (a thread that left it unblocked would take it) */
    __atomic_store_n(&churn_stop, 0, __ATOMIC_RELEASE);
    pthread_t ch[CHURNERS], wd;
    for (int k = 0; k < CHURNERS; k++)
        assert_int_equal(pthread_create(&ch[k], NULL, churn, NULL), 0);
    assert_int_equal(pthread_create(&wd, NULL, watchdog, &w), 0);
    char *argv[] = {"/bin/true", NULL};
    const char *env[] = {NULL};
    for (int i = 0; i < RUNS; i++) {
        /* as the grant starts the hold monitor's two threads just before CMD: their
         * start, in the runtime, runs on them while this thread forks */
        pthread_t fresh[FRESH];
        for (int k = 0; k < FRESH; k++)
            assert_int_equal(pthread_create(&fresh[k], NULL, nothing, NULL), 0);
        char why[256] = "";
        int rc =
            ik__sup_spawn(&sup, argv, env, 1000, INT64_MAX, "the test's grant", why, sizeof why);
        if (rc) fail_msg("run %d: %s", i + 1, why);
        ik_sup_event ev;
        do
            assert_int_equal(ik__sup_next(&sup, -1, &ev), 0);
        while (ev.kind != IK_SUP_EXITED);
        assert_int_equal(ev.code, 0);
        for (int k = 0; k < FRESH; k++)
            pthread_join(fresh[k], NULL);
        watch_set(&w, i + 1, 0);
    }
    __atomic_store_n(&churn_stop, 1, __ATOMIC_RELEASE);
    for (int k = 0; k < CHURNERS; k++)
        pthread_join(ch[k], NULL);
    watch_set(&w, RUNS, 1);
    pthread_join(wd, NULL);
    fprintf(stderr, "test_cli_guardian_mt: --contain %s: %d runs, %ld threads came and went\n",
            w.mode, RUNS, __atomic_load_n(&churn_count, __ATOMIC_RELAXED));
    ik__sup_fini(&sup);
}

/* auto: a PID namespace where the host allows one (the guardian and its init both
 * name themselves), else the next mode down, whose guardian does */
static void cmd_starts_while_threads_come_and_go(void **state)
{
    (void)state;
    runs_under(IK_CONTAIN_AUTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cmd_starts_while_threads_come_and_go),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
