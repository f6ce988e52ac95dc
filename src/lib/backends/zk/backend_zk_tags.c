/* backend_zk_tags.c: advancing tags on ZooKeeper: durable counters moved by
 * version-checked setData, each write carrying the doubt engine's write id, so
 * that a lost answer can be decided later from the node (docs/zookeeper.md, "Tags";
 * the engine: counters/doubt.c, docs/architecture.md "Doubts").
 *
 * The nodes (docs/zookeeper.md, "Nodes and encoding"): BASE/tags/TAG holds max_id
 * (8 bytes, big-endian, as Curator's DistributedAtomicLong) and the writer table;
 * BASE/tags/TAG/meta its kind, start and step (backend_zk_tagread.c).
 *
 * tag_advance reads the counter (data and version V) and writes max_id + delta at
 * version V: of two servers that read V, one wins and the other gets ZBADVERSION and
 * reads again (bounded retries with jitter). So each range [max_id, max_id + delta)
 * is written by exactly one acknowledged setData: no lock, no duplicate.
 *
 * A write puts "w=NONCE:COUNT" first in the table it read, NONCE this backend's,
 * COUNT the engine's write id (w->own.wid), and the engine keeps a write whose
 * answer was lost as a doubt, noted with where it was made (ik__zk_note). A read of
 * the node decides the doubts (ik__zk_call_read, backend_zk_data.c, has the rule).
 *
 * Invariants
 *   ZT1. max_id never decreases, and every range handed out lies below it: ranges
 *       come only from acknowledged version-checked writes that raised it by delta.
 *   ZT2. Within one coord, one advance per tag runs at a time (tag_lanes = 1: the
 *       engine holds the tag's one lane for the call, and the stop's settle too), so
 *       our line in a tag's table names our latest write to it, and the doubts a call
 *       carries were all made at one version: a doubt is decided before any later
 *       write of ours but the fencing one at its version.
 *   ZT3. A call has at most one write of its own undecided (the engine's w->own): its
 *       write id is sent again only where an answer or a read proved that no send
 *       of it can land, or at the same version as it was (one of the two at most
 *       lands, and both are the same write). A range in doubt is handed out only if
 *       a read in the same call finds it landed; otherwise the engine keeps it and
 *       logs its fate when a later read decides it.
 *
 * Bounds: a call's budget B is the negotiated session timeout, clamped to 2..10 s.
 * A call that finds the connection down, with nothing of its own in doubt, gives up
 * after at most 2 s (IK_ESTORE). A write that loses its answer gets B again, once,
 * to reconnect and settle it; so no call blocks longer than 2 B.
 *
 * Threads: safe from any thread; the cache of a tag's node is guarded by its
 * entry's mutex.
 *
 * What it deliberately does not do: it never deletes a tag, never rewrites meta,
 * never hands out a range it cannot prove it wrote, and keeps no doubt itself.
 */
#include "backend.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_session.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define ZT_PATH_MAX 1024
#define ZT_DATA_MAX 4096
#define MAX_CONFLICTS 1000

/* One tag's node as this backend last read or wrote it. */
typedef struct ik__zk_tag zt_tag;
struct ik__zk_tag {
    zt_tag *next; /* stripe chain */
    int refs;     /* under the stripe's mutex */
    char app[65];
    char name[IK_TAG_NAME_MAX + 1];

    pthread_mutex_t mu; /* guards what follows */
    int have_kind;
    ik_tag_kind kind;
    int64_t czxid; /* of the node the kind was read from */
    int cached;    /* node is the counter as we last wrote it */
    int contended; /* the last advance met another writer: read first */
    ik__zk_counter node;
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
    atomic_init(&t->made, 0);
    atomic_init(&t->rng, r[1] | 1);
    for (int i = 0; i < IK__ZK_TAG_STRIPES; i++)
        pthread_mutex_init(&t->stripe[i].mu, NULL);
    *out = t;
    return IK_OK;
}

