/* history.c: the daemon's recent past in fixed memory (history.h): IDs a second per
 * kind and tag, the last events, the lease's last proof and the worker range's use;
 * and their JSON for GET /v1/history and GET /v1/events (docs/http.md).
 *
 * Counting costs the hot paths nothing: the sampler, once a second on loop 0 (from
 * its sweep timer, loop.c), reads the cumulative counts that exist anyway (the
 * generator's issued, the loops' segment and sequence counters, each segment tag's
 * issued from ik_segment_status) and writes the differences into the buckets of the
 * seconds since its last run, spread evenly when it ran late. Sequence IDs per tag
 * are the one count kept for this alone (ik__history_add, once per answer, beside
 * the loop's own counter).
 *
 * Below the routes, the page, the pending answers and the server's start-up, which
 * call it; it calls only the library and the pure helpers (buf.c, json.c, log.c).
 */
#include "history.h"
#include "ready.h"
#include "log.h"
#include "json.h"
#include "../lib/rules.h" /* ik__fmt_iso8601 */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- set-up ------------------------------------------------------------------------------ */

void ik__history_init(ik__server *srv)
{
    ik__history *h = ik__xcalloc(1, sizeof *h);
    srv->hist = h;
    pthread_mutex_init(&h->mu, NULL);
    static const int kinds[IK_HIST_KINDS] = {IK_HIST_SNOWFLAKE, IK_TAG_SEGMENT, IK_TAG_SEQUENCE};
    for (int i = 0; i < IK_HIST_KINDS; i++)
        h->series[i].kind = kinds[i];
    h->nseries = IK_HIST_KINDS;
    h->lease_state = -1;
    h->lease_worker = -1;
    atomic_init(&h->range_held, -1);
    atomic_init(&h->range_at_ms, 0);
    /* test-only: list the range at every tick the sampler makes (once a second), so
     * that a test can find a listing waiting on a frozen store at its stop
     * (docs/testing.md, "Test hooks") */
    const char *every = getenv("IDKEEPER_TEST_RANGE_LIST_MS");
    long ms = every ? strtol(every, NULL, 10) : 0;
    h->list_every_ms = ms > 0 && ms < IK_RANGE_LIST_MS ? ms : IK_RANGE_LIST_MS;
}

void ik__history_set_range(ik__server *srv, uint32_t min, uint32_t max)
{
    srv->hist->range_min = min;
    srv->hist->range_max = max;
}

void ik__history_destroy(ik__server *srv)
{
    if (!srv->hist) return;
    pthread_mutex_destroy(&srv->hist->mu);
    free(srv->hist);
    srv->hist = NULL;
}

/* ---- series ------------------------------------------------------------------------------ */

static const char *kind_name(int kind)
{
    return kind == IK_HIST_SNOWFLAKE ? "snowflake" : ik_tag_kind_name((ik_tag_kind)kind);
}

/* The series of tag (of kind), made if there is room; NULL if not. Under mu. */
static ik__series *series_of(ik__history *h, int kind, const char *tag)
{
    for (int i = IK_HIST_KINDS; i < h->nseries; i++)
        if (h->series[i].kind == kind && !strcmp(h->series[i].tag, tag)) return &h->series[i];
    if (h->nseries == IK_HIST_SERIES) {
        h->tags_full = 1;
        return NULL;
    }
    ik__series *s = &h->series[h->nseries++];
    s->kind = kind;
    snprintf(s->tag, sizeof s->tag, "%s", tag);
    return s;
}

void ik__history_add(ik__server *srv, const char *tag, uint64_t n)
{
    ik__history *h = srv->hist;
    pthread_mutex_lock(&h->mu);
    ik__series *s = series_of(h, IK_TAG_SEQUENCE, tag);
    if (s) s->added += n;
    pthread_mutex_unlock(&h->mu);
}

/* Records that s's cumulative count is now cur: the rise since the last sample,
 * spread over the seconds (from, to] (to - from <= IK_HIST_SECONDS). Under mu. */
