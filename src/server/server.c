/* server.c: the daemon's life: start-up (sockets, backend, generator, slot lease,
 * loop threads), waiting for a stop signal (SIGTERM, SIGINT, SIGHUP), and the
 * graceful shutdown (docs/guarantees.md promise 13).
 *
 *   ik_server_run
 *     block SIGTERM, SIGINT, SIGHUP (every thread inherits the mask), ignore SIGPIPE
 *     bind one SO_REUSEPORT socket per loop   (fails fast: address in use)
 *     ik_coord_open, on a thread of its own: a stop signal meanwhile ends the process
 *       at once (open_store: nothing is held yet)
 *       -> ik_snowflake_create -> ik_segment_create, ik_sequence_create
 *       -> ik_slot_lease_begin                (the slot is taken in the background)
 *     listen, start the loop threads (/readyz: 503 until the slot is held)
 *     await_slot: ik_slot_lease_wait_held     (range full: waits --slot-wait; no
 *       slot then: one line, exit 1), banner
 *     sigwait; under a service manager (NOTIFY_SOCKET, built with libsystemd) it first
 *       polls until IDs can be issued and only then sends READY=1 (systemd's
 *       Type=notify), and sends STOPPING=1 once a signal came
 *     phase 1, ik__worker_stop each loop: close listeners, answer in-flight requests
 *       with "Connection: close", wait for pending answers, close idle connections
 *     wait until every loop has drained, or until shortly before shutdown_timeout_ms
 *     phase 2, ik__worker_close_stores each loop: no more allocator calls (503)
 *     ik_segment_destroy, ik_sequence_destroy: what is still pending fails (503
 *       shutting_down, written while the connections last)
 *       (server_quiesce)
 *     ik_coord_settle (open counter doubts settled, or logged first=?), before any
 *       wait on the loops
 *     stop_release: ik_slot_lease_release (persists the time record, frees the
 *       slot), before the join: the loops see the lease released (ik__lease_info)
 *     server_join (a loop ends when its last connection has closed, at
 *       shutdown_timeout_ms at the latest, and nothing is in flight: a thread-pool
 *       call on the store ends at the stop's cut at the latest)
 *       -> ik_snowflake_destroy -> ik_coord_close -> return 0
 *     every step after the signal is bounded by ik_coord_stop_within(shutdown_timeout_ms),
 *       armed at the signal (from then on the slot's renewals wait for no answer,
 *       and the release gets the rest of the budget): at that deadline whatever
 *       waits on the store is cut, so the process exits within the shutdown timeout
 *       plus about a second
 *
 * What it deliberately does not do: daemonize, write a pid file, reload its
 * configuration, or serve on more than one address. A supervisor does the first
 * three; SO_REUSEPORT lets a second process share the port during a hand-over.
 */
#include "server.h"
#include "worker.h"
#include "loop.h"
#include "log.h"
#include "ready.h"
#include "history.h"
#include "metrics.h"
#include "http_routes.h"
#include "resp_cmds.h"
#include "../lib/rules.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifdef IK_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

#define IK_MAX_THREADS 256

void ik_server_config_init(ik_server_config *c)
{
    memset(c, 0, sizeof *c);
    c->coord_uri = "local:./idkeeper-data";
    c->app = "default";
    c->http_addr = "127.0.0.1:8080";
    c->identity = NULL;
    ik_layout_default(&c->layout);
    c->max_backward_ms = 5;
    c->max_batch = 10000;
    c->slot_choice = IK_SLOT_RANDOM;
    c->slot_wait_ms = IK_SLOT_WAIT_DEFAULT;
    ik_coord_options_init(&c->coord);
    c->threads = 0;
    c->max_header_bytes = 8192;
    c->idle_timeout_ms = 60000;
    c->read_timeout_ms = 10000;
    c->max_connections = 10000;
    c->http_token = NULL;
    c->quiet = 0;
    c->shutdown_timeout_ms = 5000;
    c->log_sequence_commits = 0;
}

