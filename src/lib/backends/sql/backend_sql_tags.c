/* backend_sql_tags.c: tags on SQL, in Meituan Leaf's own table, advanced with Leaf's
 * own statements, so that Leaf servers and idkeeper servers can share one
 * leaf_alloc during a migration without a duplicate (docs/sql.md, "Tags").
 *
 *   leaf_alloc (biz_tag, max_id, step, description, update_time)   Leaf's, unchanged
 *   idk_tag_kind (biz_tag, app, name, kind, start)                 ours: the kind
 *   idk_commit_mark (writer, biz_tag, write_no, at_ms)             ours: the marks
 *
 * A Leaf tag with no idk_tag_kind row is a segment tag of the default app.
 *
 * --app onto biz_tag: the default app's tag T is biz_tag T, so Leaf's existing tags
 * are the default app's as they are; another app A's tag T is biz_tag "A/T" ('/'
 * is in neither an app nor a tag name, so the two never meet), and exists for A
 * only with its idk_tag_kind row naming A.
 *
 * An advance is Leaf's transaction (SegmentIDGenImpl.updateSegmentFromDb), in two
 * round trips (advance_on):
 *   BEGIN                                        \
 *   SELECT ... FOR UPDATE                        | one pipeline (IK__SQL_TAG_LOCK:
 *   the commit mark                              | kind, step, app, max_id)
 *   UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?   |  (Leaf's custom step)
 *   [the driver's proof: its durability settings] /  (H3 of backend_sql_hazards.c)
 *     (on PostgreSQL with RETURNING biz_tag, max_id, step: Leaf's SELECT of the
 *     row after it, in the same round trip; on MariaDB the row's max_id is the one
 *     read under the lock plus delta, and the UPDATE must match the one row)
 *   COMMIT, alone, after the four answered (else ROLLBACK); the session's state in
 *     its answer is the proof that it committed (a refused one: the range is a gap)
 * and the caller owns [max_id - delta, max_id), as a Leaf server owns
 * [max_id - step, max_id) after its own.
 *
 * Invariant ST1 (as LT1 on local: and ZT1 on zk://): max_id never decreases, and every range
 * handed out lies below it and belongs to one caller: the row lock of the UPDATE
 * serialises every writer, Leaf's included. A failure before the COMMIT was sent
 * leaves nothing done (IK_ESTORE); a COMMIT without an answer may have applied
 * (IK_EINDOUBT: the caller never hands that range out).
 *
 * Doubts (docs/architecture.md, "Doubts ⇄ backend"): the doubt engine above the seam
 * (counters/doubt.c) keeps, carries, logs and settles the writes whose COMMIT answer
 * was lost; this file gives it only what is the store's:
 *
 *   ST5. The mark. Every write, of either kind, upserts in its own transaction the row
 *       (its writer, biz_tag) of idk_commit_mark with its write id: the engine's
 *       writer of the advance's lane and w->own.wid. A lane is one advance at a time
 *       (doubt.c's D3), so a row's write ids only ever come from one write after
 *       another, in increasing order, and the row holds the id of the lane's last
 *       write that committed.
 *   ST6. The read (read_mark): the lane's row, under the tag's row lock, so that a
 *       COMMIT still in progress on a dead connection has ended one way or the other.
 *       Its id equal to a doubt's: that write applied; below it: it did not, and
 *       never will (its transaction held the row lock we now hold).
 *   ST7. A write of a lane goes out only once every doubt the lane carries is decided
 *       by that read (settle_carried; a lane that cannot read sends nothing), so a
 *       lane holds at most one open doubt, and a mark above a carried doubt's id
 *       cannot be: were it seen, the doubt is logged as of unknown place.
 *   ST8. Marks are pruned at open when older than a day (ik__sql_marks_prune), and a
 *       backend that closes with every doubt it left settled deletes its own
 *       (ik__sql_tags_close). A doubt older than IK__SQL_MARK_TRUST_MS whose lane has
 *       no row at all is therefore not settled as "did not apply" but logged as of
 *       unknown place.
 *   ST9. Within the call (settle_in_call), a lost COMMIT answer is read again for
 *       IK__SQL_IO_MS: applied, the range is handed out ("tag doubt settled ...
 *       handed out"); not applied, the call fails as nothing done ("tag doubt
 *       settled ... did not apply"); unread, the engine keeps it (IK_EINDOUBT).
 */
