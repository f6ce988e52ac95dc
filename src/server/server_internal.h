/* server_internal.h: the daemon's internal structures and the calls between its
 * files; server.h is the little the CLI sees (ik_server_config, ik_server_run).
 *
 * The daemon's files in layers; calls go down only (no file calls one above it or
 * beside it in a cycle; tests/tools/callcycles.py checks the built objects). Each
 * front door is a folder of its own (http/, resp/), beside the core at the top:
 *
 *   server.c                    start-up, signals, shutdown, the metric labels
 *   loop.c                      the event loops: listeners, timers, the done queue
 *   http_conn.c resp_conn.c     HTTP and RESP on the connection core (ik__proto)
 *   http_routes.c resp_cmds.c   the HTTP route table, the RESP command table
 *   http_page.c                 the status page and /v1/workers (for http_routes.c)
 *   issue.c                     what both front doors share: issuing IDs, the refusals
 *   conn.c                      the connection core (conn.h)
 *   pend.c                      pending answers (pend.h) and the end of a loop
 *   http_reply.c ready.c metrics.c log.c
 *                               HTTP answers; readiness; the metrics registry; the log
 *   http_framing.c resp.c http_util.c json.c token.c
 *                               pure: HTTP framing (the only user of the HTTP parser
 *                               library), the RESP parser and writers, HTTP request
 *                               values and routing, JSON, the token's checks
 *   buf.c                       pure, under all of them: buffers, numbers, abort on ENOMEM
 *
 * Where a lower file must reach a higher one it does so through a function pointer
 * the higher one set: the core reaches a protocol through its ik__proto, a pending
 * answer its connection's protocol through c->proto->answer, the metrics their
 * labels through the tables server.c fills in at start.
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
 *
 * Pending answers (the store is never waited for on a loop; pend.h)
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
#ifndef IK_SERVER_INTERNAL_H
#define IK_SERVER_INTERNAL_H

#include "conn.h"
#include "history.h"
#include "http_reply.h"
#include "http_util.h"
#include "json.h"
#include "pend.h"
#include "http_framing.h"
#include "http_routes.h"
#include "server.h"

#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#define IK_POOL_CALLS_MAX 32 /* calls in the thread pool at once (ik__pool_call), per loop */

/* ---- metrics ------------------------------------------------------------------ */

/* Status codes counted by ik_http_requests_total; anything else counts as "other". */
#define IK_N_CODES 15
extern const int ik__metric_codes[IK_N_CODES - 1];
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

/* Index of status in the requests array. */
int ik__metric_code_index(int status);

/* The names of IK_GONE_* (pend.h): in log lines, and as metric labels. */
extern const char *const ik__gone_text[IK_GONE_N];
extern const char *const ik__gone_label[IK_GONE_N];

/* Sequence IDs committed for nobody, by tag and IK_GONE_* (server-wide, under
 * srv->gaps_mu: rare, written by any loop, read by /metrics). */
typedef struct ik__gap_count {
    char tag[IK_TAG_NAME_MAX + 1];
    char why[24]; /* the metric's label: ik__gone_label[], or the library's cause */
    uint64_t ids;
} ik__gap_count;

/* ---- the server ------------------------------------------------------------------ */

typedef struct ik__worker ik__worker;

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
    atomic_int connections;  /* open connections, all loops */
    atomic_int unauthed;     /* of which RESP connections not yet authenticated (resp_conn.c) */
    pthread_mutex_t gaps_mu; /* guards gaps */
    ik__gap_count *gaps;     /* sequence gaps seen, for /metrics (ik__gap_add) */
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

/* ---- requests and responses ----------------------------------------------------- */

typedef struct ik__ctx {
    ik__server *srv;
    ik__worker *w;
    const ik__req *rq;
    ik__http_reply *rs;
} ik__ctx;

typedef void (*ik__handler)(ik__ctx *x);
/* One row of the route table (http_routes.h) beyond its key. */
typedef struct ik__route {
    ik__handler fn;
    unsigned flags;
    const char *help;
} ik__route;

extern const ik__route_key ik__route_keys[]; /* method and pattern of each row */
extern const ik__route ik__routes[];
extern const size_t ik__nroutes;

/* Routes rq: finds the row, checks method and token, runs the handler, or answers
 * 404/405/401 itself. Fills rq->params and rs (status, type, body, extra headers).
 * Returns the row's index, or ik__nroutes if no row matched the path. Runs on a
 * loop thread. */
size_t ik__dispatch(ik__worker *w, ik__req *rq, ik__http_reply *rs);

