/* routes.c: the HTTP route table (SPEC 4) and its handlers.
 *
 * One row per route: method, path pattern, handler, flags, help (shown by GET /).
 * ik__dispatch walks the table in order; the hot Leaf route comes first. A path
 * that matches a row with another method answers 405 with the Allow header; a path
 * that matches none answers 404.
 *
 * Handlers run on a loop thread, write their body into rs->body (the loop's
 * scratch) and set rs->status/ctype (default 200 text/plain). They must not block
 * beyond what the generator does (at most one tick, or 50 ms waiting for a lease
 * extension), and they never return an ID the generator refused.
 */
#include "srv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CT_JSON "application/json"
#define CT_TEXT "text/plain"

/* ---- responses ------------------------------------------------------------------------ */

void ik__resp_header(ik__resp *rs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = sizeof rs->extra - rs->extra_len;
    int n = vsnprintf(rs->extra + rs->extra_len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n + 2 >= room) { /* does not fit: drop it whole */
        rs->extra[rs->extra_len] = 0;
        return;
    }
    rs->extra_len += (size_t)n;
    memcpy(rs->extra + rs->extra_len, "\r\n", 2);
    rs->extra_len += 2;
}

void ik__reply_error(ik__resp *rs, int status, const char *code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    if ((size_t)n >= sizeof msg) n = sizeof msg - 1;
    rs->status = status;
    rs->ctype = CT_JSON;
    rs->body->len = 0;
    ik__buf_puts(rs->body, "{\"error\":");
    ik__buf_append_json_str(rs->body, code, strlen(code));
    ik__buf_puts(rs->body, ",\"message\":");
    ik__buf_append_json_str(rs->body, msg, (size_t)n);
    ik__buf_puts(rs->body, "}\n");
    if (status == 503) ik__resp_header(rs, "Retry-After: 1");
}

/* At most this much of a client's input is quoted back in an error message. */
#define QUOTE_MAX 40
#define QUOTE(s) (int)((s).n < QUOTE_MAX ? (s).n : QUOTE_MAX), (s).p

/* Answers the generator's refusal rc: 503 for the refusals of SPEC 3 (no lease,
 * clock behind, time guard), 500 for anything else. */
