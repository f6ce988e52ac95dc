/* hammer.c: a keep-alive HTTP load client for idkeeper's ID routes, used by the
 * integration tests, the benchmarks and the chaos run.
 *
 *   hammer --url http://127.0.0.1:PORT/v1/sequence/TAG?count=1&format=text
 *          [--connections C] [--duration SECONDS] [--out FILE] [--reconnect]
 *          [--drain SECONDS] [--give-up MS] [--rate R] [--quiet]
 *
 * C connections (one libuv loop, one thread) each send GET requests back to back:
 * the next request leaves when the answer to the previous one is complete. Every ID
 * of every 200 answer goes to FILE, one a line (an ID is a maximal run of digits in
 * the body, which covers the JSON, text and Leaf formats).
 *
 * Stopping: when the duration ends, or at the first SIGTERM/SIGINT, no new request
 * leaves, and the answers still on their way are awaited (at most --drain seconds,
 * default 10), so that IDs a server committed are not lost by the client; a second
 * signal stops at once. Then FILE is flushed and closed and one summary line goes
 * to stdout:
 *
 *   hammer: ok=N errors=E ids=K duration_s=S rps=R ids_per_s=I p50_ms=A p99_ms=B
 *           errors_by=503:x,conn:y
 *
 * A connection that fails (refused, reset, closed with an answer outstanding) is
 * counted once under "conn" and stops; with --reconnect it connects again after
 * 100 ms. A server that dies is just that: hammer never crashes on it (SIGPIPE is
 * ignored). Exit status: 0 if at least one answer was 200, else 1; 2 for usage.
 *
 * --give-up MS: a client that gives up early. Each request waits for its answer a
 * time drawn at random from 1..MS ms; if the answer is not complete by then, the
 * client gives up on it (counted in "gaveup=N", not an error): it shuts its side of
 * the connection down (the server reads EOF, as from curl --max-time), reads on
 * until the server closes, and connects again after 100 ms. The server must
 * withdraw the request given up on, or log its range as a gap (docs/guarantees.md promise 4),
 * unless it had written the answer already: the IDs of answers that arrive after giving up go to
 * FILE.late ("late=N"), not to FILE, so that a checker can tell an ID the server delivered (and the
 * client dropped) from a gap.
 *
 * --rate R: each connection sends at most R requests a second: the next request
 * leaves when the answer to the previous one is complete, but not sooner than 1/R s
 * after it left. For a load that must leave CPU to others (make test's chaos run).
 *
 * What it deliberately does not do: HTTPS, pipelining, redirects, bodies.
 */
#include "http_framing.h"

#include <uv.h>

#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_STATUS 600

typedef struct conn conn;

struct conn {
    uv_tcp_t tcp;
    uv_connect_t cr;
    uv_write_t wr;
    uv_timer_t retry;
    uv_timer_t giveup; /* --give-up: the outstanding request's patience */
    uv_timer_t pace;   /* --rate: holds the next request until its time */
    uv_shutdown_t sd;
    ik__httpresp resp;
    int index;
    int open; /* tcp handle initialised and not closed */
    int connected;
    int outstanding; /* a request is on its way, its answer not complete */
    int closing;
    int keep;    /* the answer allows another request */
    int gave_up; /* gave up (--give-up): reading until EOF, then connect again */
    int status;
    uint64_t sent_ns;
    char *body;
    size_t body_len, body_cap;
};

static struct {
    uv_loop_t *loop;
    struct sockaddr_storage addr;
    char *request;
    size_t request_len;
    conn *conns;
    int nconns;
    int reconnect;
    int stopping; /* no new requests */
    int quiet;
    double duration_s, drain_s;
    uv_timer_t duration_timer, drain_timer;
    uv_signal_t sigterm, sigint;
    int signals;
    FILE *out, *late; /* --out FILE, FILE.late */
    uint64_t start_ns, end_ns;
    uint64_t ok, ids, conn_errors, gaveup, late_ids;
    unsigned giveup_ms;   /* 0: patient */
    uint64_t interval_ns; /* --rate: 1/R s; 0: back to back */
    uint64_t by_status[MAX_STATUS + 1];
    uint32_t *lat_us; /* one per answer, up to lat_cap */
    size_t nlat, lat_cap;
} H;

static void conn_connect(conn *c);
static void conn_send(conn *c);
static void conn_next(conn *c);
static void on_retry(uv_timer_t *t);

