/* pend.h: pending answers. An ik__pend is one answer of a connection that waits for
 * the store (segment, sequence), the thread pool (the tag routes, the status page)
 * or the generator (a snowflake request it asked to retry), or a ready answer held
 * behind such a one so that answers leave in request order.
 *
 * Life of an ik__pend (who runs each step):
 *
 *   ik__pend_new (loop) --handed to the library / thread pool / retry queue-->
 *     ik__pend_submitted (loop: counted in flight)
 *   library thread: ik__pend_on_ids copies the answer in, ik__pend_post queues it
 *     on its worker's done queue (done_mu) and wakes the loop (w->done)
 *   loop: ik__pend_drain --> ik__pend_complete --> its connection's protocol renders
 *     it (ik__proto.answer, conn.h), or, if the connection has gone (p->conn NULL),
 *     ik__pend_orphaned (a committed sequence range is a gap: logged, counted) and
 *     ik__pend_free
 *   a connection that closes first: ik__pend_detach: a sequence request still queued
 *     in the library is withdrawn (ik__pend_withdraw: never committed, freed at once);
 *     any other comes back to nobody, as above.
 *
 * The library's callback never touches the connection: only p and the done queue.
 * Everything else runs on p's loop thread. This file is below the connection core
 * and the protocols: it reaches a connection only through its protocol's answer
 * hook (a function pointer), never by a call.
 *
 * Pending answers (the store is never waited for on a loop):
 * - A handler that needs the store (segment with both blocks empty, every sequence
 *   request, the tag routes) hands an ik__pend to the library (its callback runs on a
 *   library thread) or to libuv's thread pool, and returns it (HTTP: rs->pend). The
 *   protocol queues it on the connection, in request order, and goes on.
 * - The library callback copies the IDs into the ik__pend, appends it to the worker's
 *   completion queue and wakes the loop (uv_async_send on w->done, under done_mu, so
 *   the handle cannot close in between). The thread pool's after-work callback runs
 *   on the loop itself. Either way the protocol renders the answer into the ik__pend.
 * - Answers leave a connection in request order: a pending answer holds back the
 *   ones behind it (they wait, serialized, in held ik__pends).
 * - The callback never touches the connection. A connection that closes while
 *   answers are pending (the client gave up: EOF, reset, or the shutdown deadline)
 *   withdraws each sequence request still queued in the library
 *   (ik__pend_withdraw: never committed, freed at once) and detaches the rest
 *   (p->conn = NULL, p->gone says why, on the loop); a detached ik__pend is freed
 *   when it comes back, and a sequence range committed for it is a gap, logged and
 *   counted (ik__pend_orphaned).
 * - A loop ends only when it is draining, has closed its use of the allocators
 *   (stores_closed), and has no connection and nothing in flight (inflight == 0): no
 *   callback can then reach it.
 */
#ifndef IK_PEND_H
#define IK_PEND_H

#include "buf.h"
#include "worker.h"

#include <uv.h>

/* What a pending answer waits for. */
typedef enum ik__op {
    IK_OP_SEGMENT = 1,
    IK_OP_SEQUENCE,
    IK_OP_TAG_CREATE,
    IK_OP_TAG_GET,
    IK_OP_TAG_LIST,
    IK_OP_WORKERS,    /* GET /v1/workers: the app's slots */
    IK_OP_PAGE,       /* GET /: slots, tags and semaphores for the status page */
    IK_OP_SEMAPHORES, /* GET /v1/semaphores: the leases of the semaphores shown */
    IK_OP_HELD,       /* a ready answer held behind a pending one */
    IK_OP_SNOWFLAKE   /* a snowflake request the generator asked to retry (IK_AGAIN) */
} ik__op;

/* Why a pending answer lost its connection (ik__pend.gone). */
enum { IK_GONE_NO = 0, IK_GONE_CLIENT, IK_GONE_SHUTDOWN, IK_GONE_TOO_LARGE, IK_GONE_N };
/* The names of IK_GONE_* (pend.h): in log lines, and as metric labels. */
extern const char *const ik__gone_text[IK_GONE_N];
extern const char *const ik__gone_label[IK_GONE_N];

struct ik__http_reply;
struct ik__pend;
/* HTTP: how a route renders the answer it left pending, once it came back (p->rc,
 * p->ids ...), into rs: the route that queued it sets it (http_routes.c). Loop
 * thread. */
typedef void ik__http_render(ik__worker *w, struct ik__pend *p, struct ik__http_reply *rs);

