/* backend_sql_tags.c: tags on SQL, in Meituan Leaf's own table, advanced with Leaf's
 * own statements, so that Leaf servers and idkeeper servers can share one
 * leaf_alloc during a migration without a duplicate (docs/sql.md, "Tags").
 *
 *   leaf_alloc (biz_tag, max_id, step, description, update_time)   Leaf's, unchanged
 *   idk_tag_kind (biz_tag, app, name, kind, start)                 ours: the kind
 *
 * A Leaf tag with no idk_tag_kind row is a segment tag of the default app.
 *
 * --app onto biz_tag: the default app's tag T is biz_tag T, so Leaf's existing tags
 * are the default app's as they are; another app A's tag T is biz_tag "A/T" ('/'
 * is in neither an app nor a tag name, so the two never meet), and exists for A
 * only with its idk_tag_kind row naming A.
 *
 * An advance is Leaf's transaction (SegmentIDGenImpl.updateSegmentFromDb):
 *   BEGIN
 *   SELECT ... FOR UPDATE                       (IK__SQL_TAG_LOCK: kind, step, app)
 *   UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?    (delta = step)
 *     or UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?  (any other delta)
 *   SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = ?
 *   COMMIT
 * and the caller owns [max_id - delta, max_id), as a Leaf server owns
 * [max_id - step, max_id) after its own.
 *
 * Invariant T1 (as on local: and zk://): max_id never decreases, and every range
 * handed out lies below it and belongs to one caller: the row lock of the UPDATE
 * serialises every writer, Leaf's included. A failure before the COMMIT was sent
 * leaves nothing done (IK_ESTORE); a COMMIT without an answer may have applied
 * (IK_EINDOUBT: the caller never hands that range out).
 */
#include "backend_sql.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIZ_TAG_MAX IK__SQL_BIZ_MAX

/* The biz_tag of app's tag name into out: 0, or IK_EINVAL if over 128 bytes. */
static int biz_tag(const char *app, const char *name, char *out, size_t len, char *why,
                   size_t why_len)
{
    int n = strcmp(app, "default") == 0 ? snprintf(out, len, "%s", name)
                                        : snprintf(out, len, "%s/%s", app, name);
    if (n < 0 || (size_t)n >= len || n > BIZ_TAG_MAX)
        return ik__fail(IK_EINVAL, why, why_len,
                        "app/tag '%s/%s' is longer than leaf_alloc's biz_tag (%d bytes)", app, name,
                        BIZ_TAG_MAX);
    return 0;
}

/* 1 if a row whose side columns say (kind, side_app) belongs to app. */
static int of_app(const char *app, const char *kind, const char *side_app)
{
    if (!*kind) return strcmp(app, "default") == 0; /* a Leaf tag: the default app's */
    return strcmp(side_app, app) == 0;
}

/* Row i of a TAG_GET/TAG_LIST result into t: biz_tag, max_id, step, description,
 * update_ms, kind, app, name, start. */
static void row_to_info(const ik__sql_res *r, size_t i, const char *name, ik_tag_info *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->max_id = ik__sql_int(r, i, 1);
    t->step = ik__sql_int(r, i, 2);
    snprintf(t->description, sizeof t->description, "%s", ik__sql_cell(r, i, 3));
    t->update_time_ms = ik__sql_int(r, i, 4);
    const char *kind = ik__sql_cell(r, i, 5);
    t->kind = IK_TAG_SEGMENT;
    if (*kind) ik_tag_kind_parse(kind, &t->kind);
    t->start = *kind ? ik__sql_int(r, i, 8) : 1; /* Leaf's max_id starts at 1 */
}

/* Rolls back after a failure rc (unless the connection died, which did it). */
static int abort_tx(ik__sql_backend *b, ik__sql_conn *c, int rc)
{
    if (ik__sql_dead(rc)) return rc;
    int rb = b->d->exec(c, IK__SQL_ROLLBACK, NULL, 0, NULL, NULL, 0);
    return ik__sql_dead(rb) ? rb : rc;
}

