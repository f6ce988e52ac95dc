/* http_routes.c: the HTTP route table (docs/http.md, rows in http_routes.h) and its handlers.
 *
 * ik__dispatch finds the row (ik__route_find: in table order, the hot Leaf routes
 * first). A path that matches a row with another method answers 405 with the Allow
 * header; a path that matches none answers 404.
 *
 * Handlers run on a loop thread, write their body into rs->body (the loop's
 * scratch) and set rs->status/ctype (default 200 text/plain). They never wait for
 * the store: a handler that needs it hands an ik__pend to the library (segment,
 * sequence: the callback on_ids runs on a library thread) or to the thread pool
 * (tags), returns it in rs->pend with the function that renders its answer when it
 * comes back (p->render, beside the handler that routed it: the answer is rendered
 * where the request was routed, and nothing routes it again) (pend.h, "Pending answers"). They
 * never sleep either: a snowflake request the generator asks to wait (one tick, a small step back
 * of the clock, or up to 50 ms for a lease extension) is retried on a timer of its loop
 * (IK_OP_SNOWFLAKE), and they never return an ID the library refused.
 */
#include "http_routes.h"
#include "http_page.h"
#include "http_pool.h"
#include "issue.h"
#include "history.h"
#include "metrics.h"
#include "ready.h"
#include "log.h"
#include "token.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CT_JSON "application/json"
#define CT_TEXT "text/plain"

/* ---- responses ------------------------------------------------------------------------ */

static void put_json_kv_str(ik__buf *b, const char *key, const char *val)
{
    ik__buf_printf(b, "\"%s\":", key);
    ik__buf_append_json_str(b, val, strlen(val));
}

/* At most this much of a client's input is quoted back in an error message. */
#define QUOTE_MAX 40
#define QUOTE(s) (int)((s).n < QUOTE_MAX ? (s).n : QUOTE_MAX), (s).p

/* Answers the generator's refusal rc: 503 for the refusals of docs/guarantees.md promises 10-12 (no
 * lease, clock behind, time guard) and for a time field used up (the clock is past the layout's end
 * date), 500 for anything else. */
static void reply_gen_error(ik__worker *w, ik__http_reply *rs, int rc)
{
    const char *code;
    char msg[400];
    int st = ik__gen_error(w, rc, &code, msg, sizeof msg);
    ik__reply_error(rs, st, code, "%s", msg);
}

/* ---- ID routes ---------------------------------------------------------------------------- */

static int put_ids(ik__http_reply *rs, const int64_t *ids, int64_t first, size_t n, int fmt,
                   int leaf);

/* The answer of a snowflake request that waited in the loop's retry queue. */
static void render_sf(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    if (p->rc != 0)
        reply_gen_error(w, rs, p->rc);
    else
        (void)put_ids(rs, p->ids, 0, p->nids, p->fmt, p->leaf);
}

/* Issues n snowflake IDs into ids now, or leaves the request waiting in w's retry
 * queue (ik__sf_issue) as the answer to come (rs->pend). */
static void sf_issue(ik__ctx *x, uint32_t n, int64_t *ids, int fmt, int leaf)
{
    ik__pend *p;
    int rc = ik__sf_issue(x->w, n, ids, &p);
    if (rc == IK_PENDING) {
        p->fmt = (uint8_t)fmt;
        p->leaf = (uint8_t)leaf;
        p->render = render_sf;
        x->rs->pend = p;
    } else if (rc == IK_OK) {
        (void)put_ids(x->rs, ids, 0, n, fmt, leaf);
    } else {
        reply_gen_error(x->w, x->rs, rc);
    }
}

/* GET /api/snowflake/get/{key}: one decimal ID, text/plain, no newline (Leaf). */
static void h_leaf_snowflake(ik__ctx *x)
{
    int64_t id;
    sf_issue(x, 1, &id, IK_FMT_TEXT, 1);
}

/* The request's query and Accept header, read once (http_query.h). */
static void read_query(const ik__ctx *x, ik__query *q)
{
    const ik__req *rq = x->rq;
    ik__query_read(rq->query.p, rq->query.n, rq->accept.p, rq->accept.n, q);
}

/* The query's count (default 1) into *n; answers 400 and returns -1 if it is not a
 * whole number from 1 to max_batch. */
static int get_count(ik__ctx *x, const ik__query *q, uint32_t *n)
{
    uint32_t max = x->srv->cfg->max_batch;
    *n = 1;
    if (!(q->has & IK_Q_BIT(IK_Q_COUNT))) return 0;
    if (!(q->bad & IK_Q_BIT(IK_Q_COUNT)) && q->count >= 1 && q->count <= max) {
        *n = q->count;
        return 0;
    }
    ik__reply_error(x->rs, 400, "bad_count",
                    "count must be a whole number from 1 to %u (max-batch); got '%.*s'", max,
                    QUOTE(q->raw[IK_Q_COUNT]));
    return -1;
}

