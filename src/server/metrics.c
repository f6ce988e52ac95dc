/* metrics.c: the daemon's Prometheus metrics: per-loop HTTP, RESP, segment,
 * sequence and store counters (each loop writes only its own, see ik__count) summed
 * when /metrics is read, plus the generator's and the lease's own counters, and the
 * server-wide count of sequence gaps.
 *
 * A registry below the front doors: it knows counters by row, and the rows' labels
 * (the route patterns, the RESP command names) only as the strings server.c put in
 * srv->route_labels and srv->resp_labels at start. It calls nothing of the daemon but
 * the recent past's range count (history.c); readiness comes from its caller.
 */
#include "metrics.h"
#include "history.h"
#include "ready.h"
#include "../lib/rules.h" /* ik__grow */

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const int ik__metric_codes[IK_N_CODES - 1] = {200, 201, 400, 401, 404, 405, 408,
                                              409, 413, 414, 431, 500, 503, 505};

void ik__gap_add(ik__server *srv, const char *tag, const char *why, uint64_t n)
{
    pthread_mutex_lock(&srv->gaps_mu);
    size_t i;
    for (i = 0; i < srv->ngaps; i++)
        if (!strcmp(srv->gaps[i].why, why) && !strcmp(srv->gaps[i].tag, tag)) break;
    if (i == srv->ngaps) {
        if (ik__grow((void **)&srv->gaps, &srv->gaps_cap, srv->ngaps, sizeof *srv->gaps, 8))
            ik__oom((srv->gaps_cap ? srv->gaps_cap * 2 : 8) * sizeof *srv->gaps);
        memset(&srv->gaps[i], 0, sizeof srv->gaps[i]);
        snprintf(srv->gaps[i].tag, sizeof srv->gaps[i].tag, "%s", tag);
        snprintf(srv->gaps[i].why, sizeof srv->gaps[i].why, "%s", why);
        srv->ngaps++;
    }
    srv->gaps[i].ids += n;
    pthread_mutex_unlock(&srv->gaps_mu);
}

int ik__metric_code_index(int status)
{
    for (int i = 0; i < IK_N_CODES - 1; i++)
        if (ik__metric_codes[i] == status) return i;
    return IK_N_CODES - 1;
}

