/* etcd_gateway.c: typed calls on etcd's v3 JSON gateway over libcurl, answers read
 * with jansson (etcd_gateway.h states the calls, the JSON's rules and the
 * invariants EG1-EG4). The only file of the library that names curl or jansson for
 * etcd: the rest of the backend sees ik__etcd_answer.
 *
 * What it deliberately does not do: no HTTP/2 or gRPC (Debian has no C client for
 * either that etcd accepts without the gateway); no retry of a request that may
 * have applied (EG2: the caller decides); no keepalive stream (one POST each).
 */
#include "etcd_b64.h"
#include "etcd_gateway.h"
#include "internal.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define POOL 8  /* idle handles kept (each keeps its connection) */
#define LIVE 64 /* sockets open, for the cut */
#define BODY_MAX (64u << 20)

struct ik__etcd_gw {
    int tls;
    char base[IK__ETCD_ENDPOINTS_MAX][300]; /* "http://HOST:PORT" */
    int n;
    char *cacert, *cert, *key, *user, *password;
    uint64_t cluster_id; /* EG1: fixed by new */
    int auth_on;
    int foreign; /* EG1: the last answer came from another cluster (atomic) */

    pthread_mutex_t mu; /* guards what follows */
    int cur;            /* the endpoint tried first */
    char token[256];
    CURL *idle[POOL];
    int nidle;
    curl_socket_t live[LIVE];
    struct ik__etcd_stop *live_stop[LIVE]; /* the watch whose stop shuts it, or NULL */
    int nlive;
    int cut;
};

/* ---- reading answers ---------------------------------------------------------- */

/* A 64-bit integer field: a JSON string of digits (the gateway's form) or a number.
 * 0 with *num the number, or *s the string (both NULL: absent, or null); -1 if it is
 * neither, or a string no 64-bit value can be written in. */
static int int_field(json_t *o, const char *name, json_t **num, const char **s)
{
    json_t *f = json_object_get(o, name);
    *num = NULL;
    *s = NULL;
    if (!f || json_is_null(f)) return 0;
    if (json_is_integer(f)) {
        *num = f;
        return 0;
    }
    if (!json_is_string(f)) return -1;
    *s = json_string_value(f);
    return **s && strlen(*s) <= 20 ? 0 : -1;
}

/* 0 if absent; -1 if malformed. */
static int get_i64(json_t *o, const char *name, int64_t *v)
{
    json_t *num;
    const char *s;
    *v = 0;
    if (int_field(o, name, &num, &s)) return -1;
    if (num) *v = (int64_t)json_integer_value(num);
    if (!s) return 0;
    errno = 0;
    char *e;
    long long x = strtoll(s, &e, 10);
    if (*e || errno) return -1;
    *v = (int64_t)x;
    return 0;
}

static int get_u64(json_t *o, const char *name, uint64_t *v)
{
    json_t *num;
    const char *s;
    *v = 0;
    if (int_field(o, name, &num, &s)) return -1;
    if (num) *v = (uint64_t)json_integer_value(num);
    if (!s) return 0;
    if (*s == '-') return -1;
    errno = 0;
    char *e;
    unsigned long long x = strtoull(s, &e, 10);
    if (*e || errno) return -1;
    *v = (uint64_t)x;
    return 0;
}

static int get_bool(json_t *o, const char *name)
{
    json_t *f = json_object_get(o, name);
    return f && json_is_true(f);
}

static void get_str(json_t *o, const char *name, char *out, size_t len)
{
    json_t *f = json_object_get(o, name);
    snprintf(out, len, "%s", f && json_is_string(f) ? json_string_value(f) : "");
}

static int read_header(json_t *h, ik__etcd_answer *a)
{
    if (!h) return 0;
    if (!json_is_object(h)) return -1;
    a->has_header = 1;
    if (get_u64(h, "cluster_id", &a->cluster_id) || get_u64(h, "member_id", &a->member_id) ||
        get_i64(h, "revision", &a->revision) || get_i64(h, "raft_term", &a->raft_term))
        return -1;
    return 0;
}

static int read_kvs(json_t *arr, int resp, ik__etcd_answer *a)
{
    if (!arr) return 0;
    if (!json_is_array(arr)) return -1;
    size_t n = json_array_size(arr);
    if (n == 0) return 0;
    ik__etcd_kv *k = realloc(a->kvs, (a->n_kvs + n) * sizeof *k);
    if (!k) return -1;
    a->kvs = k;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        if (!json_is_object(o)) return -1;
        ik__etcd_kv *kv = &a->kvs[a->n_kvs];
        memset(kv, 0, sizeof *kv);
        kv->resp = resp;
        a->n_kvs++; /* counted now: freed with the answer whatever follows */
        json_t *key = json_object_get(o, "key"), *val = json_object_get(o, "value");
        if ((key && !json_is_string(key)) || (val && !json_is_string(val))) return -1;
        kv->key =
            key ? ik__etcd_b64_decode(json_string_value(key), json_string_length(key), &kv->key_len)
                : strdup("");
        kv->value = val ? ik__etcd_b64_decode(json_string_value(val), json_string_length(val),
                                              &kv->value_len)
                        : strdup("");
        if (!kv->key || !kv->value) return -1;
        if (get_i64(o, "create_revision", &kv->create_revision) ||
            get_i64(o, "mod_revision", &kv->mod_revision) || get_i64(o, "version", &kv->version) ||
            get_i64(o, "lease", &kv->lease))
            return -1;
    }
    return 0;
}

