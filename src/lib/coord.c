/* coord.c: the registry of coordination backends: the one place a backend is
 * chosen (SQLite's os_unix.c/os_win.c pattern). A URI "SCHEME:..." goes to the
 * backend of that scheme in backends[]: its uri_check judges the syntax, its open
 * makes the handle, and its ops table carries everything else (slots, tags, and
 * through ->recipe its lock protocol), so no other file names a backend. */
#include "backend.h"
#include "doubt.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ik_coord {
    ik__coord_head h; /* first: what the layers over the seam read (backend.h) */

    /* The stop's bound (ik_coord_stop_within): a watchdog thread cuts the backend
     * (ops->cut) at stop_by_ns, unless close came first; a close that begins nearer
     * to stop_by_ns than the backend's close_wait_ms cuts first. Guarded by mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int watching; /* the watchdog runs */
    int closing;  /* close has begun: the watchdog ends */
    int cut;      /* the backend was cut */
    int64_t stop_by_ns;
    pthread_t watchdog;
};

/* The registry. Each backend lives in its folder, src/lib/backends/NAME/, built
 * when cmake/backends.cmake's switch IK_WITH_NAME is on; its ops tables are named
 * here and nowhere else. The lists come from backends.cmake's ik_backend() lines,
 * through the header it writes (ik_backends.h: IK__BACKENDS_ON, IK__BACKENDS_OFF),
 * so that a new backend is one line there (docs/architecture.md, "Adding a
 * backend"). */
#include "ik_backends.h"
#ifndef IK__BACKENDS_ON /* a reader without the build's header (cppcheck): none */
#define IK__BACKENDS_ON(X)
#define IK__BACKENDS_OFF(X)
#endif

#define IK__DECLARE(ops) extern const ik__backend_ops ik__backend_##ops##_ops;
extern const ik__backend_ops ik__backend_local_ops;
IK__BACKENDS_ON(IK__DECLARE)
#undef IK__DECLARE

/* The backends of this build, in the order the "unknown URI" message, `serve
 * --help`, the man pages and `idkeeper version` name them (ik__coord_uri_forms):
 * local: first, then backends.cmake's. */
#define IK__ENTRY(ops) &ik__backend_##ops##_ops,
static const ik__backend_ops *const backends[] = {&ik__backend_local_ops,
                                                  IK__BACKENDS_ON(IK__ENTRY)};
#undef IK__ENTRY
#define NBACKENDS (sizeof backends / sizeof backends[0])

/* Schemes a build can leave out (CMake's IK_WITH_ZK=OFF), so that their URIs get a
 * clear answer rather than "unknown". Ends with {NULL}. */
#define IK__LEFT_OUT(scheme, title) {scheme, title},
static const struct {
    const char *scheme, *what;
} left_out[] = {IK__BACKENDS_OFF(IK__LEFT_OUT){NULL, NULL}};
#undef IK__LEFT_OUT

void ik_coord_options_init(ik_coord_options *o)
{
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->zk_session_timeout_ms = 10000;
    o->lease_ttl_ms = 10000;
}

/* 1 if uri is "SCHEME:...". */
static int has_scheme(const char *uri, const char *scheme)
{
    size_t n = strlen(scheme);
    return strncmp(uri, scheme, n) == 0 && uri[n] == ':';
}

/* The backend of uri's scheme, or NULL. */
static const ik__backend_ops *backend_of(const char *uri)
{
    for (size_t i = 0; i < NBACKENDS; i++)
        if (has_scheme(uri, backends[i]->scheme)) return backends[i];
    return NULL;
}

/* The backend's options taken out of uri (ops->options, store_options.c), then the
 * rest judged by the backend's own check: *stripped (NULL: uri itself) is what its
 * open gets. With o, *list gets every option's value for open. */
static int resolve(const ik__backend_ops *ops, const char *uri, const ik_coord_options *o,
                   char **stripped, char ***list, char *why, size_t why_len)
{
    int rc = ik__store_options_resolve(ops->options, ops->uri_keys, ops->scheme, uri, o, stripped,
                                       list, why, why_len);
    if (!rc) rc = ops->uri_check(*stripped ? *stripped : uri, why, why_len);
    if (rc) {
        ik__store_uri_free(*stripped);
        *stripped = NULL;
        if (list) {
            ik__store_options_free(*list);
            *list = NULL;
        }
    }
    return rc;
}

