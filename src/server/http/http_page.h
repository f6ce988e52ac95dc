/* http_page.h: the status page and GET /v1/workers (http_page.c), as the routes
 * render them once the thread pool has listed what they show. */
#ifndef IK_HTTP_PAGE_H
#define IK_HTTP_PAGE_H

#include "http_pool.h"
#include "http_reply.h"
#include "pend.h"
#include "worker.h"

/* Renders the status page (http_page.c) from what the thread pool listed into p->pool
 * and the server's own state. Loop thread. */
void ik__page_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs);

/* Renders GET /v1/workers (http_page.c): the app's slots as JSON. Loop thread. */
void ik__workers_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs);

/* Renders GET /v1/semaphores (http_page.c): the leases of the semaphores this server
 * shows, as JSON. Loop thread. */
void ik__semaphores_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs);

#endif
