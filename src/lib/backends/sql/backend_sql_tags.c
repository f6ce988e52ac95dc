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
 *   [Leaf's SELECT of the row]                   |
 *   [the driver's proof]                         /  (SP3 of backend_sql_proof.c; in
 *                                                    the SELECT's row where the
 *                                                    driver has back_proof)
 *     (what the store stored: on PostgreSQL the UPDATE's RETURNING biz_tag, max_id,
 *     step; on MariaDB, which has no UPDATE ... RETURNING, Leaf's own SELECT after
 *     it, in the same transaction: one row, at the max_id read plus delta, or
 *     nothing is used (a trigger that rewrites max_id shows here))
 *   COMMIT, after the first round trip answered (else ROLLBACK), with the driver's
 *     proof after it in the same round trip: the evidence read at the commit point
 *     (SP1 of backend_sql_proof.c), and what the store said of the COMMIT (SP2). A
 *     COMMIT whose evidence is refused, lost or qualified: the range is a gap
 * and the caller owns [max_id - delta, max_id), as a Leaf server owns
 * [max_id - step, max_id) after its own.
 *
 * Invariant ST1 (as LT1 on local: and ZT1 on zk://): max_id never decreases, and every range
 * handed out lies below it and belongs to one caller: the row lock of the UPDATE
 * serialises every writer, Leaf's included. A failure before the COMMIT was sent
 * leaves nothing done (IK_ESTORE); a COMMIT without an answer may have applied
 * (IK_EINDOUBT: the caller never hands that range out).
 *
 * Doubts: every advance carries its commit mark, and a lost COMMIT answer is read
 * back from it (backend_sql_marks.c), the evidence the doubt engine decides by
 * (counters/doubt.c): before the write, for the doubts the engine hands it, within
 * the call for its own, and at the stop (ik__sql_tag_settle).
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
        rc = ik__sql_abort(b->d, c, rc);
    ik__sql_put(b, idx, rc);
    if (rc == IK__SQL_EDUPLICATE)
        return ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
    if (rc == IK__SQL_EDOUBT)
        return ik__fail(IK_EINDOUBT, why, why_len,
                        "no answer to the commit of tag %s (it may exist): %s", t->name, inner);
    if (rc) return ik__fail(IK_ESTORE, why, why_len, "cannot store tag %s: %s", t->name, inner);
    return IK_OK;
}

int ik__sql_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out, char *why,
                    size_t why_len)
{
    (void)why, (void)why_len;
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

/* The verdict of the locking read (res[1]: step, kind, app, name, start, max_id) for
 * an advance of kind by delta of app's tag: 0 and *max_id, or the error. */
static int read_verdict(const ik__sql_res *r, const char *app, ik_tag_kind kind, int64_t delta,
                        int64_t *max_id)
{
    ik_tag_kind have = IK_TAG_SEGMENT;
    *max_id = ik__sql_int(r, 0, 5);
    if (r->nrows != 1 || !of_app(app, ik__sql_cell(r, 0, 1), ik__sql_cell(r, 0, 2)))
        return IK_ENOTFOUND;
    if (*ik__sql_cell(r, 0, 1) && ik_tag_kind_parse(ik__sql_cell(r, 0, 1), &have) != 0)
        return IK_ESTORE;
    if (have != kind) return IK_EKIND;
    if (*max_id > INT64_MAX - delta) return IK_ERANGE;
    return 0;
}

/* Tests only (docs/sql.md, "Test hooks"): the window between an advance's two round
 * trips, its row lock held. */
static void before_commit(ik__sql_backend *b, ik__sql_conn *c)
{
    if (b->test_commit_pause_ms) {
        struct timespec ts = {b->test_commit_pause_ms / 1000,
                              (b->test_commit_pause_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    ik__test_hold(b->test_commit_hold);
    if (b->test_before_advance_commit) b->d->run(c, b->test_before_advance_commit, NULL, 0);
}

/* Leaf's transaction on c (see the top), carrying w's commit mark (SM1 of
 * backend_sql_marks.c). 0 and *first, or an ik_error (IK_EINDOUBT: w->own.first is
 * the range's start if the COMMIT did apply); *cls the driver class of the last
 * call, for the pool.
 *
 * Two round trips (docs/sql.md, "Tags"): BEGIN, the locking read, the mark, the
 * UPDATE and (where the UPDATE answers no row) the read of the row it stored go out
 * as one pipeline, since none of them depends on what another answers; the answers
 * then decide, the row lock held, between COMMIT and ROLLBACK. The COMMIT goes out
 * only after the UPDATE answered, with the proof after it in its own round trip
 * (SP1 of backend_sql_proof.c: the evidence read at the commit point), so a COMMIT
 * whose answer is lost was sent by a transaction that held the row lock (the
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
    ik__sql_call calls[6];
    int n = 0;
    calls[n++] = (ik__sql_call){IK__SQL_BEGIN, NULL, 0};
    calls[n++] = (ik__sql_call){IK__SQL_TAG_LOCK, p, 1};  /* step, kind, app, name, start, max_id */
    calls[n++] = (ik__sql_call){IK__SQL_MARK_SET, mp, 3}; /* our mark */
    int up = n;
    /* Leaf's updateMaxIdByCustomStep for every delta: the same as its step UPDATE
     * when delta is the step read under the row lock */
    calls[n++] = (ik__sql_call){IK__SQL_LEAF_UPDATE_STEP, sp, 2};
    int back = up; /* the row the UPDATE stored: its RETURNING, or Leaf's SELECT after it */
    if (!d->returning) calls[back = n++] = (ik__sql_call){IK__SQL_LEAF_SELECT, p, 1};
    int pr = -1; /* SP3 of backend_sql_proof.c: a setting already unsafe rolls it back */
    if (ik__sql_has_proof(d) && back != up && d->back_proof)
        pr = back; /* the read-back's row carries it */
    else if (ik__sql_has_proof(d))
        calls[pr = n++] = (ik__sql_call){IK__SQL_PROOF, NULL, 0};
    ik__sql_res res[6];
    int ran = 0;
    int64_t ns[5] = {0}, t0 = b->cycle ? ik__mono_ns() : 0;
    int rc = b->cycle == 2 ? ik__sql_exec_serial(d, c, calls, n, res, &ran, ns, inner, sizeof inner)
                           : ik__sql_exec_pipeline(d, c, calls, n, res, &ran, inner, sizeof inner);
    if (b->cycle == 1) ns[0] = ik__mono_ns() - t0;
    int err = 0;
    int64_t max_id = 0, now_max = 0;
    /* the locking read answered: its verdict first, whatever came after */
    if (ran >= 2) err = read_verdict(&res[1], app, kind, delta, &max_id);
    if (!err && rc == 0) {
        /* what the store says it stored: the row after the UPDATE, read in the same
         * transaction under the row lock (one row, max_id read plus delta) */
        now_max = res[up].affected == 1 && res[back].nrows == 1 ? ik__sql_int(&res[back], 0, 1)
                                                                : INT64_MIN;
        if (now_max != max_id + delta) {
            snprintf(w->why, sizeof w->why,
                     "%s stored leaf_alloc.max_id %s for tag %s, not %" PRId64 " + %" PRId64
                     " as written: something on the table rewrites its writes (a trigger or a "
                     "rule); nothing used",
                     d->name,
                     now_max == INT64_MIN ? "in no single row" : ik__sql_cell(&res[back], 0, 1),
                     biz, max_id, delta);
            ik__logf("tag %s: %s", biz, w->why);
            err = IK_ESTORE;
        }
    }
    if (!err && rc == 0 && pr >= 0 &&
        ik__sql_proof_early(b, c, &res[pr], w->why, sizeof w->why) == IK_EUNSAFE)
        err = IK_EUNSAFE; /* rolled back, nothing handed out, no gap */
    for (int i = 0; i < n; i++)
        ik__sql_res_clear(&res[i]);
    if (err) return *cls = ik__sql_abort(d, c, rc), err; /* nothing of it committed */
    if (rc) {
        snprintf(w->why, sizeof w->why, "%s", inner);
        return *cls = ik__sql_abort(d, c, rc),
               ik__sql_error(rc) == IK_EUNSAFE ? IK_EUNSAFE : IK_ESTORE;
    }
    w->own.first = max_id; /* the range the commit takes: a doubt of it keeps it */
    before_commit(b, c);
    int64_t t1 = b->cycle ? ik__mono_ns() : 0;
    ik__sql_commit out;
    *cls = ik__sql_commit_proved(b, c, (ik__sql_call){IK__SQL_COMMIT, NULL, 0}, "leaf_alloc", NULL,
                                 &out);
    switch (out.state) {
    case IK__SQL_COMMITTED:
        if (b->cycle) {
            ns[4] = ik__mono_ns() - t1;
            cycle_add(b, ns, delta);
        }
        *first = max_id;
        return IK_OK;
    case IK__SQL_UNTRUSTED:
        /* SP4: committed, but its evidence refused, lost or qualified: never handed
         * out, a gap at its exact range (the engine logs it); the session is dropped
         * where the evidence showed it is not as our writes need it */
        w->own_ev.read = w->own_ev.held = 1; /* the COMMIT's own answer: it ran */
        w->own_ev.first = max_id;
        w->own_ev.code = out.code;
        snprintf(w->own_ev.what, sizeof w->own_ev.what, "%s (%s)", out.why, b->shown);
        snprintf(w->why, sizeof w->why, "%s", out.why);
        if (out.refused) *cls = IK__SQL_EGONE;
        return out.refused ? IK_EUNSAFE : IK_EINDOUBT;
    case IK__SQL_UNANSWERED:
        snprintf(w->why, sizeof w->why, "no answer to the COMMIT: %s", out.why);
        return IK_EINDOUBT;
    default:
        snprintf(w->why, sizeof w->why, "%s", out.why);
        return IK_ESTORE;
    }
}

int ik__sql_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                        ik__tag_write *w, int64_t *first)
{
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (w->own.delta <= 0) return IK_EINVAL;
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return IK_ENOTFOUND;
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, NULL, 0);
    if (rc) return IK_ESTORE; /* nothing sent */
    int cls = 0; /* the store's hazards (backend_sql_hazards.c): nothing sent if refused */
    rc = ik__sql_hazards_gate(b, c, &cls, NULL, 0);
    if (rc == 0 && (cls = ik__sql_marks_settle(b, c, biz, w)) != 0) rc = IK_ESTORE;
    if (rc == 0) rc = advance_on(b, c, app, biz, kind, w, first, &cls);
    ik__sql_put(b, idx, cls);
    /* a COMMIT without an answer is read back (SM5); one answered, but untrusted,
     * has its evidence already */
    if (rc != IK_EINDOUBT || w->own_ev.read) return rc;
    return ik__sql_marks_reread(b, biz, w);
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
    ik__sql_put(b, idx, ik__sql_marks_settle(b, c, biz, w));
}

void ik__sql_tags_close(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    if (!b || !b->opened) return;
    cycle_log(b);
    ik__sql_marks_drop(b);
}
