/* http_routes.h: the HTTP route table (docs/http.md), one row per route like nginx's
 * ngx_command_t: method, path pattern, handler, flags, help (shown by GET /).
 *
 * Rows are walked in order (the hot Leaf route first). http_routes.c expands the table
 * into ik__route_keys (method, pattern: what ik__route_find matches) and ik__routes
 * (handler, flags, help), at the same indices; tests/fuzz/fuzz_http.c expands it into
 * the keys alone, so the fuzzer routes exactly what the daemon routes.
 *
 * R(method, pattern, handler, flags, help)
 */
#ifndef IK_HTTP_ROUTES_H
#define IK_HTTP_ROUTES_H

/* With a token configured (--http-token-file), a route flagged AUTH needs it, unless
 * it is also flagged LEAF and --open-leaf-routes is on, or METRICS and --open-metrics
 * is on. /healthz and /readyz reveal nothing and stay open. */
#include "http_framing.h"
#include "http_query.h"
#include "http_reply.h"
#include "pend.h"
#include "worker.h"

#define IK_ROUTE_AUTH 1u    /* needs the token when one is configured */
#define IK_ROUTE_LEAF 2u    /* a Leaf route: --open-leaf-routes exempts it */
#define IK_ROUTE_METRICS 4u /* /metrics: --open-metrics exempts it */
#define IK_ROUTE_PAGE 8u    /* a page for browsers: a 401 offers Basic auth too */

#define IK_ROUTE_TABLE(R)                                                                          \
    R(IK_HTTP_GET, "/api/snowflake/get/{key}", h_leaf_snowflake, IK_ROUTE_AUTH | IK_ROUTE_LEAF,    \
      "one snowflake ID, text/plain (Leaf-compatible; {key} is ignored)")                          \
    R(IK_HTTP_GET, "/api/segment/get/{tag}", h_leaf_segment, IK_ROUTE_AUTH | IK_ROUTE_LEAF,        \
      "one segment ID of TAG, text/plain (Leaf-compatible)")                                       \
    R(IK_HTTP_GET, "/v1/snowflake", h_snowflake, IK_ROUTE_AUTH,                                    \
      "?count=N (1..max-batch) snowflake IDs: JSON {\"ids\":[\"...\"]}, or one a line with "       \
      "?format=text or Accept: text/plain")                                                        \
    R(IK_HTTP_GET, "/v1/segment/{tag}", h_segment, IK_ROUTE_AUTH,                                  \
      "?count=N segment IDs of TAG (unique, increasing per server)")                               \
    R(IK_HTTP_GET, "/v1/sequence/{tag}", h_sequence, IK_ROUTE_AUTH,                                \
      "?count=N contiguous sequence IDs of TAG, each durably recorded first")                      \
    R(IK_HTTP_GET, "/v1/decode/{id}", h_decode, IK_ROUTE_AUTH,                                     \
      "the time, worker and sequence inside an ID (JSON)")                                         \
    R(IK_HTTP_GET, "/v1/status", h_status, IK_ROUTE_AUTH,                                          \
      "app, backend, layout, worker slot, lease, clock, generator and segment tags (JSON)")        \
    R(IK_HTTP_POST, "/v1/tags", h_tag_create, IK_ROUTE_AUTH,                                       \
      "create a tag: JSON {\"tag\",\"kind\",\"start\",\"step\",\"description\"}; 201")             \
    R(IK_HTTP_GET, "/v1/tags", h_tag_list, IK_ROUTE_AUTH, "the app's tags (JSON)")                 \
    R(IK_HTTP_GET, "/v1/tags/{tag}", h_tag_get, IK_ROUTE_AUTH, "one tag (JSON)")                   \
    R(IK_HTTP_GET, "/healthz", h_healthz, 0, "200 while the process serves")                       \
    R(IK_HTTP_GET, "/readyz", h_readyz, 0, "200 only while a snowflake ID can be issued now")      \
    R(IK_HTTP_GET, "/v1/workers", h_workers, IK_ROUTE_AUTH,                                        \
      "the app's worker slots: holder, since, time record, and which is this server (JSON)")       \
    R(IK_HTTP_GET, "/v1/semaphores", h_semaphores, IK_ROUTE_AUTH,                                  \
      "the leases held of the semaphores this server shows (--semaphores): max, holders (JSON)")   \
    R(IK_HTTP_GET, "/v1/history", h_history, IK_ROUTE_AUTH,                                        \
      "IDs issued a second, per kind and tag, over the last 10 minutes (?seconds=N; JSON)")        \
    R(IK_HTTP_GET, "/v1/events", h_events, IK_ROUTE_AUTH,                                          \
      "the last 20 events: slot taken or lost, gaps, clock refusals, store hazards (JSON)")        \
    R(IK_HTTP_GET, "/v1/routes", h_routes, IK_ROUTE_AUTH, "this list, text/plain")                 \
    R(IK_HTTP_GET, "/metrics", h_metrics, IK_ROUTE_AUTH | IK_ROUTE_METRICS, "Prometheus metrics")  \
    R(IK_HTTP_GET, "/", h_page, IK_ROUTE_AUTH | IK_ROUTE_PAGE,                                     \
      "the status page (HTML): this server, the app's worker slots, the tags, the semaphores, an " \
      "ID decoder")

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

#endif