int ik_coord_uri_check(const char *uri, char *why, size_t why_len)
{
    if (!uri) return ik__fail(IK_EURI, why, why_len, "no coordination URI");
    const ik__backend_ops *ops = backend_of(uri);
    if (ops) {
        char *stripped = NULL;
        int rc = resolve(ops, uri, NULL, &stripped, NULL, why, why_len);
        ik__store_uri_free(stripped);
        return rc;
    }
    for (size_t i = 0; left_out[i].scheme; i++)
        if (has_scheme(uri, left_out[i].scheme))
            return ik__fail(IK_EURI, why, why_len, "this build has no %s backend",
                            left_out[i].what);
    char forms[512];
    ik__coord_uri_forms(forms, sizeof forms);
    char shown[128];
    return ik__fail(IK_EURI, why, why_len, "unknown coordination URI '%.64s' (use %s)",
                    ik__uri_redact(uri, shown, sizeof shown), forms);
}

int ik_coord_schema(const char *uri, char **out, char *why, size_t why_len)
{
    if (!out) return IK_EINVAL;
    int rc = ik_coord_uri_check(uri, why, why_len);
    if (rc) return rc;
    const ik__backend_ops *ops = backend_of(uri);
    if (!ops->schema)
        return ik__fail(IK_ENOTFOUND, why, why_len, "%s keeps no SQL schema", ops->uri_form);
    size_t len = 1;
    for (size_t i = 0; ops->schema[i]; i++)
        len += strlen(ops->schema[i]) + 3;
    char *s = malloc(len), *p = s;
    if (!s) return IK_ENOMEM;
    for (size_t i = 0; ops->schema[i]; i++)
        p += sprintf(p, "%s;\n%s", ops->schema[i], ops->schema[i + 1] ? "\n" : "");
    *out = s;
    return IK_OK;
}

const char *ik__coord_uri_form(size_t i)
{
    return i < NBACKENDS ? backends[i]->uri_form : NULL;
}

void ik__coord_uri_forms(char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 i == 0               ? ""
                                 : i + 1 == NBACKENDS ? " or "
                                                      : ", ",
                                 backends[i]->uri_form);
}

/* The scheme of a URI form with its separator, "zk://" or "local:": its length. */
static int scheme_len(const char *form)
{
    const char *sep = strstr(form, "://");
    return (int)(sep ? (size_t)(sep - form) + 3 : strcspn(form, ":") + 1);
}

/* Appends to buf at *used the schemes of the backends whose slot_frees_after is
 * after's (both NULL counts), "A://, B://"; how many. */
static int schemes_freeing_after(const char *after, char *buf, size_t len, size_t *used)
{
    int n = 0;
    for (size_t i = 0; i < NBACKENDS && *used < len; i++) {
        const char *a = backends[i]->slot_frees_after;
        if (a != after && (!a || !after || strcmp(a, after) != 0)) continue;
        *used += (size_t)snprintf(buf + *used, len - *used, "%s%.*s", n++ ? ", " : "",
                                  scheme_len(backends[i]->uri_form), backends[i]->uri_form);
    }
    return n;
}

void ik__coord_slot_frees(char *buf, size_t len, int lease_ttl_only)
{
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    if (lease_ttl_only) {
        schemes_freeing_after(IK__FREES_AFTER_LEASE_TTL, buf, len, &used);
        return;
    }
    /* each group once, in the order of its first backend, those freeing at once last */
    for (size_t i = 0; i < NBACKENDS && used < len; i++) {
        const char *a = backends[i]->slot_frees_after;
        int first = a != NULL;
        for (size_t e = 0; e < i && first; e++)
            first = !backends[e]->slot_frees_after || strcmp(backends[e]->slot_frees_after, a);
        if (!first) continue;
        if (used) used += (size_t)snprintf(buf + used, len - used, "; ");
        if (used < len) schemes_freeing_after(a, buf, len, &used);
        if (used < len) used += (size_t)snprintf(buf + used, len - used, " %s + 2000", a);
    }
    char at_once[256];
    size_t n = 0;
    if (used < len && schemes_freeing_after(NULL, at_once, sizeof at_once, &n) > 0)
        snprintf(buf + used, len - used, "%s%s 0", used ? "; " : "", at_once);
}

