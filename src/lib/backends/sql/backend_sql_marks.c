/* backend_sql_marks.c: the commit marks, by which SQL tells the doubt engine
 * (counters/doubt.c; docs/architecture.md, "Doubts ⇄ backend") what the store holds
 * of a tag write whose COMMIT answer was lost (docs/sql.md, "Tags"). The engine keeps,
 * carries, decides, logs and settles the doubts; this file is only the store's part
 * of it, the evidence:
 *
 *   SM1. The mark. Every advance (backend_sql_tags.c, either kind) upserts in its own
 *       transaction the row (its writer, biz_tag) of idk_commit_mark with its write
 *       id: the engine's writer of the advance's lane and w->own.wid. A lane is one
 *       advance at a time (doubt.c's D3), so a row's write ids only ever come from
 *       one write after another, in increasing order, and the row holds the id of
 *       the lane's last write that committed.
 *   SM2. The read (read_mark): the lane's row, under the tag's row lock, so that a
 *       COMMIT still in progress on a dead connection has ended one way or the other:
 *       no send of a doubt can land after it (its evidence's moved). The mark is the
 *       record: the one (write id) pair it holds, reaching back to that write id: a
 *       doubt's own id is held; a lower mark (or no row) would have been raised by
 *       the doubt had it applied; a higher one cannot reach back to it.
 *   SM3. A write of a lane goes out only once every doubt the lane carries is read
 *       (ik__sql_marks_settle; a lane that cannot read sends nothing), so the engine
 *       decides each, and a lane holds at most one open doubt.
 *   SM4. Marks are pruned at open when older than a day (ik__sql_marks_prune), past
 *       the engine's trust horizon (backend.h's IK__DOUBT_KEPT_MS), and a backend that
 *       closes with every doubt it left read deletes its own (ik__sql_marks_drop).
 *   SM5. Within the advance (ik__sql_marks_reread), a lost COMMIT answer is read
 *       again for IK__SQL_IO_MS, into the own write's evidence: the engine hands the
 *       range out, fails the call as not done, or keeps it (unread).
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
            int cls = ik__sql_commit_proved(b, c, (ik__sql_call){IK__SQL_COMMIT, NULL, 0},
                                            "idk_commit_mark", NULL, &cm);
            *proven = cm.state == IK__SQL_COMMITTED;
            if (!*proven) snprintf(why, why_len, "%s", cm.why);
            /* the read stands whatever its own commit did: it was made under the lock */
            return cm.state == IK__SQL_UNANSWERED || cm.state == IK__SQL_NOT_COMMITTED ? cls : 0;
        }
    }
    int rb = ik__sql_abort(d, c, rc);
    return rc ? rb : 0;
}

/* What the lane's mark shows of doubt x (SM2): its evidence. */
static void evidence(const ik__doubt *x, uint64_t seen, int no_row, ik__doubt_evidence *e)
{
    memset(e, 0, sizeof *e);
    e->read = e->intact = e->moved = 1; /* under the row lock: nothing of it still lands */
    e->first = -1;
    e->held = !no_row && seen == x->wid;
    e->reaches = no_row || seen <= x->wid;
    if (no_row)
        snprintf(e->what, sizeof e->what, "its writer has no commit mark of the tag");
    else
        snprintf(e->what, sizeof e->what, "its writer's commit mark is of write %" PRIu64, seen);
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
        evidence(&w->carried[i], seen, no_row, &w->ev[i]);
    pthread_mutex_lock(&b->mu);
    b->doubts_left -= w->n_carried; /* read: the engine decides them */
    pthread_mutex_unlock(&b->mu);
    return 0;
}

int ik__sql_marks_reread(ik__sql_backend *b, const char *biz, ik__tag_write *w)
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
        if (rc == 0) { /* read: the engine decides it, and keeps nothing */
            evidence(&w->own, seen, no_row, &w->own_ev);
            if (w->own_ev.held && !proven) { /* SM6: never handed out */
                w->own_ev.code = "store_unsafe";
                snprintf(w->own_ev.what, sizeof w->own_ev.what,
                         "the commit whose answer was lost did apply, but nothing proves it "
                         "lasts: %s",
                         unproven);
            }
            return IK_EINDOUBT;
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
