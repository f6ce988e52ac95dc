/* local_dir.h: what the unit tests on the local: backend share: a fresh store
 * directory under /tmp with its coordination URI, its removal, and the monotonic
 * clock in ms. Header-only (static), for cmocka test programs. */
#ifndef IK_LOCAL_DIR_H
#define IK_LOCAL_DIR_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Makes a new directory /tmp/PREFIX-XXXXXX into dir (64 bytes) and writes
 * "local:DIR" into uri (80 bytes). Fails the test if it cannot. */
static void local_dir_make(char *dir, char *uri, const char *prefix)
{
    snprintf(dir, 64, "/tmp/%s-XXXXXX", prefix);
    assert_non_null(mkdtemp(dir));
    snprintf(uri, 80, "local:%s", dir);
}

/* Removes dir and everything in it. Fails the test if it cannot. */
static void local_dir_remove(const char *dir)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

static inline int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

#endif