static void series_sample(ik__series *s, uint64_t cur, int64_t from, int64_t to, int first)
{
    uint64_t rise = cur >= s->seen ? cur - s->seen : cur; /* a restarted count */
    s->seen = cur;
    if (first) return;
    uint64_t k = (uint64_t)(to - from), each = rise / k, rest = rise % k;
    for (int64_t t = from + 1; t <= to; t++) {
        uint64_t v = each + (t == to ? rest : 0);
        s->ids[t % IK_HIST_SECONDS] = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
    }
}

static uint64_t loops_sum(ik__server *srv, int sequence)
{
    uint64_t s = 0;
    for (int i = 0; i < srv->nworkers; i++) {
        ik__metrics *m = &srv->workers[i]->m;
        s += atomic_load_explicit(sequence ? &m->sequence_ids : &m->segment_ids,
                                  memory_order_relaxed);
    }
    return s;
}

/* ---- events ------------------------------------------------------------------------------ */

/* The next slot of the ring, filled with kind and the time; under mu. */
static ik__event *event_new(ik__history *h, const char *kind)
{
    ik__event *e = &h->events[h->next_event];
    h->next_event = (h->next_event + 1) % IK_EVENTS_MAX;
    if (h->nevents < IK_EVENTS_MAX) h->nevents++;
    memset(e, 0, sizeof *e);
    e->ms = ik__now_ms();
    e->first = -1;
    snprintf(e->kind, sizeof e->kind, "%s", kind);
    return e;
}

void ik__event_add(ik__server *srv, const char *kind, const char *fmt, ...)
{
    ik__history *h = srv->hist;
    va_list ap;
    pthread_mutex_lock(&h->mu);
    ik__event *e = event_new(h, kind);
    va_start(ap, fmt);
    vsnprintf(e->text, sizeof e->text, fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&h->mu);
}

void ik__event_gap(ik__server *srv, const char *tag, int64_t first, int64_t count, const char *why)
{
    ik__history *h = srv->hist;
    pthread_mutex_lock(&h->mu);
    ik__event *e = event_new(h, "gap");
    snprintf(e->tag, sizeof e->tag, "%s", tag);
    snprintf(e->why, sizeof e->why, "%s", why);
    e->first = first;
    e->count = count;
    if (first >= 0)
        snprintf(e->text, sizeof e->text, "sequence gap: tag %s, %lld IDs from %lld (%s)", tag,
                 (long long)count, (long long)first, why);
    else
        snprintf(e->text, sizeof e->text, "sequence gap: tag %s, %lld IDs, place unknown (%s)", tag,
                 (long long)count, why);
    pthread_mutex_unlock(&h->mu);
}

void ik__event_lease(ik__server *srv, ik_lease_state state, int worker, const char *why)
{
    ik__history *h = srv->hist;
    const char *kind = "lease";
    char text[200];
    why = why ? why : "";
    pthread_mutex_lock(&h->mu);
    int was = h->lease_state, was_worker = h->lease_worker;
    h->lease_state = (int)state;
    h->lease_worker = worker;
    if (state == IK_LEASE_HELD) h->proof_ms = ik__now_ms(); /* the store just answered */
    pthread_mutex_unlock(&h->mu);
    if (state == IK_LEASE_HELD && was == IK_LEASE_IN_DOUBT && worker == was_worker) {
        snprintf(text, sizeof text, "lease proven again: worker %d", worker);
    } else if (state == IK_LEASE_HELD) {
        kind = "slot";
        /* the lease's own "took slot N [again]" says nothing more than this */
        int plain = why[0] == 0 || strncmp(why, "took slot", 9) == 0;
        int again = plain && strstr(why, " again") != NULL;
        snprintf(text, sizeof text, "slot %d taken%s%s%s", worker, again ? " again" : "",
                 plain ? "" : ": ", plain ? "" : why);
    } else if (state == IK_LEASE_LOST || state == IK_LEASE_RELEASED) {
        kind = "slot";
        snprintf(text, sizeof text, "slot %d %s%s%s", worker >= 0 ? worker : was_worker,
                 state == IK_LEASE_LOST ? "lost" : "released", why[0] ? ": " : "", why);
    } else { /* in doubt, acquiring: in words, not the state's name */
        snprintf(text, sizeof text, "lease %s%s%s",
                 state == IK_LEASE_IN_DOUBT ? "in doubt" : ik_lease_state_name(state),
                 why[0] ? ": " : "", why);
    }
    ik__event_add(srv, kind, "%s", text);
}