#include "backend_sql.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BIZ_TAG_MAX IK__SQL_BIZ_MAX
/* ST8: half the marks' pruning age (a day), for the difference of clock rates */
#define IK__SQL_MARK_TRUST_MS (12 * 3600 * 1000LL)

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

/* IDKEEPER_BENCH_CYCLE: adds one committed advance's times (ns[5], as cyc_ns). */
static void cycle_add(ik__sql_backend *b, const int64_t *ns, int64_t ids)
{
    pthread_mutex_lock(&b->mu);
    b->cyc_n++;
    b->cyc_ids += ids;
    for (int i = 0; i < 5; i++)
        b->cyc_ns[i] += ns[i];
    pthread_mutex_unlock(&b->mu);
}

/* IDKEEPER_BENCH_CYCLE: the advances' mean cycle, one line at close. */
static void cycle_log(ik__sql_backend *b)
{
    if (!b->cycle || !b->cyc_n) return;
    double n = (double)b->cyc_n, us[5], all = 0;
    for (int i = 0; i < 5; i++)
        all += us[i] = (double)b->cyc_ns[i] / n / 1000.0;
    ik__logf("sql batch cycle (%s): %" PRId64 " advances, %.1f IDs each, %.0f us each: "
             "BEGIN %.0f%s, read %.0f, mark %.0f, UPDATE %.0f, COMMIT %.0f us",
             b->cycle == 2 ? "one by one" : "pipelined", b->cyc_n, (double)b->cyc_ids / n, all,
             us[0], b->cycle == 2 ? "" : " (+ read, mark, UPDATE in its round trip)", us[1], us[2],
             us[3], us[4]);
}

/* Leaf's transaction on c (see the top), carrying w's mark (ST5). 0 and *first, or
 * an ik_error (IK_EINDOUBT: w->own.first is the range's start if the COMMIT did
 * apply); *cls the driver class of the last call, for the pool.
 *
 * Two round trips (docs/sql.md, "Tags"): BEGIN, the locking read, the mark and the
 * UPDATE go out as one pipeline, since none of them depends on what another
 * answers; the read's answer then decides, the row lock held, between COMMIT and
 * ROLLBACK. The COMMIT is sent alone and only after the UPDATE answered, so a
 * COMMIT whose answer is lost was sent by a transaction that held the row lock (the
 * doubt's settlement waits for that lock), and every other failure leaves nothing
 * committed (ST1). */