/* ---- start-up helpers ------------------------------------------------------------------- */

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* Event-loop threads for threads == 0: the CPUs this process may run on. */
static int default_threads(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Checks the limits of the config; logs the first bad one. */
static int check_config(const ik_server_config *c)
{
    const char *bad = NULL;
    if (!c->coord_uri || !*c->coord_uri)
        bad = "coord URI is empty";
    else if (!c->app || !*c->app)
        bad = "app is empty";
    else if (c->threads < 0 || c->threads > IK_MAX_THREADS)
        bad = "threads must be 0..256";
    else if (c->max_batch < 1)
        bad = "max-batch must be at least 1";
    else if (c->max_header_bytes < 256)
        bad = "max-header-bytes must be at least 256";
    else if (c->read_timeout_ms < 1)
        bad = "read-timeout must be at least 1 ms";
    else if (c->idle_timeout_ms < 1)
        bad = "idle-timeout must be at least 1 ms";
    else if (c->max_connections < 1)
        bad = "max-connections must be at least 1";
    else if (c->shutdown_timeout_ms < 0)
        bad = "shutdown timeout must not be negative";
    else if (c->max_backward_ms < 0)
        bad = "max-backward must not be negative";
    if (bad) ik__log("bad configuration: %s", bad);
    return bad ? -1 : 0;
}

/* Descriptors the server needs besides its connections: listeners, loops, the
 * store's sockets or files, logs. */
#define IK_FD_RESERVE 256

/* Raises the soft open-file limit so that max_connections can be reached (Debian's
 * default soft limit is 1024). If the hard limit is too low, says so once: beyond it
 * a new connection is refused (accept fails with EMFILE, counted as rejected). */
static void raise_fd_limit(const ik_server_config *c)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    rlim_t want = (rlim_t)c->max_connections + IK_FD_RESERVE;
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = (rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want) ? want : rl.rlim_max;
        if (rl.rlim_cur > was && setrlimit(RLIMIT_NOFILE, &rl) != 0) rl.rlim_cur = was;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want)
        ik__log("warning: the open-file limit (%llu) is below max-connections %d + %d; about %lld "
                "connections can be open at once (raise ulimit -n or systemd's LimitNOFILE)",
                (unsigned long long)rl.rlim_cur, c->max_connections, IK_FD_RESERVE,
                (long long)rl.rlim_cur - IK_FD_RESERVE);
}