/* Usage errors: "hammer: WHAT 'ARG'", exit 2. */
static void die(const char *what, const char *arg)
{
    fprintf(stderr, "hammer: %s '%s'\n", what, arg);
    exit(2);
}

/* ---- ending ------------------------------------------------------------------------- */

static int all_closed(void)
{
    for (int i = 0; i < H.nconns; i++)
        if (H.conns[i].open || uv_is_active((uv_handle_t *)&H.conns[i].retry)) return 0;
    return 1;
}

/* Closes the loop's own handles once every connection is gone: uv_run then returns. */
static void maybe_finish(void)
{
    if ((!H.stopping && H.reconnect) || !all_closed()) return;
    H.stopping = 1; /* without --reconnect, every connection may have failed early */
    if (!H.end_ns) H.end_ns = uv_hrtime();
    uv_handle_t *hs[] = {(uv_handle_t *)&H.duration_timer, (uv_handle_t *)&H.drain_timer,
                         (uv_handle_t *)&H.sigterm, (uv_handle_t *)&H.sigint};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
        if (!uv_is_closing(hs[i])) uv_close(hs[i], NULL);
    for (int i = 0; i < H.nconns; i++) {
        if (!uv_is_closing((uv_handle_t *)&H.conns[i].retry))
            uv_close((uv_handle_t *)&H.conns[i].retry, NULL);
        if (!uv_is_closing((uv_handle_t *)&H.conns[i].giveup))
            uv_close((uv_handle_t *)&H.conns[i].giveup, NULL);
        if (!uv_is_closing((uv_handle_t *)&H.conns[i].pace))
            uv_close((uv_handle_t *)&H.conns[i].pace, NULL);
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    conn *c = h->data;
    c->open = 0;
    c->closing = 0;
    c->connected = 0;
    int again = c->gave_up;
    c->gave_up = 0;
    if (!H.stopping && (H.reconnect || again)) {
        uv_timer_start(&c->retry, on_retry, 100, 0);
        return;
    }
    maybe_finish();
}

static void conn_close(conn *c)
{
    if (!c->open || c->closing) return;
    c->closing = 1;
    uv_timer_stop(&c->giveup);
    uv_timer_stop(&c->pace);
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

/* A connection that failed: counted once, if it had an answer outstanding or never
 * connected. */
static void conn_fail(conn *c)
{
    if (c->outstanding || !c->connected) H.conn_errors++;
    c->outstanding = 0;
    conn_close(c);
}

/* Stops sending; connections without an answer outstanding (or one given up on,
 * whose late answer is still read) close now. */
static void begin_stop(void)
{
    if (H.stopping) return;
    H.stopping = 1;
    for (int i = 0; i < H.nconns; i++) {
        conn *c = &H.conns[i];
        uv_timer_stop(&c->retry);
        if (!c->outstanding && !c->gave_up) conn_close(c); /* gave up: reading to EOF */
    }
    maybe_finish();
}

/* The drain time is up, or a second signal: close everything now. */
static void force_stop(void)
{
    H.stopping = 1;
    for (int i = 0; i < H.nconns; i++) {
        uv_timer_stop(&H.conns[i].retry);
        conn_fail(&H.conns[i]);
    }
    maybe_finish();
}

static void on_giveup_shutdown(uv_shutdown_t *r, int status)
{
    if (status < 0) conn_close(r->data);
}

/* --give-up: the answer did not come in time: shut our side down and read what
 * still comes until EOF (at most 10 s more). */
static void on_giveup(uv_timer_t *t)
{
    conn *c = t->data;
    if (c->closing) return;
    if (c->gave_up) { /* the server did not close within 10 s */
        conn_close(c);
        return;
    }
    if (!c->outstanding) return;
    H.gaveup++;
    c->outstanding = 0;
    c->gave_up = 1;
    c->sd.data = c;
    if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_giveup_shutdown) != 0) {
        conn_close(c);
        return;
    }
    uv_timer_start(&c->giveup, on_giveup, 10000, 0);
}

static void on_drain_timer(uv_timer_t *t)
{
    force_stop();
}

/* The duration is up, or the first signal: stop sending, await the answers on
 * their way for at most --drain seconds. */
static void stop_gracefully(void)
{
    if (H.stopping) return;
    H.end_ns = uv_hrtime();
    uv_timer_start(&H.drain_timer, on_drain_timer, (uint64_t)(H.drain_s * 1000), 0);
    begin_stop();
}

static void on_duration(uv_timer_t *t)
{
    stop_gracefully();
}

