/* issue.c: what the two front doors (HTTP http_routes.c, RESP resp_cmds.c) share below
 * them: issuing N segment or sequence IDs of a tag, answered now or later, and the
 * words for the library's refusals. Neither front door calls the other.
 *
 * An issue either answers at once (segment IDs from a block in memory) or hands an
 * ik__pend to the library, whose callback (ik__pend_on_ids, a library thread) copies
 * the answer in and posts it back to the loop (pend.h). The caller says how to
 * render it and queues it on its connection in request order; its connection's
 * protocol renders it when it comes back.
 *
 * Below both front doors, above the pending answers (pend.c): it calls neither
 * front door, nor the connection core.
 */
#include "issue.h"
#include "history.h"
#include "log.h"
#include "ready.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t *ik__ids_scratch(ik__worker *w, uint32_t n, int64_t *small)
{
    if (n <= 64) return small;
    if (w->ids_cap < n) {
        int64_t *p = realloc(w->ids, (size_t)n * sizeof *p);
        if (!p) return NULL;
        w->ids = p;
        w->ids_cap = n;
    }
    return w->ids;
}

void ik__ids_scratch_trim(ik__worker *w)
{
    if (w->ids_cap > 65536) {
        free(w->ids);
        w->ids = NULL;
        w->ids_cap = 0;
    }
}

/* The ik__pend for the next allocator call: the loop's spare, or a new one. */
static ik__pend *pend_get(ik__worker *w, ik__op op)
{
    ik__pend *p = w->spare ? w->spare : ik__pend_new(w);
    w->spare = NULL;
    p->op = (uint8_t)op;
    return p;
}

/* p was not taken (the call answered at once or failed): keep it for the next. */
static void pend_unused(ik__worker *w, ik__pend *p)
{
    if (!w->spare) {
        memset(p, 0, offsetof(ik__pend, out));
        p->w = w;
        w->spare = p;
    } else {
        ik__pend_free(p);
    }
}

int ik__issue_into(ik__worker *w, ik__pend *p, ik__op op, int64_t *ids)
{
    ik__server *srv = w->srv;
    if (w->stores_closed) return IK_ECLOSED;
    p->op = (uint8_t)op;
    p->rc = 0;
    if (op == IK_OP_SEQUENCE) return ik_sequence_next(srv->seq, p->tag, p->n, ik__pend_on_ids, p);
    int rc = ik_segment_next(srv->seg, p->tag, p->n, ids, ik__pend_on_ids, p);
    if (rc == IK_OK) ik__count_n(&w->m.segment_ids, p->n);
    return rc;
}

void ik__issue_count(ik__worker *w, const ik__pend *p)
{
    if (p->op == IK_OP_SEQUENCE) {
        ik__count_n(&w->m.sequence_ids, p->nids);
        ik__count(&w->m.sequence_ranges);
        ik__history_add(w->srv, p->tag, p->nids);
    } else {
        ik__count_n(&w->m.segment_ids, p->nids);
    }
}

int ik__issue(ik__worker *w, ik__op op, const char *tag, uint32_t n, int64_t *ids, ik__pend **pend)
{
    *pend = NULL;
    if (w->stores_closed) return IK_ECLOSED;
    ik__pend *p = pend_get(w, op);
    p->n = n;
    size_t tl = strlen(tag);
    if (tl > IK_TAG_NAME_MAX) tl = IK_TAG_NAME_MAX;
    memcpy(p->tag, tag, tl);
    p->tag[tl] = 0;
    int rc = ik__issue_into(w, p, op, ids);
    if (rc == IK_PENDING) {
        ik__pend_submitted(w);
        *pend = p;
        return rc;
    }
    pend_unused(w, p);
    return rc;
}

/* ---- snowflake requests that must wait -----------------------------------------------------
 * The generator never sleeps on a loop (ik_snowflake_try_next_n): a request it asks
 * to retry (IK_AGAIN: the tick used up, the clock a little behind, the ceiling not
 * yet extended) becomes an IK_OP_SNOWFLAKE ik__pend on w->sf_head, retried by one
 * timer per loop, and answered like any pending answer, on either front door. */

static void on_sf_timer(uv_timer_t *t);