/* Resolves the listen address into *ss. host "" means any IPv4 address. */
static int resolve(const char *host, int port, struct sockaddr_storage *ss, socklen_t *sslen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    char ps[8];
    snprintf(ps, sizeof ps, "%d", port);
    int r = getaddrinfo(*host ? host : "0.0.0.0", ps, &hints, &res);
    if (r != 0) {
        ik__log("cannot resolve listen host '%s': %s", host, gai_strerror(r));
        return -1;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *sslen = res->ai_addrlen;
    freeaddrinfo(res);
    return 0;
}

static void set_port(struct sockaddr_storage *ss, int port)
{
    if (ss->ss_family == AF_INET6) {
        ((struct sockaddr_in6 *)ss)->sin6_port = htons((uint16_t)port);
    } else {
        ((struct sockaddr_in *)ss)->sin_port = htons((uint16_t)port);
    }
}

/* A bound (not yet listening) TCP socket; reuseport: share the port with our other
 * loops. Returns the fd or -errno. */
static int bind_socket(const struct sockaddr_storage *ss, socklen_t len, int reuseport)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (reuseport && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    if (bind(fd, (const struct sockaddr *)ss, len) != 0) {
        int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

/* Binds one socket per loop for addr, all on one port: into srv->workers[i]->fd
 * (HTTP) or ->resp_fd (resp), and the address with its real port into text. A first
 * probe without SO_REUSEPORT makes "address in use" an error even when the other
 * holder is an idkeeper that allows port sharing. Returns the port, or -1. */
static int bind_group(ik__server *srv, const char *addr, int resp, char *text, size_t text_len)
{
    char host[256], why[256];
    int port;
    struct sockaddr_storage ss;
    socklen_t sslen;
    if (ik__parse_listen(addr, host, sizeof host, &port, why, sizeof why) != 0) {
        ik__log("%s", why);
        return -1;
    }
    if (resolve(host, port, &ss, &sslen) != 0) return -1;
    if (port != 0) {
        int probe = bind_socket(&ss, sslen, 0);
        if (probe < 0) {
            ik__log("cannot listen on %s: %s", addr, strerror(-probe));
            return -1;
        }
        close(probe);
    }
    for (int i = 0; i < srv->nworkers; i++) {
        int fd = bind_socket(&ss, sslen, 1);
        if (fd < 0) {
            ik__log("cannot listen on %s: %s", addr, strerror(-fd));
            return -1;
        }
        if (resp) {
            srv->workers[i]->resp_fd = fd;
        } else {
            srv->workers[i]->fd = fd;
        }
        if (i == 0 && port == 0) { /* an ephemeral port: the others share it */
            struct sockaddr_storage got;
            socklen_t gl = sizeof got;
            memset(&got, 0, sizeof got);
            if (getsockname(fd, (struct sockaddr *)&got, &gl) != 0) {
                ik__log("cannot read the port bound for %s: %s", addr, strerror(errno));
                return -1;
            }
            port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                                   : ((struct sockaddr_in *)&got)->sin_port);
            set_port(&ss, port);
        }
    }
    char numeric[INET6_ADDRSTRLEN + 1];
    getnameinfo((struct sockaddr *)&ss, sslen, numeric, sizeof numeric, NULL, 0, NI_NUMERICHOST);
    snprintf(text, text_len, ss.ss_family == AF_INET6 ? "[%s]:%d" : "%s:%d", numeric, port);
    return port;
}

/* Binds the HTTP listeners, and the RESP ones when configured; sets the identity.
 * Returns 0 or -1. */
static int bind_all(ik__server *srv)
{
    int port = bind_group(srv, srv->cfg->http_addr, 0, srv->listen_text, sizeof srv->listen_text);
    if (port < 0) return -1;
    if (srv->cfg->resp_addr && *srv->cfg->resp_addr &&
        bind_group(srv, srv->cfg->resp_addr, 1, srv->resp_text, sizeof srv->resp_text) < 0)
        return -1;
    if (srv->cfg->identity && *srv->cfg->identity) {
        snprintf(srv->identity, sizeof srv->identity, "%s", srv->cfg->identity);
    } else if (srv->cfg->coord.leaf_name) {
        /* A Leaf fleet names a server IP:PORT, the IP the first non-loopback IPv4
         * address of the host's interfaces (Leaf's Utils.getIp), the port its own
         * (docs/migration-from-leaf.md) */
        char ip[INET_ADDRSTRLEN] = "127.0.0.1";
        struct ifaddrs *ifs = NULL;
        if (getifaddrs(&ifs) == 0) {
            for (struct ifaddrs *i = ifs; i; i = i->ifa_next) {
                if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
                const struct sockaddr_in *a = (const struct sockaddr_in *)i->ifa_addr;
                if ((ntohl(a->sin_addr.s_addr) >> 24) == 127) continue;
                inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
                break;
            }
            freeifaddrs(ifs);
        }
        snprintf(srv->identity, sizeof srv->identity, "%s:%d", ip, port);
    } else {
        char hn[256];
        if (gethostname(hn, sizeof hn) != 0) snprintf(hn, sizeof hn, "localhost");
        hn[sizeof hn - 1] = 0;
        snprintf(srv->identity, sizeof srv->identity, "%s:%d", hn, port);
    }
    return 0;
}

/* Lease state changes, on the lease thread. */
static void on_lease_state(void *ctx, ik_lease_state state, int worker, const char *why)
{
    ik__event_lease(ctx, state, worker, why);
    if (state == IK_LEASE_RELEASED) return; /* the stop's own line says it (ik_server_run) */
    ik__log("lease %s: worker %d%s%s", ik_lease_state_name(state), worker, why && *why ? ": " : "",
            why ? why : "");
}

static void banner(ik__server *srv)
{
    ik_lease_info li;
    ik_slot_lease_get_info(srv->lease, &li);
    const char *l = srv->listen_text;
    char try_host[320];
    /* The curl example needs an address one can connect to. */
    if (strncmp(l, "0.0.0.0:", 8) == 0) {
        snprintf(try_host, sizeof try_host, "127.0.0.1:%s", l + 8);
    } else if (strncmp(l, "[::]:", 5) == 0) {
        snprintf(try_host, sizeof try_host, "[::1]:%s", l + 5);
    } else {
        snprintf(try_host, sizeof try_host, "%s", l);
    }
    ik__log("idkeeper %s serving HTTP on %s with %d thread%s", ik_version(), l, srv->nworkers,
            srv->nworkers == 1 ? "" : "s");
    ik__log("backend %s, app %s, worker %d (identity %s), layout %s", ik_coord_uri(srv->coord),
            srv->cfg->app, li.worker, srv->identity, srv->layout_text);
    ik__log("try: curl http://%s/api/snowflake/get/x", try_host);
    if (srv->resp_text[0]) ik__log("serving the Redis protocol (RESP) on %s", srv->resp_text);
}

/* ---- start and stop ---------------------------------------------------------------------- */

/* The name of a stop signal, for the log. */
static const char *stop_signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM";
}

/* The library's sequence gaps (ik_set_gap_hook), counted beside the server's own
 * in ik_sequence_gap_ids_total; the library has logged them already. Segment tags
 * have gaps by design: not counted. */
static void library_gap(void *ctx, const char *app, const char *tag, ik_tag_kind kind,
                        int64_t first, int64_t count, const char *why)
{
    (void)app;
    if (kind != IK_TAG_SEQUENCE || count <= 0) return;
    ik__gap_add(ctx, tag, why, (uint64_t)count);
    ik__event_gap(ctx, tag, first, count, why);
}

/* The library's log lines (ik_set_log): into the daemon's log; a change of a store
 * hazard's verdict ("store hazard: ...", "store hazard cleared: ...", hazard.c) is
 * also an event of the status page. */
static void library_log(void *ctx, const char *line)
{
    ik__log_library(NULL, line);
    if (strncmp(line, "store hazard", 12) == 0) ik__event_add(ctx, "hazard", "%s", line);
}

/* The sequence gaps counted this run, as /metrics shows them: the store's close
 * (ik_coord_close) may count the last ones, after the listeners closed, so they are
 * written where they can still be read (docs/http.md, "Shutdown"). */
static void log_gaps_at_exit(ik__server *srv)
{
    pthread_mutex_lock(&srv->gaps_mu);
    for (size_t i = 0; i < srv->ngaps; i++)
        ik__log("at exit: ik_sequence_gap_ids_total{tag=\"%s\",why=\"%s\"} %llu", srv->gaps[i].tag,
                srv->gaps[i].why, (unsigned long long)srv->gaps[i].ids);
    pthread_mutex_unlock(&srv->gaps_mu);
}

static void server_free(ik__server *srv)
{
    for (int i = 0; i < srv->nworkers; i++) {
        ik__worker *w = srv->workers ? srv->workers[i] : NULL;
        if (!w) continue;
        ik__worker_teardown(w);
        free(w);
    }
    free(srv->workers);
    srv->workers = NULL;
    if (srv->lease) { /* a start that failed: no loop runs */
        int rc = ik_slot_lease_release(srv->lease);
        if (rc != 0) ik__log("releasing the worker slot failed: %s", ik_strerror(rc));
        srv->lease = NULL;
    }
    ik_segment_destroy(srv->seg);
    srv->seg = NULL;
    ik_sequence_destroy(srv->seq);
    srv->seq = NULL;
    ik_snowflake_destroy(srv->gen);
    srv->gen = NULL;
    ik_coord_close(srv->coord); /* may settle tag doubts: gaps logged and counted */
    srv->coord = NULL;
    ik_set_gap_hook(NULL, NULL); /* no library thread is left to call it */
    ik_set_log(ik__log_library, NULL);
    log_gaps_at_exit(srv);
    free(srv->token);
    srv->token = NULL;
    free(srv->gaps);
    srv->gaps = NULL;
    pthread_mutex_destroy(&srv->gaps_mu);
    pthread_mutex_destroy(&srv->lease_mu);
    ik__history_destroy(srv);
}

/* The metrics' labels of the counters by row: the route table's patterns and
 * "other" (no route matched), the RESP command table's names and "unknown". */
static void set_labels(ik__server *srv)
{
    for (size_t i = 0; i < ik__nroutes; i++)
        srv->route_labels[i] = ik__route_keys[i].pattern;
    srv->route_labels[ik__nroutes] = "other";
    srv->nroute_labels = ik__nroutes + 1;
    for (size_t i = 0; i <= ik__resp_ncmds; i++)
        srv->resp_labels[i] = ik__resp_cmd_name(i);
    srv->nresp_labels = ik__resp_ncmds + 1;
}

/* The store's risks found at open (docs/hazards.md): the library logs a refusal and
 * every later change of verdict, but leaves a risk found by the first check to its
 * caller, so that one-shot commands stay quiet; a server names each one once. */
static void log_store_risks(ik_coord *c)
{
    ik_hazard *rows = NULL;
    size_t n = 0;
    ik_coord_hazards(c, &rows, &n, NULL, 0);
    for (size_t i = 0; i < n; i++)
        if (rows[i].verdict == IK_VERDICT_RISK)
            ik__log("store hazard, a risk (serving on without this guarantee): %s: %s is %s: %s "
                    "(docs/hazards.md)",
                    ik_coord_uri(c), rows[i].check, rows[i].value, rows[i].fix);
    ik_free(rows);
}

/* The store's open, on a thread of its own (open_store). */
typedef struct ik__opener {
    const ik_server_config *cfg;
    ik_coord *coord;
    int rc;
    char why[512];
    atomic_int done;
} ik__opener;

static void *open_thread(void *arg)
{
    ik__opener *o = arg;
    o->rc = ik_coord_open(o->cfg->coord_uri, &o->cfg->coord, &o->coord, o->why, sizeof o->why);
    atomic_store(&o->done, 1);
    return NULL;
}

/* Opens the store into srv->coord: 0, or the open's error with why. The open may
 * wait long on a store that does not answer (the ZooKeeper client's connection
 * wait, a SQL connect), so it runs on a thread of its own while this one watches
 * for a stop signal: a signal that comes first ends the process at once, exit 0,
 * the open abandoned. Nothing is held yet (no slot, no counter write: the open
 * takes none), so this is a clean stop, not a crash (docs/http.md, "Shutdown"). */
static int open_store(ik__server *srv, const sigset_t *sigs, char *why, size_t why_len)
{
    ik__opener *o = ik__xcalloc(1, sizeof *o); /* the thread's until it ends */
    o->cfg = srv->cfg;
    atomic_init(&o->done, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, open_thread, o) != 0) {
        open_thread(o);
    } else {
        while (!atomic_load(&o->done)) {
            struct timespec tick = {0, 20 * 1000000};
            int sig = sigtimedwait(sigs, NULL, &tick);
            if (sig <= 0) continue;
            char shown[512];
            ik__log("%s during start-up, while opening %s: nothing is held yet (no worker "
                    "slot, no counter write); the open is abandoned; bye",
                    stop_signal_name(sig),
                    ik__uri_redact(srv->cfg->coord_uri, shown, sizeof shown));
            _exit(0);
        }
        pthread_join(t, NULL);
    }
    int rc = o->rc;
    srv->coord = o->coord;
    snprintf(why, why_len, "%s", o->why);
    free(o);
    return rc;
}

