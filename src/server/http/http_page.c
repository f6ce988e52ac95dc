/* http_page.c: the status page (GET /, docs/http.md), the app's slots (GET /v1/workers)
 * and the semaphores it shows (GET /v1/semaphores).
 *
 * The page is src/server/http/http_page.html, embedded in the binary at build time
 * (cmake/embed.cmake). Its one marker, <!--IK:SNAPSHOT-->, is replaced by a snapshot
 * rendered here: this server, its lease (safe window, last proof, time record), the
 * store's hazard checks, the worker range as a grid of cells, the last events, the
 * app's worker slots, the tags, the leases of the semaphores it shows (--semaphores)
 * and, for ?decode=ID, the decoded ID. So the page is
 * whole without JavaScript (only the rates' charts need it); with it, the page's
 * script refreshes the same parts every few seconds from /v1/status, /v1/workers,
 * /v1/tags, /v1/semaphores, /v1/history and /v1/events, draws the charts, and decodes through
 * /v1/decode/{id}. The snapshot and the script build the same rows and cells (the
 * same ids, classes and words), so a refresh replaces them in place
 * (docs/operations.md says what each part means).
 *
 * Everything from the store or the client (holder identities, tag names and
 * descriptions, the decode input) is HTML-escaped here, and set as text (never as
 * HTML) by the script. The page loads nothing from elsewhere.
 *
 * Runs on a loop thread, after the thread pool has listed the slots and the tags
 * (http_routes.c, h_page and h_workers).
 */
#include "http_page.h"
#include "history.h"
#include "ready.h"
#include "log.h"
#include "../../lib/rules.h" /* ik__fmt_iso8601 */

#include <string.h>

extern const char ik__page_html[];
extern const unsigned long ik__page_html_len;

#define MARKER "<!--IK:SNAPSHOT-->"

/* Appends s[0..n-1] with &, <, >, " and ' escaped. */
static void put_html(ik__buf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&':
            ik__buf_puts(b, "&amp;");
            break;
        case '<':
            ik__buf_puts(b, "&lt;");
            break;
        case '>':
            ik__buf_puts(b, "&gt;");
            break;
        case '"':
            ik__buf_puts(b, "&quot;");
            break;
        case '\'':
            ik__buf_puts(b, "&#39;");
            break;
        default:
            ik__buf_append(b, &s[i], 1);
            break;
        }
    }
}

static void put_html_str(ik__buf *b, const char *s)
{
    put_html(b, s, strlen(s));
}

/* Unix ms as ISO 8601, or "-" for 0. */
static void put_time(ik__buf *b, int64_t ms)
{
    char iso[32];
    if (ms <= 0) {
        ik__buf_puts(b, "-");
        return;
    }
    ik__fmt_iso8601(iso, ms);
    ik__buf_puts(b, iso);
}

/* One "name: value" row of the server table; the value is escaped. */
static void server_row(ik__buf *b, const char *key, const char *label, const char *value)
{
    ik__buf_printf(b, "<tr><th>%s</th><td data-k=\"%s\">", label, key);
    put_html_str(b, value);
    ik__buf_puts(b, "</td></tr>\n");
}

static void put_server(ik__server *srv, ik__buf *b)
{
    ik_lease_info li;
    ik_snowflake_info gi;
    char why[256], text[320], end[32];
    ik__lease_info(srv, &li);
    ik_snowflake_get_info(srv->gen, &gi);
    int ready = !ik__not_ready(srv, why, sizeof why);
    ik__fmt_iso8601(end, ik_layout_end_ms(srv->layout));

    ik__buf_puts(b,
                 "<section id=\"server\"><h2>This server</h2><table><tbody id=\"server-rows\">\n");
    server_row(b, "version", "Version", ik_version());
    server_row(b, "backend", "Backend", ik_coord_uri(srv->coord));
    server_row(b, "app", "App", srv->cfg->app);
    server_row(b, "identity", "Identity", srv->identity);
    snprintf(text, sizeof text, "%s (runs out %s)", srv->layout_text, end);
    server_row(b, "layout", "Layout", text);
    if (li.worker >= 0)
        snprintf(text, sizeof text, "%d", li.worker);
    else
        snprintf(text, sizeof text, "none");
    server_row(b, "worker", "Worker", text);
    snprintf(text, sizeof text, "%s%s%s", ik_lease_state_name(li.state), li.why[0] ? ": " : "",
             li.why);
    server_row(b, "lease", "Lease", text);
    snprintf(text, sizeof text, "%s%s%s", ready ? "ready" : "not ready", ready ? "" : ": ",
             ready ? "" : why);
    server_row(b, "ready", "Ready", text);
    snprintf(text, sizeof text, "last step back %lld ms, max-backward %lld ms, %llu refusals",
             (long long)gi.last_backward_ms, (long long)srv->cfg->max_backward_ms,
             (unsigned long long)gi.backward_refusals);
    server_row(b, "clock", "Clock", text);
    ik__buf_puts(b, "</tbody></table></section>\n");
}