static int advance_on(ik__sql_backend *b, ik__sql_conn *c, const char *app, const char *biz,
                      ik_tag_kind kind, ik__tag_write *w, int64_t *first, int *cls)
{
    const ik__sql_driver *d = b->d;
    int64_t delta = w->own.delta;
    char inner[256] = "";
    char sno[24], sdelta[24];
    snprintf(sno, sizeof sno, "%" PRIu64, w->own.wid);
    snprintf(sdelta, sizeof sdelta, "%" PRId64, delta);
    const char *p[] = {biz};
    const char *mp[] = {w->writer, biz, sno};
    const char *sp[] = {sdelta, biz};
    ik__sql_call calls[5];
    int n = 0;
    calls[n++] = (ik__sql_call){IK__SQL_BEGIN, NULL, 0};
    calls[n++] = (ik__sql_call){IK__SQL_TAG_LOCK, p, 1}; /* step, kind, app, name, start, max_id */
    calls[n++] = (ik__sql_call){IK__SQL_MARK_SET, mp, 3}; /* our mark (ST5) */
    int up = n;
    /* Leaf's updateMaxIdByCustomStep for every delta: the same as its step UPDATE
     * when delta is the step read under the row lock */
    calls[n++] = (ik__sql_call){IK__SQL_LEAF_UPDATE_STEP, sp, 2};
    int pr = -1; /* the proof, in the same round trip (H3 of backend_sql_hazards.c) */
    if (ik__sql_has_proof(d)) calls[pr = n++] = (ik__sql_call){IK__SQL_PROOF, NULL, 0};
    ik__sql_res res[5];
    int ran = 0;
    int64_t ns[5] = {0}, t0 = b->cycle ? ik__mono_ns() : 0;
    int rc = b->cycle == 2 ? ik__sql_exec_serial(d, c, calls, n, res, &ran, ns, inner, sizeof inner)
                           : ik__sql_exec_pipeline(d, c, calls, n, res, &ran, inner, sizeof inner);
    if (b->cycle == 1) ns[0] = ik__mono_ns() - t0;
    int err = 0;
    int64_t max_id = 0;
    if (ran >= 2) { /* the locking read answered: its verdict first, whatever came after */
        const ik__sql_res *r = &res[1];
        max_id = ik__sql_int(r, 0, 5);
        ik_tag_kind have = IK_TAG_SEGMENT;
        if (r->nrows != 1 || !of_app(app, ik__sql_cell(r, 0, 1), ik__sql_cell(r, 0, 2)))
            err = IK_ENOTFOUND;
        else if (*ik__sql_cell(r, 0, 1) && ik_tag_kind_parse(ik__sql_cell(r, 0, 1), &have) != 0)
            err = IK_ESTORE;
        else if (have != kind)
            err = IK_EKIND;
        else if (max_id > INT64_MAX - delta)
            err = IK_ERANGE;
    }
    int64_t now_max = 0; /* max_id + delta only once it cannot overflow (err) */
    int nrows = 0;
    if (!err && rc == 0 && pr >= 0 && ik__sql_proof(b, c, &res[pr], 1, NULL, 0) == IK_EUNSAFE)
        err = IK_EUNSAFE; /* H3: rolled back, nothing handed out, no gap */
    if (!err && rc == 0) {
        now_max = max_id + delta;
        /* The UPDATE answers the row it wrote where the database can (RETURNING);
         * where it cannot (MariaDB), its matched-row count, and max_id is the one
         * read under the row lock plus delta: no one else can have written the row
         * between (docs/sql.md, "Tags"). */
        const ik__sql_res *r = &res[up];
        nrows = (int)r->affected;
        if (r->ncols >= 2) {
            now_max = ik__sql_int(r, 0, 1);
            nrows = (int)r->nrows;
        }
    }
    for (int i = 0; i < n; i++)
        ik__sql_res_clear(&res[i]);
    if (err) return *cls = abort_tx(b, c, rc), err; /* nothing of it committed */
    if (rc)
        return *cls = abort_tx(b, c, rc), ik__sql_error(rc) == IK_EUNSAFE ? IK_EUNSAFE : IK_ESTORE;
    if (nrows != 1 || now_max != max_id + delta) { /* cannot be, under the row lock */
        ik__logf("tag %s: leaf_alloc.max_id went from %" PRId64 " to %" PRId64
                 " in a transaction that added %" PRId64 ": not used",
                 biz, max_id, now_max, delta);
        return *cls = abort_tx(b, c, 0), IK_ESTORE;
    }
    w->own.first = max_id;         /* the range the commit takes: a doubt of it keeps it */
    if (b->test_commit_pause_ms) { /* tests only: widens the window, the row lock held */
        struct timespec ts = {b->test_commit_pause_ms / 1000,
                              (b->test_commit_pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (b->test_before_advance_commit) /* tests only */
        d->run(c, b->test_before_advance_commit, NULL, 0);
    int64_t t1 = b->cycle ? ik__mono_ns() : 0;
    rc = d->exec(c, IK__SQL_COMMIT, NULL, 0, NULL, inner, sizeof inner);
    *cls = rc;
    if (b->cycle && rc == 0) {
        ns[4] = ik__mono_ns() - t1;
        cycle_add(b, ns, delta);
    }
    if (rc == IK__SQL_EDOUBT) return IK_EINDOUBT;
    if (rc) return IK_ESTORE;
    if (pr >= 0 && ik__sql_proof(b, c, NULL, 0, NULL, 0) == IK_EUNSAFE) {
        /* H3: committed, but the answer shows the session is not as our writes
         * need it (a transaction left open after the COMMIT, in which the next
         * writes would never commit): never handed out, a gap at its exact range
         * (the engine logs it); the session is dropped */
        w->own_fate.fate = IK__DOUBT_LANDED;
        w->own_fate.first = max_id;
        w->own_fate.code = "store_unsafe";
        snprintf(w->own_fate.why, sizeof w->own_fate.why, "its commit's proof was refused (%s)",
                 b->shown);
        *cls = IK__SQL_EGONE;
        return IK_EUNSAFE;
    }
    *first = max_id;
    return IK_OK;
}

/* The mark of writer on biz, read under the tag's row lock (ST6): 0 with *seen (its
 * write id; 0 and *no_row = 1: the writer has no mark of biz), or a driver class. */
static int read_mark(ik__sql_backend *b, ik__sql_conn *c, const char *biz, const char *writer,
                     uint64_t *seen, int *no_row)
{
    const ik__sql_driver *d = b->d;
    const char *p[] = {biz};
    const char *mp[] = {writer, biz};
    ik__sql_res r;
    int rc = d->exec(c, IK__SQL_BEGIN, NULL, 0, NULL, NULL, 0);
    if (rc) return rc;
    rc = ik__sql_exec(d, c, IK__SQL_TAG_LOCK, p, 1, &r, NULL, 0);
    if (rc == 0) {
        ik__sql_res_clear(&r);
        rc = ik__sql_exec(d, c, IK__SQL_MARK_GET, mp, 2, &r, NULL, 0);
    }
    *no_row = rc == 0 && r.nrows == 0;
    *seen = rc == 0 && r.nrows == 1 ? (uint64_t)ik__sql_int(&r, 0, 0) : 0;
    if (rc == 0) ik__sql_res_clear(&r);
    int rb = abort_tx(b, c, rc);
    return rc ? rb : 0;
}

/* The fate of doubt x by its lane's mark (ST6-ST8). */
static void judge(const ik__doubt *x, uint64_t seen, int no_row, ik__doubt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->first = x->first;
    if (!no_row && seen == x->wid) {
        v->fate = IK__DOUBT_LANDED;
        snprintf(v->why, sizeof v->why, "a commit whose answer was lost did commit");
    } else if (seen > x->wid || (no_row && ik__mono_ns() - x->sent_ns >
                                               IK__SQL_MARK_TRUST_MS * INT64_C(1000000))) {
        v->fate = IK__DOUBT_UNKNOWN; /* ST7 (cannot be), ST8 (a pruned mark) */
        v->first = -1;
        snprintf(v->why, sizeof v->why,
                 "a commit whose answer was lost may have committed: %s",
                 no_row ? "its writer has no mark, and the doubt is older than the marks' "
                          "pruning allows to trust"
                        : "its writer's mark is of a later write");
    } else {
        v->fate = IK__DOUBT_NOT_LANDED;
        snprintf(v->why, sizeof v->why, "the commit whose answer was lost did not apply");
    }
}

/* ST7: decides every doubt w carries by one read on c: 0, or a driver class (each
 * left OPEN: nothing may be sent). */
static int settle_carried(ik__sql_backend *b, ik__sql_conn *c, const char *biz, ik__tag_write *w)
{
    if (w->n_carried == 0) return 0;
    uint64_t seen = 0;
    int no_row = 0;
    int rc = read_mark(b, c, biz, w->writer, &seen, &no_row);
    if (rc) return rc;
    for (int i = 0; i < w->n_carried; i++)
        judge(&w->carried[i], seen, no_row, &w->fate[i]);
    pthread_mutex_lock(&b->mu);
    b->doubts_left -= w->n_carried; /* decided, one way or another (ST8's close) */
    pthread_mutex_unlock(&b->mu);
    return 0;
}

/* ST9: reads w's own write again after its COMMIT answer was lost, for up to
 * IK__SQL_IO_MS: 0 (applied: handed out), IK_ESTORE (did not apply), or IK_EINDOUBT
 * (unread, or applied at an unknown place: w->own_fate), logged as each says. */
static int settle_in_call(ik__sql_backend *b, const char *app, const char *name, const char *biz,
                          ik__tag_write *w, int64_t *first)
{
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    for (;;) {
        ik__sql_conn *c;
        int idx;
        uint64_t seen = 0;
        int no_row = 0;
        int rc = ik__sql_get(b, &idx, &c, NULL, 0);
        if (rc == 0) {
            rc = read_mark(b, c, biz, w->writer, &seen, &no_row);
            ik__sql_put(b, idx, rc);
        }
        if (rc == 0) {
            ik__doubt_verdict v;
            judge(&w->own, seen, no_row, &v);
            if (v.fate == IK__DOUBT_UNKNOWN) {
                w->own_fate = v;
                return IK_EINDOUBT;
            }
            ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                     " (app %s): the commit whose answer was lost %s",
                     name, w->own.first, w->own.delta, app,
                     v.fate == IK__DOUBT_LANDED ? "did apply: handed out" : "did not apply");
            if (v.fate == IK__DOUBT_LANDED) *first = w->own.first;
            return v.fate == IK__DOUBT_LANDED ? IK_OK : IK_ESTORE;
        }
        /* a bounded stop's deadline passed: no more tries */
        if (__atomic_load_n(&b->cut, __ATOMIC_ACQUIRE) || ik__mono_ms() >= until) break;
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&b->mu);
    b->doubts_left++; /* the engine keeps it (ST8's close) */
    pthread_mutex_unlock(&b->mu);
    return IK_EINDOUBT;
}

/* Keeps the writer's first 30 hex digits, the coord's own (ST8's close). */
static void note_writer(ik__sql_backend *b, const ik__tag_write *w)
{
    pthread_mutex_lock(&b->mu);
    memcpy(b->writer, w->writer, sizeof b->writer - 1);
    pthread_mutex_unlock(&b->mu);
}

int ik__sql_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                        ik__tag_write *w, int64_t *first)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (w->own.delta <= 0) return IK_EINVAL;
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return IK_ENOTFOUND;
    note_writer(b, w);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return IK_ESTORE; /* nothing sent */
    int cls = 0; /* the store's hazards (backend_sql_hazards.c): nothing sent if refused */
    rc = ik__sql_hazards_gate(b, c, &cls, NULL, 0);
    if (rc == 0 && (cls = settle_carried(b, c, biz, w)) != 0) rc = IK_ESTORE;
    if (rc == 0) rc = advance_on(b, c, app, biz, kind, w, first, &cls);
    ik__sql_put(b, idx, cls);
    if (rc != IK_EINDOUBT) return rc;
    return settle_in_call(b, app, name, biz, w, first);
}