/* The response format (format= or Accept, and ids=string|number for JSON);
 * answers 400 and returns -1 for an unknown format= or ids= value. */
static int get_format(ik__ctx *x, const ik__query *q)
{
    if (q->bad & IK_Q_BIT(IK_Q_FORMAT)) {
        ik__reply_error(x->rs, 400, "bad_format", "format must be json or text; got '%.*s'",
                        QUOTE(q->raw[IK_Q_FORMAT]));
        return -1;
    }
    if (q->bad & IK_Q_BIT(IK_Q_IDS)) {
        ik__reply_error(x->rs, 400, "bad_format", "ids must be string or number; got '%.*s'",
                        QUOTE(q->raw[IK_Q_IDS]));
        return -1;
    }
    return q->ids_number && q->fmt == IK_FMT_JSON ? IK_FMT_JSON_NUM : q->fmt;
}

/* The largest ID a JavaScript number holds exactly is 2^53 - 1. */
#define JS_SAFE_MAX ((INT64_C(1) << 53) - 1)

/* Writes n IDs as {"ids":["1","2"]} (IK_FMT_JSON_NUM: {"ids":[1,2]}) or one a line;
 * leaf: the one ID alone, no newline. The IDs are ids[0..n-1], or first, first + 1,
 * ... when ids is NULL. Returns 0, or -1 with 400 answered when numbers were asked
 * for and an ID is above 2^53 - 1 (a JavaScript number would change it). */
static int put_ids(ik__http_reply *rs, const int64_t *ids, int64_t first, size_t n, int fmt,
                   int leaf)
{
    ik__buf *b = rs->body;
#define ID_AT(i) (ids ? ids[i] : first + (int64_t)(i))
    if (fmt == IK_FMT_JSON_NUM && !leaf) {
        for (size_t i = 0; i < n; i++) {
            if (ID_AT(i) <= JS_SAFE_MAX) continue;
            ik__reply_error(rs, 400, "ids_too_large",
                            "ID %lld is above 2^53 - 1, which a JavaScript number cannot hold; "
                            "ask without ids=number (IDs as strings), or use a layout of 53 bits "
                            "or fewer (--layout js53)",
                            (long long)ID_AT(i));
            return -1;
        }
    }
    if (leaf) {
        ik__buf_append_i64(b, ID_AT(0));
        rs->ctype = CT_TEXT;
        return 0;
    }
    if (fmt == IK_FMT_TEXT) {
        ik__buf_reserve(b, n * 21);
        for (size_t i = 0; i < n; i++) {
            ik__buf_append_i64(b, ID_AT(i));
            b->p[b->len++] = '\n';
        }
        rs->ctype = CT_TEXT;
        return 0;
    }
    int quote = fmt != IK_FMT_JSON_NUM;
    ik__buf_reserve(b, 12 + n * 23);
    ik__buf_append(b, "{\"ids\":[", 8);
    for (size_t i = 0; i < n; i++) {
        if (i) b->p[b->len++] = ',';
        if (quote) b->p[b->len++] = '"';
        ik__buf_append_i64(b, ID_AT(i));
        if (quote) b->p[b->len++] = '"';
    }
    ik__buf_append(b, "]}\n", 3);
    rs->ctype = CT_JSON;
    return 0;
#undef ID_AT
}

/* Room for n IDs (ik__ids_scratch); NULL with a 500 answered if it cannot grow. */
static int64_t *ids_scratch(ik__ctx *x, uint32_t n, int64_t *small)
{
    int64_t *ids = ik__ids_scratch(x->w, n, small);
    if (!ids) ik__reply_error(x->rs, 500, "internal", "out of memory");
    return ids;
}

/* GET /v1/snowflake?count=N[&format=text] */
static void h_snowflake(ik__ctx *x)
{
    ik__query q;
    read_query(x, &q);
    uint32_t n;
    if (get_count(x, &q, &n) != 0) return;
    int fmt = get_format(x, &q);
    if (fmt < 0) return;
    int64_t small[64], *ids = ids_scratch(x, n, small);
    if (!ids) return;
    sf_issue(x, n, ids, fmt, 0);
    ik__ids_scratch_trim(x->w);
}

/* ---- segment and sequence ------------------------------------------------------------------ */

/* The tag of {tag} into tag; answers 400 bad_tag and returns -1 if it is not a
 * valid name. */
static int get_tag(ik__ctx *x, char tag[IK_TAG_NAME_MAX + 1])
{
    char why[160];
    if (ik__tag_param(x->rq->params[0], tag, why, sizeof why) == 0) return 0;
    ik__reply_error(x->rs, 400, "bad_tag", "bad tag name '%.*s': %s", QUOTE(x->rq->params[0]), why);
    return -1;
}

