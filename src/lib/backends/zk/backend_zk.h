/* backend_zk.h: the zk:// backend's parts below its ops table (backend_zk.c): the
 * slot and tag calls of the seam (backend_zk_slots.c, backend_zk_tags.c), and the
 * pure parts they share (backend_zk_data.c, no ZooKeeper handle involved), named
 * here so that tests/unit/test_zk_backend.c and test_zk_tags.c can hold them to
 * their contracts. The session they all run on is zk_session.h. Not a public API. */
#ifndef IK_BACKEND_ZK_H
#define IK_BACKEND_ZK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h" /* the doubt engine's limits (IK__DOUBT_*) */
#include "idkeeper.h"

/* The digest ACL id of "user:password" (zk_session.c): "user:" + base64(sha1("user:password")), as
 * ZooKeeper's DigestAuthenticationProvider computes it. NULL without a ':' or on
 * allocation failure; the caller frees it. */
char *ik__zk_digest_id(const char *user_colon_password);

/* The fields of a slot node or an owner node (text, key=value lines, the identity
 * last: "holder=" on slot nodes, "identity=" on owner nodes, taking the rest of the
 * data). Unknown keys are skipped; has_record says whether record_ms parsed. */
typedef struct ik__zk_fields {
    int64_t record_ms, since_ms, session, pid;
    int has_record;
    char host[64];
    char ident[256];
} ik__zk_fields;

void ik__zk_parse_fields(const char *data, int len, ik__zk_fields *f);

/* Writes a slot node's data into buf; its length, or -1 if it does not fit. */
int ik__zk_format_slot(char *buf, size_t len, int64_t record_ms, int64_t since_ms, int64_t session,
                       const char *identity);

/* Slot node names: the worker in decimal, at least 4 digits ("0007"). parse accepts
 * only that canonical form: 0 and *w, or -1. */
int ik__zk_worker_name(uint32_t w, char *out, size_t len);
int ik__zk_parse_worker(const char *name, uint32_t *w);

/* The node name of an identity under BASE/identities: bytes outside
 * [A-Za-z0-9._:-] as %XX (all dots too for "." and ".."). Its length, or -1 if it
 * does not fit in len. */
int ik__zk_identity_name(const char *identity, char *out, size_t len);

/* A sorted set of workers that cannot be taken. add returns -1 on allocation
 * failure (the set is unchanged); v is freed by the caller. */
typedef struct ik__zk_wset {
    uint32_t *v;
    size_t n, cap;
} ik__zk_wset;

int ik__zk_wset_add(ik__zk_wset *s, uint32_t w);
int ik__zk_wset_has(const ik__zk_wset *s, uint32_t w);
/* The k-th (0-based) worker at or above lo that is not in s, for k below the
 * number of free workers of the range (all members of s lie in the range). */
uint32_t ik__zk_wset_nth_free(const ik__zk_wset *s, uint32_t lo, uint64_t k);

/* Strict unsigned decimal (up to 19 digits) or, base 16, 1 to 16 lower-case hex
 * digits (no 0x): 0 and *out, or -1. */
int ik__zk_parse_u64(const char *s, size_t n, int base, uint64_t *out);

/* The paths of an app's nodes: BASE = CHROOT + "/idkeeper/apps/APP" (IK__ZK_ROOT
 * in zk_session.h), then "/SUB" (sub NULL: BASE itself); a worker's node
 * BASE/SUB/NNNN. Cut to len. */
void ik__zk_app_path(const char *chroot, const char *app, const char *sub, char *out, size_t len);
void ik__zk_worker_path(const char *chroot, const char *app, const char *sub, uint32_t w, char *out,
                        size_t len);

/* A Meituan Leaf snowflake fleet's nodes (backend_zk_leaf.c, docs/zookeeper.md "A
 * Leaf fleet"). Leaf writes its heartbeat every HEARTBEAT_MS; a node written less
 * than HEARTBEAT_MS + SKEW_MS ago by this clock may have a live server. */
#define IK__ZK_LEAF_HEARTBEAT_MS 3000
#define IK__ZK_LEAF_SKEW_MS 2000