void ik__sql_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                        int64_t deadline_mono_ns)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return;
    ik__sql_conn *c;
    int idx;
    /* after the deadline's cut every call fails at once: no read starts past it */
    if (__atomic_load_n(&b->cut, __ATOMIC_ACQUIRE) || ik__mono_ns() >= deadline_mono_ns) return;
    if (ik__sql_get(b, &idx, &c, NULL, 0) != 0) return;
    ik__sql_put(b, idx, settle_carried(b, c, biz, w));
}

void ik__sql_marks_prune(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    char inner[256] = "";
    int idx;
    ik__sql_conn *c;
    int rc = ik__sql_get(b, &idx, &c, inner, sizeof inner);
    if (rc == 0) {
        rc = b->d->exec(c, IK__SQL_MARK_PRUNE, NULL, 0, NULL, inner, sizeof inner);
        ik__sql_put(b, idx, rc);
    }
    if (rc) /* harmless: the next open prunes them */
        ik__logf("could not prune the old commit marks: %s", inner);
}

void ik__sql_tags_close(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    if (!b) return;
    if (!b->opened) return;
    cycle_log(b);
    /* ST8: our marks serve no one once every doubt we left is settled (the engine
     * settled or logged them all before this close) */
    if (!b->writer[0] || b->doubts_left > 0 || __atomic_load_n(&b->cut, __ATOMIC_ACQUIRE)) return;
    char pattern[40];
    snprintf(pattern, sizeof pattern, "%.30s%%", b->writer);
    const char *p[] = {pattern};
    int idx;
    ik__sql_conn *c;
    if (ik__sql_get(b, &idx, &c, NULL, 0) != 0) return;
    int rc = b->d->exec(c, IK__SQL_MARK_DROP, p, 1, NULL, NULL, 0);
    ik__sql_put(b, idx, rc);
}
