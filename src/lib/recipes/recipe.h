/* recipe.h: the seam between the generic recipes (recipe.c: arguments, read-write
 * locks, elections; hold.c: the hold monitor) and the backends' lock protocols
 * (recipe_local.c: flock'ed files and tickets; recipe_zk.c: ephemeral sequential
 * nodes; recipe_sql.c: session locks; recipe_etcd.c: etcd's concurrency recipe).
 *
 * One small vtable per backend, reached through the backend's own ops table
 * (ik__backend_ops.recipe, backend.h): the registry in coord.c chooses it with the
 * backend, and recipe.c compares no scheme. Every recipe is a lock of some
 * kind: an election is a LATCH lock whose holder leads (Curator's LeaderLatch and
 * InterProcessMutex are the same protocol under two node names), and the halves
 * of a read-write lock are READ and WRITE locks.
 *
 * A protocol takes, keeps and gives back grants; it never decides whether a grant
 * is still held. The hold monitor (hold.h) does, for every backend, from the
 * evidence the protocol reports: the proof of a grant (proof_of_grant), a probe
 * that proves it again or shows it gone, and what the store says unasked
 * (ik__hold_tell). A protocol's own state is IDLE, WAITING or HELD (granted, until
 * released); its info may say LOST or IN_DOUBT where its own check knows worse (a
 * session known dead), and recipe.c reports the worse of the two.
 *
 * A backend's lock struct starts with struct ik_lock (the common part); recipe.c
 * allocates ops->lock_size bytes, fills the common part and calls lock_init.
 *
 * Threads: acquire and release are called by one thread at a time per lock;
 * cancel and info from any thread at any time; probe, watch and tend on the hold's
 * prober thread. ik__hold_tell and ik__hold_poke from any thread, the protocol's own
 * locks held or not: they take only the hold's mutex, which is never held while
 * the hold calls the protocol.
 */
#ifndef IK_RECIPE_H
#define IK_RECIPE_H

#include "backend.h"
#include "hold.h"
#include "rules.h"

typedef enum ik__lock_kind {
    IK__LOCK_MUTEX = 0, /* zk: _c_<uuid>-lock-<seq>     local: PATH.lock   */
    IK__LOCK_READ = 1,  /* zk: _c_<uuid>-__READ__<seq>  local: PATH.rwlock */
    IK__LOCK_WRITE = 2, /* zk: _c_<uuid>-__WRIT__<seq>  local: PATH.rwlock */
    IK__LOCK_LATCH = 3, /* zk: _c_<uuid>-latch-<seq>    local: PATH.elect  */
    /* A semaphore (semaphore.c) is two locks on one PATH: its queue, a mutex whose
     * holder is the one contender that waits for a lease, and its lease. Each backend
     * lays them out as docs/recipes.md, "Semaphores", shows (zk: the queue is
     * PATH/locks with Curator's names, or PATH-__lock__ with kazoo's; a lease is a
     * node of PATH/leases, or of PATH). */
    IK__LOCK_SEMQ = 4, /* the queue */
    IK__LOCK_SEMA = 5, /* a lease, taken by the queue's holder */
} ik__lock_kind;

/* The longest semaphore path: room for the suffixes of its parts ("/leases",
 * "-__lock__") within IK__RECIPE_PATH_MAX. */
#define IK__SEMA_PATH_MAX 390

/* The common part of every backend's lock. Set before lock_init; read-only after. */
struct ik_lock {
    const ik__recipe_ops *ops;
    ik__backend *be;
    ik__lock_kind kind;
    char *path;                /* normalized: "/a/b" */
    char *data;                /* contents of our node or ticket */
    ik_hold_cb on_change;      /* may be NULL */
    ik_hold_proof_cb on_proof; /* may be NULL */
    void *ctx;
    int in_rwlock; /* a half of an ik_rwlock: freed with it */
    /* SEMQ and SEMA: the semaphore's max and layout; SEMA: its queue, which the
     * acquire's caller holds while acquire runs (semaphore.c) */
    int64_t sema_max;
    ik_semaphore_layout sema_layout;
    ik_lock *sema_queue;
    ik__hold hold; /* the hold monitor's (hold.h): recipe.c, hold.c and hold_tell.c only */
};

struct ik__recipe_ops {
    const char *scheme; /* the backend's scheme, for messages: "local", "zk" */
    size_t lock_size;   /* sizeof the backend's lock struct */

