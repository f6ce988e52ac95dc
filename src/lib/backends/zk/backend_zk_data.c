/* backend_zk_data.c: the pure parts of the zk:// backend, no ZooKeeper handle
 * involved: what the slot, owner and counter nodes hold and how it is written and
 * read, the nodes' names, sets of workers, a tag's meta, and the evidence a read
 * gives of a counter write whose answer was lost (docs/zookeeper.md), from which the
 * doubt engine decides (counters/doubt.c). backend_zk_slots.c,
 * backend_zk_tags.c and backend_zk_tagread.c use them; tests/unit/test_zk_backend.c and
 * test_zk_tags.c hold them to their contracts (backend_zk.h).
 *
 * What it deliberately does not do: no I/O, no locks, no allocation but the
 * worker sets' array.
 */
#include "backend.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_session.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRUNE_MS IK__ZK_PRUNE_MS

/* ------------------------------------------------------------------------------
 * Numbers
 */
/* Strict unsigned decimal or hex (base 16: exactly the digits, no 0x). */
int ik__zk_parse_u64(const char *s, size_t n, int base, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > (base == 16 ? 16u : 19u)) return -1;
    for (size_t i = 0; i < n; i++) {
        int d;
        if (s[i] >= '0' && s[i] <= '9')
            d = s[i] - '0';
        else if (base == 16 && s[i] >= 'a' && s[i] <= 'f')
            d = s[i] - 'a' + 10;
        else
            return -1;
        v = v * (uint64_t)base + (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* Strict decimal int64 >= 0. */
static int parse_i64(const char *s, size_t n, int64_t *out)
{
    uint64_t v;
    if (ik__zk_parse_u64(s, n, 10, &v) || v > INT64_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

/* "0x" and 1 to 16 lower-case hex digits. */
static int parse_hex64(const char *s, size_t n, int64_t *out)
{
    uint64_t v;
    if (n < 3 || s[0] != '0' || s[1] != 'x' || ik__zk_parse_u64(s + 2, n - 2, 16, &v)) return -1;
    *out = (int64_t)v;
    return 0;
}

/* ------------------------------------------------------------------------------
 * Node data. Text, one key=value a line, the free-form identity last (it may hold
 * anything but control characters):
 *   slot:  record_ms=N  since_ms=N  session=0xHEX  holder=IDENTITY
 *   owner: pid=N  host=NAME  since_ms=N  session=0xHEX  identity=IDENTITY
 */
void ik__zk_parse_fields(const char *d, int len, ik__zk_fields *f)
{
    memset(f, 0, sizeof *f);
    const char *p = d, *end = d + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eq = memchr(p, '=', (size_t)((nl ? nl : end) - p));
        if (!eq) {
            p = nl ? nl + 1 : end;
            continue;
        }
        size_t kl = (size_t)(eq - p);
        const char *v = eq + 1;
        if ((kl == 6 && !memcmp(p, "holder", 6)) || (kl == 8 && !memcmp(p, "identity", 8))) {
            /* the last field: the rest, minus one trailing newline */
            size_t vl = (size_t)(end - v);
            if (vl && v[vl - 1] == '\n') vl--;
            if (vl >= sizeof f->ident) vl = sizeof f->ident - 1;
            memcpy(f->ident, v, vl);
            f->ident[vl] = '\0';
            return;
        }
        size_t vl = (size_t)((nl ? nl : end) - v);
        if (kl == 9 && !memcmp(p, "record_ms", 9))
            f->has_record = parse_i64(v, vl, &f->record_ms) == 0;
        else if (kl == 8 && !memcmp(p, "since_ms", 8))
            parse_i64(v, vl, &f->since_ms);
        else if (kl == 7 && !memcmp(p, "session", 7))
            parse_hex64(v, vl, &f->session);
        else if (kl == 3 && !memcmp(p, "pid", 3))
            parse_i64(v, vl, &f->pid);
        else if (kl == 4 && !memcmp(p, "host", 4)) {
            if (vl >= sizeof f->host) vl = sizeof f->host - 1;
            memcpy(f->host, v, vl);
            f->host[vl] = '\0';
        }
        p = nl ? nl + 1 : end;
    }
}

int ik__zk_format_slot(char *buf, size_t len, int64_t record_ms, int64_t since_ms, int64_t session,
                       const char *identity)
{
    int n = snprintf(
        buf, len, "record_ms=%" PRId64 "\nsince_ms=%" PRId64 "\nsession=0x%" PRIx64 "\nholder=%s\n",
        record_ms, since_ms, (uint64_t)session, identity);
    return n < 0 || (size_t)n >= len ? -1 : n;
}

/* ------------------------------------------------------------------------------
 * Paths. BASE = CHROOT/idkeeper/apps/APP:
 *   BASE/slots/NNNN        persistent: the time record
 *   BASE/owners/NNNN       ephemeral: the live holder
 *   BASE/identities/ENC    persistent: the slot this identity took last
 */
void ik__zk_app_path(const char *chroot, const char *app, const char *sub, char *out, size_t len)
{
    snprintf(out, len, "%s" IK__ZK_ROOT "/%s%s%s", chroot, app, sub ? "/" : "", sub ? sub : "");
}

void ik__zk_worker_path(const char *chroot, const char *app, const char *sub, uint32_t w, char *out,
                        size_t len)
{
    snprintf(out, len, "%s" IK__ZK_ROOT "/%s/%s/%04" PRIu32, chroot, app, sub, w);
}

int ik__zk_worker_name(uint32_t w, char *out, size_t len)
{
    return snprintf(out, len, "%04" PRIu32, w);
}

/* "0007" -> 7; names that are not a canonical worker number -> -1. */
int ik__zk_parse_worker(const char *s, uint32_t *w)
{
    int64_t v;
    char canon[16];
    if (parse_i64(s, strlen(s), &v) || v > UINT32_MAX) return -1;
    ik__zk_worker_name((uint32_t)v, canon, sizeof canon);
    if (strcmp(canon, s) != 0) return -1;
    *w = (uint32_t)v;
    return 0;
}

int ik__zk_identity_name(const char *identity, char *out, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    int dots = strcmp(identity, ".") == 0 || strcmp(identity, "..") == 0;
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)identity; *p; p++) {
        int plain = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                    (*p >= '0' && *p <= '9') || *p == '_' || *p == ':' || *p == '-' ||
                    (*p == '.' && !dots);
        if (n + (plain ? 1 : 3) >= len) return -1;
        if (plain) {
            out[n++] = (char)*p;
        } else {
            out[n++] = '%';
            out[n++] = hex[*p >> 4];
            out[n++] = hex[*p & 15];
        }
    }
    if (n == 0 || n >= len) return -1;
    out[n] = '\0';
    return (int)n;
}

/* ------------------------------------------------------------------------------
 * Sets of workers
 */
/* Where w is in s (1), or would go (0), as *at. */
static int wset_find(const ik__zk_wset *s, uint32_t w, size_t *at)
{
    size_t lo = 0, hi = s->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->v[mid] == w) {
            *at = mid;
            return 1;
        }
        if (s->v[mid] < w)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return 0;
}

