/* backend_zk_tags.c: tags on ZooKeeper: durable counters advanced by version-checked
 * setData, with every write's outcome recoverable after a lost answer.
 *
 * Node layout (docs/zookeeper.md, "Tags"), BASE = CHROOT/idkeeper/apps/APP:
 *
 *   BASE/tags                persistent, no data
 *   BASE/tags/TAG            persistent: the counter. Bytes 0-7: max_id, big-endian
 *                            (Curator's DistributedAtomicLong reads exactly these);
 *                            then text lines: "since=V" and one "w=NONCE:COUNT:MS"
 *                            per writer of the last 10 minutes (the writer table)
 *   BASE/tags/TAG/meta       persistent: kind=, start=, step=, created_ms=, made_by=,
 *                            description= (last: the rest of the data)
 *
 * A tag is made by one zoo_multi of both creates. tag_advance reads the counter
 * (data and version V) and writes max_id + delta at version V: of two servers that
 * read V, one wins and the other gets ZBADVERSION and reads again (bounded retries
 * with jitter). So each range [max_id, max_id + delta) is written by exactly one
 * acknowledged setData: no lock, no duplicate.
 *
 * The writer table makes a lost answer decidable. Each backend has a random 64-bit
 * NONCE and a counter; every write carries the next COUNT and puts "w=NONCE:COUNT"
 * at the head of the table it read (dropping our older line, and lines whose MS,
 * the server's mtime of the version that writer read, is 10 minutes older than the
 * version we read). "since=V" says the table lists every writer of every version
 * above V: a new node says since=0; a writer that finds no table (another client,
 * such as Curator, wrote 8 bytes), or drops another writer's line (stale, or the
 * table is full), sets since to the version it read. So the table's completeness
 * never rests on the server's clock: a leader whose clock steps back (mtimes going
 * down) can make a line look stale too early, but its pruning still raises since,
 * and the doubt settles as UNKNOWN (a logged gap), never as NOT_APPLIED.
 *
 * When a write made at version V gets no answer (connection loss, or none before
 * the call's deadline), we read the node again, at version W, once connected (any
 * session):
 *
 *   W == V                    not applied yet: the next write at V fences it (of the
 *                             two, at most one can apply); PENDING
 *   W > V, our line's COUNT is that write's
 *                             applied: the range is ours; APPLIED
 *   W > V, it is not, since <= V, and W's mtime is less than 9 minutes after V's
 *                             not applied, and never will be (version V is past);
 *                             NOT_APPLIED (the mtime test only matters for tables
 *                             written by versions that pruned without raising since)
 *   anything else             (recreated node, table restarted or pruned) UNKNOWN
 *
 * Invariants
 *   ZT1. max_id never decreases, and every range handed out lies below it: ranges
 *       come only from acknowledged version-checked writes that raised it by delta.
 *   ZT2. Within one backend, one advance per tag runs at a time (the tag entry's
 *       mutex), so our line in a tag's table names our latest write to that tag,
 *       and a doubt is resolved before any later write of ours but the fencing one.
 *   ZT3. A range whose write is in doubt is handed out only if it is APPLIED on the
 *       call that made it. A doubt left open when the call gives up (IK_EINDOUBT) is
 *       resolved by the next advance of the tag: APPLIED then means a gap, logged on
 *       stderr as "tag gap tag=T first=A count=K", never a duplicate.
 *
 * The state of one tag entry's doubt, and the edges:
 *
 *   CLEAR --write without answer--> OPEN (V, first, counts)
 *   OPEN --read: APPLIED, in the same call--> CLEAR (range returned)
 *   OPEN --read: APPLIED later / UNKNOWN--> CLEAR (gap logged)
 *   OPEN --read: NOT_APPLIED--> CLEAR
 *   OPEN --read: PENDING, fencing write at V acknowledged--> CLEAR
 *   OPEN --call's deadline, not connected--> OPEN (IK_EINDOUBT; the next call goes on)
 *
 * Bounds: a call's budget B is the negotiated session timeout, clamped to 2..10 s.
 * A call that finds the connection down, with nothing of its own in doubt, gives up
 * after at most 2 s (IK_ESTORE). A write that loses its answer gets B again, once,
 * to reconnect and settle it; so no call blocks longer than 2 B.
 *
 * Threads: safe from any thread; calls for one tag run one at a time (ZT2).
 *
 * What it deliberately does not do: it never deletes a tag, never rewrites meta,
 * and never hands out a range it cannot prove it wrote.
 *
 * Below it: backend_zk_data.c (the counter's data, the writer table, the doubt
 * rule: pure, unit-tested) and zk_session.c (the session, the bounded waits, the
 * result-code classes, the ACLs). Above it: backend_zk.c's ops table.
 */
#include "backend.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_session.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <zookeeper/zookeeper.h>

#define ZT_PATH_MAX 1024
#define ZT_DATA_MAX 4096
#define STRIPES 64
#define MAX_CONFLICTS 1000

/* ------------------------------------------------------------------------------
 * Types
 */
typedef struct zt_tag zt_tag;
struct zt_tag {
    zt_tag *next; /* stripe chain */
    int refs;     /* under the stripe's mutex */
    char app[65];
    char name[IK_TAG_NAME_MAX + 1];