static uint64_t load(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* Sums over every loop the counter at byte offset off of a loop's ik__metrics
 * (OFF_OF names one). */
static uint64_t sum(ik__server *srv, size_t off)
{
    uint64_t s = 0;
    for (int i = 0; i < srv->nworkers; i++)
        s += load((_Atomic uint64_t *)((char *)&srv->workers[i]->m + off));
    return s;
}

/* The offset of counter c (a member designator, array elements included) in
 * ik__metrics. */
#define OFF_OF(c) offsetof(ik__metrics, c)

static void header(ik__buf *b, const char *name, const char *type, const char *help)
{
    ik__buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(ik__buf *b, const char *name, const char *help, uint64_t v)
{
    header(b, name, "counter", help);
    ik__buf_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

static void gauge(ik__buf *b, const char *name, const char *help, long long v)
{
    header(b, name, "gauge", help);
    ik__buf_printf(b, "%s %lld\n", name, v);
}

/* ---- the families, in the order the page lists them ---------------------------------- */

/* The IDs answered, by kind (the snowflake's count is the generator's own). */
static void render_ids(ik__server *srv, const ik_snowflake_info *gi, ik__buf *b)
{
    counter(b, "ik_ids_issued_total", "Snowflake IDs issued by this server.", gi->issued);
    counter(b, "ik_segment_ids_total", "Segment IDs answered by this server.",
            sum(srv, OFF_OF(segment_ids)));
    counter(b, "ik_sequence_ids_total", "Sequence IDs answered by this server.",
            sum(srv, OFF_OF(sequence_ids)));
    counter(b, "ik_sequence_ranges_total",
            "Sequence ranges answered, one per request (group commit: one store write "
            "carries many).",
            sum(srv, OFF_OF(sequence_ranges)));
    counter(b, "ik_sequence_requests_withdrawn_total",
            "Sequence requests withdrawn before their commit because the client had gone.",
            sum(srv, OFF_OF(sequence_withdrawn)));
}

/* What the tag store cost: the gaps, the errors, the requests waiting on it now. */
static void render_store(ik__server *srv, ik__buf *b)
{
    header(b, "ik_sequence_gap_ids_total", "counter",
           "Sequence IDs committed for nobody (a gap, logged as 'tag gap'), by tag and why.");
    pthread_mutex_lock(&srv->gaps_mu);
    for (size_t i = 0; i < srv->ngaps; i++)
        ik__buf_printf(b, "ik_sequence_gap_ids_total{tag=\"%s\",why=\"%s\"} %llu\n",
                       srv->gaps[i].tag, srv->gaps[i].why, (unsigned long long)srv->gaps[i].ids);
    pthread_mutex_unlock(&srv->gaps_mu);
    header(b, "ik_store_errors_total", "counter",
           "Answers 503 store_unavailable: the tag store unreachable, timed out or in doubt.");
    static const char *const ops[3] = {"segment", "sequence", "tags"};
    for (size_t i = 0; i < 3; i++)
        ik__buf_printf(b, "ik_store_errors_total{op=\"%s\"} %llu\n", ops[i],
                       (unsigned long long)sum(srv, OFF_OF(store_errors[i])));
    int64_t pending = 0;
    for (int i = 0; i < srv->nworkers; i++)
        pending += atomic_load_explicit(&srv->workers[i]->m.pending, memory_order_relaxed);
    gauge(b, "ik_pending_requests", "Requests waiting for the tag store now.", pending);
}

/* The requests of each front door, by the labels of its table (server.c sets them). */
static void render_doors(ik__server *srv, ik__buf *b)
{
    header(b, "ik_http_requests_total", "counter", "HTTP requests answered, by route and status.");
    for (size_t r = 0; r < srv->nroute_labels; r++) {
        const char *route = srv->route_labels[r];
        for (size_t c = 0; c < IK_N_CODES; c++) {
            uint64_t v = sum(srv, OFF_OF(requests[r][c]));
            if (!v) continue;
            if (c < IK_N_CODES - 1) {
                ik__buf_printf(b, "ik_http_requests_total{route=\"%s\",code=\"%d\"} %llu\n", route,
                               ik__metric_codes[c], (unsigned long long)v);
            } else {
                ik__buf_printf(b, "ik_http_requests_total{route=\"%s\",code=\"other\"} %llu\n",
                               route, (unsigned long long)v);
            }
        }
    }
    if (!srv->resp_text[0]) return;
    header(b, "ik_resp_commands_total", "counter",
           "Redis-protocol commands answered, by command and result (error: a RESP error "
           "answer).");
    for (size_t r = 0; r < srv->nresp_labels; r++)
        for (size_t k = 0; k < 2; k++) {
            uint64_t v = sum(srv, OFF_OF(resp_cmds[r][k]));
            if (v)
                ik__buf_printf(b, "ik_resp_commands_total{command=\"%s\",result=\"%s\"} %llu\n",
                               srv->resp_labels[r], k ? "error" : "ok", (unsigned long long)v);
        }
}

/* The HTTP connections: open now, accepted, turned away, timed out. */
static void render_connections(ik__server *srv, ik__buf *b)
{
    gauge(b, "ik_http_connections", "Open HTTP connections.",
          atomic_load_explicit(&srv->connections, memory_order_relaxed));
    counter(b, "ik_http_connections_accepted_total", "HTTP connections accepted.",
            sum(srv, OFF_OF(accepted)));
    counter(b, "ik_http_connections_rejected_total",
            "HTTP connections closed at once because max-connections were open.",
            sum(srv, OFF_OF(rejected)));
    counter(b, "ik_http_timeouts_total",
            "HTTP connections dropped by the read, write or idle timeout.",
            sum(srv, OFF_OF(timeouts)));
}

/* The store's hazard checks by verdict, and how many refuse now. */
static void render_hazards(ik__server *srv, ik__buf *b)
{
    ik_hazard *hz = NULL;
    size_t nhz = 0;
    ik_coord_hazards(srv->coord, &hz, &nhz, NULL, 0);
    header(b, "ik_store_hazard", "gauge",
           "Store hazard checks by verdict (docs/hazards.md): 1 for the check's current "
           "verdict (ok, risk: accepted by --allow-unsafe-store, refused: not writing).");
    for (size_t i = 0; i < nhz; i++)
        ik__buf_printf(b, "ik_store_hazard{check=\"%s\",verdict=\"%s\"} 1\n", hz[i].check,
                       ik_verdict_name(hz[i].verdict));
    size_t refused = 0;
    for (size_t i = 0; i < nhz; i++)
        refused += hz[i].verdict == IK_VERDICT_REFUSED;
    ik_free(hz);
    gauge(b, "ik_store_refused_checks",
          "Store hazard checks refused now: while above 0 nothing is written to the store.",
          (long long)refused);
}

/* The worker number: the range it comes from and the lease that holds it. */
static void render_lease(ik__server *srv, ik__buf *b)
{
    ik_lease_info li;
    ik__lease_info(srv, &li);
    uint32_t range_slots;
    int range_held;
    int64_t range_at;
    ik__range_use(srv, &range_slots, &range_held, &range_at);
    gauge(b, "ik_worker_range_slots",
          "Worker slots in this server's range (the layout's workers=).", (long long)range_slots);
    gauge(b, "ik_worker_range_held",
          "Slots of the worker range held by a live server, as listed from the store every 30 s "
          "(-1: not listed yet).",
          range_held);
    gauge(b, "ik_lease_state",
          "Worker slot lease state: 0 acquiring, 1 held, 2 in doubt, 3 lost, 4 released.",
          (long long)li.state);
    gauge(b, "ik_lease_worker", "Worker number held (-1: none).", li.worker);
    gauge(b, "ik_lease_valid_for_ms",
          "How long IDs may still flow without an answer from the backend.",
          (long long)li.valid_for_ms);
    counter(b, "ik_lease_acquisitions_total", "Worker slots taken (1 + re-acquisitions).",
            li.acquisitions);
}

/* The clock as the generator met it: ticks waited for, backward steps waited out or refused. */
static void render_clock(const ik_snowflake_info *gi, ik__buf *b)
{
    counter(b, "ik_clock_tick_waits_total", "Waits for the next tick (sequence used up).",
            gi->tick_waits);
    counter(b, "ik_clock_backward_waits_total",
            "Waits for a clock that went back by at most max-backward.", gi->backward_waits);
    counter(b, "ik_clock_backward_refusals_total",
            "Refusals because the clock went back by more than max-backward.",
            gi->backward_refusals);
    gauge(b, "ik_clock_last_backward_ms", "Size of the latest backward clock jump seen.",
          (long long)gi->last_backward_ms);
}

void ik__metrics_render(ik__server *srv, int ready, ik__buf *b)
{
    ik_snowflake_info gi;
    ik_snowflake_get_info(srv->gen, &gi);
    render_ids(srv, &gi, b);
    render_store(srv, b);
    render_doors(srv, b);
    render_connections(srv, b);
    render_hazards(srv, b);
    gauge(b, "ik_ready",
          "1 while a snowflake ID can be issued now (what /readyz answers 200 for), else 0.",
          ready);
    render_lease(srv, b);
    render_clock(&gi, b);
}
