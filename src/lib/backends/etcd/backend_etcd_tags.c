/* backend_etcd_tags.c: tags on etcd (etcd://): a tag is one key whose value starts
 * with its max_id, advanced by a txn that compares the key's mod_revision with the
 * one read; beside it, one writer key per lane of the doubt engine
 * (counters/doubt.c), written in the same txn, that says which of the lane's writes
 * landed (docs/etcd.md, "Counters"; etcd_handle.h has the key layout).
 *
 *   PREFIX idkeeper/APP/tag/NAME             "MAX_ID KIND START STEP UPDATE_MS DESC"
 *   PREFIX idkeeper/APP/tagw/NAME/WRITER     "WID:FIRST ..." the lane's last RING
 *                                            advances, oldest first, on the lease
 *
 * Invariants
 *   ET1. An advance is one txn: it compares the tag key's mod_revision (and the
 *        writer key's, or its absence) with what the read before it saw, puts max_id
 *        + delta, and appends its write id and first ID to the writer key. It lands
 *        whole or not at all; a txn whose compare fails changed nothing and is tried
 *        again on a fresh read.
 *   ET2. A write whose answer was lost compared the tag's mod_revision M it read
 *        (its doubt's aux). It can land only while the tag key is still at M: once
 *        the key moved past M without it, it never will.
 *   ET3. A carried doubt's evidence (evidence_of) is what the store holds: its write
 *        id in the writer key, paired with the first ID recorded there; the key's
 *        ring whole or not, gone (its lease lapsed) or pushed past it (its reach); the
 *        tag key past its M (ET2: moved), or our own txn, compared at that M, landed
 *        (fenced). The doubt engine decides.
 *   ET4. The stop's settle (tag_settle) reads the same way, and for a doubt whose M
 *        is still the key's, writes the key again unchanged (a fence) compared at M:
 *        landed, the doubt is fenced.
 *   ET5. Every advance passes the hazard gate, and every answer the cluster id
 *        check (EG1): an answer of another cluster is IK_EUNSAFE, nothing handed out.
 *
 * Threads: any; one advance at a time per lane (the engine's).
 */
#include "etcd_handle.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define RING IK__DOUBT_LANE_MAX /* a lane's advances its writer key keeps (backend.h) */
#define TRIES 64                /* lost races in a row before an advance gives up (busy) */
#define KEY_MAX 700

typedef struct tag_val {
    int64_t max_id, start, step, update_ms;
    ik_tag_kind kind;
    char desc[256];
} tag_val;

static void tag_key(const ik__etcd_backend *b, const char *app, const char *name, char *out)
{
    char sub[IK_TAG_NAME_MAX + 8];
    snprintf(sub, sizeof sub, "tag/%s", name);
    ik__etcd_key(b, app, sub, out, KEY_MAX);
}

static void writer_key(const ik__etcd_backend *b, const char *app, const char *name,
                       const char *writer, char *out)
{
    char sub[IK_TAG_NAME_MAX + 48];
    snprintf(sub, sizeof sub, "tagw/%s/%s", name, writer);
    ik__etcd_key(b, app, sub, out, KEY_MAX);
}

/* 0, or -1 if v is not a tag's value (a key of the wrong shape under the prefix). */
static int parse_val(const char *v, tag_val *t)
{
    int64_t m, s, st, u;
    char kind[16];
    memset(t, 0, sizeof *t);
    const char *p = v;
    if (ik__etcd_next_i64(&p, ' ', &m)) return -1;
    ik__etcd_next_word(&p, kind, sizeof kind);
    if (ik__etcd_next_i64(&p, ' ', &s) || ik__etcd_next_i64(&p, ' ', &st) ||
        ik__etcd_next_i64(&p, ' ', &u))
        return -1;
    if (ik_tag_kind_parse(kind, &t->kind) || m < 0 || st < 1) return -1;
    t->max_id = m, t->start = s, t->step = st, t->update_ms = u;
    snprintf(t->desc, sizeof t->desc, "%s", p);
    return 0;
}

static void format_val(const tag_val *t, char *out, size_t len)
{
    snprintf(out, len, "%" PRId64 " %s %" PRId64 " %" PRId64 " %" PRId64 "%s%s", t->max_id,
             ik_tag_kind_name(t->kind), t->start, t->step, t->update_ms, t->desc[0] ? " " : "",
             t->desc);
}