int ik__sql_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                       size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    int rc = biz_tag(app, t->name, biz, sizeof biz, why, why_len);
    if (rc) return rc;
    if (t->step > INT32_MAX)
        return ik__fail(IK_EINVAL, why, why_len, "step must be at most %d (leaf_alloc.step is int)",
                        INT32_MAX);
    char smax[24], sstep[24], sstart[24];
    snprintf(smax, sizeof smax, "%" PRId64, t->max_id);
    snprintf(sstep, sizeof sstep, "%" PRId64, t->step);
    snprintf(sstart, sizeof sstart, "%" PRId64, t->start);
    ik__sql_conn *c;
    int idx;
    rc = ik__sql_get(b, &idx, &c, why, why_len);
    if (rc) return ik__sql_error(rc);
    char inner[256] = "";
    const char *ip[] = {biz, smax, sstep, t->description};
    const char *kp[] = {biz, app, t->name, ik_tag_kind_name(t->kind), sstart};
    rc = b->d->exec(c, IK__SQL_BEGIN, NULL, 0, NULL, inner, sizeof inner);
    if (rc == 0) rc = b->d->exec(c, IK__SQL_TAG_INSERT, ip, 4, NULL, inner, sizeof inner);
    if (rc == 0) rc = b->d->exec(c, IK__SQL_TAG_KIND_INSERT, kp, 5, NULL, inner, sizeof inner);
    if (rc == 0)
        rc = b->d->exec(c, IK__SQL_COMMIT, NULL, 0, NULL, inner, sizeof inner);
    else
        rc = abort_tx(b, c, rc);
    ik__sql_put(b, idx, rc);
    if (rc == IK__SQL_EDUPLICATE)
        return ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
    if (rc == IK__SQL_EDOUBT)
        return ik__fail(IK_EINDOUBT, why, why_len,
                        "no answer to the commit of tag %s (it may exist): %s", t->name, inner);
    if (rc) return ik__fail(IK_ESTORE, why, why_len, "cannot store tag %s: %s", t->name, inner);
    return IK_OK;
}

int ik__sql_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return IK_ENOTFOUND;
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return ik__sql_error(rc);
    const char *p[] = {biz};
    ik__sql_res r;
    rc = ik__sql_exec(b->d, c, IK__SQL_TAG_GET, p, 1, &r, NULL, 0);
    ik__sql_put(b, idx, rc);
    if (rc) return IK_ESTORE;
    rc = IK_ENOTFOUND;
    if (r.nrows == 1 && of_app(app, ik__sql_cell(&r, 0, 5), ik__sql_cell(&r, 0, 6))) {
        row_to_info(&r, 0, name, out);
        rc = IK_OK;
    }
    ik__sql_res_clear(&r);
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const ik_tag_info *)a)->name, ((const ik_tag_info *)b)->name);
}

int ik__sql_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n)
{
    ik__sql_backend *b = ik__sql_of(be);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return ik__sql_error(rc);
    ik__sql_res r;
    rc = ik__sql_exec(b->d, c, IK__SQL_TAG_LIST, NULL, 0, &r, NULL, 0);
    ik__sql_put(b, idx, rc);
    if (rc) return IK_ESTORE;
    ik_tag_info *v = calloc(r.nrows ? r.nrows : 1, sizeof *v);
    if (!v) {
        ik__sql_res_clear(&r);
        return IK_ENOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < r.nrows; i++) {
        const char *biz = ik__sql_cell(&r, i, 0);
        if (!of_app(app, ik__sql_cell(&r, i, 5), ik__sql_cell(&r, i, 6))) continue;
        /* the default app's name is the biz_tag; another's is its side row's */
        const char *name =
            *ik__sql_cell(&r, i, 5) && strcmp(app, "default") != 0 ? ik__sql_cell(&r, i, 7) : biz;
        if (ik_tag_name_check(name, NULL, 0) != 0) continue; /* not reachable by name */
        row_to_info(&r, i, name, &v[k++]);
    }
    ik__sql_res_clear(&r);
    qsort(v, k, sizeof *v, by_name);
    *out = v;
    *n = k;
    return IK_OK;
}

/* Leaf's transaction on c (see the top), with our mark if write_no (sequence tags).
 * 0 and *first, or an ik_error (IK_EINDOUBT: *first is the range's start if the
 * COMMIT did apply); *cls the driver class of the last call, for the pool. */
