/* pend.c: pending answers (pend.h): their allocation, the library's callback, the
 * done queue back to the loop, completion, withdrawal and the gaps of answers that
 * came back to nobody; and the end of a loop, which waits for the last of them.
 *
 * Calls go down only (log.c, metrics.c, the library). A pending answer reaches its
 * connection through the protocol's answer hook (conn.h), which the connection
 * copied into it when it queued it (p->answer): by no call.
 */
#include "pend.h"
#include "log.h"
#include "metrics.h"
#include "history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const ik__gone_text[IK_GONE_N] = {"", "client gone", "shutdown deadline",
                                              "ids above 2^53 asked as numbers"};
const char *const ik__gone_label[IK_GONE_N] = {"", "client_gone", "shutdown_deadline",
                                               "ids_too_large"};

ik__pend *ik__pend_new(ik__worker *w)
{
    ik__pend *p = ik__xcalloc(1, sizeof *p);
    p->w = w;
    ik__buf_init(&p->out, p->out_inline, sizeof p->out_inline);
    return p;
}

void ik__pend_free(ik__pend *p)
{
    if (!p) return;
    if (p->ids && p->ids != p->ids_inline) free(p->ids);
    if (p->pool) p->pool_free(p->pool);
    ik__buf_reset(&p->out);
    free(p);
}

/* Adds d to what w has in flight and to the ik_pending_requests gauge. */
static void in_flight(ik__worker *w, int d)
{
    w->inflight += d;
    atomic_store_explicit(&w->m.pending,
                          atomic_load_explicit(&w->m.pending, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

void ik__pend_submitted(ik__worker *w)
{
    in_flight(w, 1);
}

void ik__pend_on_ids(void *ctx, int status, const int64_t *ids, size_t n)
{
    ik__pend *p = ctx;
    p->rc = status;
    if (status == 0 && p->op == IK_OP_SEQUENCE) { /* n consecutive IDs */
        p->first = ids[0];
        p->ids = NULL;
        p->nids = n;
        if (p->w->srv->log_sequence)
            ik__log("sequence tag=%s first=%lld count=%zu", p->tag, (long long)ids[0], n);
    } else if (status == 0) {
        int64_t *d = n <= sizeof p->ids_inline / sizeof p->ids_inline[0] ? p->ids_inline
                                                                         : malloc(n * sizeof *d);
        if (d) {
            memcpy(d, ids, n * sizeof *d);
            p->ids = d;
            p->nids = n;
        } else {
            p->rc = IK_ENOMEM;
        }
    }
    ik__pend_post(p);
}

void ik__pend_post(ik__pend *p)
{
    ik__worker *w = p->w;
    /* The send happens under the lock: the loop can only see p (and then end and
     * close w->done) after this thread has let go of the handle. */
    pthread_mutex_lock(&w->done_mu);
    p->qnext = NULL;
    if (w->done_tail) {
        w->done_tail->qnext = p;
    } else {
        w->done_head = p;
    }
    w->done_tail = p;
    uv_async_send(&w->done);
    pthread_mutex_unlock(&w->done_mu);
}

/* Test hook (IDKEEPER_TEST_DONE_DELAY_MS, docs/sequence.md): the loop stalls this
 * long before it completes a batch that holds a sequence range, as a server stopped
 * by SIGSTOP or a VM pause right after the commit would; a test closes the client's
 * connection meanwhile. Never set outside tests. */
static void test_done_delay(ik__worker *w, const ik__pend *p)
{
    int ms = w->srv->test_done_delay_ms;
    if (ms <= 0 || ms > 60000) return;
    for (; p; p = p->qnext)
        if (p->op == IK_OP_SEQUENCE && p->rc == 0 && p->nids) {
            struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
            while (nanosleep(&ts, &ts) != 0) {
            }
            return;
        }
}

void ik__pend_drain(uv_async_t *a)
{
    ik__worker *w = a->data;
    pthread_mutex_lock(&w->done_mu);
    ik__pend *p = w->done_head;
    w->done_head = w->done_tail = NULL;
    pthread_mutex_unlock(&w->done_mu);
    test_done_delay(w, p);
    while (p) {
        ik__pend *nx = p->qnext;
        ik__pend_complete(w, p);
        p = nx;
    }
}

void ik__pend_complete(ik__worker *w, ik__pend *p)
{
    in_flight(w, -1);
    ik__conn *c = p->conn;
    if (!c) { /* its connection closed meanwhile: a range committed for it is a gap */
        ik__pend_orphaned(w, p);
        ik__pend_free(p);
        ik__worker_maybe_end(w);
        return;
    }
    p->answer(c, p);
}

int ik__pend_withdraw(ik__worker *w, ik__pend *p)
{
    if (p->op != IK_OP_SEQUENCE || w->stores_closed) return 0;
    if (ik_sequence_cancel(w->srv->seq, p->tag, ik__pend_on_ids, p) != IK_OK) return 0;
    ik__count(&w->m.sequence_withdrawn);
    return 1;
}

void ik__pend_detach(ik__worker *w, ik__pend *p, int why)
{
    p->conn = NULL;
    p->next = NULL;
    p->gone = (uint8_t)why;
    if (!ik__pend_withdraw(w, p)) return;
    in_flight(w, -1);
    ik__pend_free(p);
}

void ik__pend_orphaned(ik__worker *w, ik__pend *p)
{
    if (p->op != IK_OP_SEQUENCE || p->rc != 0 || p->nids == 0) return;
    int why = p->gone > IK_GONE_NO && p->gone < IK_GONE_N ? p->gone : IK_GONE_CLIENT;
    ik__log("tag gap tag=%s first=%lld count=%zu why=%s", p->tag, (long long)p->first, p->nids,
            ik__gone_text[why]);
    ik__gap_add(w->srv, p->tag, ik__gone_label[why], p->nids);
    ik__event_gap(w->srv, p->tag, p->first, (int64_t)p->nids, ik__gone_label[why]);
    p->nids = 0; /* logged and counted once: no later drop of its connection again */
}

void ik__worker_maybe_end(ik__worker *w)
{
    if (!w->draining || w->conns || w->inflight) return;
    atomic_store(&w->drained, 1);
    if (!w->stores_closed) return;
    uv_handle_t *hs[] = {(uv_handle_t *)&w->sweep, (uv_handle_t *)&w->sf_timer,
                         (uv_handle_t *)&w->stop, (uv_handle_t *)&w->done};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (!uv_is_closing(hs[i])) uv_close(hs[i], NULL);
}