static void reply_gen_error(ik__ctx *x, int rc)
{
    ik__server *srv = x->srv;
    switch (rc) {
    case IK_ENOLEASE: {
        ik_lease_info li;
        ik_slot_lease_get_info(srv->lease, &li);
        ik__reply_error(x->rs, 503, "no_lease",
                        "this server holds no valid worker lease now (lease %s%s%s); retry "
                        "shortly or ask another server",
                        ik_lease_state_name(li.state), li.why[0] ? ": " : "", li.why);
        break;
    }
    case IK_ECLOCKBACK: {
        ik_snowflake_info gi;
        ik_snowflake_get_info(srv->gen, &gi);
        ik__reply_error(x->rs, 503, "clock_backward",
                        "clock went back %lld ms; refusing until it catches up "
                        "(max-backward is %lld ms)",
                        (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms);
        uint64_t now = uv_now(&x->w->loop);
        if (!x->w->last_clock_log || now - x->w->last_clock_log >= 1000) {
            x->w->last_clock_log = now;
            ik__log("refusing IDs: the clock went back %lld ms (max-backward %lld ms)",
                    (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms);
        }
        break;
    }
    case IK_ETIMEGUARD:
        ik__reply_error(x->rs, 503, "time_guard",
                        "the clock has not yet passed this worker slot's time record (SPEC 3 "
                        "rule 6); retry in a moment");
        break;
    default:
        ik__reply_error(x->rs, 500, "internal", "the generator failed: %s", ik_strerror(rc));
        break;
    }
}

/* ---- ID routes ---------------------------------------------------------------------------- */

/* GET /api/snowflake/get/{key}: one decimal ID, text/plain, no newline (Leaf). */
static void h_leaf_snowflake(ik__ctx *x)
{
    int64_t id;
    int rc = ik_snowflake_next(x->srv->gen, &id);
    if (rc != 0) {
        reply_gen_error(x, rc);
        return;
    }
    ik__buf_append_i64(x->rs->body, id);
}

/* Reads ?count= (default 1) into *n; answers 400 and returns -1 if it is not a
 * whole number from 1 to max_batch. */
static int get_count(ik__ctx *x, uint32_t *n)
{
    const char *v;
    size_t vl;
    uint32_t max = x->srv->cfg->max_batch;
    *n = 1;
    if (!ik__query_get(x->rq->query.p, x->rq->query.n, "count", &v, &vl)) return 0;
    if (ik__parse_u32(v, vl, UINT32_MAX, n) != 0 || *n < 1 || *n > max) {
        ik__span s = {v, vl};
        ik__reply_error(x->rs, 400, "bad_count",
                        "count must be a whole number from 1 to %u (max-batch); got '%.*s'", max,
                        QUOTE(s));
        return -1;
    }
    return 0;
}

/* Reads the response format (format= or Accept); answers 400 and returns -1 for an
 * unknown format= value. */
static int get_format(ik__ctx *x)
{
    const ik__req *rq = x->rq;
    int f = ik__negotiate(rq->query.p, rq->query.n, rq->accept.p, rq->accept.n);
    if (f < 0) {
        const char *v = "";
        size_t vl = 0;
        ik__query_get(rq->query.p, rq->query.n, "format", &v, &vl);
        ik__span s = {v, vl};
        ik__reply_error(x->rs, 400, "bad_format", "format must be json or text; got '%.*s'",
                        QUOTE(s));
    }
    return f;
}

/* Writes ids as {"ids":["1","2"]} or one a line. */
static void put_ids(ik__ctx *x, const int64_t *ids, size_t n, int fmt)
{
    ik__buf *b = x->rs->body;
    if (fmt == IK_FMT_TEXT) {
        ik__buf_reserve(b, n * 21);
        for (size_t i = 0; i < n; i++) {
            ik__buf_append_i64(b, ids[i]);
            b->p[b->len++] = '\n';
        }
        x->rs->ctype = CT_TEXT;
        return;
    }
    ik__buf_reserve(b, 12 + n * 23);
    ik__buf_append(b, "{\"ids\":[", 8);
    for (size_t i = 0; i < n; i++) {
        if (i) b->p[b->len++] = ',';
        b->p[b->len++] = '"';
        ik__buf_append_i64(b, ids[i]);
        b->p[b->len++] = '"';
    }
    ik__buf_append(b, "]}\n", 3);
    x->rs->ctype = CT_JSON;
}

/* GET /v1/snowflake?count=N[&format=text] */
static void h_snowflake(ik__ctx *x)
{
    uint32_t n;
    if (get_count(x, &n) != 0) return;
    int fmt = get_format(x);
    if (fmt < 0) return;
    int64_t small[64], *ids = small;
    if (n > 64) {
        ik__worker *w = x->w;
        if (w->ids_cap < n) {
            int64_t *p = realloc(w->ids, (size_t)n * sizeof *p);
            if (!p) {
                ik__reply_error(x->rs, 500, "internal", "out of memory");
                return;
            }
            w->ids = p;
            w->ids_cap = n;
        }
        ids = w->ids;
    }
    int rc = ik_snowflake_next_n(x->srv->gen, n, ids);
    if (rc != 0) {
        reply_gen_error(x, rc);
    } else {
        put_ids(x, ids, n, fmt);
    }
    if (x->w->ids_cap > 65536) { /* keep an idle daemon small after a huge batch */
        free(x->w->ids);
        x->w->ids = NULL;
        x->w->ids_cap = 0;
    }
}

/* GET /api/segment/get/{tag}, /v1/segment/{tag}, /v1/sequence/{tag}: no tags exist
 * yet (they come with the segment and sequence issues), so every tag is unknown. */
static void unknown_tag(ik__ctx *x, const char *kind)
{
    ik__span tag = x->rq->params[0];
    ik__reply_error(x->rs, 404, "unknown_tag",
                    "no %s tag '%.*s': create it first (idkeeper tags add TAG --kind %s)", kind,
                    QUOTE(tag), kind);
}

static void h_segment(ik__ctx *x)
{
    unknown_tag(x, "segment");
}

static void h_sequence(ik__ctx *x)
{
    unknown_tag(x, "sequence");
}

/* GET /v1/decode/{id} */
static void h_decode(ik__ctx *x)
{
    ik__span s = x->rq->params[0];
    int64_t id;
    ik_id_parts parts;
    if (ik_parse_id(s.p, s.n, &id) != 0 || ik_layout_decode(x->srv->layout, id, &parts) != 0) {
        ik__reply_error(x->rs, 400, "bad_id",
                        "'%.*s' is not an ID: want a decimal integer from 0 to "
                        "9223372036854775807 without sign or leading zeros",
                        QUOTE(s));
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

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Why no snowflake ID can be issued now, into why; 0 if one can. Lease held (or in
 * doubt within its safe window), a live grant, the clock past the slot's time
 * record found at acquisition (the floor) and not past the record persisted since
 * (the ceiling), and not behind the last issued ID by more than max_backward. */
static int not_ready(ik__server *srv, char *why, size_t len)
{
    ik_lease_info li;
    ik_snowflake_info gi;
    ik_slot_lease_get_info(srv->lease, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    const ik_layout *l = srv->layout;
    if (li.state != IK_LEASE_HELD && !(li.state == IK_LEASE_IN_DOUBT && li.valid_for_ms != 0)) {
        snprintf(why, len, "worker lease is %s%s%s", ik_lease_state_name(li.state),
                 li.why[0] ? ": " : "", li.why);
        return 1;
    }
    if (!gi.granted) {
        snprintf(why, len, "the generator holds no grant yet");
        return 1;
    }
    if (gi.valid_until_mono_ns != IK_FOREVER && gi.valid_until_mono_ns <= mono_ns()) {
        snprintf(why, len, "the lease has not been proven recently (backend unreachable?)");
        return 1;
    }
    int64_t now = ik__now_ms();
    int64_t tick = ik_layout_ticks_at(l, now);
    if (tick <= (int64_t)gi.floor_tick) {
        int64_t wait = ((int64_t)gi.floor_tick + 1) * l->unit_ms + l->epoch_ms - now;
        snprintf(why, len,
                 "time guard: the clock must pass this slot's time record first (%lld ms to go)",
                 (long long)wait);
        return 1;
    }
    if (gi.ceiling_tick != IK_NO_CEILING && tick > (int64_t)gi.ceiling_tick) {
        snprintf(why, len,
                 "the slot's time record has not been persisted past now (backend store failing?)");
        return 1;
    }
    if ((int64_t)gi.last_tick > tick) {
        int64_t behind = ((int64_t)gi.last_tick - tick) * l->unit_ms;
        if (behind > srv->cfg->max_backward_ms) {
            snprintf(why, len,
                     "the clock is %lld ms behind the last issued ID (max-backward %lld ms)",
                     (long long)behind, (long long)srv->cfg->max_backward_ms);
            return 1;
        }
    }
    return 0;
}

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
    if (not_ready(x->srv, why, sizeof why)) {
        ik__reply_error(x->rs, 503, "not_ready", "%s", why);
        return;
    }
    ik_snowflake_info gi;
    ik_snowflake_get_info(x->srv->gen, &gi);
    ik__buf_printf(x->rs->body, "{\"status\":\"ready\",\"worker\":%u}\n", gi.worker);
    x->rs->ctype = CT_JSON;
}

static void put_json_kv_str(ik__buf *b, const char *key, const char *val)
{
    ik__buf_printf(b, "\"%s\":", key);
    ik__buf_append_json_str(b, val, strlen(val));
}

/* GET /v1/status: what this server is and how it is doing. */
static void h_status(ik__ctx *x)
{
    ik__server *srv = x->srv;
    const ik_server_config *cfg = srv->cfg;
    ik_lease_info li;
    ik_snowflake_info gi;
    ik_slot_lease_get_info(srv->lease, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    int64_t now = ik__now_ms();
    char why[256], since[32], record[32], started[32];
    int ready = !not_ready(srv, why, sizeof why);
    ik__fmt_iso8601(since, li.since_ms);
    ik__fmt_iso8601(record, li.record_ms);
    ik__fmt_iso8601(started, srv->started_ms);
    int64_t valid_ms =
        gi.valid_until_mono_ns == IK_FOREVER ? -1 : (gi.valid_until_mono_ns - mono_ns()) / 1000000;

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
    ik__buf_printf(b, "\"started\":\"%s\",\"uptime_s\":%lld,\"tags\":[]}\n", started,
                   (long long)((now - srv->started_ms) / 1000));
    x->rs->ctype = CT_JSON;
}

/* GET /metrics: Prometheus text format. */
static void h_metrics(ik__ctx *x)
{
    ik__metrics_render(x->srv, x->rs->body);
    x->rs->ctype = "text/plain; version=0.0.4; charset=utf-8";
}

static void h_index(ik__ctx *x);

/* ---- the table --------------------------------------------------------------------------- */

const ik__route ik__routes[] = {
    {HTTP_GET, "/api/snowflake/get/{key}", h_leaf_snowflake, 0,
     "one snowflake ID, text/plain (Leaf-compatible; {key} is ignored)"},
    {HTTP_GET, "/v1/snowflake", h_snowflake, IK_ROUTE_AUTH,
     "?count=N (1..max-batch) snowflake IDs: JSON {\"ids\":[\"...\"]}, or one a line with "
     "?format=text or Accept: text/plain"},
    {HTTP_GET, "/v1/decode/{id}", h_decode, IK_ROUTE_AUTH,
     "the time, worker and sequence inside an ID (JSON)"},
    {HTTP_GET, "/v1/status", h_status, IK_ROUTE_AUTH,
     "app, backend, layout, worker slot, lease, clock and generator state (JSON)"},
    {HTTP_GET, "/api/segment/get/{tag}", h_segment, 0,
     "one segment ID of TAG, text/plain (Leaf-compatible)"},
    {HTTP_GET, "/v1/segment/{tag}", h_segment, IK_ROUTE_AUTH, "?count=N segment IDs of TAG"},
    {HTTP_GET, "/v1/sequence/{tag}", h_sequence, IK_ROUTE_AUTH,
     "?count=N contiguous sequence IDs of TAG"},
    {HTTP_GET, "/healthz", h_healthz, 0, "200 while the process serves"},
    {HTTP_GET, "/readyz", h_readyz, 0, "200 only while a snowflake ID can be issued now"},
    {HTTP_GET, "/metrics", h_metrics, 0, "Prometheus metrics"},
    {HTTP_GET, "/", h_index, 0, "this list"},
};
const size_t ik__nroutes = sizeof ik__routes / sizeof ik__routes[0];

_Static_assert(sizeof ik__routes / sizeof ik__routes[0] < IK_N_ROUTES_MAX,
               "IK_N_ROUTES_MAX too small for the route table");

/* GET /: the route table, one line each. */
static void h_index(ik__ctx *x)
{
    ik__buf *b = x->rs->body;
    ik__buf_printf(b, "idkeeper %s: HTTP routes\n\n", ik_version());
    for (size_t i = 0; i < ik__nroutes; i++) {
        const ik__route *r = &ik__routes[i];
        ik__buf_printf(b, "%-4s %-26s %s%s\n", http_method_str((enum http_method)r->method),
                       r->pattern, r->help,
                       (r->flags & IK_ROUTE_AUTH) && x->srv->token ? " [token]" : "");
    }
}

/* 1 if the request carries "Authorization: Bearer <the token>". */
static int authorized(const ik__server *srv, const ik__req *rq)
{
    const char *a = rq->auth.p;
    size_t n = rq->auth.n;
    if (n < 7 || !ik__ieq(a, 6, "bearer") || a[6] != ' ') return 0;
    a += 7, n -= 7;
    while (n && *a == ' ')
        a++, n--;
    while (n && (a[n - 1] == ' ' || a[n - 1] == '\t'))
        n--;
    return ik__ct_equal(a, n, srv->token, srv->token_len);
}

size_t ik__dispatch(ik__worker *w, ik__req *rq, ik__resp *rs)
{
    ik__ctx x = {w->srv, w, rq, rs};
    uint64_t allow = 0;
    size_t first = ik__nroutes;
    for (size_t i = 0; i < ik__nroutes; i++) {
        const ik__route *r = &ik__routes[i];
        int np = ik__path_match(r->pattern, rq->path.p, rq->path.n, rq->params);
        if (np < 0) continue;
        if (r->method != rq->method) {
            allow |= UINT64_C(1) << (r->method & 63);
            if (first == ik__nroutes) first = i;
            continue;
        }
        rq->nparams = np;
        if ((r->flags & IK_ROUTE_AUTH) && w->srv->token && !authorized(w->srv, rq)) {
            ik__reply_error(rs, 401, "unauthorized",
                            "this route needs the header 'Authorization: Bearer <token>' "
                            "(the token in the server's http-token-file)");
            ik__resp_header(rs, "WWW-Authenticate: Bearer realm=\"idkeeper\"");
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
                             http_method_str((enum http_method)m));
            if (n > 0 && (size_t)n < sizeof list - len) len += (size_t)n;
        }
        ik__reply_error(rs, 405, "method_not_allowed", "%s is not allowed here; use %s",
                        http_method_str((enum http_method)rq->method), list);
        ik__resp_header(rs, "Allow: %s", list);
        return first;
    }
    ik__reply_error(rs, 404, "not_found", "no route %s %.*s; GET / lists the routes",
                    http_method_str((enum http_method)rq->method), QUOTE(rq->path));
    return ik__nroutes;
}