static void reply_shutting_down(ik__http_reply *rs)
{
    ik__reply_error(rs, 503, "shutting_down", "this server is shutting down; ask another");
}

/* Answers a segment, sequence or tag error from the library. */
static void reply_store_error(ik__worker *w, ik__http_reply *rs, int op, int rc, const char *tag)
{
    const char *code;
    char msg[400];
    int st = ik__store_error(w, op, rc, tag, &code, msg, sizeof msg);
    ik__reply_error(rs, st, code, "%s", msg);
}

/* The answer of a segment or sequence request that came back from the library. */
static void render_ids(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    if (p->rc != 0) {
        reply_store_error(w, rs, p->op, p->rc, p->tag);
        return;
    }
    ik__issue_count(w, p);
    if (put_ids(rs, p->ids, p->first, p->nids, p->fmt, p->leaf) != 0 &&
        p->op == IK_OP_SEQUENCE) { /* committed, refused: a gap like a client gone */
        p->gone = IK_GONE_TOO_LARGE;
        ik__pend_orphaned(w, p);
    }
}

/* GET /api/segment/get/{tag} (leaf) and /v1/segment/{tag}?count=N: from the blocks
 * at once, or pending while both are empty. */
static void segment_ids(ik__ctx *x, int leaf)
{
    char tag[IK_TAG_NAME_MAX + 1];
    if (get_tag(x, tag) != 0) return;
    uint32_t n = 1;
    int fmt = IK_FMT_TEXT;
    if (!leaf) {
        ik__query q;
        read_query(x, &q);
        if (get_count(x, &q, &n) != 0) return;
        if ((fmt = get_format(x, &q)) < 0) return;
    }
    ik__worker *w = x->w;
    int64_t small[64], *ids = ids_scratch(x, n, small);
    if (!ids) return;
    ik__pend *p;
    int rc = ik__issue(w, IK_OP_SEGMENT, tag, n, ids, &p);
    if (rc == IK_PENDING) {
        p->leaf = (uint8_t)leaf;
        p->fmt = (uint8_t)fmt;
        p->render = render_ids;
        x->rs->pend = p;
        return;
    }
    if (rc == IK_OK) {
        (void)put_ids(x->rs, ids, 0, n, fmt, leaf);
    } else {
        reply_store_error(w, x->rs, IK_OP_SEGMENT, rc, tag);
    }
    ik__ids_scratch_trim(w);
}

static void h_leaf_segment(ik__ctx *x)
{
    segment_ids(x, 1);
}

static void h_segment(ik__ctx *x)
{
    segment_ids(x, 0);
}

/* GET /v1/sequence/{tag}?count=N: always pending (every ID is recorded first). */
static void h_sequence(ik__ctx *x)
{
    char tag[IK_TAG_NAME_MAX + 1];
    if (get_tag(x, tag) != 0) return;
    ik__query q;
    read_query(x, &q);
    uint32_t n;
    if (get_count(x, &q, &n) != 0) return;
    int fmt = get_format(x, &q);
    if (fmt < 0) return;
    ik__worker *w = x->w;
    ik__pend *p;
    int rc = ik__issue(w, IK_OP_SEQUENCE, tag, n, NULL, &p);
    if (rc == IK_PENDING) {
        p->leaf = 0;
        p->fmt = (uint8_t)fmt;
        p->render = render_ids;
        x->rs->pend = p;
        return;
    }
    reply_store_error(w, x->rs, IK_OP_SEQUENCE, rc, tag);
}

/* ---- tags ------------------------------------------------------------------------------------ */

/* One tag as JSON, as `idkeeper tags show --json` prints it: start and max_id are
 * IDs, so strings (JSON numbers lose precision above 2^53); step is a number. */
static void put_tag_json(ik__buf *b, const ik_tag_info *t)
{
    ik__buf_puts(b, "{\"tag\":");
    ik__buf_append_json_str(b, t->name, strlen(t->name));
    ik__buf_printf(b,
                   ",\"kind\":\"%s\",\"start\":\"%lld\",\"step\":%lld,\"max_id\":\"%lld\","
                   "\"update_time_ms\":%lld,\"update_time\":",
                   ik_tag_kind_name(t->kind), (long long)t->start, (long long)t->step,
                   (long long)t->max_id, (long long)t->update_time_ms);
    if (t->update_time_ms) {
        char iso[32];
        ik__fmt_iso8601(iso, t->update_time_ms);
        ik__buf_printf(b, "\"%s\"", iso);
    } else {
        ik__buf_puts(b, "null");
    }
    ik__buf_puts(b, ",\"description\":");
    ik__buf_append_json_str(b, t->description, strlen(t->description));
    ik__buf_puts(b, "}");
}

