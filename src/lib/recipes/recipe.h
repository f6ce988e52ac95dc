/* recipe.h: the seam between the generic recipes (recipe.c: arguments, read-write
 * locks, elections) and the backends' lock protocols (recipe_local.c: flock'ed
 * files and tickets; recipe_zk.c: ephemeral sequential nodes).
 *
 * One small vtable per backend, reached through the backend's own ops table
 * (ik__backend_ops.recipe, backend.h): the registry in coord.c chooses it with the
 * backend, and recipe.c compares no scheme. Every recipe is a lock of some
 * kind: an election is a LATCH lock whose holder leads (Curator's LeaderLatch and
 * InterProcessMutex are the same protocol under two node names), and the halves
 * of a read-write lock are READ and WRITE locks.
 *
 * A backend's lock struct starts with struct ik_lock (the common part); recipe.c
 * allocates ops->lock_size bytes, fills the common part and calls lock_init.
 *
 * Threads: acquire and release are called by one thread at a time per lock;
 * cancel and info from any thread at any time. A backend reports state changes of
 * a grant (IN_DOUBT, HELD again, LOST) through ik__lock_notify, from one thread at
 * a time per lock, never while it holds a lock of its own that acquire, release,
 * cancel or info take.
 */
#ifndef IK_RECIPE_H
#define IK_RECIPE_H

#include "backend.h"

typedef enum ik__lock_kind {
    IK__LOCK_MUTEX = 0, /* zk: _c_<uuid>-lock-<seq>     local: PATH.lock   */
    IK__LOCK_READ = 1,  /* zk: _c_<uuid>-__READ__<seq>  local: PATH.rwlock */
    IK__LOCK_WRITE = 2, /* zk: _c_<uuid>-__WRIT__<seq>  local: PATH.rwlock */
    IK__LOCK_LATCH = 3, /* zk: _c_<uuid>-latch-<seq>    local: PATH.elect  */
} ik__lock_kind;

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
    int in_rwlock;      /* a half of an ik_rwlock: freed with it */
    int64_t trusted_ns; /* __atomic: ik__mono_ns until which the grant is trusted; 0: none */
};

struct ik__recipe_ops {
    const char *scheme; /* the backend's scheme, for messages: "local", "zk" */
    size_t lock_size;   /* sizeof the backend's lock struct */

    /* Backend state of a new lock (nothing taken). 0 or an error. */
    int (*lock_init)(ik_lock *lk);
    /* Releases a grant if any and frees the backend state (not lk itself). */
    void (*lock_fini)(ik_lock *lk);
    /* ik_lock_acquire's contract (include/idkeeper.h). */
    int (*acquire)(ik_lock *lk, int64_t timeout_ms, int64_t *fence);
    /* ik_lock_release's contract. */
    int (*release)(ik_lock *lk);
    /* on = 1: ik_lock_cancel's contract (sticky until an acquire returns
     * IK_ECLOSED). on = 0: forgets a cancel that no acquire consumed. */
    void (*cancel)(ik_lock *lk, int on);
    /* ik_lock_get_info's contract; out is zeroed by the caller. */
    void (*info)(ik_lock *lk, ik_hold_info *out);
    /* The data of the first live LATCH contender at path (the leader): *id freed
     * with free(). IK_ENOTFOUND if none. */
    int (*leader)(ik__backend *be, const char *path, char **id);
    /* 1: a grant can lapse while this process lives (a session or a lease) */
    int lapses;
};

/* lock_notify.c: tells the lock's owner (the on_change callback) of a state change. */
void ik__lock_notify(ik_lock *lk, ik_hold_state state, const char *why);
/* lock_notify.c: a proof of the grant made it trusted until until_ns (ik__mono_ns);
 * tells on_proof if that moved the end of the window. 0: the grant ended. */
void ik__lock_proved(ik_lock *lk, int64_t until_ns);
/* lock_notify.c: ik__mono_ns ns as CLOCK_MONOTONIC ns (the public clock of
 * ik_lock_trusted_until): never later than the same instant. */
int64_t ik__lock_public_ns(int64_t mono_ns);

/* recipe.c: checks and normalizes a recipe path into out ("/a/b"). 0 or IK_EINVAL
 * with a reason in why. */
int ik__recipe_path(const char *path, char *out, size_t out_len, char *why, size_t why_len);

#define IK__RECIPE_PATH_MAX 400

#endif