int ik__zk_wset_add(ik__zk_wset *s, uint32_t w)
{
    size_t lo;
    if (wset_find(s, w, &lo)) return 0;
    if (ik__grow((void **)&s->v, &s->cap, s->n, sizeof *s->v, 64)) return -1;
    memmove(s->v + lo + 1, s->v + lo, (s->n - lo) * sizeof *s->v);
    s->v[lo] = w;
    s->n++;
    return 0;
}

int ik__zk_wset_has(const ik__zk_wset *s, uint32_t w)
{
    size_t at;
    return wset_find(s, w, &at);
}

uint32_t ik__zk_wset_nth_free(const ik__zk_wset *s, uint32_t lo, uint64_t k)
{
    uint64_t w = lo + k;
    for (size_t i = 0; i < s->n; i++) {
        if (s->v[i] < lo) continue;
        if (s->v[i] <= w)
            w++;
        else
            break;
    }
    return (uint32_t)w;
}

/* ------------------------------------------------------------------------------
 * Counter nodes (backend_zk_tags.c: the writer table, the doubts' rule)
 */
static void put_be64(unsigned char *p, int64_t v)
{
    uint64_t u = (uint64_t)v;
    for (int i = 7; i >= 0; i--, u >>= 8)
        p[i] = (unsigned char)u;
}

