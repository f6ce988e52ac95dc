/* backend_zk_tagread.c: what tags on ZooKeeper do besides advancing: a tag's
 * create (one zoo_multi of the counter and its meta), its reads (tag_get,
 * tag_list), and the session, path and read calls the advance (backend_zk_tags.c)
 * shares with them. Node layout: docs/zookeeper.md, "Tags"; the data: the pure
 * backend_zk_data.c.
 *
 * A create whose answer was lost is told afterwards by meta's made_by: this
 * backend's nonce and the create's own count.
 *
 * Threads: safe from any thread.
 */
#include "backend.h"
#include "backend_zk.h"
#include "internal.h"
#include "zk_session.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zookeeper/zookeeper.h>

#define ZT_PATH_MAX 1024
#define ZT_DATA_MAX 4096

static int name_ok(const char *name)
{
    return name && ik_tag_name_check(name, NULL, 0) == 0;
}

void ik__zk_tag_path(const ik__zk_session *s, const char *app, const char *name, const char *sub,
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
int64_t ik__zk_tag_budget_ms(ik__backend *be, int64_t *connect_ms)
{
    ik__zk_session s;
    ik__zk_session_get(be, &s);
    int64_t t = s.timeout_ms;
    *connect_ms = ik__zk_connect_wait_ms(s.timeout_ms); /* nothing in doubt */
    ik__zk_session_put(be);
    return t < 2000 ? 2000 : t > 10000 ? 10000 : t;
}

int ik__zk_tag_session(ik__backend *be, ik__zk_session *s, int64_t deadline_ns)
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
int ik__zk_tag_read(const ik__zk_session *s, const char *app, const char *name, int want_meta,
                    ik__zk_counter *n, ik__zk_meta *m, int64_t deadline_ns)
{
    char path[ZT_PATH_MAX];
    ik__zk_wait *b = ik__zk_wait_new(2, 0);
    if (!b) return ZSYSTEMERROR;
    int k = want_meta ? 2 : 1;
    for (int i = 0; i < k; i++) {
        ik__zk_tag_path(s, app, name, i ? "meta" : "", path, sizeof path);
        ik__zk_arm(&b->r[i], s->zh);
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
            if (zrc == ZOK) ik__zk_meta_parse(b->r[1].data, b->r[1].len, m);
        }
    }
    ik__zk_wait_put(b);
    return zrc;
}

static void fill_info(ik_tag_info *out, const char *name, const ik__zk_counter *n,
                      const ik__zk_meta *m)
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

int ik__zk_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out, char *why,
                   size_t why_len)
{
    (void)why, (void)why_len;
    if (!ik__zk_app_ok(app) || !name_ok(name) || !out) return IK_EINVAL;
    int64_t connect_ms, budget = ik__zk_tag_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns();
    int64_t deadline = t0 + budget * 1000000;
    int rc;
    for (;;) {
        ik__zk_session s;
        int64_t dl = t0 + connect_ms * 1000000;
        if (ik__zk_tag_session(be, &s, dl < deadline ? dl : deadline)) return IK_ESTORE;
        ik__zk_counter n;
        ik__zk_meta m;
        int zrc = ik__zk_tag_read(&s, app, name, 1, &n, &m, deadline);
        ik__zk_session_put(be);
        if (zrc == ZOK) {
            if (!ik__zk_meta_ok(&m)) return IK_ENOTFOUND; /* a node that is not an idkeeper tag */
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
    ik__zk_tag_path(s, app, NULL, NULL, path, sizeof path);
    ik__zk_wait *kb = ik__zk_wait_new(1, 0);
    if (!kb) return ZSYSTEMERROR;
    ik__zk_arm(&kb->r[0], s->zh);
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
            ik__zk_tag_path(s, app, kids->data[i], j ? "meta" : "", path, sizeof path);
            ik__zk_arm(r, s->zh);
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
            ik__zk_meta m;
            if (ik__zk_counter_parse(c->data, c->len, &nd) != 0) continue;
            nd.mtime = c->st.mtime;
            ik__zk_meta_parse(mr->data, mr->len, &m);
            if (!ik__zk_meta_ok(&m)) continue;
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
    int64_t connect_ms, budget = ik__zk_tag_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    for (;;) {
        ik__zk_session s;
        int64_t dl = t0 + connect_ms * 1000000;
        if (ik__zk_tag_session(be, &s, dl < deadline ? dl : deadline)) return IK_ESTORE;
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
    ik__zk_tag_path(s, app, NULL, NULL, dir, sizeof dir);
    int zrc = ik__zk_sync_exists(s->zh, dir, NULL);
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
    uint64_t count = atomic_fetch_add(&zt->made, 1) + 1;
    char meta[ZT_DATA_MAX], counter[64];
    ik__zk_counter n0;
    memset(&n0, 0, sizeof n0);
    n0.max_id = t->max_id;
    n0.has_table = 1;
    n0.since = 0; /* a new node: every write of it will be in its table */
    int mlen = ik__zk_meta_format(meta, sizeof meta, t, zt->nonce, count);
    int clen = ik__zk_counter_format(counter, sizeof counter, &n0);
    if (mlen < 0 || clen < 0) return ik__fail(IK_EINVAL, why, why_len, "tag data too long");

    int64_t connect_ms, budget = ik__zk_tag_budget_ms(be, &connect_ms);
    int64_t t0 = ik__mono_ns(), deadline = t0 + budget * 1000000;
    int in_doubt = 0;
    for (;;) {
        ik__zk_session s;
        int64_t dl = in_doubt ? deadline : t0 + connect_ms * 1000000;
        if (ik__zk_tag_session(be, &s, dl < deadline ? dl : deadline)) break;
        char cpath[ZT_PATH_MAX], mpath[ZT_PATH_MAX];
        ik__zk_tag_path(&s, app, t->name, "", cpath, sizeof cpath);
        ik__zk_tag_path(&s, app, t->name, "meta", mpath, sizeof mpath);
        int zrc = ZOK;
        if (in_doubt) {
            /* did our multi apply? meta names its maker */
            ik__zk_counter n;
            ik__zk_meta m;
            zrc = ik__zk_tag_read(&s, app, t->name, 1, &n, &m, deadline);
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
            ik__zk_arm(r, s.zh);
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