static void on_signal(uv_signal_t *s, int signum)
{
    if (H.signals++ == 0) {
        stop_gracefully();
    } else {
        force_stop();
    }
}

/* ---- answers ------------------------------------------------------------------------ */

/* Writes every maximal run of digits in the body as one ID a line to f (if any);
 * returns how many. */
static uint64_t take_ids(FILE *f, const char *b, size_t n)
{
    uint64_t k = 0;
    size_t i = 0;
    while (i < n) {
        if (b[i] < '0' || b[i] > '9') {
            i++;
            continue;
        }
        size_t s = i;
        while (i < n && b[i] >= '0' && b[i] <= '9')
            i++;
        if (f) {
            fwrite(b + s, 1, i - s, f);
            fputc('\n', f);
        }
        k++;
    }
    return k;
}

static int on_body(void *ctx, const char *at, size_t len)
{
    conn *c = ctx;
    if (c->body_len + len > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 4096;
        while (cap < c->body_len + len)
            cap *= 2;
        char *nb = realloc(c->body, cap);
        if (!nb) {
            fprintf(stderr, "hammer: out of memory\n");
            abort();
        }
        c->body = nb;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, at, len);
    c->body_len += len;
    return 0;
}

static void on_begin(void *ctx)
{
    conn *c = ctx;
    c->body_len = 0;
}

static void on_complete(ik__httpresp *hr, void *ctx)
{
    conn *c = ctx;
    uint64_t now = uv_hrtime();
    c->status = ik__httpresp_status(hr);
    if (c->gave_up) { /* an answer given up on that came anyway */
        if (c->status == 200) H.late_ids += take_ids(H.late, c->body, c->body_len);
        return;
    }
    uv_timer_stop(&c->giveup);
    if (H.nlat < H.lat_cap) H.lat_us[H.nlat++] = (uint32_t)((now - c->sent_ns) / 1000);
    c->outstanding = 0;
    c->keep = ik__httpresp_keep_alive(hr);
    if (c->status == 200) {
        H.ok++;
        H.ids += take_ids(H.out, c->body, c->body_len);
    } else {
        H.by_status[c->status >= 0 && c->status <= MAX_STATUS ? c->status : 0]++;
    }
}

static const ik__httpresp_cbs resp_cbs = {
    .on_begin = on_begin,
    .on_body = on_body,
    .on_complete = on_complete,
};

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    static char rbuf[256 * 1024];
    buf->base = rbuf;
    buf->len = sizeof rbuf;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    conn *c = s->data;
    if (nread == 0) return;
    if (nread < 0) { /* EOF or error: an answer outstanding is lost */
        if (c->gave_up) {
            conn_close(c);
        } else {
            conn_fail(c);
        }
        return;
    }
    size_t used;
    if (ik__httpresp_feed(&c->resp, buf->base, (size_t)nread, &used) != IK_FEED_OK ||
        used != (size_t)nread) {
        conn_fail(c);
        return;
    }
    if (c->outstanding || c->gave_up) return;
    if (H.stopping || !c->keep) {
        conn_close(c);
        return;
    }
    conn_next(c);
}

static void on_write(uv_write_t *wr, int status)
{
    conn *c = wr->data;
    if (status < 0) conn_fail(c);
}

static void conn_send(conn *c)
{
    c->outstanding = 1;
    c->sent_ns = uv_hrtime();
    if (H.giveup_ms) uv_timer_start(&c->giveup, on_giveup, 1 + (uint64_t)rand() % H.giveup_ms, 0);
    uv_buf_t b = uv_buf_init(H.request, (unsigned)H.request_len);
    int r = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (r == (int)H.request_len) return;
    if (r < 0 && r != UV_EAGAIN) {
        conn_fail(c);
        return;
    }
    if (r < 0) r = 0;
    b = uv_buf_init(H.request + r, (unsigned)(H.request_len - (size_t)r));
    c->wr.data = c;
    if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, &b, 1, on_write) != 0) conn_fail(c);
}

static void on_pace(uv_timer_t *t)
{
    conn *c = t->data;
    if (c->closing || !c->connected || c->outstanding || c->gave_up) return;
    if (H.stopping) {
        conn_close(c);
        return;
    }
    conn_send(c);
}

/* The next request on a connection whose answer is complete: now, or with --rate
 * once 1/R s have passed since the last one left. */
