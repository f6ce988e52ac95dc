/* options.c: the CLI's option table and the pure parser that merges the command
 * line, the environment and the INI config file (see options.h for the rules). */
#include "options.h"

#include "../lib/rules.h" /* app names and listen addresses, as the library has them */
#include "idkeeper.h"

#include <ini.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The option table. The environment variable is IDKEEPER_ and the row's id, which
 * is the name in upper case with dashes as underscores (a unit test holds the table
 * to that). */
/* ROW(id, name, kind, default, metavar, help, min, max, choices) */
#define ROW(id, name, kind, def, meta, help, min, max, choices)                                    \
    [IK_OPT_##                                                                                     \
        id] = {name, "IDKEEPER_" #id, IK_KIND_##kind, def, meta, help, min, max, choices, NULL}

ik_cli_option ik__cli_options[IK_OPT__COUNT] = {
    ROW(CONFIG, "config", STRING, NULL, "FILE",
        "read options from this INI file (keys are option names)", 0, 0, NULL),
    ROW(COORD, "coord", COORD, "local:./idkeeper-data", "URI",
        "coordination backend, one of this build's:", 0, 0, NULL),
    ROW(APP, "app", APP, "default", "NAME",
        "app namespace of slots and tags (1 to 64 bytes of [A-Za-z0-9._:-], not . or ..)", 0, 0,
        NULL),
    ROW(HTTP, "http", ADDR, "127.0.0.1:8080", "ADDR:PORT",
        "listen address of the HTTP API ([V6]:PORT for IPv6, :PORT for every IPv4 address, "
        "port 0 for any free port)",
        0, 0, NULL),
    ROW(IDENTITY, "identity", STRING, NULL, "TEXT",
        "who holds the slot, for stickiness (default HOSTNAME:HTTP_PORT)", 0, 0, NULL),
    ROW(WORKER_RANGE, "worker-range", RANGE, NULL, "A-B",
        "worker numbers this app may use (default: all the worker bits allow)", 0, UINT32_MAX,
        NULL),
    ROW(LAYOUT, "layout", LAYOUT, NULL, "SPEC",
        "ID bit layout: a preset (default, js53: IDs below 2^53) optionally first, then "
        "comma-separated items of bits=T/W/S unit=1ms|10ms|1s epoch=MS|YYYY-MM-DD workers=A-B "
        "seq-start=0|random:N (default bits=41/10/12,unit=1ms)",
        0, 0, NULL),
    ROW(EPOCH, "epoch", EPOCH, NULL, "MS|YYYY-MM-DD",
        "time 0 of the IDs, Unix ms or a UTC date (default 1288834974657)", 0, 0, NULL),
    ROW(SLOT_CHOICE, "slot-choice", CHOICE, "random", "random|lowest",
        "slot taken when this identity's last one is not free", 0, 0, "random|lowest"),
    ROW(SLOT_WAIT, "slot-wait", INT, NULL, "MS",
        "no free slot at start: wait this long for one, not ready meanwhile; by default what a "
        "dead holder's slot takes to free plus 2000, on this build's backends:",
        0, 86400000, NULL),
    ROW(MAX_BATCH, "max-batch", INT, "10000", "N", "most IDs one request may ask for", 1, 1000000,
        NULL),
    ROW(MAX_BACKWARD, "max-backward", INT, "5", "MS",
        "a clock that goes back up to this is waited for; more is refused", 0, 10000, NULL),
    ROW(THREADS, "threads", INT, "0", "N", "event-loop threads (0: one per core)", 0, 256, NULL),
    ROW(MAX_HEADER_BYTES, "max-header-bytes", INT, "8192", "N",
        "largest request line plus headers (else 431)", 1024, 1048576, NULL),
    ROW(IDLE_TIMEOUT, "idle-timeout", INT, "60000", "MS",
        "an idle keep-alive connection is closed after this", 1, 86400000, NULL),
    ROW(READ_TIMEOUT, "read-timeout", INT, "10000", "MS",
        "a started request must arrive whole within this", 1, 86400000, NULL),
    ROW(MAX_CONNECTIONS, "max-connections", INT, "10000", "N", "most open client connections", 1,
        1000000, NULL),
    ROW(HTTP_TOKEN_FILE, "http-token-file", STRING, NULL, "FILE",
        "bearer token on the file's first line: serve requires it on every route that issues "
        "IDs or shows state (all but /healthz and /readyz); next sends it",
        0, 0, NULL),
    ROW(OPEN_LEAF_ROUTES, "open-leaf-routes", FLAG, "false", NULL,
        "with a token, leave the Leaf routes (/api/...) open for Leaf clients that cannot send "
        "it: anyone who reaches the port can take IDs",
        0, 0, NULL),
    ROW(OPEN_METRICS, "open-metrics", FLAG, "false", NULL,
        "with a token, leave /metrics open for a scraper without it: anyone who reaches the port "
        "sees the fleet's state",
        0, 0, NULL),
    ROW(QUIET, "quiet", FLAG, "false", NULL, "no start-up banner", 0, 0, NULL),
    ROW(SHUTDOWN_TIMEOUT, "shutdown-timeout", INT, "5000", "MS",
        "on SIGTERM, in-flight requests get this long to finish", 1, 600000, NULL),
    ROW(SERVER, "server", URL, "http://127.0.0.1:8080", "URL",
        "base URL of a running idkeeper serve", 0, 0, NULL),
    ROW(COUNT, "count", INT, "1", "N", "how many IDs", 1, INT64_C(1000000000000), NULL),
    ROW(BATCH, "batch", INT, "10000", "N",
        "IDs per request (lowered to the server's --max-batch if above it)", 1, 1000000, NULL),
    ROW(JSON, "json", FLAG, "false", NULL, "print JSON instead of text", 0, 0, NULL),
    ROW(EXPIRY, "expiry", FLAG, "false", NULL, "print the date on which the layout runs out", 0, 0,
        NULL),
    ROW(KIND, "kind", CHOICE, NULL, "segment|sequence",
        "kind of a new tag: segment (fast, with gaps) or sequence (gap-free)", 0, 0,
        "segment|sequence"),
    ROW(START, "start", INT, "1", "N", "first ID of a new tag", 0, INT64_C(1000000000000000000),
        NULL),
    ROW(STEP, "step", INT, NULL, "N",
        "smallest block of IDs a server takes of a new segment tag (default 1000; sequence "
        "tags take no step)",
        1, 1000000, NULL),
    ROW(DESCRIPTION, "description", STRING, NULL, "TEXT",
        "free text stored with a new tag (at most 255 bytes)", 0, 255, NULL),
    ROW(TIMEOUT, "timeout", INT, NULL, "MS",
        "give up waiting for the lock or lease after this (exit 124), counted once the store is "
        "open and checked; 0: try once (default: wait forever)",
        0, INT64_C(31536000000), NULL),
    ROW(GRACE, "grace", INT, NULL, "MS",
        "after the lock, lease or leadership is lost, CMD gets SIGTERM, and SIGKILL this much "
        "later; after CMD exits or a signal passed on, the rest of its tree has this long "
        "(zk://: default a sixth of the session timeout, at most a quarter of it; local: 2000)",
        0, 3600000, NULL),
    ROW(CONTAIN, "contain", CHOICE, "auto", "auto|pidns|cgroup|userns|guardian",
        "how CMD's whole process tree is ended (docs/recipes.md): a PID namespace (root), a "
        "delegated cgroup v2, a PID namespace in a user namespace, or the guardian alone; "
        "auto: the first of these the host allows",
        0, 0, "auto|pidns|cgroup|userns|guardian"),
    ROW(ID, "id", STRING, NULL, "TEXT",
        "this candidate's participant id, shown as the leader (default HOSTNAME:PID)", 0, 255,
        NULL),
    ROW(ONCE, "once", FLAG, "false", NULL,
        "exit (125) when leadership is lost, instead of campaigning again", 0, 0, NULL),
    ROW(RESP, "resp", ADDR, NULL, "ADDR:PORT",
        "also answer the Redis protocol (RESP2/RESP3) here, an address as --http takes; off by "
        "default (docs/resp.md)",
        0, 0, NULL),
    ROW(LOG_SEQUENCE_COMMITS, "log-sequence-commits", FLAG, "false", NULL,
        "log each sequence range on stderr before it is answered (docs/http.md); for audits "
        "and tests",
        0, 0, NULL),
    ROW(PASSWORD, "password", STRING, NULL, "TEXT",
        "the store's password; set it in the environment or the config file, or use "
        "--password-file: a command line shows in ps. On this build's backends that log in "
        "with one:",
        0, 1024, NULL),
    ROW(PASSWORD_FILE, "password-file", STRING, NULL, "FILE",
        "read the store's password from the file's first line (wins over --password)", 0, 0, NULL),
    ROW(LEASE_TTL, "lease-ttl", INT, "10000", "MS",
        "a worker slot's lease, after which a dead holder's slot frees, on this build's "
        "backends whose slots are leases:",
        1000, 3600000, NULL),
    ROW(ALLOW_UNSAFE_STORE, "allow-unsafe-store", FLAG, "false", NULL,
        "serve counters on a store whose settings can lose an acknowledged write (the refusal "
        "names them): a crash of the store can then repeat IDs",
        0, 0, NULL),
    ROW(MAX, "max", INT, NULL, "N",
        "semaphore: at most N leases held at once; every user of the semaphore gives the same "
        "N (the one stored with it is checked)",
        1, IK_SEMAPHORE_MAX_LEASES, NULL),
    ROW(SEMAPHORE_LAYOUT, "semaphore-layout", CHOICE, "curator", "curator|kazoo",
        "zk:// only: the peer whose semaphore nodes to join on PATH: Curator's "
        "InterProcessSemaphoreV2 or kazoo's Semaphore (docs/recipes.md, \"Semaphores\")",
        0, 0, "curator|kazoo"),
    ROW(LIST, "list", FLAG, "false", NULL,
        "semaphore: print the leases held at PATH and the stored max, instead of running a "
        "command",
        0, 0, NULL),
    ROW(SEMAPHORES, "semaphores", STRING, NULL, "[kazoo:]PATH,...",
        "the semaphores whose leases GET /v1/semaphores and the status page show, at most 16, "
        "each in Curator's layout or, prefixed kazoo:, in kazoo's (docs/http.md)",
        0, 4096, NULL),
    ROW(LEAF_NAME, "leaf-name", APP, NULL, "NAME",
        "zk:// only: join the Meituan Leaf snowflake fleet of this leaf.name, on its own "
        "ZooKeeper nodes (docs/migration-from-leaf.md); the identity is then Leaf's IP:PORT "
        "(default: this host's first non-loopback IPv4 address and the HTTP port)",
        0, 0, NULL),
    ROW(LEAF_TAKEOVER, "leaf-takeover", STRING, NULL, "IP:PORT",
        "with --leaf-name: take over the number of the Leaf server that ran as this identity "
        "(give the server's own), only once that Leaf deployment and its workerID.properties "
        "are gone (docs/migration-from-leaf.md); by default a server takes only a number no "
        "Leaf server has held",
        0, 64, NULL),
};

#undef ROW

/* ---- small helpers ------------------------------------------------------- */

static void fail(ik_cli_opts *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the first error only: later ones are usually consequences. */
static void fail(ik_cli_opts *o, const char *fmt, ...)
{
    if (o->err[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->err, sizeof o->err, fmt, ap);
    va_end(ap);
}

void ik__cli_why(char *why, size_t len, const char *fmt, ...)
{
    if (!why || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

/* Strict unsigned decimal: digits only, no sign, no overflow of INT64_MAX. */
static int parse_i64(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 19) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        int d = s[i] - '0';
        if (v > (INT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int ik__cli_option_find(const char *name, size_t len)
{
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        const char *n = ik__cli_options[i].name;
        if (n && strlen(n) == len && memcmp(n, name, len) == 0) return i;
    }
    return -1;
}

int ik__cli_parse_url(const char *url, char *host, size_t host_len, int *port, char *prefix,
                      size_t prefix_len, char *why, size_t why_len)
{
    const char *s = url;
    const char *scheme_end = strstr(url, "://");
    if (scheme_end) {
        if (scheme_end - url != 4 || strncasecmp(url, "http", 4) != 0) {
            ik__cli_why(why, why_len, "'%s': only http:// URLs are supported", url);
            return -1;
        }
        s = scheme_end + 3;
    }
    size_t an = strcspn(s, "/?#");
    if (strpbrk(s, "?#")) {
        ik__cli_why(why, why_len, "'%s': a server URL has no query or fragment", url);
        return -1;
    }
    char hostport[300];
    if (an == 0 || an >= sizeof hostport) {
        ik__cli_why(why, why_len, "'%s' has no host", url);
        return -1;
    }
    memcpy(hostport, s, an);
    hostport[an] = 0;
    const char *colon = hostport[0] == '[' ? strstr(hostport, "]:") : strrchr(hostport, ':');
    if (colon && hostport[0] == '[') colon++;
    if (colon) {
        /* HOST:PORT as a listen address has it, but a server to reach has a host and
         * a port of its own */
        if (ik__parse_listen(hostport, host, host_len, port, why, why_len) != 0) return -1;
        if (!host[0]) {
            ik__cli_why(why, why_len, "'%s' has no host", url);
            return -1;
        }
        if (*port == 0) {
            ik__cli_why(why, why_len, "'%s': port must be 1..65535", url);
            return -1;
        }
    } else {
        const char *h = hostport;
        size_t hn = an;
        if (h[0] == '[') {
            if (h[hn - 1] != ']' || hn < 3) {
                ik__cli_why(why, why_len, "'%s': bad IPv6 host", url);
                return -1;
            }
            h++;
            hn -= 2;
        } else if (strchr(h, ':')) {
            ik__cli_why(why, why_len, "'%s': an IPv6 address needs brackets", url);
            return -1;
        }
        if (hn >= host_len) {
            ik__cli_why(why, why_len, "'%s': host name too long", url);
            return -1;
        }
        memcpy(host, h, hn);
        host[hn] = 0;
        *port = 80;
    }
    const char *path = s + an;
    size_t pn = strlen(path);
    while (pn > 0 && path[pn - 1] == '/')
        pn--;
    if (pn >= prefix_len) {
        ik__cli_why(why, why_len, "'%s': path too long", url);
        return -1;
    }
    for (size_t i = 0; i < pn; i++) {
        if ((unsigned char)path[i] <= ' ' || (unsigned char)path[i] >= 0x7f) {
            ik__cli_why(why, why_len, "'%s': the path holds a space or control character", url);
            return -1;
        }
    }
    memcpy(prefix, path, pn);
    prefix[pn] = 0;
    return 0;
}

/* ---- the checks of the option kinds -------------------------------------------------
 * One function per kind (IK_KIND_*, options.h), in a table: text (not empty) against
 * op's rules, into *n and *n2. Each returns 0, or -1 with a reason (without the
 * source) in why. */

typedef int kind_check(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                       int64_t *n2, char *why, size_t why_len);

static int check_flag(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                      int64_t *n2, char *why, size_t why_len)
{
    (void)op, (void)len, (void)n2;
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(text, yes[i]) == 0) {
            *n = 1;
            return 0;
        }
        if (strcasecmp(text, no[i]) == 0) return 0;
    }
    ik__cli_why(why, why_len, "'%s' is not true or false", text);
    return -1;
}

static int check_string(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                        int64_t *n2, char *why, size_t why_len)
{
    (void)n, (void)n2;
    if (op->max > 0 && (int64_t)len > op->max) {
        ik__cli_why(why, why_len, "%zu bytes, over %" PRId64, len, op->max);
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if ((unsigned char)text[i] < ' ' || text[i] == 0x7f) {
            ik__cli_why(why, why_len, "the value holds a control character");
            return -1;
        }
    }
    return 0;
}

static int check_int(const ik_cli_option *op, const char *text, size_t len, int64_t *n, int64_t *n2,
                     char *why, size_t why_len)
{
    (void)n2;
    if (parse_i64(text, len, n) != 0) {
        ik__cli_why(why, why_len, "'%s' is not a number (decimal digits)", text);
        return -1;
    }
    if (*n < op->min || *n > op->max) {
        ik__cli_why(why, why_len, "%s is out of range %" PRId64 "..%" PRId64, text, op->min,
                    op->max);
        return -1;
    }
    return 0;
}

static int check_coord(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                       int64_t *n2, char *why, size_t why_len)
{
    (void)op, (void)len, (void)n, (void)n2;
    if (ik_coord_uri_check(text, why, why_len) != 0) {
        if (why && why_len && !why[0])
            ik__cli_why(why, why_len, "'%s' is not a coordination URI", text);
        return -1;
    }
    return 0;
}

static int check_app(const ik_cli_option *op, const char *text, size_t len, int64_t *n, int64_t *n2,
                     char *why, size_t why_len)
{
    (void)op, (void)len, (void)n, (void)n2;
    if (ik__app_name_check(text, NULL, 0) != 0) {
        ik__cli_why(why, why_len, "'%s' is not an app name (" IK__APP_NAME_RULE ")", text);
        return -1;
    }
    return 0;
}

static int check_addr(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                      int64_t *n2, char *why, size_t why_len)
{
    (void)op, (void)len, (void)n2;
    char host[256];
    int port;
    if (ik__parse_listen(text, host, sizeof host, &port, why, why_len) != 0) return -1;
    *n = port;
    return 0;
}

static int check_url(const ik_cli_option *op, const char *text, size_t len, int64_t *n, int64_t *n2,
                     char *why, size_t why_len)
{
    (void)op, (void)len, (void)n2;
    char host[256], prefix[256];
    int port;
    if (ik__cli_parse_url(text, host, sizeof host, &port, prefix, sizeof prefix, why, why_len) != 0)
        return -1;
    *n = port;
    return 0;
}

static int check_range(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                       int64_t *n2, char *why, size_t why_len)
{
    (void)len;
    const char *dash = strchr(text, '-');
    if (!dash || parse_i64(text, (size_t)(dash - text), n) != 0 ||
        parse_i64(dash + 1, strlen(dash + 1), n2) != 0) {
        ik__cli_why(why, why_len, "'%s' is not A-B (two numbers, e.g. 0-31)", text);
        return -1;
    }
    if (*n > *n2) {
        ik__cli_why(why, why_len, "'%s': the first number is above the second", text);
        return -1;
    }
    if (*n < op->min || *n2 > op->max) {
        ik__cli_why(why, why_len, "'%s' is out of range %" PRId64 "..%" PRId64, text, op->min,
                    op->max);
        return -1;
    }
    return 0;
}

static int check_layout(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                        int64_t *n2, char *why, size_t why_len)
{
    (void)op, (void)len, (void)n, (void)n2;
    ik_layout l;
    ik_layout_default(&l);
    if (ik_layout_parse(&l, text, why, why_len) != 0) {
        if (why && why_len && !why[0]) ik__cli_why(why, why_len, "'%s' is not a layout", text);
        return -1;
    }
    return 0;
}

/* An epoch is the layout's item epoch=TEXT, checked by the layout's own rule. */
static int check_epoch(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                       int64_t *n2, char *why, size_t why_len)
{
    char buf[256];
    if (len > 200 || strchr(text, ',') || strchr(text, '=')) {
        ik__cli_why(why, why_len, "'%.200s' is not Unix ms or YYYY-MM-DD", text);
        return -1;
    }
    snprintf(buf, sizeof buf, "epoch=%s", text);
    return check_layout(op, buf, strlen(buf), n, n2, why, why_len);
}

static int check_choice(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                        int64_t *n2, char *why, size_t why_len)
{
    (void)n2;
    const char *c = op->choices;
    for (int i = 0; c && *c; i++) {
        size_t cn = strcspn(c, "|");
        if (cn == len && memcmp(c, text, len) == 0) {
            *n = i;
            return 0;
        }
        c += cn;
        if (*c == '|') c++;
    }
    ik__cli_why(why, why_len, "'%s' is not one of %s", text, op->choices);
    return -1;
}

static int check_store(const ik_cli_option *op, const char *text, size_t len, int64_t *n,
                       int64_t *n2, char *why, size_t why_len)
{
    (void)len, (void)n, (void)n2;
    return ik__store_option_check(op->store, text, why, why_len);
}

static kind_check *const kind_checks[] = {
    [IK_KIND_FLAG] = check_flag,   [IK_KIND_STRING] = check_string, [IK_KIND_INT] = check_int,
    [IK_KIND_COORD] = check_coord, [IK_KIND_APP] = check_app,       [IK_KIND_ADDR] = check_addr,
    [IK_KIND_URL] = check_url,     [IK_KIND_RANGE] = check_range,   [IK_KIND_LAYOUT] = check_layout,
    [IK_KIND_EPOCH] = check_epoch, [IK_KIND_CHOICE] = check_choice, [IK_KIND_STORE] = check_store,
};

/* Checks text against option id's kind; fills *n, *n2. Returns 0, or -1 with a
 * reason (without the source) in why. */
static int check_value(ik_cli_opt_id id, const char *text, int64_t *n, int64_t *n2, char *why,
                       size_t why_len)
{
    const ik_cli_option *op = &ik__cli_options[id];
    size_t len = strlen(text);
    *n = *n2 = 0;
    if (len == 0) {
        ik__cli_why(why, why_len, "empty value");
        return -1;
    }
    if ((size_t)op->kind < sizeof kind_checks / sizeof kind_checks[0] && kind_checks[op->kind])
        return kind_checks[op->kind](op, text, len, n, n2, why, why_len);
    ik__cli_why(why, why_len, "unknown kind of option");
    return -1;
}

/* Formats where a value of option id came from into buf; returns buf. */
static const char *where_name(const ik_cli_opts *o, ik_cli_opt_id id, ik_cli_source src, int line,
                              char *buf, size_t len)
{
    switch (src) {
    case IK_SRC_ARGV:
        snprintf(buf, len, "--%s", ik__cli_options[id].name);
        break;
    case IK_SRC_ENV:
        snprintf(buf, len, "%s", ik__cli_options[id].env);
        break;
    case IK_SRC_FILE:
    case IK_SRC_FILE_SECTION:
        snprintf(buf, len, "%s:%d: %s", o->config_path ? o->config_path : "config", line,
                 ik__cli_options[id].name);
        break;
    default:
        snprintf(buf, len, "default %s", ik__cli_options[id].name);
        break;
    }
    return buf;
}

const char *ik__cli_source_name(const ik_cli_opts *o, ik_cli_opt_id id, char *buf, size_t len)
{
    return where_name(o, id, o->v[id].src, o->v[id].line, buf, len);
}

/* Checks text for option id and, if src ranks at least as high as the current
 * value's source, makes it the value. Returns 0, or -1 with o->err set. */
static int set_value(ik_cli_opts *o, ik_cli_opt_id id, const char *text, ik_cli_source src,
                     int line)
{
    char why[640] = ""; /* room for the unknown-URI message, which lists every form */
    int64_t n, n2;
    if (check_value(id, text, &n, &n2, why, sizeof why) != 0) {
        char where[300];
        fail(o, "%s: %s", where_name(o, id, src, line, where, sizeof where), why);
        return -1;
    }
    ik_cli_value *v = &o->v[id];
    if (v->text && src < v->src) return 0;
    char *copy = strdup(text);
    if (!copy) {
        fail(o, "out of memory");
        return -1;
    }
    free((char *)v->text);
    v->text = copy;
    v->n = n;
    v->n2 = n2;
    v->src = src;
    v->line = line;
    return 0;
}

/* ---- the config file ------------------------------------------------------ */

typedef struct ini_state {
    ik_cli_opts *o;
    const ik_cli_spec *spec;
    const char *p, *end; /* the text not yet read */
    int line;            /* line number of the line last handed to inih */
} ini_state;

static int section_known(const ik_cli_spec *spec, const char *section)
{
    if (strcmp(section, spec->cmd) == 0) return 1;
    for (const char *const *s = spec->sections; s && *s; s++)
        if (strcmp(*s, section) == 0) return 1;
    return 0;
}

/* A "[name]" line must name a command: checked here, where the line number is
 * known even for a section without keys. */
static void check_section_line(ini_state *st, const char *line)
{
    line += strspn(line, " \t");
    if (*line != '[') return;
    const char *end = strchr(line, ']');
    if (!end) return; /* inih reports the syntax error */
    char name[64];
    size_t n = (size_t)(end - line - 1);
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), line + 1);
    if (n >= sizeof name || !section_known(st->spec, name))
        fail(st->o, "%s:%d: unknown section [%s] (sections are command names, e.g. [serve])",
             st->o->config_path, st->line, name);
}

/* inih's line reader: hands out one line of the text at a time so that the
 * handler knows its line number. A line too long for inih's buffer is an error
 * (and is replaced by a comment so that inih does not split it). */
static char *ini_read_line(char *str, int num, void *stream)
{
    ini_state *st = stream;
    if (st->p >= st->end || num < 3) return NULL;
    const char *nl = memchr(st->p, '\n', (size_t)(st->end - st->p));
    size_t n = nl ? (size_t)(nl - st->p) + 1 : (size_t)(st->end - st->p);
    st->line++;
    if (n > (size_t)num - 1) {
        fail(st->o, "%s:%d: line longer than %d bytes", st->o->config_path, st->line, num - 3);
        memcpy(str, "#\n", 3);
    } else {
        memcpy(str, st->p, n);
        str[n] = 0;
        check_section_line(st, str);
    }
    st->p += n;
    return str;
}

/* inih's handler: one key = value. Returns 1 to go on, 0 on an error. */
static int ini_handler_fn(void *user, const char *section, const char *name, const char *value)
{
    ini_state *st = user;
    ik_cli_opts *o = st->o;
    const char *path = o->config_path;
    int id = ik__cli_option_find(name, strlen(name));
    if (id < 0) {
        fail(o, "%s:%d: unknown key '%s'", path, st->line, name);
        return 0;
    }
    ik_cli_source src = IK_SRC_FILE;
    if (section[0]) {
        if (!section_known(st->spec, section)) return 0;   /* reported by check_section_line() */
        if (strcmp(section, st->spec->cmd) != 0) return 1; /* another command's section */
        src = IK_SRC_FILE_SECTION;
    }
    if (id == IK_OPT_CONFIG) {
        fail(o, "%s:%d: 'config' cannot be set inside a config file", path, st->line);
        return 0;
    }
    if (!(st->spec->allowed & IK_OPT_BIT(id))) {
        if (src == IK_SRC_FILE_SECTION) {
            fail(o, "%s:%d: '%s' is not an option of %s", path, st->line, name, st->spec->cmd);
            return 0;
        }
        return 1; /* a key for other commands */
    }
    return set_value(o, (ik_cli_opt_id)id, value ? value : "", src, st->line) == 0;
}

static int parse_config(ik_cli_opts *o, const ik_cli_spec *spec, const char *text)
{
    ini_state st = {.o = o, .spec = spec, .p = text, .end = text + strlen(text)};
    int rc = ini_parse_stream(ini_read_line, &st, ini_handler_fn, &st);
    if (o->err[0]) return -1;
    if (rc > 0) {
        fail(o, "%s:%d: not a 'key = value' or '[section]' line", o->config_path, rc);
        return -1;
    }
    if (rc != 0) {
        fail(o, "%s: cannot parse (error %d)", o->config_path, rc);
        return -1;
    }
    return 0;
}

/* ---- the parse ------------------------------------------------------------ */

void ik__cli_opts_free(ik_cli_opts *o)
{
    for (int i = 0; i < IK_OPT__COUNT; i++)
        free((char *)o->v[i].text);
    free(o->args);
    free(o->config_path);
    memset(o, 0, sizeof *o);
    o->rest = -1;
}

static int is_help(const char *a)
{
    return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0;
}

static int parse_argv(ik_cli_opts *o, const ik_cli_spec *spec, int argc, char **argv)
{
    int dashdash = 0;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (dashdash || a[0] != '-' || a[1] == 0) {
            o->args[o->nargs++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            dashdash = 1;
            o->rest = o->nargs;
            continue;
        }
        if (a[1] != '-') {
            fail(o, "unknown option %s (options are long: --name; see idkeeper %s --help)", a,
                 spec->cmd);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        int id = ik__cli_option_find(name, nlen);
        if (id < 0) {
            fail(o, "unknown option --%.*s (see idkeeper %s --help)", (int)nlen, name, spec->cmd);
            return -1;
        }
        if (!(spec->allowed & IK_OPT_BIT(id))) {
            fail(o, "--%.*s is not an option of %s (see idkeeper %s --help)", (int)nlen, name,
                 spec->cmd, spec->cmd);
            return -1;
        }
        const char *val;
        if (eq)
            val = eq + 1;
        else if (ik__cli_options[id].kind == IK_KIND_FLAG)
            val = "true";
        else if (i + 1 < argc)
            val = argv[++i];
        else {
            fail(o, "--%s needs a value (%s)", ik__cli_options[id].name,
                 ik__cli_options[id].metavar);
            return -1;
        }
        if (set_value(o, (ik_cli_opt_id)id, val, IK_SRC_ARGV, 0) != 0) return -1;
    }
    return 0;
}

int ik__cli_parse(ik_cli_opts *o, const ik_cli_spec *spec, int argc, char **argv,
                  const ik_cli_env *env)
{
    memset(o, 0, sizeof *o);
    o->rest = -1;
    if (ik__cli_store_rows() != 0) {
        fail(o, "the backends have more store options than the CLI has slots");
        return 2;
    }
    o->args = calloc((size_t)argc + 1, sizeof *o->args);
    if (!o->args) {
        fail(o, "out of memory");
        return 2;
    }
    for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (is_help(argv[i])) {
            o->help = 1;
            return 0;
        }
    }
    /* Defaults first, so that every allowed option with a default has a value. */
    for (int i = 0; i < IK_OPT__COUNT; i++) {
        if ((spec->allowed & IK_OPT_BIT(i)) && ik__cli_options[i].def &&
            set_value(o, (ik_cli_opt_id)i, ik__cli_options[i].def, IK_SRC_DEFAULT, 0) != 0)
            return 2;
    }
    if (parse_argv(o, spec, argc, argv) != 0) return 2;
    for (int i = 0; env && env->get && i < IK_OPT__COUNT; i++) {
        if (!(spec->allowed & IK_OPT_BIT(i)) || !ik__cli_options[i].name) continue;
        const char *val = env->get(env->ctx, ik__cli_options[i].env);
        if (val && *val && set_value(o, (ik_cli_opt_id)i, val, IK_SRC_ENV, 0) != 0) return 2;
    }
    const ik_cli_value *cfg = &o->v[IK_OPT_CONFIG];
    if ((spec->allowed & IK_OPT_BIT(IK_OPT_CONFIG)) && cfg->text) {
        char where[64], why[256] = "";
        ik__cli_source_name(o, IK_OPT_CONFIG, where, sizeof where);
        o->config_path = strdup(cfg->text);
        char *text = NULL;
        if (!o->config_path) {
            fail(o, "out of memory");
            return 2;
        }
        if (!env || !env->read_file ||
            env->read_file(env->ctx, o->config_path, &text, why, sizeof why) != 0) {
            fail(o, "%s %s: %s", where, o->config_path, why[0] ? why : "cannot read");
            return 2;
        }
        int rc = parse_config(o, spec, text);
        free(text);
        if (rc != 0) return 2;
    }
    return 0;
}

/* ---- the process environment ---------------------------------------------- */

static const char *process_getenv(void *ctx, const char *name)
{
    return getenv(name);
}

static int process_read_file(void *ctx, const char *path, char **text, char *why, size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        ik__cli_why(why, why_len, "%s", strerror(errno));
        return -1;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    const char *err = buf ? NULL : "out of memory";
    while (!err) {
        if (n + 1 >= cap) {
            char *nb = cap >= ((size_t)16 << 20) ? NULL : realloc(buf, cap * 2);
            if (!nb) {
                err = cap >= ((size_t)16 << 20) ? "larger than 16 MiB" : "out of memory";
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) err = "read error";
            break;
        }
    }
    fclose(f);
    if (!err && memchr(buf, 0, n)) err = "holds a NUL byte: not a text file";
    if (err) {
        ik__cli_why(why, why_len, "%s", err);
        free(buf);
        return -1;
    }
    buf[n] = 0;
    *text = buf;
    return 0;
}

const ik_cli_env ik__cli_env_process = {process_getenv, process_read_file, NULL};
