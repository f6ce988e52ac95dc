/* loop.c: the event loops, one per thread (worker.h, "Threads and ownership"): each
 * loop's listeners (HTTP, and RESP with --resp) on the connection core, its timers
 * (the sweep for timeouts, the snowflake retry timer), the done queue that brings
 * pending answers back from library threads, and its shutdown.
 *
 * The top of the daemon's loop side: it wires the protocols (http_conn.c,
 * resp_conn.c) to the core (conn.c, pend.c); below it, nothing calls up into it.
 *
 * Shutdown, as the main thread asks (srv->phase, through w->stop):
 *   1, draining: the listeners close; the sweep, now every 50 ms, closes idle
 *      connections from its first run on (requests already on their way are still
 *      answered, with "Connection: close"; pending answers are awaited) and
 *      everything left at the drain deadline (conn.c).
 *   2: the allocators are about to be destroyed: no more calls into them (handlers
 *      answer 503), acknowledged through w->stores_acked.
 *   The loop ends once both happened and its last connection and pending answer are
 *   gone (ik__worker_maybe_end, pend.c).
 */
#include "loop.h"
#include "conn.h"
#include "pend.h"
#include "history.h"
#include "http_conn.h"
#include "resp_conn.h"

#include <stdlib.h>
#include <unistd.h>

static void on_sweep(uv_timer_t *t)
{
    ik__worker *w = t->data;
    ik__conn_sweep(w, uv_now(&w->loop));
    ik__history_tick(w); /* loop 0 only, once a second */
}

static void on_stop(uv_async_t *a)
{
    ik__worker *w = a->data;
    int phase = atomic_load(&w->srv->phase);
    if (!w->draining) {
        w->draining = 1;
        w->drain_deadline = uv_now(&w->loop) + (uint64_t)w->srv->shutdown_timeout_ms;
        ik__listener_close(&w->listener);
        ik__listener_close(&w->resp_listener);
        uv_timer_start(&w->sweep, on_sweep, 50, 50);
    }
    if (phase >= 2 && !w->stores_closed) {
        w->stores_closed = 1;
        atomic_store(&w->stores_acked, 1);
    }
    ik__worker_maybe_end(w);
}

int ik__worker_init(ik__server *srv, ik__worker *w)
{
    int r;
    w->srv = srv;
    ik__buf_init(&w->body, NULL, 0);
    w->rbuf = malloc(IK_READ_BUF);
    if (!w->rbuf) return UV_ENOMEM;
    if ((r = uv_loop_init(&w->loop)) != 0) return r;
    w->loop_ready = 1;
    w->loop.data = w;
    int fd = w->fd;
    w->fd = -1; /* the listener owns it now */
    if ((r = ik__listener_open(w, &w->listener, fd, &ik__http_proto)) != 0) return r;
    if ((r = uv_async_init(&w->loop, &w->stop, on_stop)) != 0) return r;
    w->stop.data = w;
    if (pthread_mutex_init(&w->done_mu, NULL) != 0) return UV_ENOMEM;
    if ((r = uv_async_init(&w->loop, &w->done, ik__pend_drain)) != 0) {
        pthread_mutex_destroy(&w->done_mu);
        return r;
    }
    w->done.data = w;
    w->done_ready = 1;
    uv_timer_init(&w->loop, &w->sweep);
    w->sweep.data = w;
    uv_timer_init(&w->loop, &w->sf_timer);
    w->sf_timer.data = w;
    int shortest =
        srv->read_timeout_ms < srv->idle_timeout_ms ? srv->read_timeout_ms : srv->idle_timeout_ms;
    w->sweep_ms = (uint64_t)(shortest / 4);
    if (w->sweep_ms < 20) w->sweep_ms = 20;
    if (w->sweep_ms > 1000) w->sweep_ms = 1000;
    uv_timer_start(&w->sweep, on_sweep, w->sweep_ms, w->sweep_ms);
    if ((r = ik__turn_init(w)) != 0) return r;
    ik__http_refresh_date(w);
    if (w->resp_fd >= 0 && (r = ik__resp_worker_init(w)) != 0) return r;
    return 0;
}

void *ik__worker_main(void *arg)
{
    ik__worker *w = arg;
    uv_run(&w->loop, UV_RUN_DEFAULT);
    return NULL;
}

void ik__worker_stop(ik__worker *w)
{
    uv_async_send(&w->stop);
}

void ik__worker_close_stores(ik__worker *w)
{
    uv_async_send(&w->stop);
}

/* The teardown's walk: a connection's handle closes through the core (its answers
 * dropped, its memory freed); the listeners (their data is the worker) and the
 * loop's own handles just close. */
static void close_any(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, h->type == UV_TCP && h->data != arg ? ik__conn_closed : NULL);
}

void ik__worker_teardown(ik__worker *w)
{
    if (w->loop_ready) {
        uv_walk(&w->loop, close_any, w);
        uv_run(&w->loop, UV_RUN_DEFAULT);
        uv_loop_close(&w->loop);
        w->loop_ready = 0;
    }
    if (w->done_ready) {
        pthread_mutex_destroy(&w->done_mu);
        w->done_ready = 0;
    }
    if (w->fd >= 0) close(w->fd);
    w->fd = -1;
    if (w->resp_fd >= 0) close(w->resp_fd);
    w->resp_fd = -1;
    ik__resp_teardown(w);
    free(w->rbuf);
    w->rbuf = NULL;
    ik__buf_reset(&w->body);
    free(w->ids);
    w->ids = NULL;
    ik__pend_free(w->spare);
    w->spare = NULL;
}