/* Everything up to serving. Returns 0, or -1 after logging why (what it set up is
 * freed by server_free). A stop signal during the store's open ends the process
 * (open_store). */
static int server_start(ik__server *srv, const ik_server_config *cfg, const sigset_t *sigs)
{
    char why[512];
    int rc;
    srv->cfg = cfg;
    pthread_mutex_init(&srv->gaps_mu, NULL); /* first: server_free destroys them */
    pthread_mutex_init(&srv->lease_mu, NULL);
    ik__history_init(srv);
    srv->started_ms = ik__now_ms();
    srv->read_timeout_ms = cfg->read_timeout_ms;
    srv->idle_timeout_ms = cfg->idle_timeout_ms;
    srv->shutdown_timeout_ms = cfg->shutdown_timeout_ms;
    srv->max_header_bytes = cfg->max_header_bytes;
    atomic_init(&srv->connections, 0);
    set_labels(srv);
    if (check_config(cfg) != 0) return -1;
    raise_fd_limit(cfg);
    ik_set_log(library_log, srv);
    ik_set_gap_hook(library_gap, srv);
    if (cfg->http_token && *cfg->http_token) {
        srv->token = strdup(cfg->http_token);
        if (!srv->token) ik__oom(strlen(cfg->http_token) + 1);
        srv->token_len = strlen(srv->token);
    }

    srv->nworkers = cfg->threads > 0 ? cfg->threads : default_threads();
    if (srv->nworkers > IK_MAX_THREADS) srv->nworkers = IK_MAX_THREADS;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers to workers */
    srv->workers = ik__xcalloc((size_t)srv->nworkers, sizeof *srv->workers);
    for (int i = 0; i < srv->nworkers; i++) {
        ik__worker *w = aligned_alloc(64, (sizeof(ik__worker) + 63) / 64 * 64);
        if (!w) ik__oom(sizeof(ik__worker));
        memset(w, 0, sizeof *w);
        w->index = i;
        w->fd = -1;
        w->resp_fd = -1;
        srv->workers[i] = w;
    }
    if (bind_all(srv) != 0) return -1;
    if (cfg->coord.leaf_name && (cfg->layout.epoch_ms != IK_DEFAULT_EPOCH_MS ||
                                 cfg->layout.unit_ms != 1 || cfg->layout.time_bits != 41 ||
                                 cfg->layout.worker_bits != 10 || cfg->layout.seq_bits != 12)) {
        /* one number space with the Leaf servers: their IDs and ours must be one
         * layout (docs/migration-from-leaf.md) */
        ik__log("--leaf-name: the layout must be Leaf's (bits=41/10/12, unit=1ms, epoch "
                "1288834974657), as the fleet's Leaf servers issue under it");
        return -1;
    }

    if ((rc = open_store(srv, sigs, why, sizeof why)) != 0) {
        char shown[512];
        ik__log("cannot open backend %s: %s", ik__uri_redact(cfg->coord_uri, shown, sizeof shown),
                why[0] ? why : ik_strerror(rc));
        return -1;
    }
    if (!cfg->coord.allow_unsafe_store) log_store_risks(srv->coord);
    if ((rc = ik_snowflake_create(&cfg->layout, cfg->max_backward_ms, NULL, &srv->gen)) != 0) {
        ik__log("cannot create the snowflake generator: %s", ik_strerror(rc));
        return -1;
    }
    srv->layout = ik_snowflake_layout(srv->gen);
    ik_layout_format(srv->layout, srv->layout_text, sizeof srv->layout_text);
    ik__history_set_range(srv, srv->layout->worker_min, srv->layout->worker_max);
    if ((rc = ik_segment_create(srv->coord, cfg->app, NULL, &srv->seg)) != 0) {
        ik__log("cannot create the segment allocator: %s", ik_strerror(rc));
        return -1;
    }
    if ((rc = ik_sequence_create(srv->coord, cfg->app, &srv->seq)) != 0) {
        ik__log("cannot create the sequence allocator: %s", ik_strerror(rc));
        return -1;
    }
    srv->log_sequence = cfg->log_sequence_commits;
    const char *dd = getenv("IDKEEPER_TEST_DONE_DELAY_MS"); /* tests only: pend.c */
    srv->test_done_delay_ms = dd ? (int)strtol(dd, NULL, 10) : 0;

    ik_lease_options lo;
    ik_lease_options_init(&lo);
    lo.app = cfg->app;
    lo.identity = srv->identity;
    lo.choice = cfg->slot_choice;
    lo.slot_wait_ms = cfg->slot_wait_ms;
    lo.on_state = on_lease_state;
    lo.ctx = srv;
    why[0] = 0;
    rc = ik_slot_lease_begin(srv->coord, srv->gen, &lo, &srv->lease, why, sizeof why);
    if (rc != 0) {
        srv->lease = NULL;
        ik__log("cannot take a worker slot: %s", why[0] ? why : ik_strerror(rc));
        return -1;
    }

    for (int i = 0; i < srv->nworkers; i++) {
        if ((rc = ik__worker_init(srv, srv->workers[i])) != 0) {
            ik__log("cannot serve on %s: %s", srv->listen_text, uv_strerror(rc));
            return -1;
        }
    }
    for (int i = 0; i < srv->nworkers; i++) {
        ik__worker *w = srv->workers[i];
        if ((rc = pthread_create(&w->thread, NULL, ik__worker_main, w)) != 0) {
            ik__log("cannot start a loop thread: %s", strerror(rc));
            return -1;
        }
        w->thread_started = 1;
    }
    return 0;
}