/* ---- the lease, the range, the rates, the events (docs/operations.md) ---------------- */

/* The words of the lease panel's rows: the safe window, the last proof, the time
 * record against the clock. The script writes the same words (http_page.html). */
static void lease_words(ik__server *srv, char window[96], char proof[96], char record[96])
{
    ik_lease_info li;
    ik__lease_info(srv, &li);
    int64_t now = ik__now_ms(), proven = ik__lease_proof_ms(srv);
    char iso[32];
    if (li.valid_for_ms < 0)
        snprintf(window, 96, "no end: the store holds the slot while this process lives");
    else if (li.state != IK_LEASE_HELD && li.state != IK_LEASE_IN_DOUBT)
        snprintf(window, 96, "none: the lease is %s", ik_lease_state_name(li.state));
    else
        snprintf(window, 96, "%.1f s left", (double)li.valid_for_ms / 1000);
    if (proven > 0) {
        ik__fmt_iso8601(iso, proven);
        snprintf(proof, 96, "%s (%.0f s ago)", iso, (double)(now - proven) / 1000);
    } else {
        snprintf(proof, 96, "-");
    }
    if (li.record_ms > 0) {
        ik__fmt_iso8601(iso, li.record_ms);
        snprintf(record, 96, "%s (%+lld ms from the clock)", iso, (long long)(li.record_ms - now));
    } else {
        snprintf(record, 96, "-");
    }
}

static void put_lease(ik__server *srv, ik__buf *b)
{
    char window[96], proof[96], record[96];
    lease_words(srv, window, proof, record);
    ik__buf_puts(b, "<section id=\"lease\"><h2>This server's lease</h2>"
                    "<div id=\"lease-bar\" class=\"bar\"><div></div></div>"
                    "<table><tbody id=\"lease-rows\">\n");
    server_row(b, "window", "Safe window", window);
    server_row(b, "proof", "Last proof", proof);
    server_row(b, "record", "Time record", record);
    ik__buf_puts(b, "</tbody></table></section>\n");
}

/* One cell of the range grid: its state as a class (self, other, doubt, stale,
 * free), the holder and times in its title. s is the slot's listing, NULL if the
 * store never saw it used. */
static void put_cell(ik__buf *b, uint32_t worker, const ik_slot_info *s, const ik_lease_info *li,
                     int64_t now)
{
    int self = s && s->held && li->worker >= 0 && (uint32_t)li->worker == worker;
    const char *state = "free";
    if (self)
        state = li->state == IK_LEASE_HELD ? "self" : "doubt";
    else if (s && s->held)
        state = "other";
    else if (s && s->record_ms > now)
        state = "stale";
    ik__buf_printf(b, "<div class=\"cell c-%s\" data-worker=\"%u\" data-state=\"%s\" title=\"",
                   state, worker, state);
    ik__buf_printf(b, "worker %u: ", worker);
    if (s && s->held) {
        put_html_str(b, self ? "this server, " : "held by ");
        put_html_str(b, s->holder);
    } else if (s && s->record_ms > now) {
        put_html_str(b, "free, time record ahead of the clock; last held by ");
        put_html_str(b, s->holder);
    } else {
        ik__buf_puts(b, "free");
    }
    ik__buf_printf(b, "\">%u</div>", worker);
}

