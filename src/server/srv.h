/* srv.h: the daemon's internal structures, shared by server.c (start-up, signals,
 * shutdown), loop.c (event loops, connections, HTTP framing), routes.c (the route
 * table and its handlers) and metrics.c (per-thread counters, Prometheus text).
 *
 * Threads and ownership
 * - The main thread (ik_server_run) owns the ik__server: it opens the backend,
 *   creates the generator, starts the slot lease, binds the sockets, starts one
 *   ik__worker thread per event loop, then waits for SIGTERM/SIGINT.
 * - Each ik__worker runs its own uv_loop on its own thread, with its own listening
 *   socket (SO_REUSEPORT: the kernel spreads connections). A connection (ik__conn)
 *   lives and dies on the loop that accepted it; nothing about it is shared.
 * - Shared and read-only while loops run: the config, the generator, the lease
 *   and the coord handle (the library makes their calls thread-safe), the token.
 * - Shared and written: srv->connections (atomic), and each worker's metrics, which
 *   only their own loop writes (relaxed stores) and /metrics reads (relaxed loads).
 */
#ifndef IK_SRV_H
#define IK_SRV_H

#include "httputil.h"
#include "server.h"

#include <http_parser.h>
#include <pthread.h>
#include <stdatomic.h>
#include <uv.h>

#define IK_MAX_BODY (64 * 1024)  /* bodies: only on POST, at most this */
#define IK_READ_BUF (64 * 1024)  /* one read buffer per loop */
#define IK_OUT_HIGH (256 * 1024) /* pause pipelined parsing above this much output */
#define IK_LINGER_MS 2000        /* drain input this long after a final response */
#define IK_CONN_REQ_INLINE 256
#define IK_CONN_OUT_INLINE 512

/* ---- metrics ------------------------------------------------------------------ */

/* Status codes counted by ik_http_requests_total; anything else counts as "other". */
#define IK_N_CODES 14
extern const int ik__metric_codes[IK_N_CODES - 1];
#define IK_N_ROUTES_MAX 24 /* routes of the table + 1 ("other": no route matched) */

/* One loop's counters. Written only by that loop's thread (ik__count), read by any
 * thread with relaxed loads: a reader may see a slightly old value, never a torn one. */
typedef struct ik__metrics {
    _Atomic uint64_t requests[IK_N_ROUTES_MAX][IK_N_CODES];
    _Atomic uint64_t accepted; /* connections accepted */
    _Atomic uint64_t rejected; /* accepted and closed at once: max_connections */
    _Atomic uint64_t timeouts; /* dropped: read, write or idle timeout */
    _Atomic int64_t open;      /* connections open on this loop */
} ik__metrics;

/* Adds 1 to a counter only the calling thread writes (no locked instruction). */
static inline void ik__count(_Atomic uint64_t *c)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                          memory_order_relaxed);
}

/* Index of status in the requests array. */
int ik__metric_code_index(int status);

/* ---- the server ------------------------------------------------------------------ */

typedef struct ik__worker ik__worker;

typedef struct ik__server {
    const ik_server_config *cfg;
    ik_coord *coord;
    ik_snowflake *gen;
    ik_slot_lease *lease;
    const ik_layout *layout;
    char layout_text[256];
    char identity[320];
    char listen_text[300]; /* "127.0.0.1:8080" with the real port */
    char *token;           /* bearer token (NULL: /v1 open) */
    size_t token_len;
    int nworkers;
    ik__worker **workers;
    atomic_int connections; /* open connections, all loops */
    int64_t started_ms;     /* Unix ms at start */
    int read_timeout_ms, idle_timeout_ms, shutdown_timeout_ms;
    uint32_t max_header_bytes;
} ik__server;

/* One event loop and its thread. Allocated 64-byte aligned so that no two loops'
 * counters share a cache line. */
struct ik__worker {
    ik__metrics m; /* first: written on the hot path */
    ik__server *srv;
    int index;
    uv_loop_t loop;
    uv_tcp_t listener;
    uv_async_t stop;  /* main thread -> loop: start draining */
    uv_timer_t sweep; /* timeouts and the Date header, every sweep_ms */
    uint64_t sweep_ms;
    int fd; /* listening socket until the loop owns it */
    int loop_ready, listener_ready, thread_started;
    pthread_t thread;
    struct ik__conn *conns; /* every open connection (for the sweep) */
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

typedef struct ik__req {
    unsigned method;      /* enum http_method */
    int http_minor;       /* 0 or 1 */
    ik__span path, query; /* query without '?' (n == 0: none) */
    ik__span params[IK_MAX_PARAMS];
    int nparams;
    ik__span accept, auth, body; /* n == 0: absent */
} ik__req;

typedef struct ik__resp {
    int status;
    const char *ctype; /* static string */
    ik__buf *body;     /* the loop's scratch; handlers append */
    char extra[192];   /* extra header lines, each ending in \r\n */
    size_t extra_len;
} ik__resp;

typedef struct ik__ctx {
    ik__server *srv;
    ik__worker *w;
    const ik__req *rq;
    ik__resp *rs;
} ik__ctx;

typedef void (*ik__handler)(ik__ctx *x);

#define IK_ROUTE_AUTH 1u /* needs the bearer token when one is configured */

/* One row of the route table (routes.c): like nginx's ngx_command_t. */
typedef struct ik__route {
    unsigned method;     /* enum http_method */
    const char *pattern; /* "/v1/decode/{id}" (see ik__path_match) */
    ik__handler fn;
    unsigned flags;
    const char *help;
} ik__route;

extern const ik__route ik__routes[];
extern const size_t ik__nroutes;

/* Routes rq: finds the row, checks method and token, runs the handler, or answers
 * 404/405/401 itself. Fills rq->params and rs (status, type, body, extra headers).
 * Returns the row's index, or ik__nroutes if no row matched the path. Runs on a
 * loop thread. */
size_t ik__dispatch(ik__worker *w, ik__req *rq, ik__resp *rs);

/* Writes a JSON error {"error":code,"message":...} into rs with status. */
void ik__reply_error(ik__resp *rs, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds a header line ("Name: value") to rs. */
void ik__resp_header(ik__resp *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Renders every metric in Prometheus text format into b. Any thread. */
void ik__metrics_render(ik__server *srv, ik__buf *b);

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
/* Closes whatever ik__worker_init opened and frees w's buffers (not w). Call after
 * the thread has been joined, or if it never started. */
void ik__worker_teardown(ik__worker *w);

/* ---- logging ---------------------------------------------------------------------- */

/* One line on stderr: "2026-11-22T02:45:48.123Z idkeeper[pid]: message". Any thread. */
void ik__log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Unix ms now (CLOCK_REALTIME). */
int64_t ik__now_ms(void);

#endif