int ik__events_get(ik__server *srv, ik__event *out)
{
    ik__history *h = srv->hist;
    pthread_mutex_lock(&h->mu);
    int n = h->nevents;
    for (int i = 0; i < n; i++)
        out[i] = h->events[(h->next_event - 1 - i + 2 * IK_EVENTS_MAX) % IK_EVENTS_MAX];
    pthread_mutex_unlock(&h->mu);
    return n;
}

/* ---- the range's use --------------------------------------------------------------------- */

/* Thread pool: lists the app's slots and counts those of the range that are held. */
static void list_work(uv_work_t *req)
{
    ik__server *srv = req->data;
    ik__history *h = srv->hist;
    ik_slot_info *slots = NULL;
    size_t n = 0;
    h->list_rc = ik_slots_list(srv->coord, srv->cfg->app, &slots, &n);
    int held = 0;
    for (size_t i = 0; h->list_rc == 0 && i < n; i++)
        held += slots[i].held && slots[i].worker >= h->range_min && slots[i].worker <= h->range_max;
    h->list_held = held;
    ik_free(slots);
}

/* Loop 0, after list_work. */
static void list_after(uv_work_t *req, int status)
{
    ik__server *srv = req->data;
    ik__history *h = srv->hist;
    h->listing = 0;
    if (status != 0 || h->list_rc != 0) return; /* the last count stands, with its time */
    atomic_store(&h->range_held, h->list_held);
    atomic_store(&h->range_at_ms, ik__now_ms());
}

void ik__range_use(ik__server *srv, uint32_t *slots, int *held, int64_t *at_ms)
{
    *slots = srv->hist->range_max - srv->hist->range_min + 1;
    *held = atomic_load(&srv->hist->range_held);
    *at_ms = atomic_load(&srv->hist->range_at_ms);
}

/* ---- the sampler ------------------------------------------------------------------------- */

/* The lease and the clock, once a second: the last proof, and clock refusals as an
 * event. */