/* The worker range as a grid of cells, 32 a row, each row led by its first worker. */
static void put_range(ik__server *srv, const ik__pool_call *t, ik__buf *b)
{
    ik_lease_info li;
    ik__lease_info(srv, &li);
    uint32_t min = srv->layout->worker_min, max = srv->layout->worker_max;
    uint32_t n = max - min + 1;
    int64_t now = ik__now_ms();
    ik__buf_printf(b,
                   "<section id=\"range\"><h2>Worker range %u-%u</h2><p class=\"legend\">"
                   "<span class=\"cell c-self\"></span> this server "
                   "<span class=\"cell c-other\"></span> another server "
                   "<span class=\"cell c-doubt\"></span> in doubt "
                   "<span class=\"cell c-stale\"></span> stale "
                   "<span class=\"cell c-free\"></span> free "
                   "<span id=\"range-use\"></span></p>"
                   "<div id=\"range-grid\" class=\"grid%s\">",
                   min, max, n > 64 ? " dense" : "");
    size_t k = 0;
    for (uint32_t w = min; t->slots_rc == 0 && w <= max && w >= min; w++) {
        if ((w - min) % 32 == 0) ik__buf_printf(b, "<div class=\"rowlabel\">%u</div>", w);
        while (k < t->nslots && t->slots[k].worker < w)
            k++;
        put_cell(b, w, k < t->nslots && t->slots[k].worker == w ? &t->slots[k] : NULL, &li, now);
    }
    ik__buf_puts(b, "</div></section>\n");
}

/* The rates' charts are drawn by the script alone (from /v1/history). */
static void put_rates(ik__buf *b)
{
    ik__buf_puts(b, "<section id=\"rates\"><h2>IDs a second, last 10 minutes</h2>"
                    "<p class=\"legend\">This server's: each chart runs from 10 minutes ago "
                    "(left) to now (right), scaled to its own peak.</p>"
                    "<p class=\"err\" id=\"rates-err\"></p><div id=\"rates-charts\" "
                    "class=\"charts\"></div><p class=\"nojs\">The charts need JavaScript; "
                    "/v1/history has their numbers.</p></section>\n");
}

/* The last events, newest first. */
static void put_events(ik__server *srv, ik__buf *b)
{
    ik__event ev[IK_EVENTS_MAX];
    int n = ik__events_get(srv, ev);
    ik__buf_puts(b, "<section id=\"events\"><h2>Last events</h2><p class=\"err\" "
                    "id=\"events-err\"></p><table><thead><tr><th>Time</th><th>Kind</th>"
                    "<th>What</th></tr></thead><tbody id=\"events-rows\">\n");
    for (int i = 0; i < n; i++) {
        ik__buf_printf(b, "<tr class=\"e-%s\"><td>", ev[i].kind);
        put_time(b, ev[i].ms);
        ik__buf_printf(b, "</td><td>%s</td><td>", ev[i].kind);
        put_html_str(b, ev[i].text);
        ik__buf_puts(b, "</td></tr>\n");
    }
    ik__buf_puts(b, "</tbody></table></section>\n");
}

/* The store's hazard checks (docs/hazards.md): one row per check, its verdict as a
 * class (ok, risk, refused); the latest verdicts, no I/O. */
static void put_hazards(ik__server *srv, ik__buf *b)
{
    ik_hazard *rows = NULL;
    size_t n = 0;
    char why[300] = "";
    int unsafe = ik_coord_hazards(srv->coord, &rows, &n, why, sizeof why) == IK_EUNSAFE;
    ik__buf_puts(b, "<section id=\"store\"><h2>Store checks</h2><p class=\"err\" "
                    "id=\"store-err\">");
    if (unsafe) {
        ik__buf_puts(b, "not writing: ");
        put_html_str(b, why);
    }
    ik__buf_puts(b, "</p><table><thead><tr><th>Check</th><th>Value</th><th>Verdict</th>"
                    "<th>What to change</th></tr></thead><tbody id=\"store-rows\">\n");
    for (size_t i = 0; i < n; i++) {
        const char *v = ik_verdict_name(rows[i].verdict);
        ik__buf_printf(b, "<tr class=\"v-%s\"><td>", v);
        put_html_str(b, rows[i].check);
        ik__buf_puts(b, "</td><td>");
        put_html_str(b, rows[i].value);
        ik__buf_printf(b, "</td><td>%s</td><td>", v);
        put_html_str(b, rows[i].fix[0] ? rows[i].fix : "-");
        ik__buf_puts(b, "</td></tr>\n");
    }
    ik__buf_puts(b, "</tbody></table></section>\n");
    ik_free(rows);
}

