/* http_pool.h: the HTTP routes' calls to the store in libuv's thread pool (the tags,
 * the app's slots, the status page's both): a loop never waits for the store, so a
 * route that must ask it hands one such call to the pool and leaves a pending answer
 * (pend.h) that comes back on the loop when the call is done. */
#ifndef IK_HTTP_POOL_H
#define IK_HTTP_POOL_H

#include "json.h"
#include "pend.h"
#include "worker.h"

#define IK_POOL_CALLS_MAX 32 /* calls in the thread pool at once, per loop */

/* A route's call to the store in libuv's thread pool, its inputs and results: the
 * tag routes', GET /v1/workers' (the app's slots) and the status page's (both). */
typedef struct ik__pool_call {
    uv_work_t work;
    ik__tag_body body; /* create: the request */
    ik_tag_info info;  /* create: the tag read back (or the one in the way); get */
    int have_info;
    ik_tag_info *list; /* list, page (ik_free) */
    size_t nlist;
    int list_rc;         /* page: the tags list's result */
    ik_slot_info *slots; /* workers, page (ik_free) */
    size_t nslots;
    int slots_rc; /* page: the slots list's result */
    /* semaphores, page: the leases of each semaphore shown (ik_free), its stored max,
     * and the listing's result, in the order of the server's config */
    ik_semaphore_holder *sema[IK_SERVER_SEMAPHORES_MAX];
    size_t nsema[IK_SERVER_SEMAPHORES_MAX];
    int64_t sema_max[IK_SERVER_SEMAPHORES_MAX];
    int sema_rc[IK_SERVER_SEMAPHORES_MAX];
    char decode[24]; /* page: the ?decode= ID asked for, "" if none */
    char why[256];   /* create: the library's reason */
} ik__pool_call;

/* A new pending answer of op (IK_OP_TAG_*, IK_OP_WORKERS, IK_OP_PAGE,
 * IK_OP_SEMAPHORES) with its call
 * (p->pool, zeroed: the route fills its inputs), or NULL when this loop has
 * IK_POOL_CALLS_MAX calls in the pool already. Loop thread. */
ik__pend *ik__pool_pend(ik__worker *w, ik__op op);

/* Hands p's call to the thread pool: 0, with p counted in flight (its answer comes
 * back through ik__pend_complete, p->rc set; IK_ECLOSED if the pool cancelled it),
 * or a libuv error with p freed. Loop thread. */
int ik__pool_queue(ik__worker *w, ik__pend *p);

#endif
