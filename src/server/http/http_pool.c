/* http_pool.c: the HTTP routes' calls to the store in libuv's thread pool
 * (http_pool.h): what each op asks of the library, run on a pool thread, and the
 * hand-back to the loop, which completes the pending answer. The routes render it
 * (http_routes.c, http_page.c). */
#include "http_pool.h"

#include <stdlib.h>

/* The leases of each semaphore the server shows (its config's), each listed on its
 * own: one that cannot be listed says why in its row. */
static void list_semaphores(ik__server *srv, ik__pool_call *t)
{
    for (int i = 0; i < srv->cfg->nsemaphores && i < IK_SERVER_SEMAPHORES_MAX; i++)
        t->sema_rc[i] = ik_semaphore_holders(srv->coord, srv->cfg->semaphores[i],
                                             srv->cfg->semaphore_layouts[i], &t->sema_max[i],
                                             &t->sema[i], &t->nsema[i]);
}

/* Thread pool: the route's library call (it may wait for the store). */
static void pool_run(uv_work_t *req)
{
    ik__pend *p = req->data;
    ik__pool_call *t = p->pool;
    ik__server *srv = p->w->srv;
    const char *app = srv->cfg->app;
    switch (p->op) {
    case IK_OP_TAG_CREATE:
        p->rc = ik_tag_create(srv->coord, app, t->body.tag, t->body.kind, t->body.start,
                              t->body.step, t->body.description, t->why, sizeof t->why);
        if (p->rc == 0 || p->rc == IK_EEXIST)
            t->have_info = ik_tag_get(srv->coord, app, t->body.tag, &t->info) == 0;
        break;
    case IK_OP_TAG_GET:
        p->rc = ik_tag_get(srv->coord, app, p->tag, &t->info);
        break;
    case IK_OP_WORKERS:
        p->rc = ik_slots_list(srv->coord, app, &t->slots, &t->nslots);
        break;
    case IK_OP_PAGE: /* the page shows what it could list, and why not the rest */
        t->slots_rc = ik_slots_list(srv->coord, app, &t->slots, &t->nslots);
        t->list_rc = ik_tags_list(srv->coord, app, &t->list, &t->nlist);
        list_semaphores(srv, t);
        p->rc = 0;
        break;
    case IK_OP_SEMAPHORES:
        list_semaphores(srv, t);
        p->rc = 0;
        break;
    default:
        p->rc = ik_tags_list(srv->coord, app, &t->list, &t->nlist);
        break;
    }
}

/* Loop thread, after pool_run. */
static void pool_after(uv_work_t *req, int status)
{
    ik__pend *p = req->data;
    p->w->pool_calls--;
    if (status != 0) p->rc = IK_ECLOSED;
    ik__pend_complete(p->w, p);
}

static void pool_free(ik__pool_call *t)
{
    ik_free(t->list);
    ik_free(t->slots);
    for (int i = 0; i < IK_SERVER_SEMAPHORES_MAX; i++)
        ik_free(t->sema[i]);
    free(t);
}

ik__pend *ik__pool_pend(ik__worker *w, ik__op op)
{
    if (w->pool_calls >= IK_POOL_CALLS_MAX) return NULL;
    ik__pend *p = ik__pend_new(w);
    p->op = (uint8_t)op;
    p->pool = ik__xcalloc(1, sizeof *p->pool);
    p->pool_free = pool_free;
    return p;
}

int ik__pool_queue(ik__worker *w, ik__pend *p)
{
    p->pool->work.data = p;
    int r = uv_queue_work(&w->loop, &p->pool->work, pool_run, pool_after);
    if (r != 0) {
        ik__pend_free(p);
        return r;
    }
    w->pool_calls++;
    ik__pend_submitted(w);
    return 0;
}