static int advance_on(ik__sql_backend *b, ik__sql_conn *c, const char *app, const char *biz,
                      ik_tag_kind kind, int64_t delta, uint64_t write_no, int64_t *first, int *cls)
{
    const ik__sql_driver *d = b->d;
    char inner[256] = "";
    const char *p[] = {biz};
    ik__sql_res r;
    int rc = d->exec(c, IK__SQL_BEGIN, NULL, 0, NULL, inner, sizeof inner);
    if (rc) return *cls = rc, IK_ESTORE;
    rc = ik__sql_exec(d, c, IK__SQL_TAG_LOCK, p, 1, &r, inner, sizeof inner);
    if (rc) return *cls = abort_tx(b, c, rc), IK_ESTORE;
    if (b->test_hold_ms) { /* test hook (IDKEEPER_TEST_TAG_HOLD_MS): the row lock held */
        struct timespec ts = {b->test_hold_ms / 1000, (long)(b->test_hold_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    /* step, kind, app, name, start, max_id */
    int err = 0;
    int64_t step = ik__sql_int(&r, 0, 0), max_id = ik__sql_int(&r, 0, 5);
    ik_tag_kind have = IK_TAG_SEGMENT;
    if (r.nrows != 1 || !of_app(app, ik__sql_cell(&r, 0, 1), ik__sql_cell(&r, 0, 2)))
        err = IK_ENOTFOUND;
    else if (*ik__sql_cell(&r, 0, 1) && ik_tag_kind_parse(ik__sql_cell(&r, 0, 1), &have) != 0)
        err = IK_ESTORE;
    else if (have != kind)
        err = IK_EKIND;
    else if (max_id > INT64_MAX - delta)
        err = IK_ERANGE;
    ik__sql_res_clear(&r);
    if (err) return *cls = abort_tx(b, c, 0), err;
    if (write_no) { /* our mark, in the same transaction (one round trip) */
        char sno[24];
        snprintf(sno, sizeof sno, "%" PRIu64, write_no);
        const char *mp[] = {b->writer, biz, sno};
        rc = d->exec(c, IK__SQL_MARK_SET, mp, 3, NULL, inner, sizeof inner);
        if (rc) return *cls = abort_tx(b, c, rc), IK_ESTORE;
    }
    char sdelta[24];
    snprintf(sdelta, sizeof sdelta, "%" PRId64, delta);
    const char *sp[] = {sdelta, biz};
    if (delta == step)
        rc = d->exec(c, IK__SQL_LEAF_UPDATE, p, 1, NULL, inner, sizeof inner);
    else
        rc = d->exec(c, IK__SQL_LEAF_UPDATE_STEP, sp, 2, NULL, inner, sizeof inner);
    if (rc == 0) rc = ik__sql_exec(d, c, IK__SQL_LEAF_SELECT, p, 1, &r, inner, sizeof inner);
    if (rc) return *cls = abort_tx(b, c, rc), IK_ESTORE;
    int64_t now_max = ik__sql_int(&r, 0, 1);
    int nrows = (int)r.nrows;
    ik__sql_res_clear(&r);
    if (nrows != 1 || now_max != max_id + delta) { /* cannot be, under the row lock */
        ik__logf("tag %s: leaf_alloc.max_id went from %" PRId64 " to %" PRId64
                 " in a transaction that added %" PRId64 ": not used",
                 biz, max_id, now_max, delta);
        return *cls = abort_tx(b, c, 0), IK_ESTORE;
    }
    *first = max_id; /* also on a doubt: the range the commit would have taken */
    rc = d->exec(c, IK__SQL_COMMIT, NULL, 0, NULL, inner, sizeof inner);
    *cls = rc;
    if (rc == IK__SQL_EDOUBT) return IK_EINDOUBT;
    if (rc) return IK_ESTORE;
    return IK_OK;
}

/* Whether write write_no of ours to biz committed: reads our mark after waiting for
 * the row lock (so a COMMIT still in progress on the old connection has ended).
 * 1 committed, 0 not, or a driver class. */
static int committed(ik__sql_backend *b, ik__sql_conn *c, const char *biz, uint64_t write_no)
{
    const ik__sql_driver *d = b->d;
    const char *p[] = {biz};
    const char *mp[] = {b->writer, biz};
    ik__sql_res r;
    int rc = d->exec(c, IK__SQL_BEGIN, NULL, 0, NULL, NULL, 0);
    if (rc) return rc;
    rc = ik__sql_exec(d, c, IK__SQL_TAG_LOCK, p, 1, &r, NULL, 0);
    if (rc == 0) {
        ik__sql_res_clear(&r);
        rc = ik__sql_exec(d, c, IK__SQL_MARK_GET, mp, 2, &r, NULL, 0);
    }
    int64_t seen = rc == 0 && r.nrows == 1 ? ik__sql_int(&r, 0, 0) : 0;
    if (rc == 0) ik__sql_res_clear(&r);
    int rb = abort_tx(b, c, rc);
    if (rc) return rb;
    return (uint64_t)seen >= write_no;
}

/* The open doubt of biz (its index), or -1. Caller holds b->mu. */
static int doubt_of(ik__sql_backend *b, const char *biz)
{
    for (int i = 0; i < IK__SQL_DOUBTS; i++)
        if (b->doubt[i].write_no && strcmp(b->doubt[i].biz, biz) == 0) return i;
    return -1;
}

/* Doubts are kept for sequence writes only (the mark settles them). */
static void log_gap(const struct ik__sql_doubt *g, const char *why, const char *what)
{
    ik__tag_gap(g->app, g->name, IK_TAG_SEQUENCE, g->first, g->count, why,
                "a commit whose answer was lost %s", what);
}

/* Settles biz's open doubt on c, if any, before a new write: 0 (none left), or a
 * driver class (still open: no write may go before it is settled, since the write's
 * mark would hide it). */
static int settle_open(ik__sql_backend *b, ik__sql_conn *c, const char *biz)
{
    pthread_mutex_lock(&b->mu);
    int i = doubt_of(b, biz);
    struct ik__sql_doubt g;
    if (i >= 0) g = b->doubt[i];
    pthread_mutex_unlock(&b->mu);
    if (i < 0) return 0;
    int rc = committed(b, c, biz, g.write_no);
    if (rc < 0) return rc;
    if (rc == 1)
        log_gap(&g, "answer_lost", "did commit");
    else
        ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                 " (app %s): the commit whose answer was lost did not apply",
                 g.name, g.first, g.count, g.app);
    pthread_mutex_lock(&b->mu);
    b->doubt[i].write_no = 0;
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* Keeps a doubt that could not be settled in the call; a full table logs the
 * oldest as a gap (it may have committed). */
static void keep_doubt(ik__sql_backend *b, const struct ik__sql_doubt *g)
{
    struct ik__sql_doubt old;
    memset(&old, 0, sizeof old);
    pthread_mutex_lock(&b->mu);
    int i = 0;
    for (int j = 0; j < IK__SQL_DOUBTS; j++)
        if (!b->doubt[j].write_no || b->doubt[j].write_no < b->doubt[i].write_no) {
            i = j;
            if (!b->doubt[j].write_no) break;
        }
    if (b->doubt[i].write_no) old = b->doubt[i];
    b->doubt[i] = *g;
    pthread_mutex_unlock(&b->mu);
    if (old.write_no)
        log_gap(&old, "maybe_recorded", "may have committed (too many doubts to settle)");
}

int ik__sql_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                        int64_t delta, int64_t *first)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (delta <= 0) return IK_EINVAL;
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return IK_ENOTFOUND;
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return IK_ESTORE; /* nothing sent */
    int gate_cls = 0; /* the store's hazards (backend_sql_hazards.c): nothing sent if refused */
    rc = ik__sql_hazards_gate(b, c, &gate_cls, NULL, 0);
    if (rc) {
        ik__sql_put(b, idx, gate_cls);
        return rc;
    }
    /* a sequence write carries a mark, so that a lost COMMIT answer is settled */
    uint64_t write_no = 0;
    if (kind == IK_TAG_SEQUENCE) {
        rc = settle_open(b, c, biz);
        if (rc) {
            ik__sql_put(b, idx, rc);
            return IK_ESTORE;
        }
        pthread_mutex_lock(&b->mu);
        write_no = ++b->writes;
        pthread_mutex_unlock(&b->mu);
    }
    int cls = 0;
    rc = advance_on(b, c, app, biz, kind, delta, write_no, first, &cls);
    ik__sql_put(b, idx, cls);
    if (rc != IK_EINDOUBT || !write_no) return rc;
    /* the COMMIT's answer was lost: settle it now if the database is back soon */
    struct ik__sql_doubt g = {.first = 0, .count = delta, .write_no = write_no};
    snprintf(g.biz, sizeof g.biz, "%s", biz);
    snprintf(g.name, sizeof g.name, "%s", name);
    snprintf(g.app, sizeof g.app, "%s", app);
    g.first = *first; /* max_id under the row lock: the range the commit took, if it did */
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    for (;;) {
        int got = ik__sql_get(b, &idx, &c, NULL, 0);
        if (got == 0) {
            got = committed(b, c, biz, write_no);
            ik__sql_put(b, idx, got < 0 ? got : 0);
            if (got == 1) {
                ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                         " (app %s): the commit whose answer was lost did apply: handed out",
                         name, g.first, delta, app);
                return IK_OK;
            }
            if (got == 0) return IK_ESTORE;
        }
        if (ik__mono_ms() >= until) break;
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    keep_doubt(b, &g);
    return IK_EINDOUBT;
}