static int64_t get_be64(const unsigned char *p)
{
    uint64_t u = 0;
    for (int i = 0; i < 8; i++)
        u = u << 8 | p[i];
    return (int64_t)u;
}

/* Counter data into n (version, czxid, mtime left alone). -1 if under 8 bytes. */
int ik__zk_counter_parse(const char *d, int len, ik__zk_counter *n)
{
    if (len < 8) return -1;
    n->max_id = get_be64((const unsigned char *)d);
    n->has_table = 0;
    n->since = 0;
    n->nw = 0;
    const char *p = d + 8, *end = d + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t ll = (size_t)(le - p);
        uint64_t v;
        if (ll > 6 && !memcmp(p, "since=", 6)) {
            if (ik__zk_parse_u64(p + 6, ll - 6, 10, &v) == 0 && v <= INT32_MAX) {
                n->has_table = 1;
                n->since = (int)v;
            }
        } else if (ll > 2 && !memcmp(p, "w=", 2) && n->nw < IK__ZK_WRITERS_MAX) {
            /* w=NONCE:COUNT:MS */
            const char *a = p + 2, *c1 = memchr(a, ':', (size_t)(le - a));
            const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
            ik__zk_writer w;
            uint64_t ms;
            if (c2 && ik__zk_parse_u64(a, (size_t)(c1 - a), 16, &w.nonce) == 0 &&
                ik__zk_parse_u64(c1 + 1, (size_t)(c2 - c1 - 1), 10, &w.count) == 0 &&
                ik__zk_parse_u64(c2 + 1, (size_t)(le - c2 - 1), 10, &ms) == 0 && ms <= INT64_MAX) {
                w.ms = (int64_t)ms;
                n->w[n->nw++] = w;
            }
        }
        p = nl ? nl + 1 : end;
    }
    if (!n->has_table) n->nw = 0; /* lines without since= are not a table we trust */
    return 0;
}

/* Counter data of n into buf; its length, or -1 if it does not fit. */
int ik__zk_counter_format(char *buf, size_t cap, const ik__zk_counter *n)
{
    if (cap < 8) return -1;
    put_be64((unsigned char *)buf, n->max_id);
    size_t off = 8;
    int k = snprintf(buf + off, cap - off, "since=%d\n", n->since);
    if (k < 0 || (size_t)k >= cap - off) return -1;
    off += (size_t)k;
    for (int i = 0; i < n->nw; i++) {
        k = snprintf(buf + off, cap - off, "w=%016" PRIx64 ":%" PRIu64 ":%" PRId64 "\n",
                     n->w[i].nonce, n->w[i].count, n->w[i].ms);
        if (k < 0 || (size_t)k >= cap - off) return -1;
        off += (size_t)k;
    }
    return (int)off;
}

/* The node our write will make from `old` (read at its version, with its mtime):
 * max_id + delta, our line first, stale lines dropped (see the top of the file). */
