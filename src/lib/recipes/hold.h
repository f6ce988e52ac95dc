/* hold.h: the hold monitor (hold.c), the one place that decides whether a grant (a
 * held lock, a leadership) is HELD, IN_DOUBT or LOST, for every backend
 * (docs/recipes.md, "The hold monitor"). A backend's lock protocol (recipe.h) only
 * reports evidence: the proof its grant was made with, a probe that proves the grant
 * again (or shows it gone), and what its store says unasked between probes
 * (ik__hold_tell: a watch saw our node or key deleted, the connection dropped).
 *
 * The rule (the lease's, core/lease.c, on the same numbers: backend.h's
 * ik__proof_until_ns): a grant is trusted until the send time of the last round trip
 * that proved it plus the safe window, 2/3 of its term, and not a moment longer,
 * whatever a probe in flight is doing; a grant the store says is gone is LOST at
 * once.
 *
 * Each lock whose protocol has a probe gets two threads at its first grant, until
 * ik_lock_destroy: the monitor, which decides and calls back (on_change, on_proof)
 * and never waits on the store, and the prober, which runs one probe at a time,
 * each cut to the time the window has left. A protocol without a probe (local:,
 * whose grant cannot lapse while the process lives) gets none: its grants are HELD
 * until released, trusted for ever.
 *
 *   (no grant) --ik__hold_begin (the grant's proof)--> HELD
 *   HELD --a probe unanswered, or told NO_ANSWER (the connection dropped)--> IN_DOUBT
 *   IN_DOUBT --a probe sent after the doubt began proves the grant--> HELD
 *   HELD, IN_DOUBT --the window's end passes (last proof's send + 2/3 term), or a
 *                    probe or the store says GONE--> LOST
 *   any --ik__hold_end--> (no grant): no callback for it once that returns
 *
 * Invariants
 *   HM1. HELD or IN_DOUBT only while now < the last proof's send + the window: the
 *        monitor wakes at that instant and declares LOST, the prober's state
 *        notwithstanding.
 *   HM2. A proof only moves the window's end forward; each move is told (on_proof)
 *        before the state it may restore (HELD) is.
 *   HM3. No callback is made with the hold's mutex held, and none for a grant after
 *        ik__hold_end returned.
 */
#ifndef IK_HOLD_H
#define IK_HOLD_H

#include "backend.h" /* ik__lease_proof, ik__proof_until_ns */

#include <pthread.h>
#include <stdint.h>

/* What a probe, or the store unasked, shows of a grant. */
typedef enum ik__hold_fact {
    IK__HOLD_NO_ANSWER = 0, /* nothing learned (no answer by the deadline, no connection) */
    IK__HOLD_STANDS = 1,    /* the grant stands, as of a round trip sent at proof.sent_mono_ns */
    IK__HOLD_GONE = 2,      /* the store says the grant is gone: deleted, revoked, expired */
} ik__hold_fact;

typedef struct ik__hold_evidence {
    ik__hold_fact fact;
    ik__lease_proof proof; /* STANDS: the proving round trip's send time, and its term */
    char why[160];         /* GONE, NO_ANSWER: in the store's words where it gave some */
} ik__hold_evidence;