/* A new ik__pend for a route that calls the store in the thread pool (tags, slots,
 * the page), whose answer render renders, or NULL with 503 answered when this loop
 * has too many there. */
static ik__pend *pool_pend(ik__ctx *x, ik__op op, ik__http_render *render)
{
    ik__pend *p = ik__pool_pend(x->w, op);
    if (!p) {
        ik__reply_error(x->rs, 503, "busy", "too many tag requests in flight; retry shortly");
        return NULL;
    }
    p->render = render;
    return p;
}

/* Hands p's call to the thread pool: its answer comes later (rs->pend); else 500. */
static void pool_queue(ik__ctx *x, ik__pend *p)
{
    int r = ik__pool_queue(x->w, p);
    if (r != 0) {
        ik__reply_error(x->rs, 500, "internal", "cannot queue the tag request: %s", uv_strerror(r));
        return;
    }
    x->rs->pend = p;
}

/* The answer of a tag route that came back. */
static void render_tag(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    ik__pool_call *t = p->pool;
    ik__buf *b = rs->body;
    if (p->op == IK_OP_TAG_CREATE && p->rc == IK_EEXIST) {
        if (t->have_info)
            ik__reply_error(rs, 409, "tag_exists",
                            "tag '%s' exists already (a %s tag, start %lld); nothing changed",
                            p->tag, ik_tag_kind_name(t->info.kind), (long long)t->info.start);
        else
            ik__reply_error(rs, 409, "tag_exists", "tag '%s' exists already; nothing changed",
                            p->tag);
        return;
    }
    if (p->op == IK_OP_TAG_CREATE && p->rc == IK_EINVAL) {
        ik__reply_error(rs, 400, "bad_request", "%s", t->why[0] ? t->why : ik_strerror(p->rc));
        return;
    }
    if (p->rc != 0) {
        if (p->op == IK_OP_TAG_CREATE && p->rc == IK_ESTORE && t->why[0]) {
            ik__count(&w->m.store_errors[IK_STORE_OP_TAGS]);
            ik__reply_error(rs, 503, "store_unavailable", "%s", t->why);
            return;
        }
        reply_store_error(w, rs, p->op, p->rc, p->tag);
        return;
    }
    rs->ctype = CT_JSON;
    switch (p->op) {
    case IK_OP_TAG_CREATE:
        if (!t->have_info) { /* created, but the read-back failed: what we asked for */
            memset(&t->info, 0, sizeof t->info);
            memcpy(t->info.name, t->body.tag, strlen(t->body.tag) + 1);
            t->info.kind = t->body.kind;
            t->info.start = t->info.max_id = t->body.start;
            t->info.step = t->body.step;
            memcpy(t->info.description, t->body.description, sizeof t->info.description);
        }
        rs->status = 201;
        ik__reply_header(rs, "Location: /v1/tags/%s", t->info.name);
        put_tag_json(b, &t->info);
        ik__buf_puts(b, "\n");
        break;
    case IK_OP_TAG_GET:
        put_tag_json(b, &t->info);
        ik__buf_puts(b, "\n");
        break;
    default:
        ik__buf_puts(b, "{");
        put_json_kv_str(b, "backend", ik_coord_uri(w->srv->coord));
        ik__buf_puts(b, ",");
        put_json_kv_str(b, "app", w->srv->cfg->app);
        ik__buf_puts(b, ",\"tags\":[");
        for (size_t i = 0; i < t->nlist; i++) {
            if (i) ik__buf_puts(b, ",");
            put_tag_json(b, &t->list[i]);
        }
        ik__buf_puts(b, "]}\n");
        break;
    }
}

/* POST /v1/tags {"tag","kind","start","step","description"}: 201 and the tag. */
static void h_tag_create(ik__ctx *x)
{
    ik__tag_body body;
    const char *code;
    char why[256];
    const ik__span *b = &x->rq->body;
    if (ik__tag_body_parse(b->p ? b->p : "", b->n, &body, &code, why, sizeof why) != 0) {
        ik__reply_error(x->rs, 400, code, "%s", why);
        return;
    }
    ik__pend *p = pool_pend(x, IK_OP_TAG_CREATE, render_tag);
    if (!p) return;
    p->pool->body = body;
    memcpy(p->tag, body.tag, strlen(body.tag) + 1);
    pool_queue(x, p);
}

/* GET /v1/tags/{tag} */
static void h_tag_get(ik__ctx *x)
{
    char tag[IK_TAG_NAME_MAX + 1];
    if (get_tag(x, tag) != 0) return;
    ik__pend *p = pool_pend(x, IK_OP_TAG_GET, render_tag);
    if (!p) return;
    memcpy(p->tag, tag, strlen(tag) + 1);
    pool_queue(x, p);
}

