/* worker.h: the daemon's process and its loops, as data: ik__server (one per
 * process) and ik__worker (one per event loop), the counters each loop keeps
 * (ik__metrics), and a loop's listeners and its end-of-turn flush. What every file
 * of the daemon reads and writes of them; the calls of each file are in that file's
 * own header (loop.h, conn.h, pend.h, issue.h, ...), so that a file includes the
 * headers of the files it calls and no others (docs/architecture.md, src/server).
 * No code here but the counters' two adders: below every file that includes it.
 *
 * Threads and ownership
 * - The main thread (ik_server_run) owns the ik__server: it opens the backend,
 *   creates the generator, the segment and sequence allocators, starts the slot
 *   lease, binds the sockets, starts one ik__worker thread per event loop, then waits
 *   for a stop signal (SIGTERM, SIGINT, SIGHUP).
 * - Each ik__worker runs its own uv_loop on its own thread, with its own listening
 *   sockets (SO_REUSEPORT: the kernel spreads connections). A connection (ik__conn)
 *   lives and dies on the loop that accepted it; nothing about it is shared.
 * - Shared and read-only while loops run: the config, the generator, the lease,
 *   the allocators and the coord handle (the library makes their calls thread-safe),
 *   the token, the metric labels.
 * - Shared and written: srv->connections and srv->phase (atomic); each worker's
 *   metrics, which only their own loop writes (relaxed stores) and /metrics reads
 *   (relaxed loads); each worker's completion queue (done_mu), which library threads
 *   append to and the loop drains.
 */
#ifndef IK_WORKER_H
#define IK_WORKER_H

#include "buf.h"
#include "config.h"
#include "idkeeper.h"

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

typedef struct ik__worker ik__worker;
typedef struct ik__conn ik__conn;
typedef struct ik__proto ik__proto;
struct ik__pend;
struct ik__history;
struct ik__rkinds;
struct ik__gap_count;

/* ---- the counters ------------------------------------------------------------- */

/* Status codes counted by ik_http_requests_total; anything else counts as "other". */
#define IK_N_CODES 15       /* the codes of metrics.c's ik__metric_codes, and "other" */
#define IK_N_ROUTES_MAX 24  /* routes of the table + 1 ("other": no route matched) */
#define IK_RESP_CMDS_MAX 40 /* RESP commands of the table + 1 ("unknown") */

/* One loop's counters. Written only by that loop's thread (ik__count), read by any
 * thread with relaxed loads: a reader may see a slightly old value, never a torn one. */
typedef struct ik__metrics {
    _Atomic uint64_t requests[IK_N_ROUTES_MAX][IK_N_CODES];
    _Atomic uint64_t accepted;           /* connections accepted */
    _Atomic uint64_t rejected;           /* closed at once: max_connections, or accept failed */
    _Atomic uint64_t timeouts;           /* dropped: read, write or idle timeout */
    _Atomic int64_t open;                /* connections open on this loop */
    _Atomic uint64_t segment_ids;        /* segment IDs answered */
    _Atomic uint64_t sequence_ids;       /* sequence IDs answered */
    _Atomic uint64_t sequence_ranges;    /* sequence ranges answered (one per request) */
    _Atomic uint64_t store_errors[3];    /* 503 store_unavailable, by IK_STORE_OP_* */
    _Atomic uint64_t sequence_withdrawn; /* sequence requests withdrawn: client gone */
    _Atomic int64_t pending;             /* answers waiting for the store now */
    /* RESP commands by row of the command table (+1: unknown), [0] ok, [1] error */
    _Atomic uint64_t resp_cmds[IK_RESP_CMDS_MAX][2];
} ik__metrics;

enum { IK_STORE_OP_SEGMENT = 0, IK_STORE_OP_SEQUENCE = 1, IK_STORE_OP_TAGS = 2 };