    pthread_mutex_t mu; /* one advance at a time (ZT2); guards what follows */
    int have_kind;
    ik_tag_kind kind;
    int64_t czxid; /* of the node the kind was read from */
    int cached;    /* node is the counter as we last wrote it */
    int contended; /* the last advance met another writer: read first */
    ik__zk_counter node;
    ik__zk_doubt doubt;
};

struct ik__zk_tags {
    uint64_t nonce;
    _Atomic uint64_t count;
    _Atomic uint64_t rng;
    struct {
        pthread_mutex_t mu;
        zt_tag *tags;
    } stripe[STRIPES];
};

/* ------------------------------------------------------------------------------
 * Per-backend state
 */
int ik__zk_tags_new(ik__zk_tags **out, char *why, size_t why_len)
{
    uint64_t r[2];
    /* The nonce tells this writer's counter updates from every other's when an
     * answer is lost (docs/zookeeper.md): a guessable one could settle another
     * writer's range as ours, so no randomness is an error, never a clock seed. */
    int err = ik__random_bytes((unsigned char *)r, sizeof r);
    if (err)
        return ik__fail(IK_ESTORE, why, why_len,
                        "no randomness from the kernel for the tag writers' nonce (errno %d)",
                        -err);
    ik__zk_tags *t = calloc(1, sizeof *t);
    if (!t) return IK_ENOMEM;
    t->nonce = r[0] ? r[0] : 1;
    atomic_init(&t->count, 0);
    atomic_init(&t->rng, r[1] | 1);
    for (int i = 0; i < STRIPES; i++)
        pthread_mutex_init(&t->stripe[i].mu, NULL);
    *out = t;
    return IK_OK;
}

void ik__zk_tags_free(ik__zk_tags *t)
{
    if (!t) return;
    for (int i = 0; i < STRIPES; i++) {
        for (zt_tag *g = t->stripe[i].tags, *nx; g; g = nx) {
            nx = g->next;
            pthread_mutex_destroy(&g->mu);
            free(g);
        }
        pthread_mutex_destroy(&t->stripe[i].mu);
    }
    free(t);
}