/* Waits for the lease's first slot while the loops answer 503 (docs/guarantees.md promise 9: a
 * full range is waited on for --slot-wait), and for a stop signal meanwhile.
 * 0: held, banner printed; 1: a signal came first (*sig); -1: no slot (logged). */
static int await_slot(ik__server *srv, const sigset_t *sigs, int *sig)
{
    char why[512];
    int64_t t0 = mono_ms();
    int told = 0;
    for (;;) {
        why[0] = 0;
        int rc = ik_slot_lease_wait_held(srv->lease, 100, why, sizeof why);
        if (rc == 0) {
            if (!srv->cfg->quiet) banner(srv);
            return 0;
        }
        if (rc != IK_ETIMEDOUT) {
            ik__log("cannot take a worker slot: %s", why[0] ? why : ik_strerror(rc));
            return -1;
        }
        if (!told && mono_ms() - t0 >= 1000) {
            /* wait_held's why, uncut: the lease info's is cut at 160 bytes */
            ik_lease_info li;
            ik_slot_lease_get_info(srv->lease, &li);
            ik__log("no worker slot yet (%s); serving HTTP on %s, /readyz answers 503 meanwhile",
                    why[0] ? why : li.why, srv->listen_text);
            told = 1;
        }
        struct timespec zero = {0, 0};
        int s = sigtimedwait(sigs, NULL, &zero);
        if (s > 0) {
            *sig = s;
            return 1;
        }
    }
}