/* A Leaf node's data, {"ip":"...","port":"...","timestamp":MS}, keys in any order. */
typedef struct ik__zk_leaf_data {
    char ip[64], port[16];
    int64_t timestamp_ms;
} ik__zk_leaf_data;

/* 0 and *out if data is a JSON object with a numeric timestamp (ip and port, strings
 * or a numeric port, filled if there; other keys skipped if their value is a string
 * or a number); -1 otherwise. */
int ik__zk_leaf_parse_data(const char *data, int len, ik__zk_leaf_data *out);
/* Leaf's data for identity IP:PORT, as Leaf writes it: its length, or -1 if it does
 * not fit or the identity has no ':'. */
int ik__zk_leaf_format(char *buf, size_t len, const char *identity, int64_t timestamp_ms);
/* A Leaf node name IP:PORT-NNNNNNNNNN (IP:PORT without '-', '/' or spaces): 0, the
 * identity into ident and the number into *seq; -1 otherwise. */
int ik__zk_leaf_parse_name(const char *name, char *ident, size_t ident_len, uint32_t *seq);
/* 0 if identity can name a Leaf node, else IK_EINVAL with why. */
int ik__zk_leaf_identity_check(const char *identity, char *why, size_t why_len);

/* ------------------------------------------------------------------------------
 * Slots on ZooKeeper (backend_zk_slots.c): the seam's slot_* calls (backend.h) and
 * their per-backend state, made by zk_open and freed by zk_close.
 */
struct ik__backend;
typedef struct ik__zk_slots ik__zk_slots;

ik__zk_slots *ik__zk_slots_new(void);
void ik__zk_slots_free(ik__zk_slots *s);

struct ik__slot_request;
struct ik__slot_grant;
int ik__zk_slot_acquire(struct ik__backend *be, const struct ik__slot_request *req,
                        struct ik__slot_grant *out, char *why, size_t why_len);
struct ik__lease_proof; /* backend.h */
int ik__zk_slot_persist(struct ik__backend *be, void *handle, int64_t record_ms,
                        struct ik__lease_proof *proof, int64_t *written_ms);
int ik__zk_slot_release(struct ik__backend *be, void *handle, int64_t record_ms);
void ik__zk_slot_forget(struct ik__backend *be, void *handle);

/* Reading slots (backend_zk_scan.c). slots_list is the seam's call. */
int ik__zk_slots_list(struct ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out);
/* The workers in [lo, hi] named by the children of dir, into *out (emptied first).
 * A missing dir is an empty set. 0, IK_ENOMEM, or an error of ik__zk_fail. */
struct _zhandle;
int ik__zk_list_workers(struct _zhandle *zh, const char *dir, uint32_t lo, uint32_t hi,
                        ik__zk_wset *out, char *why, size_t why_len);
/* Writes "no free worker slot: all N slots of app A in LO-HI are held: 0 by a, ..."
 * into why, naming as many holders as fit (read on zh, under chroot). */
void ik__zk_describe_holders(const char *chroot, struct _zhandle *zh,
                             const struct ik__slot_request *req, uint64_t range, char *why,
                             size_t why_len);

/* ------------------------------------------------------------------------------
 * Tags on ZooKeeper: the pure parts (backend_zk_data.c), for
 * tests/unit/test_zk_tags.c. A counter node's data: bytes 0-7 max_id big-endian,
 * then "since=V" and "w=NONCE:COUNT:MS" lines (the writer table: docs/zookeeper.md,
 * "Tags").
 */
#define IK__ZK_WRITERS_MAX 64
/* Table lines older than this go: the record's keeping time the doubt engine counts
 * on (backend.h's IK__DOUBT_KEPT_MS). */
#define IK__ZK_PRUNE_MS IK__DOUBT_KEPT_MS

typedef struct ik__zk_writer {
    uint64_t nonce, count;
    int64_t ms; /* mtime of the version that writer read */
} ik__zk_writer;

/* A counter node as read (version, czxid, mtime from its Stat) or as written. */
typedef struct ik__zk_counter {
    int64_t max_id;
    int version;
    int64_t czxid, mtime;
    int has_table; /* a since= line was there */
    int since;     /* the table lists every writer of every version above since */
    int nw;
    ik__zk_writer w[IK__ZK_WRITERS_MAX]; /* the latest writer first */
} ik__zk_counter;