/* Renders a pending answer that came back (p->rc, p->ids...) into rs. Loop thread. */
void ik__pend_render(ik__worker *w, ik__pend *p, ik__http_reply *rs);

/* Adds n gap IDs of tag for reason why (a metric label: ik__gone_label[IK_GONE_*]
 * for an answer nobody took, or the library's cause, ik_set_gap_hook) to the
 * server's counts. Any thread. */
void ik__gap_add(ik__server *srv, const char *tag, const char *why, uint64_t n);

/* Renders the status page (http_page.c) from what the thread pool listed into p->pool
 * and the server's own state. Loop thread. */
void ik__page_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs);

/* Renders GET /v1/workers (http_page.c): the app's slots as JSON. Loop thread. */
void ik__workers_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs);

/* Renders every metric in Prometheus text format into b; ready: whether a snowflake
 * ID can be issued now (ik__not_ready, for ik_ready). Any thread. */
void ik__metrics_render(ik__server *srv, int ready, ik__buf *b);

/* ---- the recent past (history.c; history.h says what and why) ---------------------------- */

/* Sets up srv->hist (before anything can add to it) and frees it. */
void ik__history_init(ik__server *srv);
void ik__history_destroy(ik__server *srv);
/* The worker range whose use is listed: the layout's [min, max]. Before the loops start. */
void ik__history_set_range(ik__server *srv, uint32_t min, uint32_t max);
/* The sampler: on loop 0 (a no-op on any other), at most once a Unix second; called
 * from the sweep timer. Never waits for the store (its listing goes to the thread pool). */
