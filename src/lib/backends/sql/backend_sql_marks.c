/* backend_sql_marks.c: the commit marks, by which SQL tells the doubt engine
 * (counters/doubt.c; docs/architecture.md, "Doubts ⇄ backend") whether a tag write
 * whose COMMIT answer was lost applied (docs/sql.md, "Tags"). The engine keeps,
 * carries, logs and settles the doubts; this file is only the store's part of it:
 *
 *   SM1. The mark. Every advance (backend_sql_tags.c, either kind) upserts in its own
 *       transaction the row (its writer, biz_tag) of idk_commit_mark with its write
 *       id: the engine's writer of the advance's lane and w->own.wid. A lane is one
 *       advance at a time (doubt.c's D3), so a row's write ids only ever come from
 *       one write after another, in increasing order, and the row holds the id of
 *       the lane's last write that committed.
 *   SM2. The read (read_mark): the lane's row, under the tag's row lock, so that a
 *       COMMIT still in progress on a dead connection has ended one way or the other.
 *       Its id equal to a doubt's: that write applied; below it (or no row): it did
 *       not, and never will (its transaction held the row lock we now hold).
 *   SM3. A write of a lane goes out only once every doubt the lane carries is decided
 *       by that read (ik__sql_marks_settle; a lane that cannot read sends nothing),
 *       so a lane holds at most one open doubt, and a mark above a carried doubt's id
 *       cannot be: were one seen, the doubt is logged as of unknown place.
 *   SM4. Marks are pruned at open when older than a day (ik__sql_marks_prune), and a
 *       backend that closes with every doubt it left settled deletes its own
 *       (ik__sql_marks_drop). A doubt older than MARK_TRUST_MS whose lane has no row
 *       at all is therefore not settled as "did not apply" but logged as of unknown
 *       place.
 *   SM5. Within the advance (ik__sql_marks_reread), a lost COMMIT answer is read
 *       again for IK__SQL_IO_MS: applied, the range is handed out ("tag doubt settled
 *       ... handed out"); not applied, the call fails as nothing done ("tag doubt
 *       settled ... did not apply"); unread, the engine keeps it (IK_EINDOUBT).
 *   SM6. A range is handed out only on evidence that its commit lasts: the reread
 *       that finds it applied writes the mark again as it is and commits with the
 *       proof after its COMMIT (SP1, SP2 of backend_sql_proof.c). Its commit comes
 *       later in the log than the lost one: flushed, or acknowledged by a
 *       synchronous standby, it carries the lost one with it. A commit seen only on
 *       the primary, its replication cancelled, is a gap, never handed out.
 *
 * Threads: any; b->mu guards the writer and the count of doubts left.
 */
#include "backend_sql.h"
#include "internal.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

/* SM4: half the marks' pruning age (a day), for the difference of clock rates */
#define MARK_TRUST_MS (12 * 3600 * 1000LL)

/* The mark of writer on biz, read under the tag's row lock (SM2): 0 with *seen (its
 * write id; 0 and *no_row = 1: the writer has no mark of biz), or a driver class.
 * prove (SM6): where the mark is that write id, the mark is written again as it is
 * and the read's transaction committed with its proof after it; *proven = 1 if that
 * commit and its evidence were clean (else *why says what was not). Otherwise the
 * read is rolled back. */
static int read_mark(ik__sql_backend *b, ik__sql_conn *c, const char *biz, const char *writer,
                     uint64_t prove, uint64_t *seen, int *no_row, int *proven, char *why,
                     size_t why_len)
{
    const ik__sql_driver *d = b->d;
    const char *p[] = {biz};
    const char *mp[] = {writer, biz};
    ik__sql_res r;
    *proven = 0;
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
    if (rc == 0 && prove && !*no_row && *seen == prove) {
        char sno[24];
        snprintf(sno, sizeof sno, "%" PRIu64, prove);
        const char *sp[] = {writer, biz, sno};
        rc = d->exec(c, IK__SQL_MARK_SET, sp, 3, NULL, NULL, 0);
        if (rc == 0) {
            ik__sql_commit cm;
            int cls = ik__sql_commit_proved(b, c, (ik__sql_call){IK__SQL_COMMIT, NULL, 0}, NULL, &cm);
            *proven = cm.state == IK__SQL_COMMITTED;
            if (!*proven) snprintf(why, why_len, "%s", cm.why);
            /* the read stands whatever its own commit did: it was made under the lock */
            return cm.state == IK__SQL_UNANSWERED || cm.state == IK__SQL_NOT_COMMITTED ? cls : 0;
        }
    }
    int rb = ik__sql_abort(d, c, rc);
    return rc ? rb : 0;
}

