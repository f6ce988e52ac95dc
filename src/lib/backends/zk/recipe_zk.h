/* recipe_zk.h: what the files of the ZooKeeper recipes share: a lock's state
 * (ik__zk_lock), and the lower files' calls (recipe_zk_sema.c: a semaphore's lease;
 * recipe_zk_probe.c: the registry the ZooKeeper callbacks find a lock by, waiting
 * for its events, the release's delete, the hold monitor's probe of a grant) that
 * recipe_zk.c (the ops) builds on. Calls go one way: recipe_zk.c ->
 * recipe_zk_sema.c -> recipe_zk_probe.c -> zk_session.c. Not a public API. */
#ifndef IK_RECIPE_ZK_H
#define IK_RECIPE_ZK_H

#include "recipe.h"
#include "recipe_zk_names.h"
#include "zk_session.h"

#include <pthread.h>
#include <stdint.h>

#define IK__ZK_LOCK_PATH_MAX 1024

typedef struct ik__zk_lock ik__zk_lock;
struct ik__zk_lock {
    ik_lock base;
    uint64_t reg;                   /* registry id: the ctx of watches and the listener */
    char dir[IK__ZK_LOCK_PATH_MAX]; /* CHROOT + PATH: the parent of the contenders */
    size_t chroot_len;              /* its chroot part */
    struct ACL node_acl[2], dir_acl[2];
    struct ACL_vector node_aclv, dir_aclv;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    uint64_t events;  /* bumped by every watch, session event and answer (cv) */
    uint64_t sevents; /* bumped by every session event (cv) */
    int cancel;
    ik_hold_state state;             /* IDLE, WAITING or HELD (granted, until released) */
    char node[IK__ZK_LOCK_PATH_MAX]; /* our node's full path, "" if none */
    unsigned gen;                    /* handle generation our node was (or may have been) made on */
    int64_t session;                 /* the session that owns it */
    int64_t fence;
    int own_deleted;                 /* a watch said our node was deleted */
    char pred[IK__ZK_LOCK_PATH_MAX]; /* the contender we wait for */
    int pred_deleted;                /* a watch said it was deleted */
    int pred_event; /* a watch event on it (deleted, or the watch spent), or our own
                       node's watch spent otherwise: look again */
    char why[160];
    /* the release's delete, sent without waiting for its answer */
    char del_node[IK__ZK_LOCK_PATH_MAX];
    unsigned del_gen;
    int64_t del_session;
    int del_state; /* 0: none; 1: sent; 2: to be sent (again) */
    uint32_t del_seq;
    /* the grant's proof, and the hold monitor's probes: a sync (through the leader)
     * then zoo_awexists of our node (it also sets the watch), pipelined; a proof
     * needs both answered */
    int64_t granted_ms; /* send time of the request that proved the session for the
                           grant: it lives until at least then + the session timeout */
    uint32_t probe_seq; /* of the probe in flight (low 20 bits travel with it) */
    int probe_inflight;
    int probe_left;   /* answers of the probe in flight still to come (of 2) */
    int probe_synced; /* its sync was answered ZOK */
    int probe_seen;   /* its exists found our node, ours */
    int probe_gone;   /* a probe met an expired session */
};

/* The registry (ZL2 in recipe_zk.c): callbacks carry a lock's registry id, never
 * its pointer, and find it here only while it is registered. add: 0 or IK_ENOMEM
 * (sets lk->reg); after remove no callback touches lk. */
int ik__zk_lock_reg_add(ik__zk_lock *lk);
void ik__zk_lock_reg_remove(ik__zk_lock *lk);

/* The watcher of our node and of the contender ahead (ctx: the registry id), and
 * the session listener (ik__zk_listen, same ctx): they bump the lock's events. */
void ik__zk_lock_on_watch(zhandle_t *zh, int type, int state, const char *path, void *ctx);
void ik__zk_lock_on_session(void *ctx, unsigned gen, int state);

/* Waits until an event after `seen`, a cancel (if honour_cancel), or deadline_ms
 * (monotonic, -1: none). 0: woken; IK_ETIMEDOUT; IK_ECLOSED. */
int ik__zk_lock_wait_event(ik__zk_lock *lk, uint64_t seen, int64_t deadline_ms, int honour_cancel);
/* The lock's event count now (to pass to wait_event later). */
uint64_t ik__zk_lock_events_now(ik__zk_lock *lk);
/* A waiter's wait on the contender ahead (lk->pred): until a watch event on it or
 * our own node's watch spent otherwise (pred_event), our own node's deletion, a
 * session event after `sseen` (the session-event count: ik__zk_lock_sevents_now),
 * a cancel, or deadline_ms (monotonic, -1: none). Other events (the answer to an
 * earlier release's delete, a stale watch) do not end it: each would cost a
 * listing. 0: woken; IK_ETIMEDOUT; IK_ECLOSED. */
int ik__zk_lock_wait_pred(ik__zk_lock *lk, uint64_t sseen, int64_t deadline_ms);
uint64_t ik__zk_lock_sevents_now(ik__zk_lock *lk);

/* The session our node belongs to (0: none), under lk->mu. */
int64_t ik__zk_lock_session_of(ik__zk_lock *lk);
/* Records our node ("" : none), its handle generation, session and fence. */
void ik__zk_lock_set_node(ik__zk_lock *lk, const char *node, unsigned gen, int64_t session,
                          int64_t fence);

/* Sends the release's delete if it is due (del_state 2) and the session that owns
 * the node is connected; forgets it if that session is gone. Never blocks. */
void ik__zk_lock_delete_pending(ik__zk_lock *lk);
/* Waits up to ms for the release's delete to be answered (sending it again after a
 * reconnect). 0, or IK_EINDOUBT. */
int ik__zk_lock_delete_settle(ik__zk_lock *lk, int64_t ms);

/* WAITING --granted--> HELD, the grant proven by a request sent at asked_ms
 * (ik__mono_ms): the lock's state, and its probes made new (a late answer to an
 * earlier grant's probe is not this one's). Returns the fence (our node's czxid). */
int64_t ik__zk_lock_granted(ik__zk_lock *lk, int64_t asked_ms);

/* Sets the watch of our node at once for a new grant, without waiting for its
 * answer: its deletion (by hand) is then told as it happens, not after the first
 * probe; already gone, the grant is. */
void ik__zk_lock_watch_own(ik__zk_lock *lk);

/* recipe_zk_sema.c: a semaphore's lease (the SEMA kind's acquire, under the queue
 * its caller holds), the max stored with a semaphore, its holders (recipe.h's ops);
 * the mode of a semaphore's directories in its layout (kazoo's are PERSISTENT, as
 * its ensure_path makes them; every other recipe's CONTAINER, as Curator's). */
int ik__zk_sema_acquire(ik__zk_lock *lk, int64_t timeout_ms, int64_t *fence);
int ik__zk_sema_max(ik_lock *base, int64_t *stored, char *why, size_t why_len);
int ik__zk_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout, int64_t *max,
                        ik_semaphore_holder **out, size_t *n);
int ik__zk_sema_dir_mode(const ik_lock *base);

/* The hold monitor's evidence (recipe.h): the grant's proof, a probe, and the
 * release's delete sent again between grants (tend). */
void ik__zk_lock_proof_of_grant(ik_lock *base, ik__hold_evidence *out);
void ik__zk_lock_probe(ik_lock *base, int64_t deadline_ns, const int *stop, ik__hold_evidence *out);
void ik__zk_lock_tend(ik_lock *base);

#endif