void ik__coord_password_schemes(char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS && used < len; i++)
        if (backends[i]->takes_password)
            used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "",
                                     scheme_len(backends[i]->uri_form), backends[i]->uri_form);
}

const ik__store_option *ik__coord_store_option(size_t i)
{
    for (size_t b = 0; b < NBACKENDS; b++) {
        const ik__store_option *t = backends[b]->options;
        int seen = 0; /* a table two schemes share counts once, at the first */
        for (size_t e = 0; e < b && !seen; e++)
            seen = backends[e]->options == t;
        for (size_t r = 0; t && !seen && t[r].name; r++)
            if (i-- == 0) return &t[r];
    }
    return NULL;
}

int ik__coord_store_option_of(const char *uri, const ik__store_option *op)
{
    const ik__backend_ops *ops = uri ? backend_of(uri) : NULL;
    for (size_t r = 0; ops && ops->options && ops->options[r].name; r++)
        if (&ops->options[r] == op) return 1;
    return 0;
}

const ik__backend_ops *const *ik__coord_backends(size_t *n)
{
    *n = NBACKENDS;
    return backends;
}

void ik__coord_client_versions(char *buf, size_t len)
{
    size_t used = 0;
    if (len == 0) return;
    buf[0] = '\0';
    for (size_t i = 0; i < NBACKENDS; i++) {
        char line[128];
        backends[i]->client_version(line, sizeof line);
        int seen = 0;
        for (size_t j = 0; j < i && !seen; j++) {
            char other[128];
            backends[j]->client_version(other, sizeof other);
            seen = !strcmp(line, other);
        }
        if (seen) continue;
        int n = snprintf(buf + used, len - used, "%s\n", line);
        if (n < 0 || (size_t)n >= len - used) {
            buf[used] = '\0'; /* whole lines only */
            break;
        }
        used += (size_t)n;
    }
}

int ik_coord_open(const char *uri, const ik_coord_options *o, ik_coord **out, char *why,
                  size_t why_len)
{
    if (!out) return IK_EINVAL;
    int rc = ik_coord_uri_check(uri, why, why_len);
    if (rc) return rc;
    ik_coord_options opts; /* the caller's, as far as its size goes; defaults beyond */
    ik_coord_options_init(&opts);
    if (o && (rc = ik__options_copy(&opts, sizeof opts, o, "ik_coord_options", why, why_len)))
        return rc;
    const ik__backend_ops *ops = backend_of(uri); /* found: the check passed */
    if (opts.leaf_name && !ops->leaf_fleet)
        return ik__fail(IK_EINVAL, why, why_len,
                        "a Leaf fleet (leaf name '%.64s') lives on ZooKeeper: use a zk:// coord",
                        opts.leaf_name);
    if (opts.leaf_takeover && !opts.leaf_name)
        return ik__fail(IK_EINVAL, why, why_len,
                        "a Leaf take-over (%.64s) is of a Leaf fleet's number: it needs a leaf "
                        "name (--leaf-name)",
                        opts.leaf_takeover);
    char *stripped = NULL, **list = NULL; /* the backend's URI and options */
    if ((rc = resolve(ops, uri, &opts, &stripped, &list, why, why_len))) return rc;
    opts.store_options = (const char *const *)list;
    ik_coord *c = calloc(1, sizeof *c);
    if (!c) {
        ik__store_uri_free(stripped);
        ik__store_options_free(list);
        return IK_ENOMEM;
    }
    /* test-only: every counter write sleeps this long first (docs/segment.md,
     * "Test hooks"); read once, here, so that no hot path calls getenv */
    const char *delay = getenv("IDKEEPER_TEST_WRITE_DELAY_MS");
    long ms = delay ? strtol(delay, NULL, 10) : 0;
    c->h.test_write_delay_ms = ms > 0 && ms <= 600000 ? (int)ms : 0;
    c->h.fork_gen = ik__fork_gen();
    pthread_mutex_init(&c->mu, NULL);
    ik__cond_init_mono(&c->cv);
    rc = ops->tag_settle ? ik__doubts_new(&c->h.doubts) : IK_OK;
    if (rc) ik__fail(rc, why, why_len, "no randomness from the kernel for the counters' writer id");
    if (!rc) rc = ops->open(stripped ? stripped : uri, &opts, &c->h.be, why, why_len);
    ik__store_uri_free(stripped);
    ik__store_options_free(list);
    if (rc) {
        ik__doubts_free(c->h.doubts);
        pthread_cond_destroy(&c->cv);
        pthread_mutex_destroy(&c->mu);
        free(c);
        return rc;
    }
    *out = c;
    return IK_OK;
}