static void sample_lease_clock(ik__server *srv, int64_t now_ms)
{
    ik__history *h = srv->hist;
    ik_lease_info li;
    ik_snowflake_info gi;
    ik__lease_info(srv, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    pthread_mutex_lock(&h->mu);
    if (li.record_ms > 0 && li.record_ms != h->record_seen_ms) {
        h->record_seen_ms = li.record_ms;
        h->proof_ms = now_ms;
    }
    uint64_t refused = gi.backward_refusals - h->refusals_seen;
    h->refusals_seen = gi.backward_refusals;
    pthread_mutex_unlock(&h->mu);
    if (refused)
        ik__event_add(srv, "clock",
                      "clock went back %lld ms (max-backward %lld ms): %llu requests refused",
                      (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms,
                      (unsigned long long)refused);
}

int64_t ik__lease_proof_ms(ik__server *srv)
{
    pthread_mutex_lock(&srv->hist->mu);
    int64_t ms = srv->hist->proof_ms;
    pthread_mutex_unlock(&srv->hist->mu);
    return ms;
}

void ik__history_tick(ik__worker *w)
{
    ik__server *srv = w->srv;
    ik__history *h = srv->hist;
    int64_t now_ms = ik__now_ms(), now_s = now_ms / 1000;
    if (w->index != 0 || now_s == h->last_s) return;

    ik_snowflake_info gi;
    ik_snowflake_get_info(srv->gen, &gi);
    ik_segment_tag_status *st = NULL;
    size_t nst = 0;
    if (w->stores_closed || ik_segment_status(srv->seg, &st, &nst) != 0) nst = 0;

    pthread_mutex_lock(&h->mu);
    int first = h->last_s == 0;
    int64_t from = now_s - h->last_s > IK_HIST_SECONDS ? now_s - IK_HIST_SECONDS : h->last_s;
    if (now_s < h->last_s) { /* the wall clock went back: start the buckets afresh */
        for (int i = 0; i < h->nseries; i++)
            memset(h->series[i].ids, 0, sizeof h->series[i].ids);
        from = now_s - 1;
    }
    series_sample(&h->series[0], gi.issued, from, now_s, first);
    series_sample(&h->series[1], loops_sum(srv, 0), from, now_s, first);
    series_sample(&h->series[2], loops_sum(srv, 1), from, now_s, first);
    for (size_t i = 0; i < nst; i++) { /* a new series' count starts at 0: all of it is new */
        ik__series *s = series_of(h, IK_TAG_SEGMENT, st[i].name);
        if (s) series_sample(s, st[i].issued, from, now_s, first);
    }
    for (int i = IK_HIST_KINDS; i < h->nseries; i++)
        if (h->series[i].kind == IK_TAG_SEQUENCE)
            series_sample(&h->series[i], h->series[i].added, from, now_s, first);
    h->last_s = now_s;
    pthread_mutex_unlock(&h->mu);
    ik_free(st);

    sample_lease_clock(srv, now_ms);

    if (!h->listing && !w->draining && now_ms >= h->list_due_ms) {
        h->list_due_ms = now_ms + h->list_every_ms;
        h->list_work.data = srv;
        h->listing = uv_queue_work(&w->loop, &h->list_work, list_work, list_after) == 0;
    }
}

/* ---- JSON ------------------------------------------------------------------------------- */

void ik__history_render(ik__server *srv, int seconds, ik__buf *b)
{
    ik__history *h = srv->hist;
    char end[32];
    pthread_mutex_lock(&h->mu);
    int64_t last = h->last_s;
    ik__fmt_iso8601(end, last * 1000);
    ik__buf_printf(b,
                   "{\"seconds\":%d,\"end_s\":%lld,\"end\":\"%s\",\"memory_bytes\":%zu,"
                   "\"tags_max\":%d,\"tags_full\":%s,\"series\":[",
                   seconds, (long long)last, end, sizeof(ik__history), IK_HIST_TAGS,
                   h->tags_full ? "true" : "false");
    for (int i = 0; i < h->nseries; i++) {
        const ik__series *s = &h->series[i];
        ik__buf_printf(b, "%s{\"kind\":\"%s\",\"tag\":", i ? "," : "", kind_name(s->kind));
        if (s->tag[0])
            ik__buf_append_json_str(b, s->tag, strlen(s->tag));
        else
            ik__buf_puts(b, "null");
        ik__buf_puts(b, ",\"ids\":[");
        for (int64_t t = last - seconds + 1; t <= last; t++) {
            uint32_t v = last > 0 && t > 0 ? s->ids[t % IK_HIST_SECONDS] : 0;
            ik__buf_printf(b, t > last - seconds + 1 ? ",%u" : "%u", v);
        }
        ik__buf_puts(b, "]}");
    }
    pthread_mutex_unlock(&h->mu);
    ik__buf_puts(b, "]}\n");
}

void ik__events_render(ik__server *srv, ik__buf *b)
{
    ik__event ev[IK_EVENTS_MAX];
    int n = ik__events_get(srv, ev);
    ik__buf_printf(b, "{\"kept\":%d,\"events\":[", IK_EVENTS_MAX);
    for (int i = 0; i < n; i++) {
        char iso[32];
        ik__fmt_iso8601(iso, ev[i].ms);
        ik__buf_printf(b, "%s{\"time_ms\":%lld,\"time\":\"%s\",\"kind\":\"%s\",\"text\":",
                       i ? "," : "", (long long)ev[i].ms, iso, ev[i].kind);
        ik__buf_append_json_str(b, ev[i].text, strlen(ev[i].text));
        if (!strcmp(ev[i].kind, "gap")) {
            ik__buf_puts(b, ",\"tag\":");
            ik__buf_append_json_str(b, ev[i].tag, strlen(ev[i].tag));
            if (ev[i].first >= 0)
                ik__buf_printf(b, ",\"first\":\"%lld\"", (long long)ev[i].first);
            else
                ik__buf_puts(b, ",\"first\":null");
            ik__buf_printf(b, ",\"count\":%lld,\"why\":\"%s\"", (long long)ev[i].count, ev[i].why);
        }
        ik__buf_puts(b, "}");
    }
    ik__buf_puts(b, "]}\n");
}