/* 0 and n's data fields (not version, czxid, mtime); -1 if under 8 bytes. */
int ik__zk_counter_parse(const char *d, int len, ik__zk_counter *n);
/* n's data into buf: its length, or -1 if it does not fit. */
int ik__zk_counter_format(char *buf, size_t cap, const ik__zk_counter *n);
/* The node a write made at old (read at old->version) writes: max_id + delta, the
 * line NONCE:COUNT:old->mtime first, our older line and stale lines dropped, since
 * moved up if the table restarts or is full. */
void ik__zk_counter_next(const ik__zk_counter *old, uint64_t nonce, uint64_t count, int64_t delta,
                         ik__zk_counter *out);

/* A tag's meta node: key=value lines, the description last (the rest of the data).
 * made_by: the nonce and count of the create that made it. */
typedef struct ik__zk_meta {
    int has_kind, has_start, has_step;
    ik_tag_kind kind;
    int64_t start, step, created_ms;
    uint64_t made_nonce, made_count;
    char description[256];
} ik__zk_meta;

/* t's meta, made by the create nonce:count, into buf: its length, or -1 if it does
 * not fit. */
int ik__zk_meta_format(char *buf, size_t cap, const ik_tag_info *t, uint64_t nonce, uint64_t count);
void ik__zk_meta_parse(const char *d, int len, ik__zk_meta *m);
/* 1 if m is an idkeeper tag's meta (kind, start and step read). */
int ik__zk_meta_ok(const ik__zk_meta *m);

/* Writes whose answers were lost, all made at one version V of one node, so that
 * at most one of them can have applied, and each would have recorded [first, first +
 * delta): what a read reports evidence of (ik__zk_evidence), built for one read from
 * the doubt engine's writes (backend.h's ik__doubt, whose notes say where each was
 * made: ik__zk_note), never kept. */
typedef struct ik__zk_doubt {
    int version;   /* V */
    int64_t czxid; /* of the node they were made on */
    int64_t mtime; /* mtime of version V */
    int64_t first; /* max_id at V */
    int n;
    struct {
        uint64_t count; /* the COUNT it wrote in the writer table: its write id */
        int64_t delta;
    } w[IK__DOUBT_LANE_MAX + 1];
} ik__zk_doubt;

struct ik__doubt; /* backend.h */
/* Notes in x where a write made at node n is made: first = n's max_id, aux = its
 * version, aux2 = its czxid and mtime. */
void ik__zk_note(struct ik__doubt *x, const ik__zk_counter *n);
/* Adds the write x (its notes set by ik__zk_note) to d (all zero before the first):
 * 0, or -1 if it was made at another version or node than the others, or d is
 * full; d then decides nothing (the caller takes it as IK__ZK_UNKNOWN). */
int ik__zk_doubt_add(ik__zk_doubt *d, const struct ik__doubt *x);

struct ik__doubt_evidence; /* backend.h */
/* What the node n, read now, shows of write j of d (the writer nonce's): the
 * evidence the doubt engine decides by (no verdict here). Its version past V moved
 * it; the writer table, complete from `since` on, reaches V where since <= V (a node
 * made again, or a version below V, reaches nothing); our line's COUNT its write id:
 * held; the table's age is n's mtime less V's, by ZooKeeper's clock. */
void ik__zk_evidence(const ik__zk_doubt *d, const ik__zk_counter *n, uint64_t nonce, int j,
                     struct ik__doubt_evidence *e);

/* The doubts of one advance, or of the stop's settle, as the doubt engine hands them
 * (backend.h's ik__tag_write): the carried ones, all made at one version (ZT2 in
 * backend_zk_tags.c), and the call's own write while a send of it may still land.
 * The calls below report their evidence into w->ev and w->own_ev, and ask the
 * engine's rule (w->judge) only where the call's next step hangs on it. */
typedef struct ik__zk_call {
    struct ik__tag_write *w;
    int carried_open; /* the carried doubts are not decided yet */
    int own_open;     /* a send of w->own may still land */
} ik__zk_call;

#define IK__ZK_GONE "the tag's node is gone"

