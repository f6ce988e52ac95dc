/* ids_waiter.c: a blocking wait on a callback API (IK_PENDING + ik_ids_cb). */
#include "internal.h"

#include <string.h>

void ik__ids_waiter_init(ik__ids_waiter *w, int64_t *ids)
{
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->done = 0;
    w->status = 0;
    w->ids = ids;
}

void ik__ids_waiter_cb(void *ctx, int status, const int64_t *ids, size_t n)
{
    ik__ids_waiter *w = ctx;
    pthread_mutex_lock(&w->mu);
    if (status == 0) memcpy(w->ids, ids, n * sizeof *ids);
    w->status = status;
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int ik__ids_waiter_finish(ik__ids_waiter *w, int rc)
{
    if (rc == IK_PENDING) {
        pthread_mutex_lock(&w->mu);
        while (!w->done)
            pthread_cond_wait(&w->cv, &w->mu);
        rc = w->status;
        pthread_mutex_unlock(&w->mu);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    return rc;
}
