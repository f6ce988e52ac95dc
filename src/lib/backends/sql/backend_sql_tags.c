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
 * An advance is Leaf's transaction (SegmentIDGenImpl.updateSegmentFromDb), in two
 * round trips (advance_on):
 *   BEGIN                                        \
 *   SELECT ... FOR UPDATE                        | one pipeline (IK__SQL_TAG_LOCK:
 *   [the commit mark of a sequence write]        | kind, step, app, max_id)
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
 * A sequence write's lost COMMIT answer is settled by its commit mark (docs/sql.md,
 * "Tags"): the write upserts, in its own transaction, the row (writer, biz_tag) of
 * idk_commit_mark with its write number; a later read of that row under the tag's
 * row lock says whether it applied.
 *
 *   ST5. A writer identity (a lane: this backend's random id and a lane number) is
 *       held by one advance at a time (lane_get .. lane_release), so the write
 *       numbers of a lane's row only ever come from one advance after another, in
 *       increasing order. Two ik_sequence on one coord, or any two committers,
 *       never read each other's mark as their own (a row of a shared writer would
 *       show a later write of the other committer as ours: a duplicate).
 *   ST6. No write goes out on a tag while a doubt of that tag is unsettled and
 *       unclaimed (settle_open first; it fails the write if it cannot settle), and
 *   ST7. a lane with an open doubt stays taken until that doubt is settled: its row
 *       changes only by the write in doubt itself.
 *   ST8. Marks are pruned at open when older than a day (ik__sql_marks_prune), and a
 *       backend that closes with every doubt settled deletes its own. A doubt older
 *       than IK__SQL_MARK_TRUST_MS whose lane has no row at all is therefore not
 *       settled as "did not apply" but logged as maybe_recorded.
 *   ST9. No doubt ends without a line: settled in the call (handed out, or nothing
 *       to log since nothing applied), by a later advance of its tag, or at close
 *       (ik__sql_settle, the seam's settle: one read each by its deadline; what is not
 *       read by then is logged "tag gap ... why=maybe_recorded" and goes through
 *       the gap hook before the close returns).
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

/* The tag name of app's biz_tag (biz_tag's inverse). */
static const char *tag_name(const char *app, const char *biz)
{
    size_t n = strlen(app);
    if (strcmp(app, "default") == 0 || strncmp(biz, app, n) != 0 || biz[n] != '/') return biz;
    return biz + n + 1;
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

/* Lane L's writer id in idk_commit_mark: this backend's 30 hex digits, then L in 2. */
static void lane_writer(const ik__sql_backend *b, int lane, char out[33])
{
    snprintf(out, 33, "%.30s%02x", b->writer, (unsigned)lane & 0xff);
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

/* Leaf's transaction on c (see the top), with our mark if write_no (sequence tags).
 * 0 and *first, or an ik_error (IK_EINDOUBT: *first is the range's start if the
 * COMMIT did apply); *cls the driver class of the last call, for the pool.
 *
 * Two round trips (docs/sql.md, "Tags"): BEGIN, the locking read, the mark and the
 * UPDATE go out as one pipeline, since none of them depends on what another
 * answers; the read's answer then decides, the row lock held, between COMMIT and
 * ROLLBACK. The COMMIT is sent alone and only after the UPDATE answered, so a
 * COMMIT whose answer is lost was sent by a transaction that held the row lock (the
 * doubt's settlement waits for that lock), and every other failure leaves nothing
 * committed (ST1). */
static int advance_on(ik__sql_backend *b, ik__sql_conn *c, const char *app, const char *biz,
                      ik_tag_kind kind, int64_t delta, int lane, uint64_t write_no, int64_t *first,
                      int *cls)
{
    const ik__sql_driver *d = b->d;
    char inner[256] = "";
    char sno[24], writer[33] = "", sdelta[24];
    snprintf(sno, sizeof sno, "%" PRIu64, write_no);
    snprintf(sdelta, sizeof sdelta, "%" PRId64, delta);
    if (write_no) lane_writer(b, lane, writer);
    const char *p[] = {biz};
    const char *mp[] = {writer, biz, sno};
    const char *sp[] = {sdelta, biz};
    ik__sql_call calls[5];
    int n = 0;
    calls[n++] = (ik__sql_call){IK__SQL_BEGIN, NULL, 0};
    calls[n++] = (ik__sql_call){IK__SQL_TAG_LOCK, p, 1}; /* step, kind, app, name, start, max_id */
    if (write_no) calls[n++] = (ik__sql_call){IK__SQL_MARK_SET, mp, 3}; /* our mark */
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
    if (b->cycle == 2 && !write_no) ns[3] = ns[2], ns[2] = 0; /* no mark: [2] was the UPDATE */
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
    *first = max_id;               /* also on a doubt: the range the commit would have taken */
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
         * writes would never commit): never handed out, logged as a gap at its
         * exact range; the session is dropped */
        ik__tag_gap(app, tag_name(app, biz), kind, max_id, delta, "store_unsafe",
                    "its commit's proof was refused (%s)", b->shown);
        *cls = IK__SQL_EGONE;
        return IK_EUNSAFE;
    }
    return IK_OK;
}