/* Makes w's retry timer fire within wait_ns (whole ms, at least 1). */
static void sf_arm(ik__worker *w, int64_t wait_ns)
{
    uint64_t ms = wait_ns <= 1000000 ? 1 : (uint64_t)((wait_ns + 999999) / 1000000);
    if (uv_is_active((uv_handle_t *)&w->sf_timer) && uv_timer_get_due_in(&w->sf_timer) <= ms)
        return;
    uv_timer_start(&w->sf_timer, on_sf_timer, ms, 0);
}

/* Loop thread: retries the waiting snowflake requests in arrival order, answering
 * each that is done, up to the first that must wait again: none overtakes an
 * earlier one, so the answers of a loop (a pipelining client's included) carry
 * increasing IDs. */
static void on_sf_timer(uv_timer_t *t)
{
    ik__worker *w = t->data;
    ik__pend *p;
    while ((p = w->sf_head)) {
        int rc = p->conn ? ik_snowflake_try_next_n(w->srv->gen, p->n, p->ids, &p->sf) : IK_ECLOSED;
        if (rc == IK_AGAIN) {
            sf_arm(w, p->sf.wait_ns);
            return;
        }
        w->sf_head = p->qnext;
        if (!w->sf_head) w->sf_tail = NULL;
        p->rc = rc;
        p->nids = rc == 0 ? p->n : 0;
        ik__pend_complete(w, p); /* may dispatch more requests: they queue behind */
    }
}

int ik__sf_issue(ik__worker *w, uint32_t n, int64_t *ids, ik__pend **pend)
{
    ik_snowflake_try st;
    memset(&st, 0, sizeof st);
    *pend = NULL;
    int rc = IK_AGAIN;
    if (!w->sf_head) {
        rc = ik_snowflake_try_next_n(w->srv->gen, n, ids, &st);
    } else { /* behind others: its 50 ms for the ceiling count from now */
        const ik_clock *c = ik_clock_system();
        st.ceiling_since_ns = c->mono_ns(c->ctx);
        st.wait_ns = 1000000;
    }
    if (rc != IK_AGAIN) return rc;
    ik__pend *p = ik__pend_new(w);
    p->op = IK_OP_SNOWFLAKE;
    p->n = n;
    p->sf = st;
    p->ids = n <= sizeof p->ids_inline / sizeof p->ids_inline[0] ? p->ids_inline
                                                                 : ik__xmalloc(n * sizeof *p->ids);
    memcpy(p->ids, ids, st.done * sizeof *ids);
    /* behind the waiting ones: none overtakes an earlier request of this loop */
    p->qnext = NULL;
    if (w->sf_tail)
        w->sf_tail->qnext = p;
    else
        w->sf_head = p;
    w->sf_tail = p;
    ik__pend_submitted(w);
    sf_arm(w, st.wait_ns);
    *pend = p;
    return IK_PENDING;
}

/* ---- the library's refusals -------------------------------------------------------------- */

static const char *op_kind(int op)
{
    return op == IK_OP_SEQUENCE ? "sequence" : "segment";
}