static int read_body(json_t *r, ik__etcd_answer *a)
{
    if (read_header(json_object_get(r, "header"), a)) return -1;
    if (read_kvs(json_object_get(r, "kvs"), 0, a)) return -1;
    a->succeeded = get_bool(r, "succeeded");
    if (get_i64(r, "count", &a->count) || get_i64(r, "deleted", &a->deleted) ||
        get_i64(r, "ID", &a->id) || get_i64(r, "TTL", &a->ttl) || get_u64(r, "leader", &a->leader))
        return -1;
    get_str(r, "token", a->token, sizeof a->token);
    get_str(r, "version", a->version, sizeof a->version);
    a->is_learner = get_bool(r, "isLearner");
    a->created = get_bool(r, "created");
    a->canceled = get_bool(r, "canceled");
    json_t *resps = json_object_get(r, "responses");
    if (resps) {
        if (!json_is_array(resps)) return -1;
        for (size_t i = 0; i < json_array_size(resps); i++) {
            json_t *x = json_array_get(resps, i);
            if (!json_is_object(x)) return -1;
            json_t *rr = json_object_get(x, "response_range");
            json_t *rd = json_object_get(x, "response_delete_range");
            if (rr && (!json_is_object(rr) || read_kvs(json_object_get(rr, "kvs"), (int)i, a)))
                return -1;
            int64_t d = 0;
            if (rd && (!json_is_object(rd) || get_i64(rd, "deleted", &d))) return -1;
            a->deleted += d;
        }
    }
    json_t *ms = json_object_get(r, "members");
    if (ms) {
        if (!json_is_array(ms)) return -1;
        size_t n = json_array_size(ms);
        a->members = n ? calloc(n, sizeof *a->members) : NULL;
        if (n && !a->members) return -1;
        for (size_t i = 0; i < n; i++) {
            json_t *m = json_array_get(ms, i);
            if (!json_is_object(m) || get_u64(m, "ID", &a->members[i].id)) return -1;
            get_str(m, "name", a->members[i].name, sizeof a->members[i].name);
            a->members[i].is_learner = get_bool(m, "isLearner");
            a->n_members++;
        }
    }
    json_t *ev = json_object_get(r, "events");
    if (ev) {
        if (!json_is_array(ev)) return -1;
        for (size_t i = 0; i < json_array_size(ev); i++) {
            json_t *e = json_array_get(ev, i);
            if (!json_is_object(e)) return -1;
            json_t *t = json_object_get(e, "type");
            if (t && json_is_string(t) && strcmp(json_string_value(t), "DELETE") == 0) a->deletes++;
        }
    }
    return 0;
}

int ik__etcd_answer_parse(const char *buf, size_t len, ik__etcd_answer *a, char *why,
                          size_t why_len)
{
    memset(a, 0, sizeof *a);
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return ik__fail(-1, why, why_len, "not JSON: %.80s", je.text);
    int rc = -1;
    json_t *body = root;
    if (!json_is_object(root)) {
        ik__fail(-1, why, why_len, "not a JSON object");
        goto out;
    }
    json_t *res = json_object_get(root, "result"), *err = json_object_get(root, "error");
    if (err && json_is_object(err))
        body = err; /* a streamed error */
    else if (res)
        body = res;
    if (!json_is_object(body)) {
        ik__fail(-1, why, why_len, "not a JSON object");
        goto out;
    }
    int64_t code = 0;
    if (get_i64(body, "code", &code) || (!code && get_i64(body, "grpc_code", &code)) || code < 0 ||
        code > 99) {
        ik__fail(-1, why, why_len, "a malformed error code");
        goto out;
    }
    if (code || body == err) { /* etcd's errors carry a gRPC code; a streamed one is an object */
        a->err_code = code ? (int)code : 2;
        get_str(body, "message", a->err, sizeof a->err);
        if (!a->err[0]) get_str(body, "error", a->err, sizeof a->err);
    }
    if (read_body(body, a)) {
        ik__fail(-1, why, why_len, "a field of the wrong type or form");
        goto out;
    }
    rc = 0;
out:
    json_decref(root);
    if (rc) ik__etcd_answer_free(a);
    return rc;
}

void ik__etcd_answer_free(ik__etcd_answer *a)
{
    for (size_t i = 0; i < a->n_kvs; i++) {
        free(a->kvs[i].key);
        free(a->kvs[i].value);
    }
    free(a->kvs);
    free(a->members);
    memset(a, 0, sizeof *a);
}

/* ---- the transport ------------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_start(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* One request's state, for curl's callbacks. */
typedef struct xfer {
    ik__etcd_gw *g;
    char *body;
    size_t len, cap;
    /* a watch: each complete line is read as it comes */
    int stream;
    int deletes, broken;
    ik__etcd_stop *stop; /* a watch's: its socket shut when set */
    CURLcode cc;         /* curl's outcome */
} xfer;

/* Sockets are opened and closed through these (ctx: the gateway: curl keeps a
 * connection's close callback and its data with the connection, which may outlive
 * the request that made it), and tracked for the cut and for a watch's stop. */