/* The worker slots table's rows; the row this server holds is marked. */
static void put_workers(ik__server *srv, const ik__pool_call *t, ik__buf *b)
{
    ik_lease_info li;
    ik__lease_info(srv, &li);
    ik__buf_puts(b, "<section id=\"workers\"><h2>Worker slots of app <span class=\"app\">");
    put_html_str(b, srv->cfg->app);
    ik__buf_puts(b, "</span></h2><p class=\"err\" id=\"workers-err\">");
    if (t->slots_rc != 0) {
        ik__buf_puts(b, "cannot list the slots: ");
        put_html_str(b, ik_strerror(t->slots_rc));
    }
    ik__buf_puts(b, "</p><table><thead><tr><th>Worker</th><th>Holder</th><th>Since</th>"
                    "<th>Time record</th><th></th></tr></thead><tbody id=\"workers-rows\">\n");
    for (size_t i = 0; t->slots_rc == 0 && i < t->nslots; i++) {
        const ik_slot_info *s = &t->slots[i];
        int self = s->held && li.worker >= 0 && (uint32_t)li.worker == s->worker;
        ik__buf_printf(b, "<tr%s data-worker=\"%u\"><td>%u</td><td>", self ? " class=\"self\"" : "",
                       s->worker, s->worker);
        put_html_str(b, s->held ? s->holder : "(free)");
        ik__buf_puts(b, "</td><td>");
        put_time(b, s->held ? s->since_ms : 0);
        ik__buf_puts(b, "</td><td>");
        put_time(b, s->record_ms);
        ik__buf_printf(b, "</td><td>%s</td></tr>\n", self ? "this server" : "");
    }
    ik__buf_puts(b, "</tbody></table></section>\n");
}

/* Why the leases of semaphore i could not be listed (rc): kazoo's layout on a store
 * that has only Curator's said so, else the library's words. */
static const char *sema_why(const ik_server_config *cfg, int i, int rc)
{
    if (rc == IK_EURI && cfg->semaphore_layouts[i] == IK_SEMAPHORE_KAZOO)
        return "kazoo's layout is a zk:// layout; this store has one layout";
    return ik_strerror(rc);
}

/* The semaphores table (only with --semaphores): a row per lease held, oldest first,
 * under a row per semaphore with its max (or why it cannot be listed). */
static void put_semaphores(ik__server *srv, const ik__pool_call *t, ik__buf *b)
{
    if (srv->cfg->nsemaphores == 0) return;
    ik__buf_puts(b, "<section id=\"semaphores\"><h2>Semaphores</h2><p class=\"err\" "
                    "id=\"semaphores-err\"></p><table><thead><tr><th>Semaphore</th><th>Max</th>"
                    "<th>Fence</th><th>Holder</th><th>Session</th><th>Node</th></tr></thead>"
                    "<tbody id=\"semaphores-rows\">\n");
    for (int i = 0; i < srv->cfg->nsemaphores; i++) {
        ik__buf_puts(b, "<tr class=\"sema\"><td>");
        put_html_str(b, srv->cfg->semaphores[i]);
        if (t->sema_rc[i] != 0) {
            ik__buf_puts(b, "</td><td colspan=\"5\" class=\"err\">cannot list the leases: ");
            put_html_str(b, sema_why(srv->cfg, i, t->sema_rc[i]));
            ik__buf_puts(b, "</td></tr>\n");
            continue;
        }
        ik__buf_printf(b, "</td><td>%lld</td><td colspan=\"4\">%zu held</td></tr>\n",
                       (long long)t->sema_max[i], t->nsema[i]);
        for (size_t k = 0; k < t->nsema[i]; k++) {
            const ik_semaphore_holder *h = &t->sema[i][k];
            ik__buf_printf(b, "<tr><td></td><td></td><td>%lld</td><td>", (long long)h->fence);
            put_html_str(b, h->data);
            ik__buf_puts(b, "</td><td>");
            put_html_str(b, h->session);
            ik__buf_puts(b, "</td><td>");
            put_html_str(b, h->node);
            ik__buf_puts(b, "</td></tr>\n");
        }
    }
    ik__buf_puts(b, "</tbody></table></section>\n");
}