/* One answer of a connection, pending or held. */
typedef struct ik__pend {
    struct ik__pend *next;  /* the connection's answers, in request order (loop) */
    struct ik__pend *qnext; /* the worker's done queue (done_mu), or its retry queue */
    ik__conn *conn;         /* NULL once the connection closed (loop thread only) */
    /* Where it goes when it comes back: its connection's protocol's answer hook
     * (ik__proto.answer, conn.h), set with conn when the connection queues it
     * (ik__conn_push), so that this file reaches a connection by no call. */
    void (*answer)(ik__conn *c, struct ik__pend *p);
    ik__worker *w;
    uint8_t op;              /* ik__op */
    ik__http_render *render; /* HTTP: renders its answer (the route's) */
    uint8_t fmt;             /* HTTP: IK_FMT_* */
    uint8_t leaf;            /* HTTP: a Leaf route: one ID, no newline */
    uint8_t keep, http10, done;
    uint8_t gone;    /* IK_GONE_*: why its connection dropped it (loop thread only) */
    uint16_t route;  /* row of the route table (RESP: of the command table), for the metrics */
    uint8_t rshape;  /* RESP: the answer's shape (resp_cmds.c) */
    uint8_t rproto;  /* RESP: protocol version of the connection when asked (2 or 3) */
    uint8_t rflip;   /* RESP INCR/INCRBY: may be asked again of the other kind once */
    uint32_t n;      /* IDs asked for */
    uint32_t charge; /* bytes charged against its connection's output limit while it
                        is queued (conn.c; a protocol may set it before queuing) */
    char tag[IK_TAG_NAME_MAX + 1];
    /* set by the callback, read by the loop after the done queue hand-over: */
    int rc;        /* 0 or the library's error */
    int64_t first; /* contiguous answers (sequence): first + i */
    int64_t *ids;  /* else the IDs (ids_inline or malloc'ed) */
    size_t nids;
    int64_t ids_inline[4];
    struct ik__pool_call *pool; /* HTTP: a route's call in the thread pool (http_pool.h) */
    void (*pool_free)(struct ik__pool_call *t); /* frees pool: set with it */
    ik_snowflake_try sf; /* IK_OP_SNOWFLAKE: the request's state; IDs in ids[0..n-1] */
    ik__buf out;         /* the serialized answer, once done */
    char out_inline[256];
} ik__pend;

/* A new ik__pend of w (the daemon aborts on ENOMEM). Any thread. */
ik__pend *ik__pend_new(ik__worker *w);
/* Frees p and what it holds; NULL is fine. */
void ik__pend_free(ik__pend *p);
/* Counts one more ik__pend out with the library, the thread pool or the retry
 * queue (w->inflight, the ik_pending_requests gauge). Loop thread. */
void ik__pend_submitted(ik__worker *w);
/* The segment and sequence allocators' callback (ctx: the ik__pend), on a library
 * thread (or the main thread at destroy): copies the answer into p and posts it.
 * A sequence range is logged first when log_sequence is on, so the line is out
 * before any client can have the IDs. */
void ik__pend_on_ids(void *ctx, int status, const int64_t *ids, size_t n);
/* Hands p (its result set) back to its loop through the done queue. Any thread. */
void ik__pend_post(ik__pend *p);
/* w->done's callback: completes every ik__pend on the done queue. Loop thread. */
void ik__pend_drain(uv_async_t *a);
/* p came back (its result set): no longer in flight; its connection's protocol
 * renders it, or, with the connection gone, it is settled and freed. Loop thread. */
void ik__pend_complete(ik__worker *w, ik__pend *p);
/* p, out with the library, has lost its connection: if it is a sequence request
 * still queued (its write has not begun), withdraws it from the library and returns
 * 1: nothing is committed for it, its callback never runs, and the caller settles
 * and frees p. Else 0: p comes back later. Loop thread, before phase 2 only (after
 * it, always 0). */
int ik__pend_withdraw(ik__worker *w, ik__pend *p);
/* p, out with the library, loses its connection (why: IK_GONE_*): withdrawn and
 * freed if the library still had it queued, else detached: it comes back to nobody
 * (ik__pend_complete). Loop thread. */
void ik__pend_detach(ik__worker *w, ik__pend *p, int why);
/* A detached p (p->conn NULL, p->gone set) came back, or an answer was dropped
 * unwritten: a sequence range committed for it is a gap, logged ("tag gap tag=T
 * first=A count=K why=...") and counted. Does not free p. Loop thread. */
void ik__pend_orphaned(ik__worker *w, ik__pend *p);
/* Publishes whether w has drained (draining, no connection, nothing in flight) and
 * ends its loop once it may (the allocators closed for it too). Loop thread. */
void ik__worker_maybe_end(ik__worker *w);

#endif