/* GET /v1/tags */
static void h_tag_list(ik__ctx *x)
{
    ik__pend *p = pool_pend(x, IK_OP_TAG_LIST, render_tag);
    if (p) pool_queue(x, p);
}

/* The answer of GET /v1/workers: the slots as http_page.c renders them, or why they
 * could not be listed. */
static void render_workers(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    if (p->rc == IK_ECLOSED) {
        reply_shutting_down(rs);
    } else if (p->rc != 0) {
        ik__count(&w->m.store_errors[IK_STORE_OP_TAGS]);
        ik__reply_error(rs, 503, "store_unavailable",
                        "the app's slots cannot be listed now (%s); retry shortly",
                        ik_strerror(p->rc));
    } else {
        ik__workers_render(w, p, rs);
    }
}

/* GET /v1/workers: the app's slots, listed in the thread pool. */
static void h_workers(ik__ctx *x)
{
    ik__pend *p = pool_pend(x, IK_OP_WORKERS, render_workers);
    if (p) pool_queue(x, p);
}

/* The answer of GET /v1/semaphores: the leases as http_page.c renders them (each
 * semaphore's row says why where it could not be listed). */
static void render_semaphores(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    if (p->rc == IK_ECLOSED)
        reply_shutting_down(rs);
    else
        ik__semaphores_render(w, p, rs);
}

/* GET /v1/semaphores: the leases of the semaphores this server shows, listed in the
 * thread pool. */
static void h_semaphores(ik__ctx *x)
{
    ik__pend *p = pool_pend(x, IK_OP_SEMAPHORES, render_semaphores);
    if (p) pool_queue(x, p);
}

/* GET /[?decode=ID]: the status page, once the thread pool has listed the app's
 * slots and tags (http_page.c renders; docs/http.md, "The status page"). */
static void render_page(ik__worker *w, ik__pend *p, ik__http_reply *rs)
{
    ik__page_render(w, p, rs);
}

static void h_page(ik__ctx *x)
{
    ik__pend *p = pool_pend(x, IK_OP_PAGE, render_page);
    if (!p) return;
    ik__query q; /* decode=: shown (escaped) as it came, cut, where it does not decode */
    read_query(x, &q);
    _Static_assert(sizeof p->pool->decode == sizeof q.decode, "decode= fits the page's call");
    memcpy(p->pool->decode, q.decode, sizeof q.decode);
    pool_queue(x, p);
}

/* GET /v1/decode/{id} */
static void h_decode(ik__ctx *x)
{
    ik__span s = x->rq->params[0];
    int64_t id;
    ik_id_parts parts;
    if (ik_parse_id(s.p, s.n, &id) != 0) {
        ik__reply_error(x->rs, 400, "bad_id",
                        "'%.*s' is not an ID: want a decimal integer from 0 to "
                        "9223372036854775807 without sign or leading zeros",
                        QUOTE(s));
        return;
    }
    if (ik_layout_decode(x->srv->layout, id, &parts) != 0) {
        const ik_layout *l = x->srv->layout;
        ik__reply_error(x->rs, 400, "bad_id",
                        "'%.*s' is not an ID of this server's layout: it has bits set above "
                        "the layout's %u",
                        QUOTE(s), l->time_bits + l->worker_bits + l->seq_bits);
        return;
    }
    char iso[32];
    ik__fmt_iso8601(iso, parts.time_ms);
    ik__buf *b = x->rs->body;
    ik__buf_printf(b,
                   "{\"id\":\"%lld\",\"time_ms\":%lld,\"time\":\"%s\",\"worker\":%u,"
                   "\"sequence\":%u,\"ticks\":%llu}\n",
                   (long long)parts.id, (long long)parts.time_ms, iso, parts.worker, parts.sequence,
                   (unsigned long long)parts.ticks);
    x->rs->ctype = CT_JSON;
}

/* ---- state routes -------------------------------------------------------------------------- */

/* GET /healthz: the process serves. */
static void h_healthz(ik__ctx *x)
{
    ik__buf_puts(x->rs->body, "{\"status\":\"ok\"}\n");
    x->rs->ctype = CT_JSON;
}

/* GET /readyz: 200 only if a snowflake ID can be issued now. */
static void h_readyz(ik__ctx *x)
{
    char why[256];
    if (ik__not_ready(x->srv, why, sizeof why)) {
        ik__reply_error(x->rs, 503, "not_ready", "%s", why);
        return;
    }
    ik_snowflake_info gi;
    ik_snowflake_get_info(x->srv->gen, &gi);
    ik__buf_printf(x->rs->body, "{\"status\":\"ready\",\"worker\":%u}\n", gi.worker);
    x->rs->ctype = CT_JSON;
}