void ik__zk_counter_next(const ik__zk_counter *old, uint64_t nonce, uint64_t count, int64_t delta,
                         ik__zk_counter *out)
{
    out->max_id = old->max_id + delta;
    out->has_table = 1;
    out->since = old->has_table ? old->since : old->version;
    out->nw = 0;
    out->w[out->nw++] = (ik__zk_writer){nonce, count, old->mtime};
    for (int i = 0; old->has_table && i < old->nw; i++) {
        const ik__zk_writer *w = &old->w[i];
        if (w->nonce == nonce) continue;
        if (w->ms < old->mtime - PRUNE_MS) { /* stale: dropped, and the table says so */
            if (out->since < old->version) out->since = old->version;
            continue;
        }
        if (out->nw == IK__ZK_WRITERS_MAX) {
            out->since = old->version; /* the table is complete only from here on */
            break;
        }
        out->w[out->nw++] = *w;
    }
}

void ik__zk_evidence(const ik__zk_doubt *d, const ik__zk_counter *n, uint64_t nonce, int j,
                     ik__doubt_evidence *e)
{
    memset(e, 0, sizeof *e);
    e->read = e->intact = 1;
    e->first = -1;
    int same = n->czxid == d->czxid && n->version >= d->version; /* else: made again */
    e->moved = !same || n->version > d->version;
    e->reaches = same && n->version > d->version && n->has_table && n->since <= d->version;
    e->age_ms = n->mtime > d->mtime ? n->mtime - d->mtime : 0; /* ZooKeeper's clock */
    for (int i = 0; e->reaches && i < n->nw; i++)
        if (n->w[i].nonce == nonce) {
            e->held = n->w[i].count == d->w[j].count; /* our line: our latest write */
            break;
        }
    snprintf(e->what, sizeof e->what, "written at version %d, now %d%s", d->version, n->version,
             !same         ? ": the node was made again"
             : !e->moved   ? ": a write at that version lands or fences it"
             : !e->reaches ? ": the writer table does not reach back to it"
                           : "");
}

void ik__zk_note(ik__doubt *x, const ik__zk_counter *n)
{
    x->first = n->max_id;
    x->aux = n->version;
    x->aux2[0] = n->czxid;
    x->aux2[1] = n->mtime;
}

/* All of d's writes were made at one version of one node (ZT2 in
 * backend_zk_tags.c); one that was not is refused, and the caller decides nothing
 * from d (IK__ZK_UNKNOWN). */
int ik__zk_doubt_add(ik__zk_doubt *d, const ik__doubt *x)
{
    if (d->n == (int)(sizeof d->w / sizeof d->w[0])) return -1;
    if (d->n == 0) {
        d->version = (int)x->aux;
        d->czxid = x->aux2[0];
        d->mtime = x->aux2[1];
        d->first = x->first;
    } else if (d->version != x->aux || d->czxid != x->aux2[0] || d->mtime != x->aux2[1] ||
               d->first != x->first) {
        return -1;
    }
    d->w[d->n].count = x->wid;
    d->w[d->n].delta = x->delta;
    d->n++;
    return 0;
}

/* ------------------------------------------------------------------------------
 * The doubts of one advance (backend_zk_tags.c): what a read of the node, or an
 * acknowledged write, shows of them (docs/zookeeper.md, "A write whose answer is
 * lost"). A read of the node at version W, the doubts made at version V:
 *
 *   W == V     none applied yet: the next write at V fences them (of the writes at
 *              V, at most one can apply): pending
 *   W > V      our line's COUNT is the write id of the one that applied, if one did;
 *              the table reaches back to V where since <= V; its age is W's mtime
 *              less V's
 *   otherwise  (a node made again) the table reaches nothing
 *
 * The doubt engine's rule decides each (w->judge, and after the call the engine).
 */
/* The evidence node n gives of every carried doubt still open (d: them, and the own
 * write last). */
static void carried_evidence(ik__zk_call *c, const ik__zk_doubt *d, const ik__zk_counter *n,
                             uint64_t nonce)
{
    for (int i = 0; c->carried_open && i < c->w->n_carried; i++)
        ik__zk_evidence(d, n, nonce, i, &c->w->ev[i]);
}