static uint64_t rnd(ik__zk_tags *t)
{
    /* splitmix64 over an atomic counter: no lock, good enough for jitter */
    uint64_t z = atomic_fetch_add(&t->rng, UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static unsigned stripe_of(const char *app, const char *name)
{
    uint32_t h = 2166136261u;
    for (const char *s = app; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h % STRIPES;
}

/* The entry of (app, name), made if need be, with one more reference. */
static zt_tag *tag_ref(ik__zk_tags *t, const char *app, const char *name)
{
    unsigned k = stripe_of(app, name);
    pthread_mutex_lock(&t->stripe[k].mu);
    zt_tag *g;
    for (g = t->stripe[k].tags; g; g = g->next)
        if (!strcmp(g->name, name) && !strcmp(g->app, app)) break;
    if (!g && (g = calloc(1, sizeof *g))) {
        snprintf(g->app, sizeof g->app, "%s", app);
        snprintf(g->name, sizeof g->name, "%s", name);
        pthread_mutex_init(&g->mu, NULL);
        g->next = t->stripe[k].tags;
        t->stripe[k].tags = g;
    }
    if (g) g->refs++;
    pthread_mutex_unlock(&t->stripe[k].mu);
    return g;
}

/* Drops a reference; forget: the tag does not exist (and nothing is in doubt), so
 * the entry goes once unused: names that are not tags cost no memory. */
static void tag_unref(ik__zk_tags *t, zt_tag *g, int forget)
{
    unsigned k = stripe_of(g->app, g->name);
    pthread_mutex_lock(&t->stripe[k].mu);
    if (--g->refs == 0 && forget) {
        for (zt_tag **pp = &t->stripe[k].tags; *pp; pp = &(*pp)->next)
            if (*pp == g) {
                *pp = g->next;
                break;
            }
        pthread_mutex_destroy(&g->mu);
        free(g);
    }
    pthread_mutex_unlock(&t->stripe[k].mu);
}

/* meta: key=value lines, the description last (it takes the rest of the data). */
static int format_meta(char *buf, size_t cap, const ik_tag_info *t, uint64_t nonce, uint64_t count)
{
    int k = snprintf(buf, cap,
                     "kind=%s\nstart=%" PRId64 "\nstep=%" PRId64 "\ncreated_ms=%" PRId64
                     "\nmade_by=%016" PRIx64 ":%" PRIu64 "\ndescription=%s",
                     ik_tag_kind_name(t->kind), t->start, t->step, t->update_time_ms, nonce, count,
                     t->description);
    return k < 0 || (size_t)k >= cap ? -1 : k;
}

typedef struct zt_meta {
    int has_kind, has_start, has_step;
    ik_tag_kind kind;
    int64_t start, step, created_ms;
    uint64_t made_nonce, made_count;
    char description[256];
} zt_meta;

static void parse_meta(const char *d, int len, zt_meta *m)
{
    memset(m, 0, sizeof *m);
    const char *p = d, *end = d + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        const char *eq = memchr(p, '=', (size_t)(le - p));
        if (!eq) {
            p = nl ? nl + 1 : end;
            continue;
        }
        size_t kl = (size_t)(eq - p), vl = (size_t)(le - eq - 1);
        const char *v = eq + 1;
        uint64_t u;
        if (kl == 11 && !memcmp(p, "description", 11)) {
            size_t dl = (size_t)(end - v);
            if (dl >= sizeof m->description) dl = sizeof m->description - 1;
            memcpy(m->description, v, dl);
            m->description[dl] = '\0';
            return;
        }
        if (kl == 4 && !memcmp(p, "kind", 4)) {
            char k[16];
            if (vl < sizeof k) {
                memcpy(k, v, vl);
                k[vl] = '\0';
                m->has_kind = ik_tag_kind_parse(k, &m->kind) == 0;
            }
        } else if (kl == 5 && !memcmp(p, "start", 5) && ik__zk_parse_u64(v, vl, 10, &u) == 0 &&
                   u <= INT64_MAX) {
            m->start = (int64_t)u;
            m->has_start = 1;
        } else if (kl == 4 && !memcmp(p, "step", 4) && ik__zk_parse_u64(v, vl, 10, &u) == 0 &&
                   u >= 1 && u <= INT64_MAX) {
            m->step = (int64_t)u;
            m->has_step = 1;
        } else if (kl == 10 && !memcmp(p, "created_ms", 10) &&
                   ik__zk_parse_u64(v, vl, 10, &u) == 0 && u <= INT64_MAX) {
            m->created_ms = (int64_t)u;
        } else if (kl == 7 && !memcmp(p, "made_by", 7)) {
            const char *c = memchr(v, ':', vl);
            if (c && ik__zk_parse_u64(v, (size_t)(c - v), 16, &m->made_nonce) == 0)
                ik__zk_parse_u64(c + 1, (size_t)(le - c - 1), 10, &m->made_count);
        }
        p = nl ? nl + 1 : end;
    }
}

/* ------------------------------------------------------------------------------
 * Names and paths
 */
static int name_ok(const char *name)
{
    return name && ik_tag_name_check(name, NULL, 0) == 0;
}

/* sub NULL: BASE/tags; "": BASE/tags/NAME; "meta": BASE/tags/NAME/meta. */
static void tag_path(const ik__zk_session *s, const char *app, const char *name, const char *sub,
                     char *out, size_t len)
{
    if (!name)
        snprintf(out, len, "%s" IK__ZK_ROOT "/%s/tags", s->chroot, app);
    else
        snprintf(out, len, "%s" IK__ZK_ROOT "/%s/tags/%s%s%s", s->chroot, app, name,
                 sub && *sub ? "/" : "", sub ? sub : "");
}

/* ------------------------------------------------------------------------------
 * Sessions: a connected one, within a deadline
 */

/* A call's whole budget: the negotiated session timeout, 2 to 10 s. */
static int64_t budget_ms(const ik__zk_session *s)
{
    int64_t t = s->timeout_ms;
    return t < 2000 ? 2000 : t > 10000 ? 10000 : t;
}

static int64_t session_budget_ms(ik__backend *be, int64_t *connect_ms)
{
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    int64_t b = budget_ms(&s);
    *connect_ms = ik__zk_connect_wait_ms(s.timeout_ms); /* nothing in doubt */
    ik__zk_session_put(be);
    return b;
}

/* Borrows a connected session, waiting for it (and making a new one if the old one
 * is dead) until the monotonic deadline. 0 with s borrowed (ik__zk_session_put
 * after), or IK_ESTORE (nothing borrowed). */
static int session_connected(ik__backend *be, ik__zk_session *s, int64_t deadline_ns)
{
    for (;;) {
        ik__zk_session_get(be, s);
        if (s->connected) return IK_OK;
        int dead = s->dead;
        ik__zk_session_put(be);
        int64_t left = (deadline_ns - ik__mono_ns()) / 1000000;
        if (left <= 0) return IK_ESTORE;
        if (dead) {
            if (be->ops->recover(be, NULL, 0) != IK_OK) {
                struct timespec ts = {0, 50 * 1000000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        int rc = ik__zk_wait_connected(be, left);
        if (rc == IK_ESTORE) return IK_ESTORE;
        /* IK_OK or IK_ELOST: look again (recover if dead) */
    }
}

/* ------------------------------------------------------------------------------
 * Reading a tag
 */

/* Reads the counter (and meta if want_meta) of name, pipelined, until the deadline.
 * ZOK with n (and m) filled; ZNONODE; a doubtful code if no answer came in time;
 * ZAPIERROR if the counter is not a counter (under 8 bytes). Borrowed session s. */
static int read_tag(const ik__zk_session *s, const char *app, const char *name, int want_meta,
                    ik__zk_counter *n, zt_meta *m, int64_t deadline_ns)
{
    char path[ZT_PATH_MAX];
    ik__zk_wait *b = ik__zk_wait_new(2, 0);
    if (!b) return ZSYSTEMERROR;
    int k = want_meta ? 2 : 1;
    for (int i = 0; i < k; i++) {
        tag_path(s, app, name, i ? "meta" : "", path, sizeof path);
        ik__zk_arm(&b->r[i]);
        ik__zk_issued(&b->r[i], zoo_aget(s->zh, path, 0, ik__zk_on_data, &b->r[i]));
    }
    int zrc;
    if (!ik__zk_wait_until(b, s->zh, deadline_ns)) {
        zrc = ZOPERATIONTIMEOUT;
    } else {
        zrc = b->r[0].rc;
        if (zrc == ZOK) {
            if (ik__zk_counter_parse(b->r[0].data, b->r[0].len, n) != 0) {
                zrc = ZAPIERROR;
            } else {
                n->version = b->r[0].st.version;
                n->czxid = b->r[0].st.czxid;
                n->mtime = b->r[0].st.mtime;
            }
        }
        if (zrc == ZOK && want_meta) {
            zrc = b->r[1].rc;
            if (zrc == ZOK) parse_meta(b->r[1].data, b->r[1].len, m);
        }
    }
    ik__zk_wait_put(b);
    return zrc;
}

static int meta_ok(const zt_meta *m)
{
    return m->has_kind && m->has_start && m->has_step;
}

static void fill_info(ik_tag_info *out, const char *name, const ik__zk_counter *n, const zt_meta *m)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->kind = m->kind;
    out->start = m->start;
    out->step = m->step;
    out->max_id = n->max_id;
    out->update_time_ms = n->mtime;
    snprintf(out->description, sizeof out->description, "%s", m->description);
}

int ik__zk_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out)
{
    if (!ik__zk_app_ok(app) || !name_ok(name) || !out) return IK_EINVAL;
    int64_t connect_ms, budget = session_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns();
    int64_t deadline = t0 + budget * 1000000;
    int rc;
    for (;;) {
        ik__zk_session s;
        int64_t dl = t0 + connect_ms * 1000000;
        if (session_connected(be, &s, dl < deadline ? dl : deadline)) return IK_ESTORE;
        ik__zk_counter n;
        zt_meta m;
        int zrc = read_tag(&s, app, name, 1, &n, &m, deadline);
        ik__zk_session_put(be);
        if (zrc == ZOK) {
            if (!meta_ok(&m)) return IK_ENOTFOUND; /* a node that is not an idkeeper tag */
            fill_info(out, name, &n, &m);
            return IK_OK;
        }
        if (zrc == ZNONODE) return IK_ENOTFOUND;
        if (zrc == ZAPIERROR) return IK_ENOTFOUND;
        if ((ik__zk_doubtful(zrc) || ik__zk_session_gone(zrc)) && ik__mono_ns() < deadline) {
            t0 = ik__mono_ns(); /* a fresh connect wait after a drop */
            continue;
        }
        rc = IK_ESTORE;
        break;
    }
    return rc;
}

static int cmp_info(const void *a, const void *b)
{
    return strcmp(((const ik_tag_info *)a)->name, ((const ik_tag_info *)b)->name);
}

/* One pass of tag_list on a connected session: a ZooKeeper code. */
static int list_pass(const ik__zk_session *s, const char *app, ik_tag_info **out, size_t *n_out,
                     int64_t deadline)
{
    char path[ZT_PATH_MAX];
    tag_path(s, app, NULL, NULL, path, sizeof path);
    ik__zk_wait *kb = ik__zk_wait_new(1, 0);
    if (!kb) return ZSYSTEMERROR;
    ik__zk_arm(&kb->r[0]);
    ik__zk_issued(&kb->r[0], zoo_aget_children(s->zh, path, 0, ik__zk_on_kids, &kb->r[0]));
    if (!ik__zk_wait_until(kb, s->zh, deadline)) {
        ik__zk_wait_put(kb);
        return ZOPERATIONTIMEOUT;
    }
    int zrc = kb->r[0].rc;
    if (zrc == ZNONODE) { /* no tag made yet */
        ik__zk_wait_put(kb);
        *out = NULL;
        *n_out = 0;
        return ZOK;
    }
    if (zrc != ZOK) {
        ik__zk_wait_put(kb);
        return zrc;
    }
    const struct String_vector *kids = &kb->r[0].kids;
    int nk = kids->count;
    ik__zk_wait *b = ik__zk_wait_new(nk * 2 + 1, 0);
    ik_tag_info *v = calloc(nk ? (size_t)nk : 1, sizeof *v);
    if (!b || !v) {
        ik__zk_wait_put(b);
        ik__zk_wait_put(kb);
        free(v);
        return ZSYSTEMERROR;
    }
    for (int i = 0; i < nk; i++) {
        for (int j = 0; j < 2; j++) {
            ik__zk_req *r = &b->r[2 * i + j];
            if (!name_ok(kids->data[i])) { /* not a tag name: skip */
                r->done = 1;
                r->rc = ZNONODE;
                continue;
            }
            tag_path(s, app, kids->data[i], j ? "meta" : "", path, sizeof path);
            ik__zk_arm(r);
            ik__zk_issued(r, zoo_aget(s->zh, path, 0, ik__zk_on_data, r));
        }
    }
    size_t n = 0;
    if (!ik__zk_wait_until(b, s->zh, deadline)) {
        zrc = ZOPERATIONTIMEOUT;
    } else {
        for (int i = 0; i < nk && zrc == ZOK; i++) {
            ik__zk_req *c = &b->r[2 * i], *mr = &b->r[2 * i + 1];
            if (c->rc == ZNONODE || mr->rc == ZNONODE) continue; /* gone, or not a tag */
            if (c->rc != ZOK)
                zrc = c->rc;
            else if (mr->rc != ZOK)
                zrc = mr->rc;
            if (zrc != ZOK) break;
            ik__zk_counter nd;
            zt_meta m;
            if (ik__zk_counter_parse(c->data, c->len, &nd) != 0) continue;
            nd.mtime = c->st.mtime;
            parse_meta(mr->data, mr->len, &m);
            if (!meta_ok(&m)) continue;
            fill_info(&v[n++], kids->data[i], &nd, &m);
        }
    }
    ik__zk_wait_put(b);
    ik__zk_wait_put(kb);
    if (zrc != ZOK) {
        free(v);
        return zrc;
    }
    qsort(v, n, sizeof *v, cmp_info);
    *out = v;
    *n_out = n;
    return ZOK;
}

int ik__zk_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n_out)
{
    if (!ik__zk_app_ok(app) || !out || !n_out) return IK_EINVAL;
    *out = NULL;
    *n_out = 0;
    int64_t connect_ms, budget = session_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    for (;;) {
        ik__zk_session s;
        int64_t dl = t0 + connect_ms * 1000000;
        if (session_connected(be, &s, dl < deadline ? dl : deadline)) return IK_ESTORE;
        int zrc = list_pass(&s, app, out, n_out, deadline);
        ik__zk_session_put(be);
        if (zrc == ZOK) return IK_OK;
        if (zrc == ZSYSTEMERROR) return IK_ENOMEM;
        if ((ik__zk_doubtful(zrc) || ik__zk_session_gone(zrc)) && ik__mono_ns() < deadline) {
            t0 = ik__mono_ns();
            continue;
        }
        return IK_ESTORE;
    }
}

/* ------------------------------------------------------------------------------
 * Creating a tag: one zoo_multi of the counter and its meta
 */

/* Creates the missing ancestors of BASE/tags: the shared ones (chroot, /idkeeper,
 * /idkeeper/apps) with the shared ACL, BASE and BASE/tags with the app's. */
static int ensure_tags_dir(const ik__zk_session *s, const char *app)
{
    char dir[ZT_PATH_MAX];
    tag_path(s, app, NULL, NULL, dir, sizeof dir);
    int zrc = zoo_exists(s->zh, dir, 0, NULL);
    if (zrc != ZNONODE) return zrc;
    return ik__zk_create_path(s->zh, dir, strlen(s->chroot) + strlen(IK__ZK_ROOT), s->shared_acl,
                              s->app_acl, ZOO_PERSISTENT, NULL, 0);
}

int ik__zk_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                      size_t why_len)
{
    if (!ik__zk_app_ok(app) || !t || !name_ok(t->name))
        return ik__fail(IK_EINVAL, why, why_len, "bad app or tag name");
    ik__zk_tags *zt = ik__zk_backend_of(be)->tags;
    uint64_t count = atomic_fetch_add(&zt->count, 1) + 1;
    char meta[ZT_DATA_MAX], counter[64];
    ik__zk_counter n0;
    memset(&n0, 0, sizeof n0);
    n0.max_id = t->max_id;
    n0.has_table = 1;
    n0.since = 0; /* a new node: every write of it will be in its table */
    int mlen = format_meta(meta, sizeof meta, t, zt->nonce, count);
    int clen = ik__zk_counter_format(counter, sizeof counter, &n0);
    if (mlen < 0 || clen < 0) return ik__fail(IK_EINVAL, why, why_len, "tag data too long");

    int64_t connect_ms, budget = session_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    int in_doubt = 0;
    for (;;) {
        ik__zk_session s;
        int64_t dl = in_doubt ? deadline : t0 + connect_ms * 1000000;
        if (session_connected(be, &s, dl < deadline ? dl : deadline)) break;
        char cpath[ZT_PATH_MAX], mpath[ZT_PATH_MAX];
        tag_path(&s, app, t->name, "", cpath, sizeof cpath);
        tag_path(&s, app, t->name, "meta", mpath, sizeof mpath);
        int zrc = ZOK;
        if (in_doubt) {
            /* did our multi apply? meta names its maker */
            ik__zk_counter n;
            zt_meta m;
            zrc = read_tag(&s, app, t->name, 1, &n, &m, deadline);
            if (zrc == ZOK) {
                ik__zk_session_put(be);
                if (m.made_nonce == zt->nonce && m.made_count == count) return IK_OK;
                return ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
            }
            /* ZNONODE: not made; a create made at the same time by a late copy of
             * ours would make the next one fail with ZNODEEXISTS, then read as ours */
        }
        if (zrc == ZOK || zrc == ZNONODE) zrc = ensure_tags_dir(&s, app);
        ik__zk_wait *b = NULL;
        if (zrc == ZOK && !(b = ik__zk_wait_new(1, 0))) zrc = ZSYSTEMERROR;
        if (zrc == ZOK) {
            ik__zk_req *r = &b->r[0];
            zoo_create_op_init(&r->ops[0], cpath, counter, clen, s.app_acl, ZOO_PERSISTENT, NULL,
                               0);
            zoo_create_op_init(&r->ops[1], mpath, meta, mlen, s.app_acl, ZOO_PERSISTENT, NULL, 0);
            ik__zk_arm(r);
            ik__zk_issued(r, ik__zk_amulti(s.zh, 2, r->ops, r->res, ik__zk_on_void, r));
            zrc = ik__zk_wait_until(b, s.zh, deadline) ? r->rc : ZOPERATIONTIMEOUT;
            if (zrc != ZOK && !ik__zk_doubtful(zrc)) zrc = ik__zk_multi_error(r);
        }
        ik__zk_wait_put(b);
        ik__zk_session_put(be);
        if (zrc == ZOK) return IK_OK;
        if (zrc == ZNODEEXISTS) {
            if (!in_doubt)
                return ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
            continue; /* ours, made by the write in doubt? read it */
        }
        if (zrc == ZNOAUTH)
            return ik__fail(IK_ESTORE, why, why_len,
                            "not authorized to create tag %s (nodes made with other credentials? "
                            "check --zk-auth)",
                            t->name);
        if (ik__zk_doubtful(zrc) || ik__zk_session_gone(zrc)) {
            if (ik__zk_doubtful(zrc)) in_doubt = 1;
            if (ik__mono_ns() < deadline) {
                t0 = ik__mono_ns();
                continue;
            }
            break;
        }
        return ik__fail(IK_ESTORE, why, why_len, "cannot create tag %s: %s", t->name, zerror(zrc));
    }
    if (in_doubt)
        return ik__fail(IK_EINDOUBT, why, why_len,
                        "ZooKeeper did not confirm the creation of tag %s: check with tags show",
                        t->name);
    return ik__fail(IK_ESTORE, why, why_len, "ZooKeeper is unreachable");
}

/* ------------------------------------------------------------------------------
 * Advancing a tag
 */
/* 1 if a write of the running call is in doubt (it must then end in IK_EINDOUBT
 * unless that is settled). */
static int doubt_mine(const ik__zk_doubt *d)
{
    for (int i = 0; d->open && i < d->n; i++)
        if (d->w[i].this_call) return 1;
    return 0;
}

/* IK_EINDOUBT if a write of this call is in doubt, else rc. */
static int outcome(const ik__zk_doubt *d, int rc)
{
    return doubt_mine(d) ? IK_EINDOUBT : rc;
}

/* why: "answer_lost" (it was recorded) or "maybe_recorded" (cannot tell). The kind
 * is the one last read from the tag's meta. */
static void log_gap(const zt_tag *g, int64_t first, int64_t count, const char *why,
                    const char *what)
{
    ik__tag_gap(g->app, g->name, g->kind == IK_TAG_SEQUENCE ? IK_TAG_SEQUENCE : IK_TAG_SEGMENT,
                first, count, why, "a write whose answer was lost %s", what);
}

/* A doubt of the running call, settled by reading the node (now at version now). */
static void log_settled(const zt_tag *g, const ik__zk_doubt *d, int64_t count, int now,
                        const char *what)
{
    ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
             " version=%d now=%d (app %s): the write whose answer was lost %s",
             g->name, d->first, count, d->version, now, g->app, what);
}

