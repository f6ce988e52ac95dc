/* clock.c: the system clock source, and the library's own time reads.
 *
 * Elapsed time is CLOCK_BOOTTIME, not CLOCK_MONOTONIC: the library's deadlines
 * stand for time the rest of the world sees passing (a lease valid for a safe part
 * of the ZooKeeper session timeout after its last proof, the hold monitor's LOST
 * after 2/3 of it, a call's budget), and ZooKeeper's session clock runs on while
 * this host is suspended; CLOCK_MONOTONIC stops then, CLOCK_BOOTTIME does not.
 * Timed waits on condition variables stay on CLOCK_MONOTONIC (pthread accepts no
 * other) but are always relative chunks whose end is checked against BOOTTIME
 * afterwards: a suspend can only lengthen one wait, never stretch a deadline. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int64_t ts_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t sys_wall_ns(void *ctx)
{
    (void)ctx;
    return ts_ns(CLOCK_REALTIME);
}

static int64_t sys_mono_ns(void *ctx)
{
    (void)ctx;
    return ts_ns(CLOCK_BOOTTIME);
}

static void sys_sleep_ns(void *ctx, int64_t ns)
{
    (void)ctx;
    if (ns <= 0) return;
    struct timespec ts = {.tv_sec = ns / 1000000000, .tv_nsec = ns % 1000000000};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static const ik_clock system_clock = {sys_wall_ns, sys_mono_ns, sys_sleep_ns, NULL};

const ik_clock *ik_clock_system(void)
{
    return &system_clock;
}

int64_t ik__mono_ns(void)
{
    return ts_ns(CLOCK_BOOTTIME);
}

int64_t ik__mono_ms(void)
{
    return ik__mono_ns() / 1000000;
}

int64_t ik__wall_ms(void)
{
    return ts_ns(CLOCK_REALTIME) / 1000000;
}

void ik__deadline_ts(struct timespec *ts, int64_t ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (ms % 1000) * 1000000;
    if (ts->tv_nsec >= 1000000000) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000;
    }
}

void ik__cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

void ik__test_hold(const char *path)
{
    if (!path || !*path) return;
    FILE *f = fopen(path, "r+");
    if (!f) return; /* not armed */
    int empty = fgetc(f) == EOF;
    rewind(f); /* a read, then a write: a positioning call between */
    if (empty) fputs("held\n", f);
    fclose(f);
    if (!empty) return; /* another write holds it */
    int64_t until = ik__mono_ns() + INT64_C(60) * 1000000000;
    struct timespec ts = {0, 10 * 1000000};
    while (access(path, F_OK) == 0 && ik__mono_ns() < until)
        nanosleep(&ts, NULL);
}