enum { IK__ZK_GO, IK__ZK_MINE, IK__ZK_LOST };
/* What the node n, read now, shows of c's doubts (nonce: this backend's), and what
 * the call does next by the engine's rule on the own write. IK__ZK_GO: write on (the
 * own write never lands, or the node is still at its version: pending); IK__ZK_MINE:
 * the own write landed (the call answers IK_EINDOUBT and the engine hands it out);
 * IK__ZK_LOST: whether it landed cannot be told (IK_EINDOUBT: the engine logs it). */
int ik__zk_call_read(ik__zk_call *c, const ik__zk_counter *n, uint64_t nonce);
/* A write of ours at version v was acknowledged: of the carried doubts (made at v),
 * the one at index landed (that write, sent again; -1: none) is held by it, the
 * others fenced. */
void ik__zk_call_fenced(ik__zk_call *c, int landed, int v);
/* Every open doubt of c, the own write's too, is out of every record's reach (the
 * node gone), why why: 1 if the own write was open (the call answers IK_EINDOUBT). */
int ik__zk_call_unknown(ik__zk_call *c, const char *why);

/* ------------------------------------------------------------------------------
 * Tags on ZooKeeper: the seam's tag_* calls (backend.h). The advance and the
 * stop's settle (backend_zk_tags.c) over the reads and the create
 * (backend_zk_tagread.c).
 */

/* The tags' per-backend state, made by zk_open and freed by zk_close
 * (backend_zk_tags.c). nonce: this backend's mark in a counter's writer table and
 * in the made_by of the tags it creates, random, never 0 (docs/zookeeper.md). */
#define IK__ZK_TAG_STRIPES 64
struct ik__zk_tag; /* one tag's cached node (backend_zk_tags.c) */
typedef struct ik__zk_tags {
    uint64_t nonce;
    _Atomic uint64_t made; /* the creates' count (made_by) */
    _Atomic uint64_t rng;  /* the conflicts' jitter */
    struct {
        pthread_mutex_t mu;
        struct ik__zk_tag *tags;
    } stripe[IK__ZK_TAG_STRIPES];
} ik__zk_tags;

int ik__zk_tags_new(ik__zk_tags **out, char *why, size_t why_len);
void ik__zk_tags_free(ik__zk_tags *t);

struct ik__tag_write; /* backend.h */
int ik__zk_tag_advance(struct ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                       struct ik__tag_write *w, int64_t *first);
void ik__zk_tag_settle(struct ik__backend *be, const char *app, const char *name,
                       struct ik__tag_write *w, int64_t deadline_ns);

int ik__zk_tag_create(struct ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                      size_t why_len);
int ik__zk_tag_get(struct ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                   char *why, size_t why_len);
int ik__zk_tag_list(struct ik__backend *be, const char *app, ik_tag_info **out, size_t *n);

/* What the advance shares with the reads (backend_zk_tagread.c). A call's budget:
 * the negotiated session timeout, 2 to 10 s; *connect_ms: how long it waits for a
 * connection with nothing of its own in doubt. */
struct ik__zk_session; /* zk_session.h */
int64_t ik__zk_tag_budget_ms(struct ik__backend *be, int64_t *connect_ms);
/* Borrows a connected session, waiting for it (and making a new one if the old one
 * is dead) until the monotonic deadline: 0 with s borrowed (ik__zk_session_put
 * after), or IK_ESTORE (nothing borrowed). */
int ik__zk_tag_session(struct ik__backend *be, struct ik__zk_session *s, int64_t deadline_ns);
/* sub NULL: BASE/tags; "": BASE/tags/NAME; "meta": BASE/tags/NAME/meta. */
void ik__zk_tag_path(const struct ik__zk_session *s, const char *app, const char *name,
                     const char *sub, char *out, size_t len);
/* Reads the counter (and meta if want_meta) of name on s, pipelined, until the
 * deadline: ZOK with n (and m) filled (ik__zk_meta_ok tells a tag's meta); ZNONODE;
 * a doubtful code if no answer came in time; ZAPIERROR if the counter is not a
 * counter (under 8 bytes); ZSYSTEMERROR without memory. */
int ik__zk_tag_read(const struct ik__zk_session *s, const char *app, const char *name,
                    int want_meta, ik__zk_counter *n, ik__zk_meta *m, int64_t deadline_ns);

#endif