/* Closes the doubt, logging the range it may have recorded (IK__ZK_UNKNOWN). */
static void doubt_unknown(const zt_tag *g, ik__zk_doubt *d, const char *what)
{
    int64_t most = 0;
    for (int i = 0; i < d->n; i++)
        if (d->w[i].delta > most) most = d->w[i].delta;
    if (d->n) log_gap(g, d->first, most, "maybe_recorded", what);
    d->open = 0;
}

/* Takes back the write recorded last, which an answer (or not sending it) proved
 * not done; the doubt closes with its last write. */
static void doubt_drop_last(ik__zk_doubt *d)
{
    if (d->open && d->n > 0 && --d->n == 0) d->open = 0;
}

/* One advance of g (its mutex held). See the top of the file. */
static int advance_locked(ik__backend *be, ik__zk_tags *zt, zt_tag *g, ik_tag_kind kind,
                          int64_t delta, int64_t *first)
{
    ik__zk_doubt *d = &g->doubt;
    for (int i = 0; i < d->n; i++)
        d->w[i].this_call = 0; /* an earlier call's doubt */
    int64_t connect_ms, budget = session_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    int conflicts = 0, extended = 0;
    for (;;) {
        /* a connection: up to 2 s, or the whole budget to settle our own doubt */
        ik__zk_session s;
        int64_t dl = doubt_mine(d) ? deadline : t0 + connect_ms * 1000000;
        if (session_connected(be, &s, dl < deadline ? dl : deadline)) return outcome(d, IK_ESTORE);

        /* the node as it is now, unless what we wrote last is surely still it */
        if (!g->cached || g->contended || d->open || !g->have_kind) {
            ik__zk_counter n;
            zt_meta m;
            int want_meta = !g->have_kind;
            int zrc = read_tag(&s, g->app, g->name, want_meta, &n, &m, deadline);
            ik__zk_session_put(be);
            if (zrc == ZOK && !want_meta && n.czxid != g->czxid) {
                g->have_kind = 0; /* the node was made again: its kind may differ */
                g->cached = 0;
                continue;
            }
            if (zrc == ZOK && want_meta) {
                if (!meta_ok(&m)) zrc = ZNONODE; /* a node that is not an idkeeper tag */
                g->have_kind = zrc == ZOK;
                g->kind = m.kind;
                g->czxid = n.czxid;
            }
            if (zrc != ZOK) {
                g->cached = 0;
                if ((ik__zk_doubtful(zrc) || ik__zk_session_gone(zrc)) &&
                    ik__mono_ns() < deadline) {
                    t0 = ik__mono_ns();
                    continue;
                }
                if (zrc != ZNONODE && zrc != ZAPIERROR) return outcome(d, IK_ESTORE);
                g->have_kind = 0;
                if (doubt_mine(d)) return IK_EINDOUBT;
                if (d->open) doubt_unknown(g, d, "may have been recorded before the tag went");
                return IK_ENOTFOUND;
            }
            g->node = n;
            g->cached = 1;
            if (d->open) {
                int j = 0, r = ik__zk_doubt_resolve(d, &n, zt->nonce, &j);
                if (r == IK__ZK_APPLIED && d->w[j].this_call) { /* ours, answer lost: still ours */
                    log_settled(g, d, d->w[j].delta, n.version, "landed: handed out");
                    *first = d->first;
                    d->open = 0;
                    g->contended = n.version != d->version + 1;
                    return IK_OK;
                }
                if (r == IK__ZK_APPLIED) {
                    log_gap(g, d->first, d->w[j].delta, "answer_lost", "was recorded");
                    d->open = 0;
                } else if (r == IK__ZK_UNKNOWN) {
                    doubt_unknown(g, d, "may have been recorded (cannot tell)");
                } else if (r == IK__ZK_NOT_APPLIED) {
                    log_settled(g, d, d->w[d->n - 1].delta, n.version,
                                doubt_mine(d) ? "did not land"
                                              : "did not land (after its call gave up)");
                    d->open = 0;
                } /* IK__ZK_PENDING: the write below, at the same version, fences them */
            }
        } else {
            ik__zk_session_put(be);
        }
        if (g->kind != kind) return outcome(d, IK_EKIND);
        const ik__zk_counter *cur = &g->node;
        if (cur->max_id < 0) return outcome(d, IK_ESTORE);
        if (cur->max_id > INT64_MAX - delta) return outcome(d, IK_ERANGE);

        /* The write: max_id + delta at the version read, our line first. It is
         * recorded in the doubt before it is sent (ZT3: a write that may land is
         * never unrecorded), and dropped again once an answer says it did not
         * land. With the table full (the node still at V: any other read closed
         * it), the last write in doubt is sent again as it was, already recorded:
         * of all these writes at V at most one lands, and the next read or this
         * answer says which, so the tag moves on. */
        int resend = d->open && d->n == IK__ZK_DOUBT_WRITES ? d->n - 1 : -1;
        uint64_t count;
        int64_t wdelta = delta;
        if (resend >= 0) {
            count = d->w[resend].count;
            wdelta = d->w[resend].delta;
        } else {
            count = atomic_fetch_add(&zt->count, 1) + 1;
            if (ik__zk_doubt_add(d, cur, delta, count) != 0) /* not sent: certainly not done */
                return outcome(d, IK_ESTORE);
        }
        ik__zk_counter nx;
        ik__zk_counter_next(cur, zt->nonce, count, wdelta, &nx);
        char *buf = malloc(ZT_DATA_MAX);
        ik__zk_wait *b = ik__zk_wait_new(1, 0);
        int len = buf ? ik__zk_counter_format(buf, ZT_DATA_MAX, &nx) : -1;
        if (!b || len < 0 || session_connected(be, &s, deadline)) {
            int nomem = !b || !buf;
            ik__zk_wait_put(b);
            free(buf);
            if (resend < 0) doubt_drop_last(d); /* never sent */
            return outcome(d, nomem ? IK_ENOMEM : IK_ESTORE);
        }
        char path[ZT_PATH_MAX];
        tag_path(&s, g->app, g->name, "", path, sizeof path);
        ik__zk_req *r = &b->r[0];
        ik__zk_arm(r);
        int sent = zoo_aset(s.zh, path, buf, len, cur->version, ik__zk_on_stat, r);
        ik__zk_issued(r, sent);
        free(buf); /* the client copied it into its send queue */
        struct Stat st;
        int zrc = ZOPERATIONTIMEOUT;
        if (ik__zk_wait_until(b, s.zh, deadline)) { /* else the client may still write r */
            zrc = r->rc;
            st = r->st;
        }
        ik__zk_wait_put(b);
        ik__zk_session_put(be);

        if (zrc == ZOK) {
            int64_t at = cur->max_id; /* cur is g->node, rewritten below */
            nx.version = st.version;
            nx.czxid = st.czxid;
            nx.mtime = st.mtime;
            g->node = nx;
            g->cached = 1;
            g->contended = conflicts > 0;
            d->open = 0; /* a fencing write at V won: the writes in doubt never apply */
            if (wdelta == delta) {
                *first = at;
                return IK_OK;
            }
            /* a resent write of another size: its range is ours, never handed out */
            log_gap(g, at, wdelta, "answer_lost", "was recorded (sent again)");
            continue;
        }
        g->cached = 0;
        /* never sent, or an answer: not done */
        if (resend < 0 && (sent != ZOK || !ik__zk_doubtful(zrc))) doubt_drop_last(d);
        if (zrc == ZBADVERSION) { /* another writer (or a late copy of ours) was first */
            g->contended = 1;
            if (++conflicts >= MAX_CONFLICTS || ik__mono_ns() >= deadline)
                return outcome(d, IK_ESTORE);
            if (conflicts > 1) { /* jitter, so that contenders do not move in step */
                int64_t cap_us = 200 * (conflicts < 10 ? conflicts : 10);
                struct timespec ts = {0, (long)(rnd(zt) % (uint64_t)cap_us) * 1000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        if (zrc == ZNONODE) {
            g->have_kind = 0;
            if (doubt_mine(d)) return IK_EINDOUBT;
            d->open = 0;
            return IK_ENOTFOUND;
        }
        if (sent != ZOK || ik__zk_session_gone(zrc)) { /* never sent, or refused: not applied */
            if (ik__mono_ns() >= deadline) return outcome(d, IK_ESTORE);
            t0 = ik__mono_ns();
            continue;
        }
        if (ik__zk_doubtful(zrc)) { /* recorded before it was sent */
            t0 = ik__mono_ns();
            if (!extended) { /* settling it gets a budget of its own, once */
                extended = 1;
                if (deadline < t0 + budget * 1000000) deadline = t0 + budget * 1000000;
            }
            continue;
        }
        return outcome(d, IK_ESTORE); /* ZNOAUTH and the like */
    }
}

/* At close (docs/zookeeper.md, "A doubt at close"): no advance runs any more, so a
 * doubt still open would die with the process. Each gets one read of its tag, all
 * of them within the connection wait of a call (2 s at most): landed, a gap
 * (answer_lost); did not land, a settled line; anything else, or no answer in
 * time, a possible gap (maybe_recorded). Every open doubt ends in a line (ZT3). */
int ik__zk_tags_doubts(ik__backend *be)
{
    ik__zk_backend *zb = ik__zk_backend_of(be);
    ik__zk_tags *zt = zb ? zb->tags : NULL;
    int n = 0;
    for (int i = 0; zt && i < STRIPES; i++) {
        pthread_mutex_lock(&zt->stripe[i].mu);
        zt_tag *tags = zt->stripe[i].tags;
        pthread_mutex_unlock(&zt->stripe[i].mu);
        for (zt_tag *g = tags; g; g = g->next) { /* entries are freed only at close */
            pthread_mutex_lock(&g->mu);
            n += g->doubt.open != 0;
            pthread_mutex_unlock(&g->mu);
        }
    }
    return n;
}

void ik__zk_tags_settle_open(ik__backend *be, int64_t deadline, const char *refused)
{
    ik__zk_backend *zb = ik__zk_backend_of(be);
    ik__zk_tags *zt = zb ? zb->tags : NULL;
    if (!zt) return;
    for (int i = 0; i < STRIPES; i++) {
        pthread_mutex_lock(&zt->stripe[i].mu);
        zt_tag *tags = zt->stripe[i].tags;
        pthread_mutex_unlock(&zt->stripe[i].mu);
        for (zt_tag *g = tags; g; g = g->next) { /* entries are freed only at close */
            pthread_mutex_lock(&g->mu);
            ik__zk_doubt *d = &g->doubt;
            if (!d->open) {
                pthread_mutex_unlock(&g->mu);
                continue;
            }
            for (int k = 0; k < d->n; k++)
                d->w[k].this_call = 0;
            ik__zk_session ses;
            int zrc = ZOPERATIONTIMEOUT;
            ik__zk_counter n;
            if (!refused && ik__mono_ns() < deadline &&
                session_connected(be, &ses, deadline) == IK_OK) {
                zt_meta m;
                zrc = read_tag(&ses, g->app, g->name, 0, &n, &m, deadline);
                ik__zk_session_put(be);
            }
            int j = 0, r = zrc == ZOK ? ik__zk_doubt_resolve(d, &n, zt->nonce, &j) : IK__ZK_UNKNOWN;
            if (r == IK__ZK_APPLIED) {
                log_gap(g, d->first, d->w[j].delta, "answer_lost",
                        "was recorded (settled at close)");
            } else if (r == IK__ZK_NOT_APPLIED) {
                log_settled(g, d, d->w[d->n - 1].delta, n.version,
                            "did not land (settled at close)");
            } else {
                char why[400];
                snprintf(why, sizeof why, "may have been recorded (open at close, %s)",
                         refused      ? refused
                         : zrc == ZOK ? "cannot tell"
                                      : "not settled before the deadline");
                doubt_unknown(g, d, why);
            }
            d->open = 0;
            pthread_mutex_unlock(&g->mu);
        }
    }
}

int ik__zk_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                       int64_t delta, int64_t *first)
{
    if (!ik__zk_app_ok(app) || !name_ok(name) || delta <= 0 || !first) return IK_EINVAL;
    ik__zk_tags *zt = ik__zk_backend_of(be)->tags;
    zt_tag *g = tag_ref(zt, app, name);
    if (!g) return IK_ENOMEM;
    pthread_mutex_lock(&g->mu);
    int rc = advance_locked(be, zt, g, kind, delta, first);
    int forget = rc == IK_ENOTFOUND && !g->doubt.open;
    pthread_mutex_unlock(&g->mu);
    tag_unref(zt, g, forget);
    return rc;
}