static curl_socket_t open_sock(void *ctx, curlsocktype purpose, struct curl_sockaddr *sa)
{
    (void)purpose;
    ik__etcd_gw *g = ctx;
    pthread_mutex_lock(&g->mu);
    curl_socket_t fd = CURL_SOCKET_BAD;
    if (!g->cut) {
        fd = socket(sa->family, sa->socktype | SOCK_CLOEXEC, sa->protocol);
        if (fd >= 0 && g->nlive < LIVE) {
            g->live_stop[g->nlive] = NULL;
            g->live[g->nlive++] = fd;
        }
    }
    pthread_mutex_unlock(&g->mu);
    return fd;
}

/* A watch's new socket (curl's sockopt callback, clientp: its xfer, during its
 * perform): the watch's stop may shut it from now until close_sock forgets it. */
static int watch_sock(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
    (void)purpose;
    xfer *x = clientp;
    if (!x->stop) return CURL_SOCKOPT_OK;
    ik__etcd_gw *g = x->g;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->nlive; i++)
        if (g->live[i] == fd) g->live_stop[i] = x->stop;
    pthread_mutex_lock(&x->stop->mu);
    x->stop->fd = fd;
    if (x->stop->on) shutdown(fd, SHUT_RDWR);
    pthread_mutex_unlock(&x->stop->mu);
    pthread_mutex_unlock(&g->mu);
    return CURL_SOCKOPT_OK;
}

static int close_sock(void *ctx, curl_socket_t fd)
{
    ik__etcd_gw *g = ctx;
    pthread_mutex_lock(&g->mu);
    for (int i = 0; i < g->nlive; i++)
        if (g->live[i] == fd) {
            ik__etcd_stop *st = g->live_stop[i];
            if (st) { /* forgotten before the number can be another socket's */
                pthread_mutex_lock(&st->mu);
                if (st->fd == fd) st->fd = -1;
                pthread_mutex_unlock(&st->mu);
            }
            g->live[i] = g->live[--g->nlive];
            g->live_stop[i] = g->live_stop[g->nlive];
            break;
        }
    pthread_mutex_unlock(&g->mu);
    return close(fd);
}

static size_t on_data(char *p, size_t sz, size_t nm, void *ctx)
{
    xfer *x = ctx;
    size_t n = sz * nm;
    if (x->len + n + 1 > x->cap) {
        size_t cap = x->cap ? x->cap : 4096;
        while (cap < x->len + n + 1)
            cap *= 2;
        char *b = cap <= BODY_MAX ? realloc(x->body, cap) : NULL;
        if (!b) return 0;
        x->body = b;
        x->cap = cap;
    }
    memcpy(x->body + x->len, p, n);
    x->len += n;
    x->body[x->len] = '\0';
    if (!x->stream) return n;
    char *nl;
    while ((nl = memchr(x->body, '\n', x->len))) {
        size_t line = (size_t)(nl - x->body);
        ik__etcd_answer a = {0};
        char why[120];
        if (line > 0) {
            if (ik__etcd_answer_parse(x->body, line, &a, why, sizeof why) == 0) {
                if (a.err_code || a.canceled) x->broken = 1;
                if (a.has_header && x->g->cluster_id && a.cluster_id != x->g->cluster_id)
                    x->broken = 1;
                x->deletes += a.deletes;
                ik__etcd_answer_free(&a);
            } else {
                x->broken = 1;
            }
        }
        memmove(x->body, nl + 1, x->len - line - 1);
        x->len -= line + 1;
        x->body[x->len] = '\0';
        if (x->deletes || x->broken) return 0; /* ends the stream: seen what we wait for */
    }
    return n;
}

static int on_progress(void *ctx, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a, (void)b, (void)c, (void)d;
    xfer *x = ctx;
    pthread_mutex_lock(&x->g->mu);
    int cut = x->g->cut;
    pthread_mutex_unlock(&x->g->mu);
    return cut || (x->stop && ik__etcd_stop_is(x->stop));
}

static CURL *handle_get(ik__etcd_gw *g)
{
    pthread_mutex_lock(&g->mu);
    CURL *h = g->nidle ? g->idle[--g->nidle] : NULL;
    pthread_mutex_unlock(&g->mu);
    if (!h) h = curl_easy_init();
    return h;
}

static void handle_put(ik__etcd_gw *g, CURL *h, int broken)
{
    if (!h) return;
    pthread_mutex_lock(&g->mu);
    if (!broken && !g->cut && g->nidle < POOL) {
        g->idle[g->nidle++] = h;
        h = NULL;
    }
    pthread_mutex_unlock(&g->mu);
    if (h) curl_easy_cleanup(h);
}

/* Error codes (gRPC's) whose request may have applied (EG2). */
static int code_in_doubt(int code)
{
    return code == 1 || code == 2 || code == 4 || code == 14;
}

enum { SENT_NOT, SENT_MAYBE };

/* One request to endpoint ep: 0 with the body in x, or IK_ESTORE with *sent
 * saying whether any byte of it left. */