/* The tags table: the app's tags, and this server's blocks of its segment tags. */
static void put_tags(ik__worker *w, const ik__pool_call *t, ik__buf *b)
{
    ik_segment_tag_status *st = NULL;
    size_t nst = 0;
    if (w->stores_closed || ik_segment_status(w->srv->seg, &st, &nst) != 0) nst = 0;
    ik__buf_puts(b, "<section id=\"tags\"><h2>Tags</h2><p class=\"err\" id=\"tags-err\">");
    if (t->list_rc != 0) {
        ik__buf_puts(b, "cannot list the tags: ");
        put_html_str(b, ik_strerror(t->list_rc));
    }
    ik__buf_puts(b, "</p><table><thead><tr><th>Tag</th><th>Kind</th><th>max_id</th>"
                    "<th>Current block</th><th>Next block</th><th>IDs/s</th></tr></thead>"
                    "<tbody id=\"tags-rows\">\n");
    for (size_t i = 0; t->list_rc == 0 && i < t->nlist; i++) {
        const ik_tag_info *tag = &t->list[i];
        const ik_segment_tag_status *s = NULL;
        for (size_t k = 0; k < nst; k++)
            if (strcmp(st[k].name, tag->name) == 0) s = &st[k];
        ik__buf_puts(b, "<tr data-tag=\"");
        put_html_str(b, tag->name);
        ik__buf_puts(b, "\"><td>");
        put_html_str(b, tag->name);
        ik__buf_printf(b, "</td><td>%s</td><td>%lld</td>", ik_tag_kind_name(tag->kind),
                       (long long)tag->max_id);
        if (s && s->cur_end > s->cur_next)
            ik__buf_printf(b, "<td>%lld .. %lld</td>", (long long)s->cur_next,
                           (long long)s->cur_end - 1);
        else
            ik__buf_puts(b, "<td>-</td>");
        if (s && s->next_end > s->next_start)
            ik__buf_printf(b, "<td>%lld .. %lld</td>", (long long)s->next_start,
                           (long long)s->next_end - 1);
        else
            ik__buf_puts(b, "<td>-</td>");
        ik__buf_puts(b, "<td>-</td></tr>\n");
    }
    ik__buf_puts(b, "</tbody></table></section>\n");
    ik_free(st);
}

/* The decode box, with the answer for ?decode=ID when one was asked. */
static void put_decode(ik__server *srv, const ik__pool_call *t, ik__buf *b)
{
    ik__buf_puts(b, "<section id=\"decode\"><h2>Decode an ID</h2>"
                    "<form id=\"decode-form\" method=\"get\" action=\"/\">"
                    "<input id=\"decode-id\" name=\"decode\" inputmode=\"numeric\" size=\"22\" "
                    "autocomplete=\"off\" placeholder=\"an ID\" value=\"");
    put_html_str(b, t->decode);
    ik__buf_puts(b, "\"> <button type=\"submit\">Decode</button></form><pre id=\"decode-out\">");
    if (t->decode[0]) {
        int64_t id;
        ik_id_parts p;
        if (ik_parse_id(t->decode, strlen(t->decode), &id) != 0 ||
            ik_layout_decode(srv->layout, id, &p) != 0) {
            ik__buf_puts(b, "not an ID of this server's layout: ");
            put_html_str(b, t->decode);
        } else {
            char iso[32];
            ik__fmt_iso8601(iso, p.time_ms);
            ik__buf_printf(b,
                           "id        %lld\ntime      %s\ntime_ms   %lld\nworker    %u\n"
                           "sequence  %u",
                           (long long)p.id, iso, (long long)p.time_ms, p.worker, p.sequence);
        }
    }
    ik__buf_puts(b, "</pre></section>\n");
}

