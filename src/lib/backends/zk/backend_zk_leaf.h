/* backend_zk_leaf.h: worker slots on a Meituan Leaf snowflake fleet's nodes
 * (backend_zk_leaf.c), for backend_zk_slots.c, which holds, writes and releases
 * what these calls take. The pure parts (names, data) are in backend_zk.h. */
#ifndef IK_BACKEND_ZK_LEAF_H
#define IK_BACKEND_ZK_LEAF_H

#include "backend_zk.h"
#include "zk_session.h"

/* What a take found and wrote: backend_zk_slots.c makes its slot handle of it. */
typedef struct ik__zk_leaf_taken {
    uint32_t worker;
    char node_path[512];  /* Leaf's node: the time record */
    char owner_path[512]; /* our ephemeral owner node */
    char mark_path[512];  /* the identity's mark: every write of the node sets it too */
    unsigned seen;        /* for ik__zk_leaf_recheck */
    int version;          /* of the Leaf node after the take's write */
    int64_t czxid;
    int64_t found_ms;  /* the floor (ZLF4), 0 for a new number */
    int64_t record_ms; /* the record the take wrote */
    int64_t since_ms;
    int64_t sent_ns; /* when the take's multi was sent */
} ik__zk_leaf_taken;

/* Takes this identity's number in the Leaf fleet leaf on connected handle c (life
 * held): IK_OK and *t; IK_ENOSLOT while the number is held or may be, or its node
 * is being made (why says by whom; the lease's slot wait applies); IK_ESTORE for
 * nodes it refuses, a Leaf server's number among them unless b->leaf_takeover names
 * the identity (why names the node); IK_EINVAL for an identity that is not IP:PORT
 * or not the one b->leaf_takeover names; IK_EINDOUBT or IK_ELOST on connection
 * trouble. live(b, app, worker): 1 if this backend has a handle on that number. */
int ik__zk_leaf_take(ik__zk_backend *b, ik__zk_conn *c, const char *leaf,
                     const ik__slot_request *req,
                     int (*live)(ik__zk_backend *, const char *, uint32_t), ik__zk_leaf_taken *t,
                     char *why, size_t why_len);

/* The timestamp to write into a held (or new) Leaf node for the record record_ms:
 * at least IK__ZK_LEAF_HEARTBEAT_MS + IK__ZK_LEAF_SKEW_MS ahead of this clock (ZLF8).
 * Not for a release, which lowers it. */
int64_t ik__zk_leaf_stamp(int64_t record_ms);

/* Between two writes of a held number (backend_zk_slots.c, on handle c, life held):
 * IK_ELOST once a node other than node_path names identity (ZLF6: a Leaf server made
 * one), logged; else IK_OK. Lists forever only when its watch fired since *seen
 * (the take's value first), waiting up to wait_ms for the answer (none: looked at
 * next time). */
int ik__zk_leaf_recheck(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, const char *identity,
                        const char *node_path, unsigned *seen, int64_t wait_ms);

/* Every node of the Leaf fleet leaf, by number: holder the identity, record_ms the
 * timestamp, held if our owner node exists, or a Leaf server may be alive (a
 * heartbeat under 5 s old, a timestamp ahead of the clock, data that is not
 * Leaf's), detail which ("idkeeper's, no holder" for an idkeeper node none holds).
 * A malformed name is listed with worker UINT32_MAX; the last row is the number
 * the next node gets, holder "" and never held. *out freed with ik_free. */
int ik__zk_leaf_list(ik__zk_backend *b, ik__zk_conn *c, const char *leaf, ik_slot_info **out,
                     size_t *n_out);

#endif
