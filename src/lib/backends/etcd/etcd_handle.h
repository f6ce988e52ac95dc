/* etcd_handle.h: the parts of the etcd:// backend below its ops table
 * (backend_etcd.c), shared by the folder's files: the handle, the server's one etcd
 * lease (etcd_lease.c), the hazard checks (etcd_hazards.c), the slots
 * (backend_etcd_slots.c), the tags (backend_etcd_tags.c) and the locks
 * (recipe_etcd.c). Named for what it holds, not for the file above it that
 * includes it too: no file below the table calls into backend_etcd.c. Not a
 * public API. docs/etcd.md has the key layout and the failure model.
 *
 * Key layout (PREFIX: the URI's, "" or "a/b/" with its '/'):
 *   PREFIX idkeeper/APP/slot/W     "SINCE_MS PID HOST IDENTITY", on the lease
 *   PREFIX idkeeper/APP/record/W   "RECORD_MS SINCE_MS IDENTITY", no lease
 *   PREFIX idkeeper/APP/tag/NAME   "MAX_ID KIND START STEP UPDATE_MS DESC", no lease
 *   PREFIX idkeeper/APP/tagw/NAME/WRITER  a doubt engine lane's last advances, on
 *                                  the lease (backend_etcd_tags.c)
 *   PREFIX NAME/LEASEHEX           a lock or election contender on the lock's own
 *                                  lease (etcd's concurrency recipe)
 */
#ifndef IK_ETCD_HANDLE_H
#define IK_ETCD_HANDLE_H

#include "backend.h"
#include "etcd_gateway.h"
#include "etcd_uri.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The server's one etcd lease (etcd_lease.c). Every slot key of the handle is
 * attached to it (a lock has a lease of its own, recipe_etcd.c, as each etcdctl
 * process has); a thread keeps it alive at a third of its TTL.
 *
 * Invariants
 *   EL1. proof is the send time of the last keepalive (or the grant) answered with
 *        a TTL, and term that TTL: the lease lives at least until then + TTL on
 *        the leader's clock, which started counting after our send.
 *   EL2. A keepalive answered without a TTL means the lease is gone: gone is set
 *        and stays set for that id; everything on it is lost (slots ELOST, locks
 *        LOST). A new id is granted only by the next ik__etcd_lease_get.
 *   EL3. A keepalive unanswered changes nothing: the proof ages, and whoever
 *        relies on it stops at 2/3 of its term (core/lease.c's L5; the lock
 *        monitor's IN_DOUBT). */
typedef struct ik__etcd_lease {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int64_t id;    /* 0: none */
    int64_t ttl_s; /* the granted TTL */
    int gone;      /* EL2 */
    ik__lease_proof proof;
    pthread_t thread;
    int thread_on, stop;
} ik__etcd_lease;

typedef struct ik__etcd_backend {
    ik__backend base;
    ik__etcd_target t;
    char uri[1200];                       /* canonical, no password */
    char prefix[IK__ETCD_PREFIX_MAX + 2]; /* "" or "a/b/" */
    ik__etcd_gw *gw;
    int64_t ttl_ms;  /* --lease-ttl, rounded up to whole seconds */
    int64_t wait_ms; /* how long one call waits: a third of the TTL, 300 ms at least */
    ik__etcd_lease lease;
    int64_t checked_ns; /* the last hazard check's */
    pthread_mutex_t hz_mu;
    pthread_mutex_t said_mu;
    char said[300]; /* etcd's words for the latest failed slot record (last_error) */
} ik__etcd_backend;

static inline ik__etcd_backend *ik__etcd_of(ik__backend *be)
{
    return (ik__etcd_backend *)be;
}

extern const ik__backend_ops ik__backend_etcd_ops, ik__backend_etcds_ops;

/* etcd_lease.c */
int ik__etcd_lease_start(ik__etcd_backend *b);
/* The lease to attach a key to: the live one, or a new grant where there is none
 * or it is gone (EL2). *id and the proof of it; 0 or an ik_error with why. */
int ik__etcd_lease_get(ik__etcd_backend *b, int64_t *id, ik__lease_proof *proof, char *why,
                       size_t why_len);
/* The proof of lease id now, refreshed by a keepalive of our own when the last one
 * is older than a third of the TTL: 0; IK_ELOST if id is gone (or not ours any
 * more); IK_EINDOUBT if no keepalive was answered lately. */
int ik__etcd_lease_proof(ik__etcd_backend *b, int64_t id, ik__lease_proof *proof);
/* 1 if id is gone (EL2). */
int ik__etcd_lease_gone(ik__etcd_backend *b, int64_t id);
/* Stops the thread and revokes the lease (bounded by wait_ms). */
void ik__etcd_lease_stop(ik__etcd_backend *b, int revoke);

/* etcd_hazards.c: the seam's hazards_check (docs/hazards.md, etcd), and the gate
 * before a write: runs the checks when due, then IK_EUNSAFE while one is refused. */
int ik__etcd_hazards_check(ik__backend *be, char *why, size_t why_len);
int ik__etcd_write_gate(ik__etcd_backend *b, char *why, size_t why_len);

/* backend_etcd_slots.c */
int ik__etcd_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                          char *why, size_t why_len);
int ik__etcd_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                          int64_t *written_ms);
int ik__etcd_slot_release(ik__backend *be, void *handle, int64_t record_ms);
void ik__etcd_slot_forget(ik__backend *be, void *handle);
int ik__etcd_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n);

/* backend_etcd_tags.c */
int ik__etcd_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                        size_t why_len);
int ik__etcd_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                     char *why, size_t why_len);
int ik__etcd_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n);
int ik__etcd_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                         ik__tag_write *w, int64_t *first);
void ik__etcd_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                         int64_t deadline_mono_ns);

/* recipe_etcd.c */
extern const ik__recipe_ops ik__recipe_etcd_ops;

/* The values' words (the key layout above), read strictly: a decimal
 * integer at *p (a '-' allowed), ended by a space, sep or the end, *p moved past
 * it and one sep or space after it. 0, or -1 (nothing moved). */
static inline int ik__etcd_next_i64(const char **p, char sep, int64_t *out)
{
    const char *s = *p;
    char *e;
    errno = 0;
    long long v = strtoll(s, &e, 10);
    if (e == s || errno || (*e && *e != ' ' && *e != sep) || (*s != '-' && (*s < '0' || *s > '9')))
        return -1;
    *out = (int64_t)v;
    *p = *e ? e + 1 : e;
    return 0;
}
/* A word (no space) at *p into out (cut to len - 1), *p moved past it and one space. */
static inline void ik__etcd_next_word(const char **p, char *out, size_t len)
{
    size_t n = strcspn(*p, " ");
    snprintf(out, len, "%.*s", (int)n, *p);
    *p += n;
    if (**p == ' ') (*p)++;
}

/* PREFIX + idkeeper/APP/ + sub into out. */
static inline void ik__etcd_key(const ik__etcd_backend *b, const char *app, const char *sub,
                                char *out, size_t len)
{
    snprintf(out, len, "%sidkeeper/%s/%s", b->prefix, app, sub);
}

#endif