/* Cuts the backend (once; caller holds mu, which it releases): what waits on the
 * store now returns, and nothing waits on it any more. */
static void cut_unlock(ik_coord *c, const char *why)
{
    int cut = !c->cut;
    c->cut = 1;
    pthread_mutex_unlock(&c->mu);
    if (!cut) return;
    ik__logf("%s: calls still waiting on the store are cut (docs/guarantees.md promise 13)", why);
    if (c->h.be->ops->cut) c->h.be->ops->cut(c->h.be);
}

/* The watchdog of ik_coord_stop_within: cuts the backend at stop_by_ns, unless
 * close begins first. */
static void *watchdog(void *arg)
{
    ik_coord *c = arg;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        int64_t left_ms = (c->stop_by_ns - ik__mono_ns() + 999999) / 1000000;
        if (c->closing || left_ms <= 0) break;
        struct timespec ts;
        ik__deadline_ts(&ts, left_ms);
        pthread_cond_timedwait(&c->cv, &c->mu, &ts);
    }
    if (c->closing)
        pthread_mutex_unlock(&c->mu);
    else
        cut_unlock(c, "the stop's deadline passed");
    return NULL;
}

int ik_coord_stop_within(ik_coord *c, int64_t timeout_ms)
{
    if (!c || timeout_ms < 0) return IK_EINVAL;
    if (ik__forked(c->h.fork_gen)) return IK_EFORKED;
    pthread_mutex_lock(&c->mu);
    int rc = c->watching ? IK_EINVAL : IK_OK;
    if (rc == IK_OK && c->h.be->ops->stop_begin) c->h.be->ops->stop_begin(c->h.be);
    if (rc == IK_OK) {
        c->stop_by_ns = ik__mono_ns() + timeout_ms * INT64_C(1000000);
        if (pthread_create(&c->watchdog, NULL, watchdog, c))
            rc = IK_ESYS(EAGAIN);
        else
            c->watching = 1;
    }
    pthread_mutex_unlock(&c->mu);
    return rc;
}

/* The settle's deadline: the stop's, where one is set, else the settle's own
 * budget from now. */
static int64_t settle_by(ik_coord *c)
{
    pthread_mutex_lock(&c->mu);
    int64_t by = c->watching ? c->stop_by_ns : ik__mono_ns() + IK__SETTLE_MS * INT64_C(1000000);
    pthread_mutex_unlock(&c->mu);
    return by;
}

void ik_coord_settle(ik_coord *c)
{
    if (!c || ik__forked(c->h.fork_gen)) return; /* a fork's child settles none of the parent's */
    ik__backend *be = c->h.be;
    if (!c->h.doubts || !ik__doubts_open(c->h.doubts)) return; /* never in doubt, or none open */
    pthread_mutex_lock(&c->mu);
    int cut = c->cut;
    pthread_mutex_unlock(&c->mu);
    if (cut) {
        ik__doubts_settle(c->h.doubts, be, 0, "the stop's deadline had passed");
        return;
    }
    /* The checks once more, now: a doubt is never settled through a store they
     * refuse, and a setting turned unsafe since the last check must not slip
     * through (docs/hazards.md). A store that cannot be asked now is left to the
     * backend's own gate, which checks every connection it makes before using it. */
    char why[300] = "";
    if (be->ops->hazards_check) be->ops->hazards_check(be, why, sizeof why);
    if (ik__hazards_refused(&be->hz, why, sizeof why) == IK_EUNSAFE) {
        char refused[360];
        snprintf(refused, sizeof refused, "the store's checks refuse it: %s", why);
        ik__doubts_settle(c->h.doubts, be, 0, refused);
        return;
    }
    ik__doubts_settle(c->h.doubts, be, settle_by(c), NULL);
}