/* A writer key's ring: up to RING (wid, first) pairs, oldest first. */
typedef struct ring {
    int n;
    uint64_t wid[RING + 1];
    int64_t first[RING + 1];
} ring;

/* 0, or -1 if v is not a ring (r then holds the pairs read before what is not). */
static int parse_ring(const char *v, ring *r)
{
    r->n = 0;
    while (*v && r->n < RING) {
        int64_t w, f;
        if (ik__etcd_next_i64(&v, ':', &w) || w < 0 || ik__etcd_next_i64(&v, ':', &f)) return -1;
        r->wid[r->n] = (uint64_t)w;
        r->first[r->n++] = f;
    }
    return *v ? -1 : 0;
}

static void format_ring(const ring *r, char *out, size_t len)
{
    size_t n = 0;
    out[0] = '\0';
    for (int i = r->n > RING ? r->n - RING : 0; i < r->n && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%" PRIu64 ":%" PRId64, n ? " " : "", r->wid[i],
                              r->first[i]);
}

/* What one read showed of the tag and the lane's writer key. */
typedef struct view {
    int have_tag, have_writer;
    tag_val t;
    int64_t tag_mod, writer_mod;
    ring r;
    int ring_bad; /* the writer key holds something that is not a ring */
} view;

/* The view a txn's answer shows: its response 0 the tag key, 1 the writer key. */
static int view_of(const ik__etcd_answer *a, const char *tk, view *v, char *why, size_t why_len)
{
    memset(v, 0, sizeof *v);
    for (size_t i = 0; i < a->n_kvs; i++) {
        if (a->kvs[i].resp == 0) {
            v->have_tag = 1;
            v->tag_mod = a->kvs[i].mod_revision;
            if (parse_val(a->kvs[i].value, &v->t))
                return ik__fail(IK_ESTORE, why, why_len,
                                "the key %s holds \"%.60s\", not a tag's value (docs/etcd.md): "
                                "not issuing",
                                tk, a->kvs[i].value);
        } else {
            v->have_writer = 1;
            v->writer_mod = a->kvs[i].mod_revision;
            v->ring_bad = parse_ring(a->kvs[i].value, &v->r) != 0;
        }
    }
    return IK_OK;
}

static int read_view(ik__etcd_backend *b, const char *tk, const char *wk, view *v, char *why,
                     size_t why_len)
{
    memset(v, 0, sizeof *v);
    ik__etcd_txn *t = ik__etcd_txn_new();
    if (!t || ik__etcd_txn_get(t, 1, tk, 0) || (wk && ik__etcd_txn_get(t, 1, wk, 0))) {
        ik__etcd_txn_free(t);
        return IK_ENOMEM;
    }
    ik__etcd_answer a = {0};
    int e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, why_len);
    ik__etcd_txn_free(t);
    if (!e) e = view_of(&a, tk, v, why, why_len);
    ik__etcd_answer_free(&a);
    return e == IK_EINDOUBT ? IK_ESTORE : e; /* a read applies nothing */
}

/* ET3: what the view v shows of w's carried doubts, into w->ev; pending[i] = 1 for a
 * doubt made at the tag key's revision now (its M), which our txn at M fences. */
static void evidence_of(const ik__tag_write *w, const view *v, int *pending)
{
    for (int i = 0; i < w->n_carried; i++) {
        const ik__doubt *d = &w->carried[i];
        ik__doubt_evidence *e = &w->ev[i];
        memset(e, 0, sizeof *e);
        e->read = 1;
        e->first = -1;
        for (int k = 0; k < v->r.n; k++)
            if (v->r.wid[k] == d->wid) e->held = 1, e->first = v->r.first[k];
        e->intact = !v->ring_bad;
        e->reaches = v->have_writer && !(v->r.n >= RING && d->wid < v->r.wid[0]);
        e->moved = d->aux != v->tag_mod;
        pending[i] = !e->moved;
        snprintf(e->what, sizeof e->what,
                 "%s; made at revision %" PRId64 " of the tag key, now %" PRId64,
                 e->held           ? "its write id is in the lane's writer key"
                 : !v->have_writer ? "the lane's writer key is gone (its lease lapsed)"
                 : v->ring_bad     ? "the lane's writer key holds something that is not a ring"
                 : !e->reaches     ? "the writer key's ring has moved past it"
                                   : "its write id is not in the lane's writer key",
                 d->aux, v->tag_mod);
    }
}

/* Our txn compared at the tag key's revision M landed: the pending doubts made at M
 * are fenced (ET2). */