/* A lane of its own for a sequence advance (waits while all are taken): no other
 * advance writes a mark as it until lane_release. */
static int lane_get(ik__sql_backend *b)
{
    pthread_mutex_lock(&b->mu);
    while (b->lanes_busy == UINT64_MAX)
        pthread_cond_wait(&b->lane_cv, &b->mu);
    int lane = 0;
    while (b->lanes_busy & ((uint64_t)1 << lane))
        lane++;
    b->lanes_busy |= (uint64_t)1 << lane;
    pthread_mutex_unlock(&b->mu);
    return lane;
}

/* Frees lane unless an open doubt was written as it (ST7). Caller holds b->mu. */
static void lane_release_locked(ik__sql_backend *b, int lane)
{
    for (int i = 0; i < IK__SQL_DOUBTS; i++)
        if (b->doubt[i].write_no && b->doubt[i].lane == lane) return;
    b->lanes_busy &= ~((uint64_t)1 << lane);
    pthread_cond_signal(&b->lane_cv);
}

static void lane_release(ik__sql_backend *b, int lane)
{
    pthread_mutex_lock(&b->mu);
    lane_release_locked(b, lane);
    pthread_mutex_unlock(&b->mu);
}

/* Whether write write_no of lane to biz committed: reads the lane's mark after
 * waiting for the row lock (so a COMMIT still in progress on the old connection has
 * ended). 1 committed, 0 not (*no_row: the lane has no mark of biz at all), or a
 * driver class. */
static int committed(ik__sql_backend *b, ik__sql_conn *c, const char *biz, int lane,
                     uint64_t write_no, int *no_row)
{
    const ik__sql_driver *d = b->d;
    char writer[33];
    lane_writer(b, lane, writer);
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
    int64_t seen = rc == 0 && r.nrows == 1 ? ik__sql_int(&r, 0, 0) : 0;
    if (rc == 0) ik__sql_res_clear(&r);
    int rb = abort_tx(b, c, rc);
    if (rc) return rb;
    return (uint64_t)seen >= write_no;
}

/* Doubts are kept for sequence writes only (the mark settles them). */
static void log_gap(const struct ik__sql_doubt *g, const char *why, const char *what)
{
    ik__tag_gap(g->app, g->name, IK_TAG_SEQUENCE, g->first, g->count, why,
                "a commit whose answer was lost %s", what);
}

/* Logs how a doubt was settled by committed()'s answer got (1 or 0). A lane with no
 * mark at all is trusted only while the doubt is younger than half a day: marks a
 * day old are pruned at open (ST8), so an older one's mark may have been deleted. */
static void settle_log(const struct ik__sql_doubt *g, int got, int no_row)
{
    if (got == 1)
        log_gap(g, "answer_lost", "did commit");
    else if (no_row && ik__mono_ms() - g->since_ms > IK__SQL_MARK_TRUST_MS)
        log_gap(g, "maybe_recorded",
                "may have committed: its writer has no mark, and the doubt is older than "
                "the marks' pruning allows to trust");
    else
        ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                 " (app %s): the commit whose answer was lost did not apply",
                 g->name, g->first, g->count, g->app);
}