/* A lock's hold, in the common part of every lock (recipe.h's struct ik_lock). */
typedef struct ik__hold {
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* the monitor waits on it; hold_end on cb_busy */
    pthread_cond_t pcv; /* the prober waits on it */
    /* under mu */
    uint64_t grant;         /* bumped at every begin and end */
    int active;             /* a grant is watched (begin .. end) */
    ik_hold_state state;    /* HELD, IN_DOUBT or LOST while active */
    char why[160];          /* of the latest change */
    ik__lease_proof proof;  /* the last proof (term IK_FOREVER: no probe, no lapse) */
    int64_t doubt_ns;       /* IN_DOUBT since: a proof must be sent after it */
    int told_gone;          /* ik__hold_tell GONE for this grant: LOST at once */
    int told_doubt;         /* ... NO_ANSWER: IN_DOUBT at once */
    int64_t told_doubt_ns;  /* when */
    int told_poke;          /* ... STANDS: the store answers again: a probe now */
    char told_why[160];     /* the store's words of told_gone / told_doubt */
    char doubt_why[160];    /* the last probe's or told doubt's words, for LOST's */
    int first_proof;        /* the grant's own proof is still to be told (on_proof) */
    int64_t next_probe_ns;  /* when the next probe is due */
    int probe_asked;        /* the monitor asks the prober for a probe */
    int probe_running;      /* the prober is in ops->probe */
    uint64_t probe_grant;   /* the grant the asked or running probe is for */
    int64_t probe_deadline; /* and its deadline: the window's end when asked */
    int64_t probe_sent;     /* when it was asked (a doubt it shows began then) */
    int probe_done;         /* probe_ev holds its evidence, for probe_grant */
    ik__hold_evidence probe_ev;
    int probe_stop; /* __atomic: the probe or watch in flight is to end: its grant
                       ended, or (a watch) a probe is due */
    int watching;   /* the prober is in ops->watch */
    int tend_asked; /* ik__hold_poke between grants: ops->tend */
    int cb_busy;    /* the monitor is calling the owner back */
    int quit;       /* the threads end (ik__hold_fini) */
    int threads;    /* monitor and prober started */
    pthread_t monitor, prober;
} ik__hold;

struct ik_lock;

/* For recipe.c (hold.c). init: 0 or an error (nothing to undo then). quit, after the
 * last end: joins the threads (a probe in flight ends by its stop or its deadline),
 * before the protocol's lock_fini; fini, after it: frees what init made. */
int ik__hold_init(struct ik_lock *lk);
void ik__hold_quit(struct ik_lock *lk);
void ik__hold_fini(struct ik_lock *lk);
/* A grant begins, on ev (the protocol's proof_of_grant: STANDS with the proof it
 * was made with, its term the session timeout or lease TTL, IK_FOREVER where it
 * cannot lapse; or GONE). HELD (LOST at once for GONE); the threads start with the
 * first grant of a lock with a probe. 0, or IK_ESYS(EAGAIN) when they cannot start
 * (the grant must then be given back: nobody could tell its holder of a loss). */
int ik__hold_begin(struct ik_lock *lk, const ik__hold_evidence *ev);
/* The grant's watching ends (its release comes next): no callback for it once this
 * returns, and the probe in flight, if any, is asked to stop. The state it ended in
 * (IK_HOLD_IDLE if none was active). */
ik_hold_state ik__hold_end(struct ik_lock *lk);
/* The hold's state (IK_HOLD_IDLE if no grant is active) and why. */
ik_hold_state ik__hold_state(struct ik_lock *lk, char *why, size_t why_len);
/* ik_lock_trusted_until's answer for an active grant: CLOCK_MONOTONIC ns; 0 when
 * none is active or it is LOST; INT64_MAX for a grant that cannot lapse. */
int64_t ik__hold_trusted_until(struct ik_lock *lk);

/* hold_tell.c, for the lock protocols (below them all): what the store said unasked,
 * for the grant being watched (ignored while none is): GONE (our node or key is
 * deleted, the session expired: LOST at once), NO_ANSWER (the connection dropped:
 * IN_DOUBT at once), STANDS (connected again: a probe now). Also ik__hold_poke:
 * the lock's tend op is due (between grants: a release's delete to send again). Any
 * thread; takes only the hold's mutex, never blocks. */
void ik__hold_tell(struct ik_lock *lk, ik__hold_fact fact, const char *why);
void ik__hold_poke(struct ik_lock *lk);
/* hold_tell.c: ik__mono_ns ns as CLOCK_MONOTONIC ns (the clock of
 * ik_lock_trusted_until), never later than the same instant; 0 and INT64_MAX as they
 * are. */
int64_t ik__hold_public_ns(int64_t mono_ns);

#endif