/* e: a write no record reaches any more, why why. */
static void out_of_reach(ik__doubt_evidence *e, const char *why)
{
    memset(e, 0, sizeof *e);
    e->read = e->intact = e->moved = 1;
    e->first = -1;
    snprintf(e->what, sizeof e->what, "%s", why);
}

int ik__zk_call_unknown(ik__zk_call *c, const char *why)
{
    for (int i = 0; c->carried_open && i < c->w->n_carried; i++)
        out_of_reach(&c->w->ev[i], why);
    c->carried_open = 0;
    if (!c->own_open) return 0;
    c->own_open = 0;
    out_of_reach(&c->w->own_ev, why);
    return 1;
}

int ik__zk_call_read(ik__zk_call *c, const ik__zk_counter *n, uint64_t nonce)
{
    ik__tag_write *w = c->w;
    if (!c->carried_open && !c->own_open) return IK__ZK_GO;
    ik__zk_doubt d;
    memset(&d, 0, sizeof d);
    int bad = 0;
    for (int i = 0; c->carried_open && i < w->n_carried; i++)
        bad |= ik__zk_doubt_add(&d, &w->carried[i]);
    if (c->own_open) bad |= ik__zk_doubt_add(&d, &w->own);
    if (bad)
        return ik__zk_call_unknown(c, "written at versions the table cannot tell apart")
                   ? IK__ZK_LOST
                   : IK__ZK_GO;
    carried_evidence(c, &d, n, nonce);
    /* all made at V: the read decides them all, or leaves them all pending */
    if (c->carried_open && w->n_carried > 0 &&
        w->judge(&w->carried[0], &w->ev[0]) != IK__DOUBT_OPEN)
        c->carried_open = 0;
    if (!c->own_open) return IK__ZK_GO;
    ik__zk_evidence(&d, n, nonce, d.n - 1, &w->own_ev);
    switch (w->judge(&w->own, &w->own_ev)) {
    case IK__DOUBT_OPEN: /* pending: sent again at the same version */
        return IK__ZK_GO;
    case IK__DOUBT_LANDED: /* its answer lost: still ours */
        c->own_open = 0;
        return IK__ZK_MINE;
    case IK__DOUBT_NOT_LANDED: /* never lands: its write id is free again */
        c->own_open = 0;
        memset(&w->own_ev, 0, sizeof w->own_ev);
        return IK__ZK_GO;
    default:
        c->own_open = 0;
        return IK__ZK_LOST;
    }
}

void ik__zk_call_fenced(ik__zk_call *c, int landed, int v)
{
    for (int i = 0; c->carried_open && i < c->w->n_carried; i++) {
        ik__doubt_evidence *e = &c->w->ev[i];
        e->read = e->intact = 1;
        if (i == landed) {
            e->held = 1;
            e->first = c->w->carried[i].first;
            snprintf(e->what, sizeof e->what, "written at version %d, and sent again as it was", v);
        } else {
            e->fenced = 1;
            snprintf(e->what, sizeof e->what, "written at version %d", v);
        }
    }
    c->carried_open = 0;
}

/* ------------------------------------------------------------------------------
 * Meta nodes: key=value lines, the description last (it takes the rest of the data)
 */
int ik__zk_meta_format(char *buf, size_t cap, const ik_tag_info *t, uint64_t nonce, uint64_t count)
{
    int k = snprintf(buf, cap,
                     "kind=%s\nstart=%" PRId64 "\nstep=%" PRId64 "\ncreated_ms=%" PRId64
                     "\nmade_by=%016" PRIx64 ":%" PRIu64 "\ndescription=%s",
                     ik_tag_kind_name(t->kind), t->start, t->step, t->update_time_ms, nonce, count,
                     t->description);
    return k < 0 || (size_t)k >= cap ? -1 : k;
}

void ik__zk_meta_parse(const char *d, int len, ik__zk_meta *m)
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

int ik__zk_meta_ok(const ik__zk_meta *m)
{
    return m->has_kind && m->has_start && m->has_step;
}