static int perform(ik__etcd_gw *g, int ep, const char *path, const char *post, int64_t timeout_ms,
                   xfer *x, long *http, int *sent, char *why, size_t why_len)
{
    CURL *h = handle_get(g);
    *sent = SENT_NOT;
    if (!h) return ik__fail(IK_ENOMEM, why, why_len, "out of memory");
    curl_easy_reset(h);
    char url[400];
    snprintf(url, sizeof url, "%s%s", g->base[ep], path);
    struct curl_slist *hd = NULL;
    char auth[300];
    pthread_mutex_lock(&g->mu);
    int have_token = g->token[0] != '\0';
    snprintf(auth, sizeof auth, "Authorization: %s", g->token);
    pthread_mutex_unlock(&g->mu);
    hd = curl_slist_append(hd, "Content-Type: application/json");
    if (have_token) hd = curl_slist_append(hd, auth);
    hd = curl_slist_append(hd, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hd);
    if (post) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, post);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
    }
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_ms > 0 ? timeout_ms : 1));
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)(timeout_ms < 1000 ? timeout_ms : 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_sock);
    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, g);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, close_sock);
    curl_easy_setopt(h, CURLOPT_CLOSESOCKETDATA, g);
    if (x->stop) { /* a socket of its own, which its stop may shut */
        curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
        curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
        curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, watch_sock);
        curl_easy_setopt(h, CURLOPT_SOCKOPTDATA, x);
    }
    curl_easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, g->tls ? "https" : "http");
    char detail[CURL_ERROR_SIZE] = ""; /* curl's own words: which certificate check failed */
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, detail);
    if (g->tls) {
        if (g->cacert) curl_easy_setopt(h, CURLOPT_CAINFO, g->cacert);
        if (g->cert) curl_easy_setopt(h, CURLOPT_SSLCERT, g->cert);
        if (g->key) curl_easy_setopt(h, CURLOPT_SSLKEY, g->key);
    }
    CURLcode cc = curl_easy_perform(h);
    x->cc = cc;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http);
    long req_size = 0;
    curl_easy_getinfo(h, CURLINFO_REQUEST_SIZE, &req_size);
    curl_slist_free_all(hd);
    int e = IK_OK;
    if (cc != CURLE_OK && !(x->stream && cc == CURLE_WRITE_ERROR && (x->deletes || x->broken))) {
        *sent = req_size > 0 ? SENT_MAYBE : SENT_NOT;
        const char *what = curl_easy_strerror(cc);
        for (char *c = detail; *c; c++) /* one line */
            if ((unsigned char)*c < ' ') *c = ' ';
        if (detail[0] && !strstr(detail, what) && strcmp(detail, what) != 0)
            e = ik__fail(IK_ESTORE, why, why_len, "etcd at %s: %s (%s)", g->base[ep], what, detail);
        else
            e = ik__fail(IK_ESTORE, why, why_len, "etcd at %s: %s", g->base[ep], what);
    }
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL); /* detail goes out of scope */
    handle_put(g, h, e != IK_OK || x->stream);
    return e;
}

/* The request path with JSON body post, on the endpoints from the current one on,
 * until one answers (EG2), re-authenticating once where etcd dropped our token.
 * 0 and *a; else IK_ESTORE, IK_EINDOUBT or IK_EUNSAFE with why. */
static int authenticate(ik__etcd_gw *g, int64_t timeout_ms, char *why, size_t why_len);

static int call_as(ik__etcd_gw *g, const char *path, const char *post, int64_t timeout_ms,
                   int may_login, ik__etcd_answer *a, char *why, size_t why_len)
{
    memset(a, 0, sizeof *a);
    int64_t deadline = ik__mono_ms() + timeout_ms;
    pthread_mutex_lock(&g->mu);
    int first = g->cur, cut = g->cut;
    pthread_mutex_unlock(&g->mu);
    if (cut) return ik__fail(IK_ESTORE, why, why_len, "etcd: cut (the stop's deadline passed)");
    int reauth = may_login && g->user != NULL, e = IK_ESTORE;
    for (int i = 0; i < g->n; i++) {
        int ep = (first + i) % g->n;
        int64_t left = deadline - ik__mono_ms();
        if (left <= 0) break;
        xfer x = {.g = g};
        long http = 0;
        int sent;
        e = perform(g, ep, path, post, left, &x, &http, &sent, why, why_len);
        if (e == IK_ENOMEM) {
            free(x.body);
            return e;
        }
        if (e) {
            free(x.body);
            if (sent == SENT_MAYBE) {
                pthread_mutex_lock(&g->mu);
                g->cur = (ep + 1) % g->n;
                pthread_mutex_unlock(&g->mu);
                return IK_EINDOUBT;
            }
            continue; /* nothing left: the next endpoint */
        }
        char pwhy[120];
        int pe = ik__etcd_answer_parse(x.body ? x.body : "", x.len, a, pwhy, sizeof pwhy);
        free(x.body);
        if (pe) {
            if (http == 200) /* a real answer cut short: the request may have applied */
                return ik__fail(IK_EINDOUBT, why, why_len, "etcd at %s: unreadable answer (%s)",
                                g->base[ep], pwhy);
            return ik__fail(IK_ESTORE, why, why_len,
                            "%s answered HTTP %ld, not as etcd's v3 JSON gateway (%s): is it "
                            "etcd's client port?",
                            g->base[ep], http, pwhy);
        }
        if (!a->has_header && !a->err_code) { /* every answer of etcd's has a header */
            ik__etcd_answer_free(a);
            return ik__fail(IK_ESTORE, why, why_len,
                            "%s answered HTTP %ld without etcd's header, not as etcd's v3 JSON "
                            "gateway: is it etcd's client port?",
                            g->base[ep], http);
        }
        if (a->has_header && g->cluster_id)
            __atomic_store_n(&g->foreign, a->cluster_id != g->cluster_id, __ATOMIC_RELEASE);
        if (a->has_header && g->cluster_id && a->cluster_id != g->cluster_id) { /* EG1 */
            uint64_t got = a->cluster_id;
            ik__etcd_answer_free(a);
            return ik__fail(IK_EUNSAFE, why, why_len,
                            "etcd at %s answered for cluster %" PRIx64 ", not %" PRIx64
                            " (the cluster this store was opened on): never trusted "
                            "(docs/hazards.md, etcd)",
                            g->base[ep], got, g->cluster_id);
        }
        if (a->err_code == 16 && reauth) { /* the token expired or was revoked: not done */
            ik__etcd_answer_free(a);
            reauth = 0;
            int ae = authenticate(g, deadline - ik__mono_ms(), why, why_len);
            if (ae) {
                a->err_code = 16; /* for the caller: not let in (EG4 keeps the why's words) */
                return ae == IK_EDENIED ? IK_ESTORE : ae;
            }
            i--;
            continue;
        }
        if (a->err_code) {
            int c = a->err_code;
            e = code_in_doubt(c) ? IK_EINDOUBT : IK_ESTORE;
            ik__fail(e, why, why_len, "etcd at %s: %s (code %d)", g->base[ep], a->err, c);
            if (e == IK_EINDOUBT) {
                pthread_mutex_lock(&g->mu);
                g->cur = (ep + 1) % g->n;
                pthread_mutex_unlock(&g->mu);
            }
            return e; /* a->err_code stays for the caller */
        }
        pthread_mutex_lock(&g->mu);
        g->cur = ep;
        pthread_mutex_unlock(&g->mu);
        return IK_OK;
    }
    if (e == IK_ESTORE && !(why && why[0]))
        ik__fail(IK_ESTORE, why, why_len, "etcd: no endpoint answered in time");
    return IK_ESTORE;
}