static void conn_next(conn *c)
{
    uint64_t due = c->sent_ns + H.interval_ns, now = uv_hrtime();
    if (H.interval_ns && now < due) {
        uv_timer_start(&c->pace, on_pace, (due - now + 999999) / 1000000, 0);
        return;
    }
    conn_send(c);
}

static void on_connect(uv_connect_t *cr, int status)
{
    conn *c = cr->data;
    if (status < 0 || c->closing) {
        conn_fail(c);
        return;
    }
    c->connected = 1;
    uv_tcp_nodelay(&c->tcp, 1);
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
        conn_fail(c);
        return;
    }
    if (H.stopping) {
        conn_close(c);
        return;
    }
    conn_send(c);
}

static void conn_connect(conn *c)
{
    if (H.stopping) {
        maybe_finish();
        return;
    }
    uv_tcp_init(H.loop, &c->tcp);
    c->tcp.data = c;
    c->open = 1;
    c->closing = 0;
    c->connected = 0;
    c->outstanding = 0;
    ik__httpresp_init(&c->resp, &resp_cbs, c);
    c->cr.data = c;
    if (uv_tcp_connect(&c->cr, &c->tcp, (struct sockaddr *)&H.addr, on_connect) != 0) conn_fail(c);
}

static void on_retry(uv_timer_t *t)
{
    conn_connect(t->data);
}

/* ---- start ---------------------------------------------------------------------------- */

/* Splits http://HOST[:PORT]/PATH (HOST may be [IPv6]) into a resolved address and the
 * request bytes. */