/* Settles every open doubt of biz on c, before a new write: 0 (none left but those
 * another call is settling now), or a driver class (one still open: the caller
 * writes nothing, ST6). */
static int settle_open(ik__sql_backend *b, ik__sql_conn *c, const char *biz)
{
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int i;
        for (i = 0; i < IK__SQL_DOUBTS; i++)
            if (b->doubt[i].write_no && !b->doubt[i].settling && strcmp(b->doubt[i].biz, biz) == 0)
                break;
        struct ik__sql_doubt g;
        if (i < IK__SQL_DOUBTS) {
            b->doubt[i].settling = 1; /* ours: no other call logs it */
            g = b->doubt[i];
        }
        pthread_mutex_unlock(&b->mu);
        if (i == IK__SQL_DOUBTS) return 0;
        int no_row = 0;
        int rc = committed(b, c, biz, g.lane, g.write_no, &no_row);
        if (rc >= 0) settle_log(&g, rc, no_row);
        pthread_mutex_lock(&b->mu);
        b->doubt[i].settling = 0;
        if (rc >= 0) {
            b->doubt[i].write_no = 0;
            lane_release_locked(b, g.lane);
        }
        pthread_mutex_unlock(&b->mu);
        if (rc < 0) return rc;
    }
}

/* Keeps a doubt that could not be settled in the call (its lane stays taken, ST7);
 * a full table logs the oldest as a gap (it may have committed). */
static void keep_doubt(ik__sql_backend *b, const struct ik__sql_doubt *g)
{
    struct ik__sql_doubt old;
    memset(&old, 0, sizeof old);
    pthread_mutex_lock(&b->mu);
    int i = -1;
    for (int j = 0; j < IK__SQL_DOUBTS; j++) {
        if (!b->doubt[j].write_no) {
            i = j;
            break;
        }
        if (!b->doubt[j].settling && (i < 0 || b->doubt[j].write_no < b->doubt[i].write_no)) i = j;
    }
    if (i < 0) { /* every one is being settled now: log the new one */
        pthread_mutex_unlock(&b->mu);
        log_gap(g, "maybe_recorded", "may have committed (too many doubts to settle)");
        return;
    }
    if (b->doubt[i].write_no) old = b->doubt[i];
    b->doubt[i] = *g;
    b->doubts_kept++;
    if (old.write_no) lane_release_locked(b, old.lane);
    pthread_mutex_unlock(&b->mu);
    if (old.write_no)
        log_gap(&old, "maybe_recorded", "may have committed (too many doubts to settle)");
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

int ik__sql_doubts(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    int n = 0;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < IK__SQL_DOUBTS; i++)
        n += b->doubt[i].write_no != 0;
    pthread_mutex_unlock(&b->mu);
    return n;
}

void ik__sql_settle(ik__backend *be, int64_t deadline_ns, const char *refused)
{
    ik__sql_backend *b = ik__sql_of(be);
    int64_t deadline = deadline_ns / 1000000; /* ik__mono_ms */
    char hz[300]; /* a refusal found meanwhile (the connections' own checks) */
    for (int i = 0; i < IK__SQL_DOUBTS; i++) { /* ST9: no other call runs now */
        struct ik__sql_doubt g = b->doubt[i];
        if (!g.write_no) continue;
        b->doubt[i].write_no = 0;
        int got = IK__SQL_EGONE, no_row = 0, idx;
        ik__sql_conn *c;
        if (!refused && ik__hazards_refused(&b->base.hz, hz, sizeof hz)) refused = hz;
        if (!refused && ik__mono_ms() < deadline && ik__sql_get(b, &idx, &c, NULL, 0) == 0) {
            got = committed(b, c, g.biz, g.lane, g.write_no, &no_row);
            ik__sql_put(b, idx, got < 0 ? got : 0);
            if (ik__mono_ms() > deadline + IK__SQL_IO_MS) got = IK__SQL_EGONE; /* late */
        }
        if (got >= 0) {
            settle_log(&g, got, no_row);
            continue;
        }
        char what[400];
        snprintf(what, sizeof what,
                 "may have committed, and was still open at close, not settled (%s)",
                 refused ? refused : "no answer by the deadline");
        log_gap(&g, "maybe_recorded", what);
        b->open_left++;
    }
}