/* ---- the service manager (systemd's Type=notify) --------------------------------------- */

/* 1 if a service manager waits for our notifications: built with libsystemd and
 * NOTIFY_SOCKET set. */
static int notify_wanted(void)
{
#ifdef IK_HAVE_SYSTEMD
    return getenv("NOTIFY_SOCKET") != NULL;
#else
    return 0;
#endif
}

/* Sends state (e.g. "READY=1") to the service manager; a no-op without one. */
static void notify(const char *state)
{
#ifdef IK_HAVE_SYSTEMD
    int rc = sd_notify(0, state);
    if (rc < 0) ik__log("cannot notify the service manager: %s", strerror(-rc));
#else
    (void)state;
#endif
}

/* 1 if a snowflake ID can be issued now (what /readyz answers 200 for). */
static int can_issue(ik__server *srv)
{
    char why[256];
    return !ik__not_ready(srv, why, sizeof why);
}

/* Waits for a stop signal (SIGTERM, SIGINT, SIGHUP) and returns it. Under a service manager it
 * first looks every 10 ms whether IDs can be issued, and tells READY=1 the first time they can
 * (never before: the manager starts what depends on us then); a signal that comes first ends the
 * wait without READY=1. */
static int wait_for_signal(ik__server *srv, const sigset_t *sigs)
{
    int sig = 0;
    if (notify_wanted()) {
        for (;;) {
            if (can_issue(srv)) {
                char state[128];
                ik_lease_info li;
                ik_slot_lease_get_info(srv->lease, &li);
                snprintf(state, sizeof state, "READY=1\nSTATUS=serving on %s as worker %d",
                         srv->listen_text, li.worker);
                notify(state);
                ik__log("ready: told the service manager (worker %d)", li.worker);
                break;
            }
            struct timespec tick = {0, 10 * 1000000};
            sig = sigtimedwait(sigs, NULL, &tick);
            if (sig > 0) return sig;
        }
    }
    while (sigwait(sigs, &sig) != 0) {
    }
    return sig;
}