void ik__page_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs)
{
    const char *html = ik__page_html;
    const char *mark = strstr(html, MARKER);
    ik__buf *b = rs->body;
    if (!mark) { /* the build embedded a page without its marker */
        ik__reply_error(rs, 500, "internal", "the embedded status page lacks its marker");
        return;
    }
    ik__buf_append(b, html, (size_t)(mark - html));
    put_server(w->srv, b);
    put_lease(w->srv, b);
    put_hazards(w->srv, b);
    put_range(w->srv, p->pool, b);
    put_rates(b);
    put_events(w->srv, b);
    put_workers(w->srv, p->pool, b);
    put_tags(w, p->pool, b);
    put_semaphores(w->srv, p->pool, b);
    put_decode(w->srv, p->pool, b);
    const char *rest = mark + sizeof MARKER - 1;
    ik__buf_append(b, rest, (size_t)(html + ik__page_html_len - rest));
    rs->ctype = "text/html; charset=utf-8";
    ik__reply_header(rs, "Cache-Control: no-store");
    ik__reply_header(
        rs, "Content-Security-Policy: default-src 'self'; img-src 'self' data:; script-src "
            "'unsafe-inline' 'self'; "
            "style-src 'unsafe-inline'; frame-ancestors 'none'");
}

void ik__workers_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs)
{
    ik__server *srv = w->srv;
    const ik__pool_call *t = p->pool;
    ik_lease_info li;
    ik__lease_info(srv, &li);
    ik__buf *b = rs->body;
    ik__buf_puts(b, "{\"app\":");
    ik__buf_append_json_str(b, srv->cfg->app, strlen(srv->cfg->app));
    ik__buf_printf(b, ",\"self\":%d,\"identity\":", li.worker);
    ik__buf_append_json_str(b, srv->identity, strlen(srv->identity));
    ik__buf_puts(b, ",\"slots\":[");
    for (size_t i = 0; i < t->nslots; i++) {
        const ik_slot_info *s = &t->slots[i];
        char since[32], record[32];
        ik__fmt_iso8601(since, s->since_ms);
        ik__fmt_iso8601(record, s->record_ms);
        int self = s->held && li.worker >= 0 && (uint32_t)li.worker == s->worker;
        ik__buf_printf(b, "%s{\"worker\":%u,\"held\":%s,\"self\":%s,\"holder\":", i ? "," : "",
                       s->worker, s->held ? "true" : "false", self ? "true" : "false");
        ik__buf_append_json_str(b, s->holder, strlen(s->holder));
        ik__buf_puts(b, ",\"detail\":");
        ik__buf_append_json_str(b, s->detail, strlen(s->detail));
        ik__buf_printf(b,
                       ",\"since_ms\":%lld,\"since\":\"%s\",\"record_ms\":%lld,\"record\":\"%s\"}",
                       (long long)s->since_ms, since, (long long)s->record_ms, record);
    }
    ik__buf_puts(b, "]}\n");
    rs->ctype = "application/json";
}

void ik__semaphores_render(ik__worker *w, const ik__pend *p, ik__http_reply *rs)
{
    const ik_server_config *cfg = w->srv->cfg;
    const ik__pool_call *t = p->pool;
    ik__buf *b = rs->body;
    ik__buf_puts(b, "{\"semaphores\":[");
    for (int i = 0; i < cfg->nsemaphores; i++) {
        ik__buf_puts(b, i ? ",{\"path\":" : "{\"path\":");
        ik__buf_append_json_str(b, cfg->semaphores[i], strlen(cfg->semaphores[i]));
        ik__buf_printf(b, ",\"layout\":\"%s\"",
                       cfg->semaphore_layouts[i] == IK_SEMAPHORE_KAZOO ? "kazoo" : "curator");
        if (t->sema_rc[i] != 0) {
            const char *why = sema_why(cfg, i, t->sema_rc[i]);
            ik__buf_puts(b, ",\"error\":");
            ik__buf_append_json_str(b, why, strlen(why));
            ik__buf_puts(b, "}");
            continue;
        }
        ik__buf_printf(b, ",\"max\":%lld,\"held\":[", (long long)t->sema_max[i]);
        for (size_t k = 0; k < t->nsema[i]; k++) {
            const ik_semaphore_holder *h = &t->sema[i][k];
            ik__buf_printf(b, "%s{\"fence\":%lld,\"data\":", k ? "," : "", (long long)h->fence);
            ik__buf_append_json_str(b, h->data, strlen(h->data));
            ik__buf_puts(b, ",\"session\":");
            ik__buf_append_json_str(b, h->session, strlen(h->session));
            ik__buf_puts(b, ",\"node\":");
            ik__buf_append_json_str(b, h->node, strlen(h->node));
            ik__buf_puts(b, "}");
        }
        ik__buf_puts(b, "]}");
    }
    ik__buf_puts(b, "]}\n");
    rs->ctype = "application/json";
}