void ik__sql_tags_close(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    if (!b) return;
    if (!b->opened) return;
    cycle_log(b);
    int64_t deadline = ik__mono_ms() + IK__SETTLE_MS;
    ik__sql_settle(be, deadline * 1000000, NULL); /* what ik_coord_settle left */
    /* our marks serve no one once our doubts are settled (ST8) */
    if (b->writes == 0 || b->open_left || b->cut || ik__mono_ms() >= deadline) return;
    char pattern[40];
    snprintf(pattern, sizeof pattern, "%.30s%%", b->writer);
    const char *p[] = {pattern};
    int idx;
    ik__sql_conn *c;
    if (ik__sql_get(b, &idx, &c, NULL, 0) != 0) return;
    int rc = b->d->exec(c, IK__SQL_MARK_DROP, p, 1, NULL, NULL, 0);
    ik__sql_put(b, idx, rc);
}

/* The advance of ik__sql_tag_advance, its marks written as lane (-1: a segment
 * write, no mark). */
static int advance_lane(ik__sql_backend *b, const char *app, const char *name, ik_tag_kind kind,
                        const char *biz, int64_t delta, int lane, int64_t *first)
{
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
    uint64_t write_no = 0;
    if (lane >= 0) {
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
    int64_t sent_ms = ik__mono_ms();
    rc = advance_on(b, c, app, biz, kind, delta, lane, write_no, first, &cls);
    ik__sql_put(b, idx, cls);
    if (rc != IK_EINDOUBT || !write_no) return rc;
    /* the COMMIT's answer was lost: settle it now if the database is back soon */
    struct ik__sql_doubt g = {
        .first = 0, .count = delta, .write_no = write_no, .lane = lane, .since_ms = sent_ms};
    snprintf(g.biz, sizeof g.biz, "%s", biz);
    snprintf(g.name, sizeof g.name, "%s", name);
    snprintf(g.app, sizeof g.app, "%s", app);
    g.first = *first; /* max_id under the row lock: the range the commit took, if it did */
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    for (;;) {
        int got = ik__sql_get(b, &idx, &c, NULL, 0);
        if (got == 0) {
            int no_row = 0;
            got = committed(b, c, biz, lane, write_no, &no_row);
            ik__sql_put(b, idx, got < 0 ? got : 0);
            if (got == 1) {
                ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                         " (app %s): the commit whose answer was lost did apply: handed out",
                         name, g.first, delta, app);
                return IK_OK;
            }
            if (got == 0) { /* nothing to hand out, nothing lost: said once, as settle_log */
                ik__logf("tag doubt settled tag=%s first=%" PRId64 " count=%" PRId64
                         " (app %s): the commit whose answer was lost did not apply",
                         name, g.first, delta, app);
                return IK_ESTORE;
            }
        }
        pthread_mutex_lock(&b->mu);
        int cut = b->cut; /* a bounded stop's deadline passed: no more tries */
        pthread_mutex_unlock(&b->mu);
        if (cut || ik__mono_ms() >= until) break;
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    keep_doubt(b, &g);
    return IK_EINDOUBT;
}

int ik__sql_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                        ik__tag_write *w, int64_t *first)
{
    int64_t delta = w->own.delta;
    ik__sql_backend *b = ik__sql_of(be);
    char biz[BIZ_TAG_MAX * 3];
    if (delta <= 0) return IK_EINVAL;
    if (biz_tag(app, name, biz, sizeof biz, NULL, 0)) return IK_ENOTFOUND;
    /* a sequence write carries a mark of its lane, so that a lost COMMIT answer is
     * settled (ST5, ST6) */
    int lane = kind == IK_TAG_SEQUENCE ? lane_get(b) : -1;
    int rc = advance_lane(b, app, name, kind, biz, delta, lane, first);
    if (lane >= 0) lane_release(b, lane);
    return rc;
}