/* Everything of the stop before the slot's release (see the diagram at the top):
 * drain, wait for pending answers while time allows, close the allocators (what is
 * still pending fails), then settle the counters' doubts. */
static void server_quiesce(ik__server *srv)
{
    atomic_store(&srv->phase, 1);
    for (int i = 0; i < srv->nworkers; i++)
        if (srv->workers[i]->thread_started) ik__worker_stop(srv->workers[i]);
    int64_t to = srv->shutdown_timeout_ms, margin = to / 4 < 200 ? to / 4 : 200;
    int64_t until = mono_ms() + to - margin;
    for (;;) {
        int busy = 0;
        for (int i = 0; i < srv->nworkers; i++) {
            ik__worker *w = srv->workers[i];
            if (w->thread_started && !atomic_load(&w->drained)) busy = 1;
        }
        if (!busy || mono_ms() >= until) break;
        sleep_ms(2);
    }
    atomic_store(&srv->phase, 2);
    for (int i = 0; i < srv->nworkers; i++)
        if (srv->workers[i]->thread_started) ik__worker_close_stores(srv->workers[i]);
    /* a loop never blocks, so each acknowledges at once */
    for (int i = 0; i < srv->nworkers; i++) {
        ik__worker *w = srv->workers[i];
        while (w->thread_started && !atomic_load(&w->stores_acked))
            sleep_ms(1);
    }
    ik_segment_destroy(srv->seg);
    srv->seg = NULL;
    ik_sequence_destroy(srv->seq);
    srv->seq = NULL;
    /* No counter advance runs now: the doubts are settled or logged before the
     * release and the join, which may wait on the store (the join for a thread-pool
     * call, a listing or a tag read, until the stop's cut ends it), so that no wait
     * comes between a doubt and its line */
    ik_coord_settle(srv->coord);
}

