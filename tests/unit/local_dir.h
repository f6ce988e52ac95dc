/* local_dir.h: what the unit tests on the local: backend share: a fresh store
 * directory under /tmp with its coordination URI, its removal, a cmocka fixture of
 * both with a coord open on it, and the monotonic clock in ms. Header-only
 * (static), for cmocka test programs. */
#ifndef IK_LOCAL_DIR_H
#define IK_LOCAL_DIR_H

#include "idkeeper.h"

#include <dirent.h>
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

/* The entries of directory path not starting with '.', 0 if it cannot be read: a
 * lock's or a semaphore's tickets in its queue directory. */
static inline int local_dir_count(const char *path)
{
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* A cmocka fixture: a fresh local: store and a coord open on it. */
typedef struct local_fx {
    char dir[64];
    char uri[80];
    ik_coord *c;
} local_fx;

/* The fixture's setup, its directory named PREFIX-XXXXXX: *st is the local_fx. */
static inline int local_fx_setup(void **st, const char *prefix)
{
    local_fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    local_dir_make(f->dir, f->uri, prefix);
    assert_int_equal(ik_coord_open(f->uri, NULL, &f->c, NULL, 0), 0);
    *st = f;
    return 0;
}

/* The fixture's teardown: the coord closed, the directory removed. */
static inline int local_fx_teardown(void **st)
{
    local_fx *f = *st;
    ik_coord_close(f->c);
    local_dir_remove(f->dir);
    free(f);
    return 0;
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