static void fence_pending(ik__tag_write *w, const int *pending)
{
    for (int i = 0; i < w->n_carried; i++)
        if (pending[i]) w->ev[i].fenced = 1;
}

int ik__etcd_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                         ik__tag_write *w, int64_t *first)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    int64_t delta = w->own.delta;
    char tk[KEY_MAX], wk[KEY_MAX], why[500];
    tag_key(b, app, name, tk);
    writer_key(b, app, name, w->writer, wk);
    int pending[IK__DOUBT_LANE_MAX];
    view v;
    int have_view = 0;
    for (int tries = 0; tries < TRIES; tries++) {
        int e = ik__etcd_write_gate(b, why, sizeof why);
        if (e) return e;
        int64_t lease;
        ik__lease_proof p;
        e = ik__etcd_lease_get(b, &lease, &p, why, sizeof why);
        if (e) return e == IK_EUNSAFE ? e : IK_ESTORE;
        if (!have_view) e = read_view(b, tk, wk, &v, why, sizeof why);
        if (e) {
            ik__logf("tag %s: %s", name, why);
            snprintf(w->why, sizeof w->why, "%s", why);
            return e;
        }
        if (!v.have_tag) return IK_ENOTFOUND;
        if (v.t.kind != kind) return IK_EKIND;
        if (v.t.max_id > INT64_MAX - delta) return IK_ERANGE;
        evidence_of(w, &v, pending);
        w->own.first = v.t.max_id;
        w->own.aux = v.tag_mod;
        tag_val nt = v.t;
        nt.max_id += delta;
        nt.update_ms = ik__wall_ms();
        ring r = v.r;
        r.wid[r.n] = w->own.wid;
        r.first[r.n++] = v.t.max_id;
        char val[600], rv[RING * 44 + 1];
        format_val(&nt, val, sizeof val);
        format_ring(&r, rv, sizeof rv);
        ik__etcd_txn *t = ik__etcd_txn_new();
        if (!t) return IK_ENOMEM;
        e = ik__etcd_txn_cmp(t, tk, "MOD", "EQUAL", v.tag_mod, NULL);
        if (!e)
            e = v.have_writer ? ik__etcd_txn_cmp(t, wk, "MOD", "EQUAL", v.writer_mod, NULL)
                              : ik__etcd_txn_cmp(t, wk, "CREATE", "EQUAL", 0, NULL);
        if (!e) e = ik__etcd_txn_put(t, 1, tk, val, 0);
        if (!e) e = ik__etcd_txn_put(t, 1, wk, rv, lease);
        if (!e) e = ik__etcd_txn_get(t, 0, tk, 0); /* a lost race reads what won it */
        if (!e) e = ik__etcd_txn_get(t, 0, wk, 0);
        ik__etcd_answer a = {0};
        if (!e) e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, sizeof why);
        ik__etcd_txn_free(t);
        if (e) snprintf(w->why, sizeof w->why, "%s", why); /* the store's words */
        if (e == IK_EINDOUBT) { /* ET2: the engine keeps it, with M in aux */
            ik__logf("tag %s: an advance is in doubt: %s", name, why);
            return IK_EINDOUBT;
        }
        if (e) {
            ik__logf("tag %s: %s", name, why);
            return e == IK_EUNSAFE ? e : IK_ESTORE;
        }
        int ok = a.succeeded;
        have_view = !ok && view_of(&a, tk, &v, why, sizeof why) == IK_OK;
        ik__etcd_answer_free(&a);
        if (!ok) continue; /* ET1: another advance came first: on what it left */
        fence_pending(w, pending);
        *first = v.t.max_id;
        return IK_OK;
    }
    ik__logf("tag %s: %d advances in a row lost the race for the key: busy", name, TRIES);
    return IK_ESTORE;
}

