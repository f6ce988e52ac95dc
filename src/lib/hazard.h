/* hazard.h: the store hazards' shared state, below every backend (docs/hazards.md).
 *
 * A backend judges each setting of its store that can lose an acknowledged write, a
 * lease or a lock with one check, and keeps the latest verdicts here: in the
 * ik__hazards of its handle (backend.h). This file turns a finding into a verdict
 * (refused, or a risk under --allow-unsafe-store), logs every change of verdict
 * once (the setting, its value, what to change), says whether writes are refused
 * now, and when a connection is due for its next check. It does no I/O of its own.
 *
 * Invariants
 *   HZ1. While any row is refused, ik__hazards_refused answers IK_EUNSAFE: the
 *        backend sends no slot renewal and no counter advance (it asks before each).
 *   HZ2. A row changes verdict only through ik__hazards_update, which logs the
 *        change: no setting turns unsafe, or safe again, without a line. (A risk
 *        a backend finds at its first check, not one --allow-unsafe-store accepts,
 *        is the one exception: it is left to the caller to report, as serve's
 *        start and check's table do; a backend sets such a row's verdict to
 *        IK_VERDICT_RISK itself.)
 *   HZ3. While refused, every ask is due (ik__hazards_due): a store made safe again
 *        is found so at the next write, not an interval later.
 *   HZ4. A write whose own round trip carried evidence (a backend's proof) is
 *        trusted only on that evidence's verdict (ik__hazards_proof), not on the
 *        rows installed now: those may be older than the write.
 *
 * Threads: every call is thread-safe (one mutex); init and free belong to the
 * backend's open and close.
 */
#ifndef IK_HAZARD_H
#define IK_HAZARD_H

#include "idkeeper.h"

#include <pthread.h>

/* At most this many checks per backend. */
#define IK__HAZARDS_MAX 24

typedef struct ik__hazards {
    pthread_mutex_t mu;
    int ready;           /* init was called (a backend without checks leaves it 0) */
    int allow_unsafe;    /* --allow-unsafe-store: unsafe rows are risks */
    int64_t interval_ms; /* re-check at least this often while serving */
    char where[200];     /* the store, for log lines (no password) */
    ik_hazard rows[IK__HAZARDS_MAX];
    size_t n;
    int refused;        /* rows refused now */
    int64_t checked_ns; /* mono ns of the latest update (0: never) */
} ik__hazards;

/* interval_ms: the lease's TTL or session timeout; the re-check interval is a
 * third of it, at most 10 s and at least 100 ms. where: the store as logs name it. */
void ik__hazards_init(ik__hazards *h, const ik_coord_options *o, int64_t ttl_ms, const char *where);
void ik__hazards_free(ik__hazards *h);

/* Fills one row: verdict ok if !unsafe, else refused, or risk where unsafe store are
 * allowed (or where risk_only: a hazard idkeeper cannot rule out, as an unreadable
 * setting under --allow-unsafe-store). fix: what to change (printf format), kept only
 * for an unsafe row. */
void ik__hazard_row(const ik__hazards *h, ik_hazard *r, const char *check, const char *value,
                    int unsafe, const char *fix, ...) __attribute__((format(printf, 6, 7)));

/* Installs the findings of one check (rows with a check name already known replace
 * it; new names are added), logs each change of verdict (HZ2), and answers as
 * ik__hazards_refused. */
int ik__hazards_update(ik__hazards *h, const ik_hazard *rows, size_t n, char *why, size_t why_len);

/* The verdict of one write's own evidence (docs/hazards.md, "Proof with every write"):
 * IK_EUNSAFE with why naming the first refused row of rows[n] ("CHECK is VALUE
 * (WHERE): FIX"), else 0, whatever the installed rows say (a slower check may install
 * its rows after a write's, HZ4). No I/O, no install: the caller installs the same
 * rows with ik__hazards_update, so that a change is logged (HZ2). */
int ik__hazards_proof(ik__hazards *h, const ik_hazard *rows, size_t n, char *why, size_t why_len);

/* 0 if no row is refused; else IK_EUNSAFE with why naming the first refused row:
 * "CHECK is VALUE (WHERE): FIX". No I/O. */
int ik__hazards_refused(ik__hazards *h, char *why, size_t why_len);

/* 1 if a connection last checked at mono ns last_ns (0: never) is due for its next
 * check: never checked, older than the interval, or any row refused now (HZ3). */
int ik__hazards_due(ik__hazards *h, int64_t last_ns);

/* A copy of the rows (*out freed with ik_free; NULL and 0 when there are none). */
int ik__hazards_copy(ik__hazards *h, ik_hazard **out, size_t *n);

#endif