/* The segment tags in use on this server and their blocks, as JSON objects. */
static void put_segment_tags(ik__ctx *x)
{
    ik_segment_tag_status *st = NULL;
    size_t n = 0;
    if (x->w->stores_closed || ik_segment_status(x->srv->seg, &st, &n) != 0) return;
    ik__buf *b = x->rs->body;
    for (size_t i = 0; i < n; i++) {
        const ik_segment_tag_status *t = &st[i];
        ik__buf_puts(b, i ? ",{\"tag\":" : "{\"tag\":");
        ik__buf_append_json_str(b, t->name, strlen(t->name));
        ik__buf_printf(b,
                       ",\"kind\":\"segment\",\"current\":{\"next\":\"%lld\",\"end\":\"%lld\"},"
                       "\"next_block\":",
                       (long long)t->cur_next, (long long)t->cur_end);
        if (t->next_end > t->next_start)
            ik__buf_printf(b, "{\"start\":\"%lld\",\"end\":\"%lld\"}", (long long)t->next_start,
                           (long long)t->next_end);
        else
            ik__buf_puts(b, "null");
        ik__buf_printf(b, ",\"step\":%lld,\"loading\":%s,\"issued\":%llu,", (long long)t->step,
                       t->loading ? "true" : "false", (unsigned long long)t->issued);
        put_json_kv_str(b, "last_error", t->last_error);
        ik__buf_puts(b, "}");
    }
    ik_free(st);
}

/* "store":{"safe":B,"why":"...","hazards":[{"check","value","verdict","fix"},...]},
 * the verdicts of the store's latest hazard checks (docs/hazards.md); no I/O. */
static void put_store_hazards(ik__buf *b, ik_coord *coord)
{
    ik_hazard *rows = NULL;
    size_t n = 0;
    char why[300] = "";
    int unsafe = ik_coord_hazards(coord, &rows, &n, why, sizeof why) == IK_EUNSAFE;
    ik__buf_printf(b, "\"store\":{\"safe\":%s,", unsafe ? "false" : "true");
    put_json_kv_str(b, "why", why);
    ik__buf_puts(b, ",\"hazards\":[");
    for (size_t i = 0; i < n; i++) {
        ik__buf_puts(b, i ? ",{" : "{");
        put_json_kv_str(b, "check", rows[i].check);
        ik__buf_puts(b, ",");
        put_json_kv_str(b, "value", rows[i].value);
        ik__buf_puts(b, ",");
        put_json_kv_str(b, "verdict", ik_verdict_name(rows[i].verdict));
        ik__buf_puts(b, ",");
        put_json_kv_str(b, "fix", rows[i].fix);
        ik__buf_puts(b, "}");
    }
    ik__buf_puts(b, "]},");
    ik_free(rows);
}