void ik__etcd_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                         int64_t deadline_ns)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    char tk[KEY_MAX], wk[KEY_MAX], why[500];
    tag_key(b, app, name, tk);
    writer_key(b, app, name, w->writer, wk);
    int pending[IK__DOUBT_LANE_MAX];
    for (int tries = 0; tries < 3 && ik__mono_ns() < deadline_ns; tries++) {
        view v;
        if (ik__etcd_write_gate(b, why, sizeof why) || read_view(b, tk, wk, &v, why, sizeof why))
            return;
        if (!v.have_tag) return;
        evidence_of(w, &v, pending);
        int any = 0;
        for (int i = 0; i < w->n_carried; i++)
            any |= pending[i];
        if (!any) return;
        /* ET4: the fence: the key written again as it is, compared at M */
        char val[600];
        format_val(&v.t, val, sizeof val);
        ik__etcd_txn *t = ik__etcd_txn_new();
        ik__etcd_answer a = {0};
        int e = t ? ik__etcd_txn_cmp(t, tk, "MOD", "EQUAL", v.tag_mod, NULL) : IK_ENOMEM;
        if (!e) e = ik__etcd_txn_put(t, 1, tk, val, 0);
        if (!e) e = ik__etcd_txn_run(b->gw, t, b->wait_ms * 3, &a, why, sizeof why);
        ik__etcd_txn_free(t);
        if (e) return;
        int ok = a.succeeded;
        ik__etcd_answer_free(&a);
        if (!ok) continue;
        fence_pending(w, pending);
        return;
    }
}

int ik__etcd_tag_create(ik__backend *be, const char *app, const ik_tag_info *ti, char *why,
                        size_t why_len)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    int e = ik__etcd_write_gate(b, why, why_len);
    if (e) return e;
    char tk[KEY_MAX], val[600];
    tag_key(b, app, ti->name, tk);
    tag_val t = {.max_id = ti->start,
                 .start = ti->start,
                 .step = ti->step,
                 .update_ms = ik__wall_ms(),
                 .kind = ti->kind};
    snprintf(t.desc, sizeof t.desc, "%s", ti->description);
    format_val(&t, val, sizeof val);
    ik__etcd_txn *x = ik__etcd_txn_new();
    ik__etcd_answer a = {0};
    e = x ? ik__etcd_txn_cmp(x, tk, "CREATE", "EQUAL", 0, NULL) : IK_ENOMEM;
    if (!e) e = ik__etcd_txn_put(x, 1, tk, val, 0);
    if (!e) e = ik__etcd_txn_run(b->gw, x, b->wait_ms * 3, &a, why, why_len);
    ik__etcd_txn_free(x);
    if (e) return e == IK_EINDOUBT ? IK_ESTORE : e;
    int ok = a.succeeded;
    ik__etcd_answer_free(&a);
    return ok ? IK_OK : ik__fail(IK_EEXIST, why, why_len, "tag %s exists", ti->name);
}

static void info_of(const char *name, const tag_val *t, ik_tag_info *out)
{
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", name);
    out->kind = t->kind;
    out->start = t->start;
    out->step = t->step;
    out->max_id = t->max_id;
    out->update_time_ms = t->update_ms;
    snprintf(out->description, sizeof out->description, "%s", t->desc);
}

int ik__etcd_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                     char *why, size_t why_len)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    char tk[KEY_MAX], cause[500] = "";
    tag_key(b, app, name, tk);
    view v;
    int e = read_view(b, tk, NULL, &v, cause, sizeof cause);
    if (e) { /* the caller says it, once (a CLI's one line, a route's 503) */
        if (why && why_len) snprintf(why, why_len, "%s", cause);
        return e;
    }
    if (!v.have_tag) return IK_ENOTFOUND;
    info_of(name, &v.t, out);
    return IK_OK;
}

int ik__etcd_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n_out)
{
    ik__etcd_backend *b = ik__etcd_of(be);
    char pfx[KEY_MAX], why[500];
    ik__etcd_key(b, app, "tag/", pfx, sizeof pfx);
    ik__etcd_answer a = {0};
    int e = ik__etcd_range(b->gw, pfx, 1, 0, 0, 0, b->wait_ms * 3, &a, why, sizeof why);
    if (e) return e == IK_EINDOUBT ? IK_ESTORE : e;
    ik_tag_info *o = a.n_kvs ? calloc(a.n_kvs, sizeof *o) : NULL;
    size_t n = 0, pl = strlen(pfx);
    if (a.n_kvs && !o) e = IK_ENOMEM;
    for (size_t i = 0; i < a.n_kvs && !e; i++) { /* etcd answers in key order */
        const char *nm = a.kvs[i].key + pl;
        tag_val t;
        if (strchr(nm, '/') || !ik__valid_name(nm, IK_TAG_NAME_MAX) ||
            parse_val(a.kvs[i].value, &t))
            continue; /* not a tag of ours (docs/etcd.md) */
        info_of(nm, &t, &o[n++]);
    }
    ik__etcd_answer_free(&a);
    if (e) {
        free(o);
        return e;
    }
    *out = o;
    *n_out = n;
    return IK_OK;
}