    /* Backend state of a new lock (nothing taken). 0 or an error. */
    int (*lock_init)(ik_lock *lk);
    /* Releases a grant if any and frees the backend state (not lk itself). */
    void (*lock_fini)(ik_lock *lk);
    /* ik_lock_acquire's contract (include/idkeeper.h); the grant is HELD until
     * release (the hold monitor decides whether it is still held). A SEMA lock is
     * acquired only while its caller holds lk->sema_queue: it takes a lease if fewer
     * than lk->sema_max are held, else waits for one to be given back (the one waiter
     * of the semaphore: no herd); IK_ELOST when it finds the queue lost meanwhile (the
     * caller queues again), nothing taken. */
    int (*acquire)(ik_lock *lk, int64_t timeout_ms, int64_t *fence);
    /* ik_lock_release's contract: gives the grant back, whatever the hold monitor
     * found (0: given back, or nothing was left to give). */
    int (*release)(ik_lock *lk);
    /* on = 1: ik_lock_cancel's contract (sticky until an acquire returns
     * IK_ECLOSED). on = 0: forgets a cancel that no acquire consumed. */
    void (*cancel)(ik_lock *lk, int on);
    /* ik_lock_get_info's contract; out is zeroed by the caller. */
    void (*info)(ik_lock *lk, ik_hold_info *out);
    /* The data of the first live LATCH contender at path (the leader): *id freed
     * with free(). IK_ENOTFOUND if none. */
    int (*leader)(ik__backend *be, const char *path, char **id);

    /* ---- evidence for the hold monitor (hold.h) -----------------------------------
     * NULL where a grant cannot lapse while the process lives (local:): its grants
     * are HELD until released and trusted for ever. */

    /* What the grant that acquire just returned rests on: STANDS with its proof (the
     * send time of the round trip that proved it, ik__mono_ns, and its term: the
     * session timeout, the lease TTL), or GONE where the protocol already knows it
     * is (a watch that fired before the hold monitor took the grant over). On
     * acquire's thread, right after it returned 0. */
    void (*proof_of_grant)(ik_lock *lk, ik__hold_evidence *out);
    /* One round trip that proves the grant: out->fact STANDS with the proof (that
     * round trip's send time, and the term), GONE (the store says it is: why in its
     * words) or NO_ANSWER (why). Waits until deadline_ns (ik__mono_ns) at the most,
     * and returns within about 100 ms once *stop is set (the grant was released).
     * On the prober thread, for a grant from its acquire to its release. */
    void (*probe)(ik_lock *lk, int64_t deadline_ns, const int *stop, ik__hold_evidence *out);
    /* Optional: between probes, waits until deadline_ns, or *stop, for the store to
     * say unasked that the grant is gone (a session's end on its connection):
     * GONE, NO_ANSWER when nothing was said, or STANDS with a proof where what it
     * said proved the grant after all. On the prober thread. NULL: the protocol
     * tells such news through ik__hold_tell. */
    void (*watch)(ik_lock *lk, int64_t deadline_ns, const int *stop, ik__hold_evidence *out);
    /* Optional: work of the protocol that waits on a store event between grants (a
     * release's delete whose answer was lost, sent again once connected), on the
     * prober thread when the protocol asks with ik__hold_poke. */
    void (*tend)(ik_lock *lk);

    /* ---- semaphores (semaphore.c); NULL where the backend has none -------------- */

    /* The max stored with the semaphore of the SEMA lock lk, storing lk->sema_max if
     * none is: 0 and *stored (0: what the store holds there is not a max, and is
     * left alone, as kazoo leaves it), or an ik_error (why in the store's words).
     * Called before the queue is joined. */
    int (*sema_max)(ik_lock *lk, int64_t *stored, char *why, size_t why_len);
    /* The leases held at the semaphore path (normalized) in layout: *out (malloc'd,
     * freed with free; NULL when *n is 0) in grant order, *max the max stored (0:
     * none). 0 or an ik_error. */
    int (*sema_holders)(ik__backend *be, const char *path, ik_semaphore_layout layout, int64_t *max,
                        ik_semaphore_holder **out, size_t *n);
};

/* recipe.c, for semaphore.c: a lock of kind on path (normalized by the caller or
 * not), made, acquired with its grant handed to the hold monitor, released after
 * the hold ends, described, and freed, as ik_lock_* do for a mutex. */
int ik__lock_new(ik_coord *c, const char *path, ik__lock_kind kind, ik_hold_cb cb,
                 ik_hold_proof_cb proof_cb, void *ctx, const char *data, int64_t sema_max,
                 ik_semaphore_layout sema_layout, ik_lock **out);
void ik__lock_free(ik_lock *lk);
int ik__lock_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence);
int ik__lock_release(ik_lock *lk);
void ik__lock_info(ik_lock *lk, ik_hold_info *out);
int64_t ik__lock_trusted_until(ik_lock *lk);

/* The path rule of every recipe: ik__recipe_path and IK__RECIPE_PATH_MAX, rules.h. */

#endif