static int call(ik__etcd_gw *g, const char *path, const char *post, int64_t timeout_ms,
                ik__etcd_answer *a, char *why, size_t why_len)
{
    return call_as(g, path, post, timeout_ms, 1, a, why, why_len);
}

/* body: a JSON object built by the caller (stolen) */
static int call_json(ik__etcd_gw *g, const char *path, json_t *body, int64_t timeout_ms,
                     ik__etcd_answer *a, char *why, size_t why_len)
{
    memset(a, 0, sizeof *a);
    char *post = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!post) return ik__fail(IK_ENOMEM, why, why_len, "out of memory");
    int e = call(g, path, post, timeout_ms, a, why, why_len);
    free(post);
    return e;
}

static json_t *str_i64(int64_t v)
{
    char b[24];
    snprintf(b, sizeof b, "%" PRId64, v);
    return json_string(b);
}

static int set_b64(json_t *o, const char *name, const char *s, size_t n)
{
    char *b = ik__etcd_b64_encode(s, n);
    if (!b) return -1;
    int r = json_object_set_new(o, name, json_string(b));
    free(b);
    return r;
}

/* The range_end that makes key a prefix: key with its last byte below 0xff raised
 * by one (the bytes after it dropped); "\0" (every key) for an empty key. */
static int set_prefix_end(json_t *o, const char *key)
{
    size_t n = strlen(key);
    char *e = strdup(key);
    if (!e) return -1;
    while (n > 0 && (unsigned char)e[n - 1] == 0xff)
        n--;
    int r;
    if (n == 0) {
        r = set_b64(o, "range_end", "", 1);
    } else {
        e[n - 1] = (char)((unsigned char)e[n - 1] + 1);
        r = set_b64(o, "range_end", e, n);
    }
    free(e);
    return r;
}