void ik__history_tick(ik__worker *w);
/* Counts n sequence IDs of tag answered (the per-tag series). Any thread. */
void ik__history_add(ik__server *srv, const char *tag, uint64_t n);
/* Adds an event (kind: "slot", "lease", "clock", "hazard") with a printf text. Any thread. */
void ik__event_add(ik__server *srv, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Adds a sequence gap as an event: count IDs of tag from first (first < 0: not known),
 * why as in ik_sequence_gap_ids_total's label. Any thread. */
void ik__event_gap(ik__server *srv, const char *tag, int64_t first, int64_t count, const char *why);
/* Adds the lease's state change as an event (the slot taken or lost, in doubt, ...).
 * Any thread (the lease's on_state). */
void ik__event_lease(ik__server *srv, ik_lease_state state, int worker, const char *why);
/* Copies the events, newest first, into out[IK_EVENTS_MAX]; returns how many. Any thread. */
int ik__events_get(ik__server *srv, ik__event *out);
/* The worker range's size, the slots of it held as last listed (-1: not yet) and when
 * (Unix ms). Any thread. */
void ik__range_use(ik__server *srv, uint32_t *slots, int *held, int64_t *at_ms);
/* Unix ms the lease was last proven (a new time record acknowledged), as the sampler
 * saw it (within a second); 0 if never. Any thread. */
int64_t ik__lease_proof_ms(ik__server *srv);
/* GET /v1/history's and GET /v1/events' JSON into b. Any thread. */
void ik__history_render(ik__server *srv, int seconds, ik__buf *b);
void ik__events_render(ik__server *srv, ik__buf *b);

/* ---- loops (loop.c) ------------------------------------------------------------- */

/* Sets up w's loop, listener (on w->fd, which it takes over), stop async and sweep
 * timer, on the calling thread. Returns 0 or a libuv error (w must then be torn down
 * with ik__worker_teardown). */
int ik__worker_init(ik__server *srv, ik__worker *w);
/* Thread body: runs the loop until it has drained after ik__worker_stop. */
void *ik__worker_main(void *arg);
/* Asks w to stop accepting, finish in-flight requests and end its loop. Any thread;
 * call once. */
void ik__worker_stop(ik__worker *w);
/* Asks w to close its use of the allocators (phase 2). Any thread; once, after
 * ik__worker_stop. */
void ik__worker_close_stores(ik__worker *w);
/* Closes whatever ik__worker_init opened and frees w's buffers (not w). Call after
 * the thread has been joined, or if it never started. */
void ik__worker_teardown(ik__worker *w);

/* ---- what both front doors share (issue.c) ------------------------------------------- */

/* Room for n IDs: small (64 entries) or the loop's batch scratch; NULL if it cannot
 * grow. Loop thread. */
int64_t *ik__ids_scratch(ik__worker *w, uint32_t n, int64_t *small);
/* Keeps an idle daemon small after a huge batch. */
void ik__ids_scratch_trim(ik__worker *w);
/* Issues n IDs of tag from the allocator of op (IK_OP_SEGMENT or IK_OP_SEQUENCE).
 * Returns IK_OK with ids[0..n-1] filled (segment IDs from a block in memory; ids
 * unused for sequence), IK_PENDING with *pend handed to the library and counted in
 * flight (the caller sets how to render it and queues it on its connection; its
 * answer comes back through ik__pend_complete), or the library's error
 * (IK_ECLOSED once the loop has closed its use of the allocators). Loop thread. */
int ik__issue(ik__worker *w, ik__op op, const char *tag, uint32_t n, int64_t *ids, ik__pend **pend);
/* Counts the IDs of a segment or sequence answer that came back from the library
 * (p->op, p->nids; a sequence's also in p->tag's series of the recent past), as
 * both front doors do for each such answer they render: the one place for it. (An
 * answer at once is counted by ik__issue itself.) Loop thread. */
void ik__issue_count(ik__worker *w, const ik__pend *p);
/* Asks again with an ik__pend that came back (p->tag, p->n kept), for op: as
 * ik__issue, except that on IK_PENDING the caller counts it in flight
 * (ik__pend_submitted) and on any other result p stays the caller's. */
int ik__issue_into(ik__worker *w, ik__pend *p, ik__op op, int64_t *ids);
/* Issues n snowflake IDs: IK_OK with ids[0..n-1] filled, IK_PENDING with *pend in
 * w's retry queue (the generator asked to wait, or earlier requests of this loop
 * wait: the generator never sleeps on a loop, and none overtakes an earlier one);
 * it comes back through ik__pend_complete with p->rc and p->ids[0..p->nids-1]. Or
 * the generator's refusal. The caller sets how to render *pend. Loop thread. */
int ik__sf_issue(ik__worker *w, uint32_t n, int64_t *ids, ik__pend **pend);
/* Names the generator's refusal rc: returns the HTTP status (503 for the
 * refusals of docs/guarantees.md promises 10-12 and a layout whose time field ran out, else 500),
 * sets *code and writes a message into msg. Loop thread. */
int ik__gen_error(ik__worker *w, int rc, const char **code, char *msg, size_t len);
/* Names a segment, sequence or tag error of the library (and counts store errors):
 * returns the HTTP status (404 unknown tag, 409 wrong kind, 503 retry, 400, 500),
 * sets *code and writes a message into msg. Loop thread. */
int ik__store_error(ik__worker *w, int op, int rc, const char *tag, const char **code, char *msg,
                    size_t len);

/* ---- the protocols on the connection core ----------------------------------------------- */

/* HTTP/1.1 (http_conn.c). */
extern const ik__proto ik__http_proto;
/* Refreshes the loop's cached "Date:" line (http_conn.c). Loop thread. */
void ik__http_refresh_date(ik__worker *w);
/* RESP (resp_conn.c): sets up w's RESP listener on w->resp_fd (which it takes
 * over) and its tag-kind cache; 0 or a libuv error. On the thread that calls
 * ik__worker_init, after the loop is set up. */
int ik__resp_worker_init(ik__worker *w);
/* Frees what ik__resp_worker_init allocated (after the loop ended). */
void ik__resp_teardown(ik__worker *w);
/* The name of row i of the RESP command table (lower case), NULL past its end;
 * row ik__resp_ncmds is "unknown" (resp_cmds.c). */
const char *ik__resp_cmd_name(size_t i);
extern const size_t ik__resp_ncmds;

/* ---- logging (log.c) ---------------------------------------------------------------- */

/* One line on stderr: "2026-11-22T02:45:48.123Z idkeeper[pid]: message". Any thread. */
void ik__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The library's log lines (ik_set_log's sink), in the daemon's format. Any thread. */
void ik__log_library(void *ctx, const char *line);
/* Unix ms now (CLOCK_REALTIME). */
int64_t ik__now_ms(void);

/* ---- readiness (ready.c) ------------------------------------------------------------ */

/* Why no snowflake ID can be issued now, into why; 0 if one can. Any thread. */
int ik__not_ready(ik__server *srv, char *why, size_t len);
/* The slot lease's info (ik_slot_lease_get_info); once the stop has released it,
 * state RELEASED and worker -1. Any thread. */
void ik__lease_info(ik__server *srv, ik_lease_info *li);
/* Writes "the layout's time field ran out on DATE ..." into why (truncated to len).
 * Any thread. */
void ik__layout_end_why(const ik__server *srv, char *why, size_t len);
/* The generator's deadline clock now, ns (ik_clock_system's mono_ns: CLOCK_BOOTTIME). */
int64_t ik__boot_ns(void);

#endif