/* GET /v1/status: what this server is and how it is doing. */
static void h_status(ik__ctx *x)
{
    ik__server *srv = x->srv;
    const ik_server_config *cfg = srv->cfg;
    ik_lease_info li;
    ik_snowflake_info gi;
    ik__lease_info(srv, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    int64_t now = ik__now_ms();
    char why[256], since[32], record[32], started[32];
    int ready = !ik__not_ready(srv, why, sizeof why);
    ik__fmt_iso8601(since, li.since_ms);
    ik__fmt_iso8601(record, li.record_ms);
    ik__fmt_iso8601(started, srv->started_ms);
    int64_t valid_ms = gi.valid_until_mono_ns == IK_FOREVER
                           ? -1
                           : (gi.valid_until_mono_ns - ik__boot_ns()) / 1000000;

    ik__buf *b = x->rs->body;
    ik__buf_puts(b, "{");
    put_json_kv_str(b, "version", ik_version());
    ik__buf_puts(b, ",");
    put_json_kv_str(b, "app", cfg->app);
    ik__buf_puts(b, ",");
    put_json_kv_str(b, "identity", srv->identity);
    ik__buf_puts(b, ",");
    put_json_kv_str(b, "backend", ik_coord_uri(srv->coord));
    ik__buf_puts(b, ",");
    put_json_kv_str(b, "layout", srv->layout_text);
    char layout_end[32];
    ik__fmt_iso8601(layout_end, ik_layout_end_ms(srv->layout));
    ik__buf_printf(b, ",\"layout_end\":\"%s\"", layout_end);
    ik__buf_printf(b, ",\"worker\":%d,\"slot\":%d,\"ready\":%s,", li.worker, li.worker,
                   ready ? "true" : "false");
    put_json_kv_str(b, "not_ready_reason", ready ? "" : why);
    ik__buf_puts(b, ",\"lease\":{");
    put_json_kv_str(b, "state", ik_lease_state_name(li.state));
    ik__buf_printf(b, ",\"worker\":%d,\"valid_for_ms\":%lld,", li.worker,
                   (long long)li.valid_for_ms);
    put_json_kv_str(b, "session", li.session);
    ik__buf_printf(b,
                   ",\"since_ms\":%lld,\"since\":\"%s\",\"record_ms\":%lld,\"record\":\"%s\","
                   "\"acquisitions\":%llu,",
                   (long long)li.since_ms, since, (long long)li.record_ms, record,
                   (unsigned long long)li.acquisitions);
    put_json_kv_str(b, "why", li.why);
    int64_t proof_ms = ik__lease_proof_ms(srv);
    char proof[32];
    ik__fmt_iso8601(proof, proof_ms);
    ik__buf_printf(b, ",\"proven_ms\":%lld,\"proven\":\"%s\"", (long long)proof_ms,
                   proof_ms ? proof : "");
    uint32_t range_slots;
    int range_held;
    int64_t range_at;
    ik__range_use(srv, &range_slots, &range_held, &range_at);
    ik__buf_printf(b,
                   "},\"worker_range\":{\"min\":%u,\"max\":%u,\"slots\":%u,\"held\":%d,"
                   "\"listed_ms\":%lld",
                   srv->layout->worker_min, srv->layout->worker_max, range_slots, range_held,
                   (long long)range_at);
    ik__buf_printf(b,
                   "},\"clock\":{\"now_ms\":%lld,\"max_backward_ms\":%lld,"
                   "\"last_backward_ms\":%lld,\"tick_waits\":%llu,\"backward_waits\":%llu,"
                   "\"backward_refusals\":%llu},",
                   (long long)now, (long long)cfg->max_backward_ms, (long long)gi.last_backward_ms,
                   (unsigned long long)gi.tick_waits, (unsigned long long)gi.backward_waits,
                   (unsigned long long)gi.backward_refusals);
    ik__buf_printf(b,
                   "\"generator\":{\"granted\":%s,\"worker\":%u,\"floor_tick\":%llu,"
                   "\"ceiling_tick\":%llu,\"last_tick\":%llu,\"issued\":%llu,"
                   "\"valid_for_ms\":%lld},",
                   gi.granted ? "true" : "false", gi.worker, (unsigned long long)gi.floor_tick,
                   (unsigned long long)gi.ceiling_tick, (unsigned long long)gi.last_tick,
                   (unsigned long long)gi.issued, (long long)valid_ms);
    ik__buf_puts(b, "\"http\":{");
    put_json_kv_str(b, "listen", srv->listen_text);
    ik__buf_printf(b, ",\"threads\":%d,\"connections\":%d,\"max_batch\":%u},", srv->nworkers,
                   atomic_load_explicit(&srv->connections, memory_order_relaxed), cfg->max_batch);
    put_store_hazards(b, srv->coord);
    ik__buf_printf(b, "\"started\":\"%s\",\"uptime_s\":%lld,\"tags\":[", started,
                   (long long)((now - srv->started_ms) / 1000));
    put_segment_tags(x);
    ik__buf_puts(b, "]}\n");
    x->rs->ctype = CT_JSON;
}

/* GET /v1/history[?seconds=N]: IDs a second over the last N seconds (1..600, default
 * 600), from the recent past the daemon keeps (history.c). */
static void h_history(ik__ctx *x)
{
    ik__query q;
    read_query(x, &q);
    uint32_t seconds = IK_HIST_SECONDS;
    if (q.has & IK_Q_BIT(IK_Q_SECONDS)) {
        seconds = q.seconds;
        if ((q.bad & IK_Q_BIT(IK_Q_SECONDS)) || seconds < 1 || seconds > IK_HIST_SECONDS) {
            ik__reply_error(x->rs, 400, "bad_seconds",
                            "seconds must be a whole number from 1 to %d; got '%.*s'",
                            IK_HIST_SECONDS, QUOTE(q.raw[IK_Q_SECONDS]));
            return;
        }
    }
    ik__history_render(x->srv, (int)seconds, x->rs->body);
    x->rs->ctype = CT_JSON;
}

/* GET /v1/events: the last events, newest first (history.c). */
static void h_events(ik__ctx *x)
{
    ik__events_render(x->srv, x->rs->body);
    x->rs->ctype = CT_JSON;
}

/* GET /metrics: Prometheus text format. */
static void h_metrics(ik__ctx *x)
{
    char why[256];
    ik__metrics_render(x->srv, !ik__not_ready(x->srv, why, sizeof why), x->rs->body);
    x->rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

static void h_routes(ik__ctx *x);
static int needs_token(const ik__server *srv, unsigned flags);

/* ---- the table --------------------------------------------------------------------------- */

#define ROUTE_KEY(m, p, h, f, help) {m, p},
#define ROUTE_ROW(m, p, h, f, help) {h, f, help},
const ik__route_key ik__route_keys[] = {IK_ROUTE_TABLE(ROUTE_KEY)};
const ik__route ik__routes[] = {IK_ROUTE_TABLE(ROUTE_ROW)};
const size_t ik__nroutes = sizeof ik__routes / sizeof ik__routes[0];

_Static_assert(sizeof ik__routes / sizeof ik__routes[0] < IK_N_ROUTES_MAX,
               "IK_N_ROUTES_MAX too small for the route table");

/* GET /v1/routes: the route table, one line each. */
static void h_routes(ik__ctx *x)
{
    ik__buf *b = x->rs->body;
    ik__buf_printf(b, "idkeeper %s: HTTP routes\n\n", ik_version());
    for (size_t i = 0; i < ik__nroutes; i++) {
        const ik__route_key *k = &ik__route_keys[i];
        const ik__route *r = &ik__routes[i];
        ik__buf_printf(b, "%-4s %-26s %s%s\n", ik__http_method_name(k->method), k->pattern, r->help,
                       needs_token(x->srv, r->flags) ? " [token]" : "");
    }
}

/* 1 if a route with these flags needs the token on this server. */
static int needs_token(const ik__server *srv, unsigned flags)
{
    if (!(flags & IK_ROUTE_AUTH) || !srv->token) return 0;
    if ((flags & IK_ROUTE_LEAF) && srv->cfg->open_leaf_routes) return 0;
    if ((flags & IK_ROUTE_METRICS) && srv->cfg->open_metrics) return 0;
    return 1;
}

/* 1 if the request carries the token: "Authorization: Bearer <token>", or, for a
 * browser that cannot set headers, "Authorization: Basic <base64 of USER:token>"
 * (any user name). */
static int authorized(const ik__server *srv, const ik__req *rq)
{
    const char *a = rq->auth.p;
    size_t n = rq->auth.n;
    while (n && (a[n - 1] == ' ' || a[n - 1] == '\t'))
        n--;
    if (n > 7 && ik__ieq(a, 6, "bearer") && a[6] == ' ') {
        a += 7, n -= 7;
        while (n && *a == ' ')
            a++, n--;
        return ik__ct_equal(a, n, srv->token, srv->token_len);
    }
    if (n > 6 && ik__ieq(a, 5, "basic") && a[5] == ' ') {
        char plain[768];
        a += 6, n -= 6;
        while (n && *a == ' ')
            a++, n--;
        long pl = ik__base64_decode(a, n, plain, sizeof plain);
        const char *colon = pl > 0 ? memchr(plain, ':', (size_t)pl) : NULL;
        if (!colon) return 0;
        size_t off = (size_t)(colon + 1 - plain);
        return ik__ct_equal(colon + 1, (size_t)pl - off, srv->token, srv->token_len);
    }
    return 0;
}

size_t ik__dispatch(ik__worker *w, ik__req *rq, ik__http_reply *rs)
{
    ik__ctx x = {w->srv, w, rq, rs};
    uint64_t allow;
    size_t first;
    int np;
    size_t i = ik__route_find(ik__route_keys, ik__nroutes, rq->method, rq->path.p, rq->path.n,
                              rq->params, &np, &allow, &first);
    if (i < ik__nroutes) {
        const ik__route *r = &ik__routes[i];
        rq->nparams = np;
        if (needs_token(w->srv, r->flags) && !authorized(w->srv, rq)) {
            ik__reply_error(rs, 401, "unauthorized",
                            "this route needs the header 'Authorization: Bearer <token>' "
                            "(the token in the server's http-token-file)");
            if (r->flags & IK_ROUTE_PAGE) /* browsers prompt for Basic; the token is the password */
                ik__reply_header(rs,
                                 "WWW-Authenticate: Basic realm=\"idkeeper\", charset=\"UTF-8\"");
            else
                ik__reply_header(rs, "WWW-Authenticate: Bearer realm=\"idkeeper\"");
            return i;
        }
        r->fn(&x);
        return i;
    }
    if (allow) {
        char list[96];
        size_t len = 0;
        list[0] = 0;
        for (unsigned m = 0; m < 64; m++) {
            if (!(allow & (UINT64_C(1) << m))) continue;
            int n = snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                             ik__http_method_name(m));
            if (n > 0 && (size_t)n < sizeof list - len) len += (size_t)n;
        }
        ik__reply_error(rs, 405, "method_not_allowed", "%s is not allowed here; use %s",
                        ik__http_method_name(rq->method), list);
        ik__reply_header(rs, "Allow: %s", list);
        return first;
    }
    ik__reply_error(rs, 404, "not_found", "no route %s %.*s; GET / lists the routes",
                    ik__http_method_name(rq->method), QUOTE(rq->path));
    return ik__nroutes;
}
