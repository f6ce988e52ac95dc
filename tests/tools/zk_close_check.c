/* zk_close_check: an LD_PRELOAD shim that checks zk_session.c's invariant ZS5 in a
 * real process: a handle whose session is dead is closed on its own completion
 * thread, never from another one (libzookeeper_mt 3.8's zookeeper_close races with
 * a completion thread that finishes at that moment, and frees the handle under the
 * closer). Plain builds only (an ASan binary wants its runtime first).
 *
 * It wraps zookeeper_init2, so as to learn each handle's completion thread from
 * the first session event its watcher gets, and zookeeper_close, which writes one
 * line per close of a dead handle to $ZK_CLOSE_CHECK_LOG:
 *   dead-close own-thread       closed on its completion thread (ZS5 holds)
 *   dead-close OTHER-THREAD     closed from another thread (ZS5 broken)
 * A test tool, never installed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <zookeeper/zookeeper.h>

#define MAX_HANDLES 1024

/* Every handle made, newest last (an address freed and reused is a new entry). */
static struct {
    zhandle_t *zh;
    watcher_fn fn;
    pthread_t thread;
    int known;   /* thread is its completion thread */
    int closing; /* closed once: a second close is the client's own, from api_epilog */
} handles[MAX_HANDLES];
static int n_handles;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* The newest entry of zh, or -1. Under mu. */
static int find(const zhandle_t *zh)
{
    for (int i = n_handles - 1; i >= 0; i--)
        if (handles[i].zh == zh) return i;
    return -1;
}

static void note(const char *line)
{
    const char *path = getenv("ZK_CLOSE_CHECK_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (!f) return;
    fprintf(f, "%s\n", line);
    fclose(f);
}

/* Every handle's watcher: records the thread that runs it, then calls the real one. */
static void trampoline(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    watcher_fn fn = NULL;
    pthread_mutex_lock(&mu);
    int i = find(zh);
    if (i >= 0) {
        if (!handles[i].known) {
            handles[i].thread = pthread_self();
            handles[i].known = 1;
        }
        fn = handles[i].fn;
    }
    pthread_mutex_unlock(&mu);
    if (fn) fn(zh, type, state, path, ctx);
}

zhandle_t *zookeeper_init2(const char *host, watcher_fn fn, int recv_timeout,
                           const clientid_t *clientid, void *context, int flags,
                           log_callback_fn log_callback)
{
    typedef zhandle_t *(*init2_fn)(const char *, watcher_fn, int, const clientid_t *, void *, int,
                                   log_callback_fn);
    init2_fn real = (init2_fn)dlsym(RTLD_NEXT, "zookeeper_init2");
    if (!real) abort();
    /* the watcher may run before init returns: register under mu, then fill zh */
    pthread_mutex_lock(&mu);
    zhandle_t *zh =
        real(host, fn ? trampoline : NULL, recv_timeout, clientid, context, flags, log_callback);
    if (zh && n_handles < MAX_HANDLES) {
        handles[n_handles].zh = zh;
        handles[n_handles].fn = fn;
        n_handles++;
    }
    pthread_mutex_unlock(&mu);
    return zh;
}

int zookeeper_close(zhandle_t *zh)
{
    typedef int (*close_fn)(zhandle_t *);
    close_fn real = (close_fn)dlsym(RTLD_NEXT, "zookeeper_close");
    if (!real) abort();
    pthread_mutex_lock(&mu);
    int i = zh ? find(zh) : -1;
    int first = i >= 0 && !handles[i].closing;
    int own = i >= 0 && handles[i].known && pthread_equal(handles[i].thread, pthread_self());
    if (i >= 0) handles[i].closing = 1;
    pthread_mutex_unlock(&mu);
    int st = zh && first ? zoo_state(zh) : 0;
    if (st == ZOO_EXPIRED_SESSION_STATE || st == ZOO_AUTH_FAILED_STATE)
        note(own ? "dead-close own-thread" : "dead-close OTHER-THREAD");
    return real(zh);
}