void ik_coord_close(ik_coord *c)
{
    if (!c) return;
    /* In a fork's child the backend is the parent's: its threads are not here, a
     * mutex of theirs may be held for ever, its session and files go on serving the
     * parent. Nothing of it is touched; the child's copy is left as it is. */
    if (ik__forked(c->h.fork_gen)) return;
    /* the doubts first, while the hazards still answer (a freed verdict would
     * answer "safe") */
    ik_coord_settle(c);
    pthread_mutex_lock(&c->mu);
    c->closing = 1;
    pthread_cond_broadcast(&c->cv);
    int watching = c->watching;
    /* the close's own wait must end by the stop's deadline (backend.h) */
    int64_t close_ns = c->h.be->ops->close_wait_ms * INT64_C(1000000);
    if (watching && !c->cut && close_ns > 0 && ik__mono_ns() + close_ns > c->stop_by_ns)
        cut_unlock(c, "the stop's deadline is nearer than the store's close may take");
    else
        pthread_mutex_unlock(&c->mu);
    if (watching) pthread_join(c->watchdog, NULL);
    ik__doubts_free(c->h.doubts);              /* logs what the settle could not reach */
    if (c->h.be) c->h.be->ops->close(c->h.be); /* frees the hazards last (backend.h) */
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *ik_coord_uri(const ik_coord *c)
{
    return c ? c->h.be->ops->uri(c->h.be) : NULL;
}

int ik_coord_locks_check(const ik_coord *c, char *why, size_t why_len)
{
    if (!c) return ik__fail(IK_EINVAL, why, why_len, "no coord");
    const ik__backend_ops *ops = c->h.be->ops;
    if (ops->recipe) return IK_OK;
    return ik__fail(IK_EURI, why, why_len, "%s",
                    ops->no_locks ? ops->no_locks : "this backend offers no locks or elections");
}

int ik_coord_check(ik_coord *c, ik_hazard **out, size_t *n, char *why, size_t why_len)
{
    if (!c || !out || !n) return IK_EINVAL;
    if (ik__forked(c->h.fork_gen))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    ik__backend *be = c->h.be;
    if (be->ops->hazards_check) {
        int rc = be->ops->hazards_check(be, why, why_len);
        if (rc && rc != IK_EUNSAFE) return rc;
    }
    return ik__hazards_copy(&be->hz, out, n);
}

int ik_coord_hazards(ik_coord *c, ik_hazard **out, size_t *n, char *why, size_t why_len)
{
    if (!c) return IK_EINVAL;
    if (ik__forked(c->h.fork_gen))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    if (out && n) {
        int rc = ik__hazards_copy(&c->h.be->hz, out, n);
        if (rc) return rc;
    }
    return ik__hazards_refused(&c->h.be->hz, why, why_len);
}

int ik_coord_last_error(const ik_coord *c, char *why, size_t why_len)
{
    if (!c || !why || !why_len) return IK_EINVAL;
    why[0] = '\0';
    if (ik__forked(c->h.fork_gen))
        return ik__fail(IK_EFORKED, why, why_len, "%s", ik_strerror(IK_EFORKED));
    if (c->h.be->ops->last_error) c->h.be->ops->last_error(c->h.be, why, why_len);
    return why[0] ? IK_OK : IK_ENOTFOUND;
}

int ik_slots_list(ik_coord *c, const char *app, ik_slot_info **out, size_t *n)
{
    if (!c || !out || !n) return IK_EINVAL;
    if (ik__forked(c->h.fork_gen)) return IK_EFORKED;
    if (!app) app = "default";
    if (ik__app_name_check(app, NULL, 0) != 0) return IK_EINVAL;
    return c->h.be->ops->slots_list(c->h.be, app, out, n);
}
