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
    char *path;           /* normalized: "/a/b" */
    char *data;           /* contents of our node or ticket */
    ik_hold_cb on_change; /* may be NULL */
    void *ctx;
    int in_rwlock; /* a half of an ik_rwlock: freed with it */
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
};

/* lock_notify.c: tells the lock's owner (the on_change callback) of a state change. */
void ik__lock_notify(ik_lock *lk, ik_hold_state state, const char *why);

/* recipe.c: checks and normalizes a recipe path into out ("/a/b"). 0 or IK_EINVAL
 * with a reason in why. */
int ik__recipe_path(const char *path, char *out, size_t out_len, char *why, size_t why_len);

#define IK__RECIPE_PATH_MAX 400

/* Contenders on ZooKeeper: a child name that holds one of the kind's patterns
 * followed by ZooKeeper's sequence at its end (Java's "%010d" of a signed 32-bit
 * counter: "0000000042", "-000000005", "-2147483648"). recipe_zk_names.c, pure so
 * that unit tests reach it. */
typedef struct ik__contender {
    const char *name; /* points into the caller's array of names */
    int32_t seq;      /* the trailing sequence, as ZooKeeper's signed 32-bit int */
    int writer;       /* READ/WRITE kinds: 1 for a __WRIT__ node */
    int64_t czxid;    /* the node's creation zxid: 0 from ik__contender_parse, set by
                         the caller when ik__contenders_need_czxid says so */
} ik__contender;

/* Parses name as a contender of kind: 1 (and *c filled) or 0 (not one). MUTEX
 * counts "-lock-" and "__lock__" (kazoo) names; READ and WRITE count "__READ__" and
 * "__WRIT__" names; LATCH counts "latch-" names. Only the exact "%010d" forms count. */
int ik__contender_parse(ik__lock_kind kind, const char *name, ik__contender *c);
/* 1 if the sequences of v do not give their creation order (one of them is
 * 2147483647 or negative: the parent's counter reached its end), so that the caller
 * must fill every czxid and sort with use_czxid = 1; else 0. */
int ik__contenders_need_czxid(const ik__contender *v, size_t n);
/* Sorts contenders in creation order: by sequence (use_czxid = 0, valid when
 * ik__contenders_need_czxid is 0) or by czxid; ties by name. */
void ik__contenders_sort(ik__contender *v, size_t n, int use_czxid);
/* Index in v of the contender our node (by name) must wait for, -1 if none (we
 * hold it), or -2 if our node is not among them. A writer, mutex or latch waits
 * for the contender just ahead; a reader for the nearest writer ahead. */
int ik__contender_blocker(ik__lock_kind kind, const ik__contender *v, size_t n, const char *ours);

#endif