static void parse_url(const char *url)
{
    if (strncmp(url, "http://", 7) != 0)
        die(strstr(url, "://") ? "only http:// URLs:" : "bad --url (want http://HOST:PORT/PATH):",
            url);
    const char *h = url + 7, *e;
    if (*h == '[') {
        e = strchr(++h, ']');
        if (!e) die("bad --url (unclosed [):", url);
    } else {
        e = h + strcspn(h, ":/?#");
    }
    char host[256], port[8] = "80";
    size_t hl = (size_t)(e - h);
    if (hl == 0) die("bad --url (want http://HOST:PORT/PATH):", url);
    if (hl >= sizeof host) die("host too long in", url);
    memcpy(host, h, hl);
    host[hl] = 0;
    const char *r = e + (*e == ']');
    if (*r == ':') {
        char *pe;
        unsigned long pn = strtoul(r + 1, &pe, 10);
        if (pe == r + 1 || pn == 0 || pn > 65535 || (*pe && *pe != '/'))
            die("bad port in --url:", url);
        snprintf(port, sizeof port, "%lu", pn);
        r = pe;
    }
    if (*r && *r != '/') die("bad --url (want http://HOST:PORT/PATH):", url);
    const char *path = *r ? r : "/"; /* path, query and fragment as given */
    size_t pl = strlen(path);
    struct addrinfo hints, *res;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0) die("cannot resolve", host);
    memcpy(&H.addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    size_t cap = pl + hl + 64;
    H.request = malloc(cap);
    if (!H.request) abort();
    int n = snprintf(H.request, cap, "GET %.*s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", (int)pl, path,
                     host, port);
    H.request_len = (size_t)n;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr, "usage: hammer --url http://HOST:PORT/PATH [--connections C] [--duration S] "
                    "[--out FILE] [--reconnect] [--drain S] [--give-up MS] [--rate R] [--quiet]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *url = NULL, *out = NULL;
    H.nconns = 1;
    H.duration_s = 10;
    H.drain_s = 10;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--reconnect")) {
            H.reconnect = 1;
        } else if (!strcmp(a, "--quiet")) {
            H.quiet = 1;
        } else if (!v) {
            usage();
        } else if (!strcmp(a, "--url")) {
            url = v, i++;
        } else if (!strcmp(a, "--out")) {
            out = v, i++;
        } else if (!strcmp(a, "--connections")) {
            H.nconns = atoi(v), i++;
        } else if (!strcmp(a, "--duration")) {
            H.duration_s = atof(v), i++;
        } else if (!strcmp(a, "--drain")) {
            H.drain_s = atof(v), i++;
        } else if (!strcmp(a, "--give-up")) {
            H.giveup_ms = (unsigned)atoi(v), i++;
        } else if (!strcmp(a, "--rate")) {
            double r = atof(v);
            if (r <= 0) die("bad --rate (want requests a second, above 0):", v);
            H.interval_ns = (uint64_t)(1e9 / r), i++;
        } else {
            usage();
        }
    }
    if (!url || H.nconns < 1 || H.nconns > 100000 || H.duration_s <= 0 || H.drain_s < 0) usage();
    signal(SIGPIPE, SIG_IGN);
    srand((unsigned)getpid() ^ (unsigned)uv_hrtime());
    parse_url(url);
    if (out) {
        H.out = fopen(out, "w");
        if (!H.out) die("cannot write", out);
        setvbuf(H.out, NULL, _IOFBF, 1 << 20);
        if (H.giveup_ms) {
            char lp[4096];
            snprintf(lp, sizeof lp, "%s.late", out);
            H.late = fopen(lp, "w");
            if (!H.late) die("cannot write", lp);
        }
    }
    H.lat_cap = 1u << 24;
    H.lat_us = malloc(H.lat_cap * sizeof *H.lat_us);
    if (!H.lat_us) H.lat_cap = 0;
    H.loop = uv_default_loop();
    H.conns = calloc((size_t)H.nconns, sizeof *H.conns);
    if (!H.conns) abort();
    uv_timer_init(H.loop, &H.duration_timer);
    uv_timer_init(H.loop, &H.drain_timer);
    uv_signal_init(H.loop, &H.sigterm);
    uv_signal_init(H.loop, &H.sigint);
    uv_signal_start(&H.sigterm, on_signal, SIGTERM);
    uv_signal_start(&H.sigint, on_signal, SIGINT);
    H.start_ns = uv_hrtime();
    uv_timer_start(&H.duration_timer, on_duration, (uint64_t)(H.duration_s * 1000), 0);
    for (int i = 0; i < H.nconns; i++) {
        conn *c = &H.conns[i];
        c->index = i;
        uv_timer_init(H.loop, &c->retry);
        c->retry.data = c;
        uv_timer_init(H.loop, &c->giveup);
        c->giveup.data = c;
        uv_timer_init(H.loop, &c->pace);
        c->pace.data = c;
        conn_connect(c);
    }
    uv_run(H.loop, UV_RUN_DEFAULT);
    uv_loop_close(H.loop);

    int rc = 0;
    if (H.late && fclose(H.late) != 0) {
        fprintf(stderr, "hammer: cannot write '%s.late': %s\n", out, strerror(errno));
        rc = 1;
    }
    if (H.out && fclose(H.out) != 0) {
        fprintf(stderr, "hammer: cannot write '%s': %s\n", out, strerror(errno));
        rc = 1;
    }
    double secs = (double)((H.end_ns ? H.end_ns : uv_hrtime()) - H.start_ns) / 1e9;
    uint64_t errors = H.conn_errors;
    char by[1024] = "";
    size_t bl = 0;
    for (int s = 0; s <= MAX_STATUS; s++) {
        if (!H.by_status[s]) continue;
        errors += H.by_status[s];
        bl += (size_t)snprintf(by + bl, sizeof by - bl, "%s%d:%llu", bl ? "," : "", s,
                               (unsigned long long)H.by_status[s]);
        if (bl >= sizeof by) bl = sizeof by - 1;
    }
    if (H.conn_errors)
        snprintf(by + bl, sizeof by - bl, "%sconn:%llu", bl ? "," : "",
                 (unsigned long long)H.conn_errors);
    double p50 = 0, p99 = 0;
    if (H.nlat) {
        qsort(H.lat_us, H.nlat, sizeof *H.lat_us, cmp_u32);
        p50 = H.lat_us[H.nlat / 2] / 1000.0;
        p99 = H.lat_us[(size_t)((double)H.nlat * 0.99)] / 1000.0;
    }
    printf("hammer: ok=%llu errors=%llu ids=%llu duration_s=%.3f rps=%.0f ids_per_s=%.0f "
           "p50_ms=%.3f p99_ms=%.3f errors_by=%s gaveup=%llu late=%llu\n",
           (unsigned long long)H.ok, (unsigned long long)errors, (unsigned long long)H.ids, secs,
           secs > 0 ? (double)(H.ok + errors) / secs : 0, secs > 0 ? (double)H.ids / secs : 0, p50,
           p99, by[0] ? by : "-", (unsigned long long)H.gaveup, (unsigned long long)H.late_ids);
    fflush(stdout);
    free(H.lat_us);
    free(H.request);
    for (int i = 0; i < H.nconns; i++)
        free(H.conns[i].body);
    free(H.conns);
    return rc ? rc : H.ok ? 0 : 1;
}