static int authenticate(ik__etcd_gw *g, int64_t timeout_ms, char *why, size_t why_len)
{
    if (timeout_ms <= 0) return ik__fail(IK_ESTORE, why, why_len, "etcd: no time left to log in");
    json_t *b = json_object();
    json_object_set_new(b, "name", json_string(g->user));
    json_object_set_new(b, "password", json_string(g->password ? g->password : ""));
    char *post = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    if (!post) return IK_ENOMEM;
    pthread_mutex_lock(&g->mu);
    g->token[0] = '\0';
    pthread_mutex_unlock(&g->mu);
    ik__etcd_answer a = {0};
    int e = call_as(g, "/v3/auth/authenticate", post, timeout_ms, 0, &a, why, why_len);
    memset(post, 0, strlen(post)); /* EG4 */
    free(post);
    if (e == IK_EINDOUBT) e = IK_ESTORE; /* a login applies nothing */
    if (e) {
        if (a.err_code == 3)
            e = ik__fail(IK_EDENIED, why, why_len,
                         "etcd refused the login of user %s: wrong user name or password", g->user);
        ik__etcd_answer_free(&a);
        return e;
    }
    if (!a.token[0]) {
        ik__etcd_answer_free(&a);
        return ik__fail(IK_ESTORE, why, why_len, "etcd's login answer holds no token");
    }
    pthread_mutex_lock(&g->mu);
    snprintf(g->token, sizeof g->token, "%s", a.token);
    pthread_mutex_unlock(&g->mu);
    ik__etcd_answer_free(&a);
    return IK_OK;
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int ik__etcd_gw_new(const ik__etcd_gw_config *c, ik__etcd_gw **out, char *why, size_t why_len)
{
    *out = NULL;
    pthread_once(&curl_once, curl_start);
    ik__etcd_gw *g = calloc(1, sizeof *g);
    if (!g) return IK_ENOMEM;
    pthread_mutex_init(&g->mu, NULL);
    g->tls = c->tls;
    g->n = c->n_endpoints;
    for (int i = 0; i < g->n; i++)
        snprintf(g->base[i], sizeof g->base[i], "%s://%s", c->tls ? "https" : "http",
                 c->endpoints[i]);
    g->cacert = dup_or_null(c->cacert);
    g->cert = dup_or_null(c->cert);
    g->key = dup_or_null(c->key);
    g->user = dup_or_null(c->user);
    g->password = dup_or_null(c->password);
    int e = IK_OK;
    if ((c->cacert && !g->cacert) || (c->cert && !g->cert) || (c->key && !g->key) ||
        (c->user && !g->user) || (c->password && !g->password))
        e = IK_ENOMEM;
    ik__etcd_answer a = {0};
    /* the hello: a status (any user may ask; a learner answers it too, so that the
     * checks can refuse it by name), then the login, which a learner refuses */
    if (!e) e = ik__etcd_status(g, 5000, &a, why, why_len);
    if (e && a.err_code && strstr(a.err, "learner")) /* 3.4's gateway: no call on a learner */
        e = ik__fail(IK_EUNSAFE, why, why_len,
                     "%s is a learner (%s): it does not vote, so it is not part of the quorum "
                     "that keeps writes; point the URI at voting members (docs/hazards.md, etcd)",
                     g->base[g->cur], a.err);
    if (e) ik__etcd_answer_free(&a);
    int learner = 0;
    if (!e) {
        if (!a.has_header || !a.cluster_id)
            e = ik__fail(IK_ESTORE, why, why_len,
                         "%s answered without a cluster id: not etcd's v3 JSON gateway",
                         g->base[g->cur]);
        g->cluster_id = a.cluster_id;
        learner = a.is_learner;
        ik__etcd_answer_free(&a);
    }
    if (!e && g->user && !learner) e = authenticate(g, 5000, why, why_len);
    if (!e && !g->user) {
        int on = ik__etcd_auth_enabled(g, 5000, why, why_len);
        if (on < 0) e = on;
        g->auth_on = on > 0;
    } else if (!e) {
        g->auth_on = 1;
    }
    if (e) {
        ik__etcd_gw_free(g);
        return e == IK_EINDOUBT ? IK_ESTORE : e; /* the hello applies nothing */
    }
    *out = g;
    return IK_OK;
}

void ik__etcd_gw_free(ik__etcd_gw *g)
{
    if (!g) return;
    for (int i = 0; i < g->nidle; i++)
        curl_easy_cleanup(g->idle[i]);
    if (g->password) memset(g->password, 0, strlen(g->password));
    free(g->cacert);
    free(g->cert);
    free(g->key);
    free(g->user);
    free(g->password);
    pthread_mutex_destroy(&g->mu);
    free(g);
}

void ik__etcd_gw_cut(ik__etcd_gw *g)
{
    pthread_mutex_lock(&g->mu);
    g->cut = 1;
    for (int i = 0; i < g->nlive; i++)
        shutdown(g->live[i], SHUT_RDWR);
    pthread_mutex_unlock(&g->mu);
}

uint64_t ik__etcd_gw_cluster_id(const ik__etcd_gw *g)
{
    return g->cluster_id;
}

int ik__etcd_gw_foreign(const ik__etcd_gw *g)
{
    return __atomic_load_n(&g->foreign, __ATOMIC_ACQUIRE);
}

int ik__etcd_gw_auth_on(const ik__etcd_gw *g)
{
    return g->auth_on;
}

void ik__etcd_gw_endpoint(ik__etcd_gw *g, char *buf, size_t len)
{
    pthread_mutex_lock(&g->mu);
    const char *b = g->base[g->cur];
    const char *p = strstr(b, "://");
    snprintf(buf, len, "%s", p ? p + 3 : b);
    pthread_mutex_unlock(&g->mu);
}

/* ---- the typed calls ------------------------------------------------------------ */

struct ik__etcd_txn {
    json_t *cmp, *ok, *fail;
};

ik__etcd_txn *ik__etcd_txn_new(void)
{
    ik__etcd_txn *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->cmp = json_array();
    t->ok = json_array();
    t->fail = json_array();
    if (!t->cmp || !t->ok || !t->fail) {
        ik__etcd_txn_free(t);
        return NULL;
    }
    return t;
}

void ik__etcd_txn_free(ik__etcd_txn *t)
{
    if (!t) return;
    json_decref(t->cmp);
    json_decref(t->ok);
    json_decref(t->fail);
    free(t);
}

int ik__etcd_txn_cmp(ik__etcd_txn *t, const char *key, const char *target, const char *result,
                     int64_t n, const char *v)
{
    json_t *c = json_object();
    if (!c || set_b64(c, "key", key, strlen(key))) {
        json_decref(c);
        return IK_ENOMEM;
    }
    json_object_set_new(c, "target", json_string(target));
    json_object_set_new(c, "result", json_string(result));
    if (strcmp(target, "VALUE") == 0)
        set_b64(c, "value", v, strlen(v));
    else if (strcmp(target, "CREATE") == 0)
        json_object_set_new(c, "create_revision", str_i64(n));
    else if (strcmp(target, "MOD") == 0)
        json_object_set_new(c, "mod_revision", str_i64(n));
    else if (strcmp(target, "VERSION") == 0)
        json_object_set_new(c, "version", str_i64(n));
    else
        json_object_set_new(c, "lease", str_i64(n));
    return json_array_append_new(t->cmp, c) ? IK_ENOMEM : IK_OK;
}

static int add_op(ik__etcd_txn *t, int ok, const char *kind, json_t *req)
{
    json_t *op = json_object();
    if (!op || !req) {
        json_decref(op);
        json_decref(req);
        return IK_ENOMEM;
    }
    json_object_set_new(op, kind, req);
    return json_array_append_new(ok ? t->ok : t->fail, op) ? IK_ENOMEM : IK_OK;
}

int ik__etcd_txn_put(ik__etcd_txn *t, int ok, const char *key, const char *value, int64_t lease)
{
    json_t *r = json_object();
    if (r && (set_b64(r, "key", key, strlen(key)) || set_b64(r, "value", value, strlen(value)))) {
        json_decref(r);
        return IK_ENOMEM;
    }
    if (r && lease) json_object_set_new(r, "lease", str_i64(lease));
    return add_op(t, ok, "request_put", r);
}

int ik__etcd_txn_get(ik__etcd_txn *t, int ok, const char *key, int prefix)
{
    json_t *r = json_object();
    if (r && (set_b64(r, "key", key, strlen(key)) || (prefix && set_prefix_end(r, key)))) {
        json_decref(r);
        return IK_ENOMEM;
    }
    return add_op(t, ok, "request_range", r);
}

int ik__etcd_txn_del(ik__etcd_txn *t, int ok, const char *key)
{
    json_t *r = json_object();
    if (r && set_b64(r, "key", key, strlen(key))) {
        json_decref(r);
        return IK_ENOMEM;
    }
    return add_op(t, ok, "request_delete_range", r);
}

int ik__etcd_txn_run(ik__etcd_gw *g, ik__etcd_txn *t, int64_t timeout_ms, ik__etcd_answer *a,
                     char *why, size_t why_len)
{
    json_t *b = json_object();
    if (!b) return IK_ENOMEM;
    json_object_set(b, "compare", t->cmp);
    json_object_set(b, "success", t->ok);
    json_object_set(b, "failure", t->fail);
    return call_json(g, "/v3/kv/txn", b, timeout_ms, a, why, why_len);
}

int ik__etcd_range(ik__etcd_gw *g, const char *key, int prefix, int by_create, int64_t max_create,
                   int64_t limit, int64_t timeout_ms, ik__etcd_answer *a, char *why, size_t why_len)
{
    json_t *b = json_object();
    if (!b || set_b64(b, "key", key, strlen(key)) || (prefix && set_prefix_end(b, key))) {
        json_decref(b);
        return IK_ENOMEM;
    }
    if (by_create) {
        json_object_set_new(b, "sort_order", json_string(by_create > 0 ? "ASCEND" : "DESCEND"));
        json_object_set_new(b, "sort_target", json_string("CREATE"));
    }
    if (max_create) json_object_set_new(b, "max_create_revision", str_i64(max_create));
    if (limit) json_object_set_new(b, "limit", str_i64(limit));
    return call_json(g, "/v3/kv/range", b, timeout_ms, a, why, why_len);
}

int ik__etcd_put(ik__etcd_gw *g, const char *key, const char *value, int64_t lease,
                 int64_t timeout_ms, ik__etcd_answer *a, char *why, size_t why_len)
{
    json_t *b = json_object();
    if (!b || set_b64(b, "key", key, strlen(key)) || set_b64(b, "value", value, strlen(value))) {
        json_decref(b);
        return IK_ENOMEM;
    }
    if (lease) json_object_set_new(b, "lease", str_i64(lease));
    return call_json(g, "/v3/kv/put", b, timeout_ms, a, why, why_len);
}

int ik__etcd_delete(ik__etcd_gw *g, const char *key, int64_t timeout_ms, ik__etcd_answer *a,
                    char *why, size_t why_len)
{
    json_t *b = json_object();
    if (!b || set_b64(b, "key", key, strlen(key))) {
        json_decref(b);
        return IK_ENOMEM;
    }
    return call_json(g, "/v3/kv/deleterange", b, timeout_ms, a, why, why_len);
}

/* A lease call: path with the one number field {"NAME": "N"}. */
static int lease_call(ik__etcd_gw *g, const char *path, const char *name, int64_t n,
                      int64_t timeout_ms, ik__etcd_answer *a, char *why, size_t why_len)
{
    json_t *b = json_object();
    if (!b) return IK_ENOMEM;
    json_object_set_new(b, name, str_i64(n));
    return call_json(g, path, b, timeout_ms, a, why, why_len);
}

int ik__etcd_lease_grant(ik__etcd_gw *g, int64_t ttl_s, int64_t timeout_ms, ik__etcd_answer *a,
                         char *why, size_t why_len)
{
    return lease_call(g, "/v3/lease/grant", "TTL", ttl_s, timeout_ms, a, why, why_len);
}

int ik__etcd_lease_keepalive(ik__etcd_gw *g, int64_t id, int64_t timeout_ms, ik__etcd_answer *a,
                             char *why, size_t why_len)
{
    return lease_call(g, "/v3/lease/keepalive", "ID", id, timeout_ms, a, why, why_len);
}

int ik__etcd_lease_revoke(ik__etcd_gw *g, int64_t id, int64_t timeout_ms, ik__etcd_answer *a,
                          char *why, size_t why_len)
{
    return lease_call(g, "/v3/lease/revoke", "ID", id, timeout_ms, a, why, why_len);
}

int ik__etcd_status(ik__etcd_gw *g, int64_t timeout_ms, ik__etcd_answer *a, char *why,
                    size_t why_len)
{
    return call_json(g, "/v3/maintenance/status", json_object(), timeout_ms, a, why, why_len);
}

int ik__etcd_members(ik__etcd_gw *g, int64_t timeout_ms, ik__etcd_answer *a, char *why,
                     size_t why_len)
{
    return call_json(g, "/v3/cluster/member/list", json_object(), timeout_ms, a, why, why_len);
}

int ik__etcd_auth_enabled(ik__etcd_gw *g, int64_t timeout_ms, char *why, size_t why_len)
{
    if (g->user) return 1;
    /* a login with no name: "authentication is not enabled" (FailedPrecondition)
     * where auth is off; any other refusal where it is on */
    json_t *b = json_object();
    if (!b) return IK_ENOMEM;
    json_object_set_new(b, "name", json_string(""));
    json_object_set_new(b, "password", json_string(""));
    ik__etcd_answer a = {0};
    char w[300];
    int e = call_json(g, "/v3/auth/authenticate", b, timeout_ms, &a, w, sizeof w);
    int on;
    if (a.err_code == 9 && strstr(a.err, "not enabled"))
        on = 0;
    else if (e == IK_OK || a.err_code)
        on = 1;
    else
        on = ik__fail(e == IK_EINDOUBT ? IK_ESTORE : e, why, why_len, "%s", w);
    ik__etcd_answer_free(&a);
    return on;
}

int ik__etcd_metric(ik__etcd_gw *g, const char *metric, int64_t timeout_ms, double *value,
                    char *why, size_t why_len)
{
    pthread_mutex_lock(&g->mu);
    int ep = g->cur;
    pthread_mutex_unlock(&g->mu);
    xfer x = {.g = g};
    long http = 0;
    int sent;
    int e = perform(g, ep, "/metrics", NULL, timeout_ms, &x, &http, &sent, why, why_len);
    if (!e && http != 200)
        e = ik__fail(IK_ESTORE, why, why_len, "%s/metrics answered HTTP %ld", g->base[ep], http);
    if (e) {
        free(x.body);
        return e;
    }
    size_t ml = strlen(metric);
    e = ik__fail(IK_ENOTFOUND, why, why_len, "%s/metrics has no %s", g->base[ep], metric);
    for (char *l = x.body; l && *l;) {
        char *nl = strchr(l, '\n');
        if (strncmp(l, metric, ml) == 0 && l[ml] == ' ') {
            char *end;
            double v = strtod(l + ml + 1, &end);
            if (end != l + ml + 1) {
                *value = v;
                e = IK_OK;
            }
            break;
        }
        l = nl ? nl + 1 : NULL;
    }
    free(x.body);
    return e;
}

int ik__etcd_watch_delete(ik__etcd_gw *g, const char *key, int prefix, int64_t from_rev,
                          int64_t timeout_ms, ik__etcd_stop *stop, char *why, size_t why_len)
{
    json_t *b = json_object(), *c = json_object();
    if (!b || !c || set_b64(c, "key", key, strlen(key)) || (prefix && set_prefix_end(c, key))) {
        json_decref(b);
        json_decref(c);
        return IK_ENOMEM;
    }
    if (from_rev) json_object_set_new(c, "start_revision", str_i64(from_rev));
    json_object_set_new(b, "create_request", c);
    char *post = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    if (!post) return IK_ENOMEM;
    pthread_mutex_lock(&g->mu);
    int ep = g->cur;
    pthread_mutex_unlock(&g->mu);
    xfer x = {.g = g, .stream = 1, .stop = stop};
    long http = 0;
    int sent;
    int e = perform(g, ep, "/v3/watch", post, timeout_ms, &x, &http, &sent, why, why_len);
    free(post);
    free(x.body);
    if (x.deletes) return IK_OK;
    if (stop && ik__etcd_stop_is(stop))
        return ik__fail(IK_ECLOSED, why, why_len, "the wait was cancelled");
    if (x.broken) return ik__fail(IK_ESTORE, why, why_len, "etcd ended the watch of %s", key);
    if (e == IK_OK || x.cc == CURLE_OPERATION_TIMEDOUT)
        return ik__fail(IK_ETIMEDOUT, why, why_len, "no deletion of %s in time", key);
    if (e != IK_ENOMEM) {
        pthread_mutex_lock(&g->mu);
        g->cur = (ep + 1) % g->n;
        pthread_mutex_unlock(&g->mu);
    }
    return e;
}