/* The fate of doubt x by its lane's mark (SM2-SM4). */
static void judge(const ik__doubt *x, uint64_t seen, int no_row, ik__doubt_verdict *v)
{
    memset(v, 0, sizeof *v);
    v->first = x->first;
    if (!no_row && seen == x->wid) {
        v->fate = IK__DOUBT_LANDED;
        snprintf(v->why, sizeof v->why, "a commit whose answer was lost did commit");
    } else if (seen > x->wid ||
               (no_row && ik__mono_ns() - x->sent_ns > MARK_TRUST_MS * INT64_C(1000000))) {
        v->fate = IK__DOUBT_UNKNOWN; /* SM3 (cannot be), SM4 (a pruned mark) */
        v->first = -1;
        snprintf(v->why, sizeof v->why, "a commit whose answer was lost may have committed: %s",
                 no_row ? "its writer has no mark, and the doubt is older than the marks' "
                          "pruning allows to trust"
                        : "its writer's mark is of a later write");
    } else {
        v->fate = IK__DOUBT_NOT_LANDED;
        snprintf(v->why, sizeof v->why, "the commit whose answer was lost did not apply");
    }
}

int ik__sql_marks_settle(ik__sql_backend *b, ik__sql_conn *c, const char *biz, ik__tag_write *w)
{
    pthread_mutex_lock(&b->mu);
    memcpy(b->writer, w->writer, sizeof b->writer - 1); /* the coord's 30 digits (SM4) */
    pthread_mutex_unlock(&b->mu);
    if (w->n_carried == 0) return 0;
    uint64_t seen = 0;
    int no_row = 0, proven = 0;
    int rc = read_mark(b, c, biz, w->writer, 0, &seen, &no_row, &proven, NULL, 0);
    if (rc) return rc;
    for (int i = 0; i < w->n_carried; i++)
        judge(&w->carried[i], seen, no_row, &w->fate[i]);
    pthread_mutex_lock(&b->mu);
    b->doubts_left -= w->n_carried; /* decided, one way or another */
    pthread_mutex_unlock(&b->mu);
    return 0;
}

int ik__sql_marks_reread(ik__sql_backend *b, const char *app, const char *name, const char *biz,
                         ik__tag_write *w, int64_t *first)
{
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    for (;;) {
        ik__sql_conn *c;
        int idx;
        uint64_t seen = 0;
        int no_row = 0, proven = 0;
        char unproven[400] = "";
        int rc = ik__sql_get(b, &idx, &c, NULL, 0);
        if (rc == 0) {
            rc = read_mark(b, c, biz, w->writer, w->own.wid, &seen, &no_row, &proven, unproven,
                           sizeof unproven);
            ik__sql_put(b, idx, rc);
        }
        if (rc == 0) {
            ik__doubt_verdict v;
            judge(&w->own, seen, no_row, &v);
            if (v.fate == IK__DOUBT_LANDED && !proven) { /* SM6: never handed out */
                v.code = "store_unsafe";
                snprintf(v.why, sizeof v.why,
                         "the commit whose answer was lost did apply, but nothing proves it "
                         "lasts: %s",
                         unproven);
                w->own_fate = v;
                return IK_EINDOUBT;
            }
            if (v.fate == IK__DOUBT_LANDED)
                snprintf(v.why, sizeof v.why,
                         "the commit whose answer was lost did apply: handed out");
            w->own_fate = v; /* logged by the engine, which keeps nothing */
            if (v.fate == IK__DOUBT_UNKNOWN) return IK_EINDOUBT;
            if (v.fate == IK__DOUBT_LANDED) *first = w->own.first;
            return v.fate == IK__DOUBT_LANDED ? IK_OK : IK_ESTORE;
        }
        /* a bounded stop's deadline passed: no more tries */
        if (__atomic_load_n(&b->cut, __ATOMIC_ACQUIRE) || ik__mono_ms() >= until) break;
        struct timespec ts = {0, 200 * 1000000L};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&b->mu);
    b->doubts_left++; /* the engine keeps it */
    pthread_mutex_unlock(&b->mu);
    return IK_EINDOUBT;
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

void ik__sql_marks_drop(ik__sql_backend *b)
{
    /* SM4: our marks serve no one once every doubt we left is settled (the engine
     * settled or logged them all before the backend's close) */
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