void ik__zk_tags_free(ik__zk_tags *t)
{
    if (!t) return;
    for (int i = 0; i < IK__ZK_TAG_STRIPES; i++) {
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

/* The entry of (app, name), made if need be, with one more reference. */
static zt_tag *tag_ref(ik__zk_tags *t, const char *app, const char *name)
{
    unsigned k = ik__tag_hash(app, name) % IK__ZK_TAG_STRIPES;
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

/* Drops a reference; forget: the tag does not exist, so the entry goes once
 * unused: names that are not tags cost no memory. */
static void tag_unref(ik__zk_tags *t, zt_tag *g, int forget)
{
    unsigned k = ik__tag_hash(g->app, g->name) % IK__ZK_TAG_STRIPES;
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

/* IK_EINDOUBT if the call's own write may still land, else rc. */
static int outcome(const ik__zk_call *c, int rc)
{
    return c->own_open ? IK_EINDOUBT : rc;
}

/* ------------------------------------------------------------------------------
 * Advancing a tag
 */

/* Reads g's node into g->node, and its meta too where the kind is not known: ZOK,
 * -1 to read again (the node was made again), or a ZooKeeper code. Session s is
 * given back. */
static int read_node(ik__backend *be, ik__zk_session *s, zt_tag *g, int64_t deadline)
{
    ik__zk_counter n;
    ik__zk_meta m;
    int want_meta = !g->have_kind;
    int zrc = ik__zk_tag_read(s, g->app, g->name, want_meta, &n, &m, deadline);
    ik__zk_session_put(be);
    g->cached = 0;
    if (zrc == ZOK && !want_meta && n.czxid != g->czxid) {
        g->have_kind = 0; /* the node was made again: its kind may differ */
        return -1;
    }
    if (zrc == ZOK && want_meta) {
        if (!ik__zk_meta_ok(&m)) zrc = ZNONODE; /* a node that is not an idkeeper tag */
        g->have_kind = zrc == ZOK;
        g->kind = m.kind;
        g->czxid = n.czxid;
    }
    if (zrc != ZOK) return zrc;
    g->node = n;
    g->cached = 1;
    return ZOK;
}

/* One advance of g (its mutex held). See the top of the file. */
static int advance_locked(ik__backend *be, ik__zk_tags *zt, zt_tag *g, ik_tag_kind kind,
                          ik__zk_call *c, int64_t *first)
{
    ik__tag_write *w = c->w;
    int64_t connect_ms, budget = ik__zk_tag_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    int conflicts = 0, extended = 0;
    for (;;) {
        /* a connection: up to 2 s, or the whole budget to settle our own doubt */
        ik__zk_session s;
        int64_t dl = c->own_open ? deadline : t0 + connect_ms * 1000000;
        if (ik__zk_tag_session(be, &s, dl < deadline ? dl : deadline)) return outcome(c, IK_ESTORE);

        /* the node as it is now, unless what we wrote last is surely still it */
        if (!g->cached || g->contended || c->carried_open || c->own_open || !g->have_kind) {
            int zrc = read_node(be, &s, g, deadline);
            if (zrc == -1) continue;
            if (zrc != ZOK) {
                if ((ik__zk_doubtful(zrc) || ik__zk_session_gone(zrc)) &&
                    ik__mono_ns() < deadline) {
                    t0 = ik__mono_ns();
                    continue;
                }
                if (zrc != ZNONODE && zrc != ZAPIERROR) return outcome(c, IK_ESTORE);
                g->have_kind = 0;
                return ik__zk_call_unknown(c, IK__ZK_GONE) ? IK_EINDOUBT : IK_ENOTFOUND;
            }
            int r = ik__zk_call_read(c, &g->node, zt->nonce);
            if (r == IK__ZK_LOST) return IK_EINDOUBT;
            if (r == IK__ZK_MINE) { /* ours, its answer lost: the engine hands it out */
                g->contended = g->node.version != w->own.aux + 1;
                return IK_EINDOUBT;
            }
        } else {
            ik__zk_session_put(be);
        }
        if (g->kind != kind) return outcome(c, IK_EKIND);
        const ik__zk_counter *cur = &g->node;

        /* The write: max_id + delta at the version read, our line first, the engine's
         * write id as its COUNT; recorded by the engine before the call (ZT3). A
         * write of ours still open is at this version (the read above found it
         * pending): it is sent again as it was. With as many carried doubts at this
         * version as the engine keeps of a lane (IK__DOUBT_LANE_MAX), the newest of
         * them is sent again as it was instead of ours: of all the writes at V at most
         * one lands, and its answer or the next read says which, so the tag moves on
         * and the lane never drops one unread. */
        const ik__doubt *x = &w->own;
        if (!c->own_open && c->carried_open && w->n_carried >= IK__DOUBT_LANE_MAX)
            x = &w->carried[w->n_carried - 1];
        else if (!c->own_open)
            ik__zk_note(&w->own, cur);    /* where it is made, before it is sent */
        if (!c->own_open && x == &w->own) /* a new send of it: what was read of it is past */
            memset(&w->own_ev, 0, sizeof w->own_ev);
        int resend = x != &w->own;
        if (cur->max_id < 0) return outcome(c, IK_ESTORE);
        if (cur->max_id > INT64_MAX - x->delta) return outcome(c, IK_ERANGE);
        ik__zk_counter nx;
        ik__zk_counter_next(cur, zt->nonce, x->wid, x->delta, &nx);
        char *buf = malloc(ZT_DATA_MAX);
        ik__zk_wait *b = ik__zk_wait_new(1, 0);
        int len = buf ? ik__zk_counter_format(buf, ZT_DATA_MAX, &nx) : -1;
        if (!b || len < 0 || ik__zk_tag_session(be, &s, deadline)) { /* never sent */
            int nomem = !b || !buf;
            ik__zk_wait_put(b);
            free(buf);
            return outcome(c, nomem ? IK_ENOMEM : IK_ESTORE);
        }
        int prior = c->own_open;
        if (!resend) c->own_open = 1;
        char path[ZT_PATH_MAX];
        ik__zk_tag_path(&s, g->app, g->name, "", path, sizeof path);
        ik__zk_req *r = &b->r[0];
        ik__zk_arm(r, s.zh);
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
            /* it fences every other write at that version */
            ik__zk_call_fenced(c, resend ? w->n_carried - 1 : -1, cur->version);
            nx.version = st.version;
            nx.czxid = st.czxid;
            nx.mtime = st.mtime;
            g->node = nx;
            g->cached = 1;
            g->contended = conflicts > 0;
            if (resend) continue; /* a carried write: now ours */
            c->own_open = 0;
            *first = at;
            return IK_OK;
        }
        g->cached = 0;
        /* never sent, or an answer: this send did not land */
        if (!resend && (sent != ZOK || !ik__zk_doubtful(zrc))) c->own_open = prior;
        if (zrc == ZBADVERSION) { /* another writer (or a late copy of ours) was first */
            g->contended = 1;
            if (++conflicts >= MAX_CONFLICTS || ik__mono_ns() >= deadline)
                return outcome(c, IK_ESTORE);
            if (conflicts > 1) { /* jitter, so that contenders do not move in step */
                int64_t cap_us = 200 * (conflicts < 10 ? conflicts : 10);
                struct timespec ts = {0, (long)(rnd(zt) % (uint64_t)cap_us) * 1000};
                nanosleep(&ts, NULL);
            }
            continue;
        }
        if (zrc == ZNONODE) {
            g->have_kind = 0;
            return ik__zk_call_unknown(c, IK__ZK_GONE) ? IK_EINDOUBT : IK_ENOTFOUND;
        }
        if (sent != ZOK || ik__zk_session_gone(zrc)) { /* never sent, or refused: not applied */
            if (ik__mono_ns() >= deadline) return outcome(c, IK_ESTORE);
            t0 = ik__mono_ns();
            continue;
        }
        if (ik__zk_doubtful(zrc)) { /* the engine keeps it if no read decides it */
            t0 = ik__mono_ns();
            if (!extended) { /* settling it gets a budget of its own, once */
                extended = 1;
                if (deadline < t0 + budget * 1000000) deadline = t0 + budget * 1000000;
            }
            continue;
        }
        return outcome(c, IK_ESTORE); /* ZNOAUTH and the like */
    }
}

int ik__zk_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                       ik__tag_write *w, int64_t *first)
{
    if (!ik__zk_app_ok(app) || !name || ik_tag_name_check(name, NULL, 0) || w->own.delta <= 0 ||
        !first)
        return IK_EINVAL;
    ik__zk_tags *zt = ik__zk_backend_of(be)->tags;
    zt_tag *g = tag_ref(zt, app, name);
    if (!g) return IK_ENOMEM;
    ik__zk_call c = {.w = w, .carried_open = w->n_carried > 0};
    pthread_mutex_lock(&g->mu);
    int rc = advance_locked(be, zt, g, kind, &c, first);
    pthread_mutex_unlock(&g->mu);
    tag_unref(zt, g, rc == IK_ENOTFOUND);
    return rc;
}

/* The stop's settle (backend.h): one read of the node by the deadline (a cut ends
 * it as unanswered), whose evidence the engine decides as an advance's read. One
 * still pending (the node at its version) may land yet, and the stop writes nothing
 * to fence it: the engine's rule at the stop says so. No answer in time: nothing read
 * (the engine logs it). */
void ik__zk_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                       int64_t deadline_ns)
{
    ik__zk_call c = {.w = w, .carried_open = w->n_carried > 0};
    while (c.carried_open && ik__mono_ns() < deadline_ns) {
        ik__zk_session s;
        if (ik__zk_tag_session(be, &s, deadline_ns)) return;
        ik__zk_counter n;
        ik__zk_meta m;
        int zrc = ik__zk_tag_read(&s, app, name, 0, &n, &m, deadline_ns);
        ik__zk_session_put(be);
        if (zrc == ZNONODE || zrc == ZAPIERROR) {
            ik__zk_call_unknown(&c, IK__ZK_GONE);
        } else if (zrc == ZOK) {
            ik__zk_call_read(&c, &n, ik__zk_backend_of(be)->tags->nonce);
            return; /* read: pending ones too, which nothing fences at the stop */
        } else if (!ik__zk_doubtful(zrc) && !ik__zk_session_gone(zrc)) {
            return;
        }
    }
}