/* Joins every started loop thread: a loop ends when its last connection has closed
 * and nothing is in flight, its thread-pool calls included. */
static void server_join(ik__server *srv)
{
    for (int i = 0; i < srv->nworkers; i++) {
        ik__worker *w = srv->workers[i];
        if (!w->thread_started) continue;
        pthread_join(w->thread, NULL);
        w->thread_started = 0;
    }
}

/* Releases the slot lease, before the loops are joined: a thread-pool call still
 * waiting on a slow store (the history's listing of the range, a /v1/workers) must
 * not eat the release's time. The loops see it released from here on
 * (ik__lease_info), and issue nothing under it: the release revokes the generator's
 * grant first. Logs what became of the slot, saying first what the release waits
 * on. 0, or -1 on a failure that is not the store's (out of memory). */
static int stop_release(ik__server *srv, int64_t stop_by)
{
    ik_lease_info li;
    ik__lease_info(srv, &li);
    pthread_mutex_lock(&srv->lease_mu);
    ik_slot_lease *lease = srv->lease;
    srv->lease = NULL;
    pthread_mutex_unlock(&srv->lease_mu);
    int64_t left = stop_by - mono_ms();
    if (li.worker >= 0)
        ik__log("releasing worker %d: its time record written and its slot freed in one write; "
                "waiting for the store's answer at most %lld ms (the stop's deadline)",
                li.worker, (long long)(left > 0 ? left : 0));
    int rel = ik_slot_lease_release(lease);
    if (rel == IK_EINDOUBT) { /* docs/http.md, "Shutdown": not a failure */
        ik__log("release of worker %d in doubt: the store did not confirm it in time; "
                "the slot frees when its session or lease ends; bye",
                li.worker);
    } else if (rel == IK_ESTORE || rel == IK_ETIMEDOUT || rel == IK_EUNSAFE) {
        ik__log("release of worker %d not sent: %s; the slot frees when its session or "
                "lease ends; bye",
                li.worker, ik_strerror(rel));
    } else if (rel == IK_ELOST) {
        ik__log("worker %d was lost before its release (session or lease ended, or the "
                "slot taken over): nothing to release; bye",
                li.worker);
    } else if (rel != 0) {
        ik__log("releasing worker %d failed: %s", li.worker, ik_strerror(rel));
        return -1;
    } else if (li.worker >= 0) {
        ik__log("released worker %d; bye", li.worker);
    } else {
        ik__log("held no worker slot; bye");
    }
    return 0;
}

int ik_server_run(const ik_server_config *cfg)
{
    sigset_t sigs, old_mask;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP); /* a closed terminal stops us cleanly, never kills us */
    pthread_sigmask(SIG_BLOCK, &sigs, &old_mask);
    struct sigaction ign, old_pipe;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &ign, &old_pipe);

    ik__server *srv = ik__xcalloc(1, sizeof *srv);
    int rc = server_start(srv, cfg, &sigs);
    int sig = 0;
    if (rc == 0) {
        int w = await_slot(srv, &sigs, &sig);
        if (w < 0) rc = -1;
        if (w == 0) sig = wait_for_signal(srv, &sigs);
    }
    if (rc == 0) {
        notify("STOPPING=1");
        ik__log("%s: stopping: no new connections, finishing requests in flight",
                stop_signal_name(sig));
        /* The bound of every step below (docs/guarantees.md promise 13): at the
         * shutdown timeout, whatever still waits on the store is cut. */
        int64_t stop_by = mono_ms() + srv->shutdown_timeout_ms;
        if (ik_coord_stop_within(srv->coord, srv->shutdown_timeout_ms) != 0)
            ik__log("the stop has no bound: no thread for its deadline");
        server_quiesce(srv); /* settles the doubts before the slot: a stop that outlives its
                                supervisor's patience must not die with a doubt unlogged */
        if (stop_release(srv, stop_by) != 0) rc = -1;
        server_join(srv);
    } else {
        server_quiesce(srv);
        server_join(srv);
    }
    server_free(srv);
    free(srv);

    /* A second SIGTERM during the shutdown must not kill us once unblocked. */
    struct timespec zero = {0, 0};
    while (sigtimedwait(&sigs, NULL, &zero) > 0) {
    }
    sigaction(SIGPIPE, &old_pipe, NULL);
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    return rc == 0 ? 0 : 1;
}