int ik__gen_error(ik__worker *w, int rc, const char **code, char *msg, size_t len)
{
    ik__server *srv = w->srv;
    switch (rc) {
    case IK_ENOLEASE: {
        ik_lease_info li;
        ik__lease_info(srv, &li);
        *code = "no_lease";
        snprintf(msg, len,
                 "this server holds no valid worker lease now (lease %s%s%s); retry "
                 "shortly or ask another server",
                 ik_lease_state_name(li.state), li.why[0] ? ": " : "", li.why);
        return 503;
    }
    case IK_ECLOCKBACK: {
        ik_snowflake_info gi;
        ik_snowflake_get_info(srv->gen, &gi);
        *code = "clock_backward";
        snprintf(msg, len,
                 "clock went back %lld ms; refusing until it catches up "
                 "(max-backward is %lld ms)",
                 (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms);
        uint64_t now = uv_now(&w->loop);
        if (!w->last_clock_log || now - w->last_clock_log >= 1000) {
            w->last_clock_log = now;
            ik__log("refusing IDs: the clock went back %lld ms (max-backward %lld ms)",
                    (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms);
        }
        return 503;
    }
    case IK_ETIMEGUARD:
        *code = "time_guard";
        snprintf(msg, len,
                 "the clock has not yet passed this worker slot's time record (docs/guarantees.md "
                 "promise 11); retry in a moment");
        return 503;
    case IK_ERANGE:
        *code = "layout_exhausted";
        ik__layout_end_why(srv, msg, len);
        return 503;
    default:
        *code = "internal";
        snprintf(msg, len, "the generator failed: %s", ik_strerror(rc));
        return 500;
    }
}

/* The store's words for the last failed advance of tag (ik_tag_last_error): 1 and
 * words, or 0 (not an advance, or nothing said). */
static int store_words(ik__worker *w, int op, const char *tag, char *words, size_t len)
{
    if (op != IK_OP_SEGMENT && op != IK_OP_SEQUENCE) return 0;
    return ik_tag_last_error(w->srv->coord, w->srv->cfg->app, tag, words, len) > 0;
}

int ik__store_error(ik__worker *w, int op, int rc, const char *tag, const char **code, char *msg,
                    size_t len)
{
    char words[300];
    int store_op = op == IK_OP_SEGMENT    ? IK_STORE_OP_SEGMENT
                   : op == IK_OP_SEQUENCE ? IK_STORE_OP_SEQUENCE
                                          : IK_STORE_OP_TAGS;
    switch (rc) {
    case IK_ENOTFOUND:
        *code = "unknown_tag";
        snprintf(msg, len,
                 "no %s tag '%s': create it first (POST /v1/tags, or idkeeper tags add "
                 "%s --kind %s)",
                 op == IK_OP_TAG_GET ? "such" : op_kind(op), tag, tag,
                 op == IK_OP_TAG_GET ? "..." : op_kind(op));
        return 404;
    case IK_EKIND:
        *code = "wrong_kind";
        snprintf(msg, len, "tag '%s' is not a %s tag: ask /v1/%s/%s", tag, op_kind(op),
                 op == IK_OP_SEQUENCE ? "segment" : "sequence", tag);
        return 409;
    case IK_ESTORE:
    case IK_ETIMEDOUT:
        ik__count(&w->m.store_errors[store_op]);
        *code = "store_unavailable";
        if (store_words(w, op, tag, words, sizeof words))
            snprintf(msg, len, "the tag store did not take the write: %s; retry once that is fixed",
                     words);
        else
            snprintf(msg, len, "the tag store is unreachable or timed out (%s); retry shortly",
                     ik_strerror(rc));
        return 503;
    case IK_EINDOUBT:
        ik__count(&w->m.store_errors[store_op]);
        *code = "store_unavailable";
        if (store_words(w, op, tag, words, sizeof words))
            snprintf(msg, len,
                     "the tag store may or may not have recorded this write, or it did and "
                     "cannot be trusted: %s; its IDs are never handed out; retry",
                     words);
        else
            snprintf(msg, len,
                     "the tag store may or may not have recorded this write (its answer was "
                     "lost); its IDs are never handed out; retry");
        return 503;
    case IK_EUNSAFE: {
        ik__count(&w->m.store_errors[store_op]);
        *code = "store_unsafe";
        char hz[300] = "";
        ik_coord_hazards(w->srv->coord, NULL, NULL, hz, sizeof hz);
        snprintf(msg, len,
                 "the tag store's settings can lose an acknowledged write now, so nothing is "
                 "written: %s (docs/hazards.md); retry once it is fixed",
                 hz[0] ? hz : "a store hazard");
        return 503;
    }
    case IK_EBUSY:
        *code = "busy";
        snprintf(msg, len, "too many unknown tags are being looked up at once; retry shortly");
        return 503;
    case IK_ECLOSED:
        *code = "shutting_down";
        snprintf(msg, len, "this server is shutting down; ask another");
        return 503;
    case IK_ERANGE:
        *code = "tag_exhausted";
        snprintf(msg, len, "tag '%s' has no IDs left below 2^63", tag);
        return 500;
    case IK_EINVAL:
        *code = "bad_request";
        snprintf(msg, len, "the library refused the request: %s", ik_strerror(rc));
        return 400;
    default:
        if (rc < 0 && rc > -4096) { /* the store's own system error: local:'s full disk */
            ik__count(&w->m.store_errors[store_op]);
            *code = "store_unavailable";
            snprintf(msg, len,
                     "the tag store failed: %s; nothing was recorded (the server's log names the "
                     "file); retry once it is fixed",
                     ik_strerror(rc));
            return 503;
        }
        *code = "internal";
        snprintf(msg, len, "%s: %s", op_kind(op), ik_strerror(rc));
        return 500;
    }
}