/* Adds 1 to a counter only the calling thread writes (no locked instruction). */
static inline void ik__count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Adds n to a counter only the calling thread writes. */
static inline void ik__count_n(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* ---- a loop's listeners and its end of turn (conn.c) --------------------------- */

/* One listening socket of a loop and the protocol it speaks. */
typedef struct ik__listener {
    uv_tcp_t tcp; /* first; its data is the worker */
    const ik__proto *proto;
    int ready; /* tcp initialized (closed by the loop's teardown) */
} ik__listener;

/* The connections a loop's turn has read from, flushed together when its reads are
 * done (a uv_check handle: after the turn's I/O callbacks, before it polls again). */
typedef struct ik__turn {
    uv_check_t check; /* its data is the worker */
    uv_idle_t idle;   /* active while waking: the turn does not sleep before its check */
    int waking;       /* an answer (not a read) queued a flush this turn */
    ik__conn *head;   /* by wnext */
    int ready;        /* check initialized (closed by the loop's teardown) */
} ik__turn;

/* ---- the server ------------------------------------------------------------------ */

typedef struct ik__server {
    const ik_server_config *cfg;
    ik_coord *coord;
    ik_snowflake *gen;
    ik_slot_lease *lease; /* under lease_mu: the stop releases it (NULL) while the loops
                             may still read it; read through ik__lease_info */
    pthread_mutex_t lease_mu;
    ik_segment *seg;
    ik_sequence *seq;
    int log_sequence;       /* log each sequence range before answering (log_sequence_commits) */
    int test_done_delay_ms; /* IDKEEPER_TEST_DONE_DELAY_MS (tests only; 0: none): pend.c */
    atomic_int phase;       /* 0 serving; 1 draining; 2 the allocators are about to close */
    const ik_layout *layout;
    char layout_text[256];
    char identity[320];
    char listen_text[300]; /* "127.0.0.1:8080" with the real port */
    char resp_text[300];   /* the RESP listener, likewise ("": none) */
    char *token;           /* bearer token (NULL: /v1 open) */
    size_t token_len;
    int nworkers;
    ik__worker **workers;
    atomic_int connections;     /* open connections, all loops */
    atomic_int unauthed;        /* of which RESP connections not yet authenticated (resp_conn.c) */
    pthread_mutex_t gaps_mu;    /* guards gaps */
    struct ik__gap_count *gaps; /* sequence gaps seen, for /metrics (ik__gap_add) */
    size_t ngaps, gaps_cap;
    int64_t started_ms; /* Unix ms at start */
    int read_timeout_ms, idle_timeout_ms, shutdown_timeout_ms;
    uint32_t max_header_bytes;
    /* Labels of the counters by row (server.c fills them in at start, from the
     * tables above the metrics): HTTP routes, the last "other"; RESP commands, the
     * last "unknown". */
    const char *route_labels[IK_N_ROUTES_MAX];
    size_t nroute_labels;
    const char *resp_labels[IK_RESP_CMDS_MAX];
    size_t nresp_labels;
    struct ik__history *hist; /* the recent past, in fixed memory allocated once at start
                                 (history.h) */
} ik__server;

/* One event loop and its thread. Allocated 64-byte aligned so that no two loops'
 * counters share a cache line. */
struct ik__worker {
    ik__metrics m; /* first: written on the hot path */
    ik__server *srv;
    int index;
    uv_loop_t loop;
    ik__listener listener;              /* HTTP */
    ik__listener resp_listener;         /* RESP (--resp; .ready 0: none) */
    uv_async_t stop;                    /* main thread -> loop: start draining */
    uv_timer_t sweep;                   /* timeouts and the Date header, every sweep_ms */
    uv_timer_t sf_timer;                /* retries the snowflake requests in sf_head (issue.c) */
    struct ik__pend *sf_head, *sf_tail; /* snowflake requests waiting, FIFO by qnext */
    uint64_t sweep_ms;
    uint64_t accept_logged_ms; /* last "accept failed" line, uv_now ms (0: none) */
    uint64_t attack_logged_ms; /* last cross-protocol line on RESP, uv_now ms (0: none) */
    uv_async_t done;           /* library threads -> loop: answers ready (the done queue) */
    pthread_mutex_t done_mu;
    struct ik__pend *done_head, *done_tail; /* guarded by done_mu */
    int64_t inflight;                       /* ik__pends out with the library or the thread pool */
    int pool_calls;                         /* of which calls in the thread pool (ik__pool_call) */
    int stores_closed;                      /* phase 2 seen: no more calls into the allocators */
    atomic_int stores_acked;                /* stores_closed, for the main thread */
    atomic_int drained;                     /* draining, no connection, nothing in flight */
    struct ik__pend *spare;                 /* ctx for the next allocator call (reused if unused) */
    int fd;                                 /* listening socket until the loop owns it */
    int resp_fd;                            /* the RESP listening socket (-1: none) */
    struct ik__rkinds *rkinds;              /* RESP: tag -> kind learnt (resp_cmds.h) */
    int loop_ready, thread_started, done_ready;
    pthread_t thread;
    ik__conn *conns; /* every open connection, of either protocol (conn.c) */
    ik__turn turn;   /* connections to flush at the end of the turn (conn.c) */
    int draining;
    uint64_t drain_deadline; /* loop ms */
    char *rbuf;              /* IK_READ_BUF: reads land here, parsed at once */
    ik__buf body;            /* response body scratch, reused */
    int64_t *ids;            /* batch scratch, grown to max_batch on demand */
    size_t ids_cap;
    char date[48]; /* "Date: ...\r\n" for the current second */
    size_t date_len;
    int64_t date_s;          /* the Unix second in date */
    uint64_t date_next;      /* loop ms at which date must be refreshed */
    uint64_t last_clock_log; /* loop ms of the last "clock went back" log line */
};

#endif
