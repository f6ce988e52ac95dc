/* backend.h: the seam between the library and the coordination stores.
 *
 * One small vtable, implemented once per backend in its folder
 * (src/lib/backends/NAME/), chosen at one place (coord.c, the registry, by URI
 * scheme). The generic slot-lease logic (core/lease.c), the tags (counters/tags.c)
 * and the recipes (recipes/recipe.c) drive a backend only through these calls; the
 * table also carries the backend's URI check and its lock protocol (recipe.h), so
 * nothing above it compares scheme strings.
 *
 * Adding a backend: the one list is docs/architecture.md, "Adding a backend".
 *
 * Layers (docs/architecture.md, "Folders"; the test structure checks them): the
 * dispatch (coord.c, core/, counters/, recipes/recipe.c) over the implementations
 * (backends/NAME/, reached only through the ops tables coord.c names) over what
 * they share (tag_names.c, hold_tell.c, hazard.c, errors.c, log_sink.c, alloc.c,
 * clock.c). An implementation never calls up into coord.c, tags.c or recipe.c, nor
 * into another backend's folder.
 *
 * Time records. Every slot has a time record: a Unix-ms value that is an upper
 * bound of the time of any ID ever issued under that slot. A holder never issues a
 * tick above ik_layout_ticks_at(record) (the generator's ceiling), and a new holder
 * issues only ticks above ik_layout_ticks_at(old record) (the floor). Records only
 * grow, except at a clean release, where the holder may lower it to the start of the
 * last tick it really issued (never below the record it found when it took the slot).
 *
 * Threads: every call may block on I/O. lease.c calls slot_* from its own thread;
 * slots_list may be called from any thread. Backends make their own calls
 * thread-safe.
 */
#ifndef IK_BACKEND_H
#define IK_BACKEND_H

#include "hazard.h"
#include "idkeeper.h"
#include "internal.h" /* ik__forked */
#include "rules.h"    /* ik__store_option */

typedef struct ik__backend ik__backend;
typedef struct ik__backend_ops ik__backend_ops;
typedef struct ik__recipe_ops ik__recipe_ops; /* recipe.h */

/* Every backend's handle struct starts with this. hz: the verdicts of its store
 * hazard checks (hazard.h), initialised by its open (ik__hazards_init) where it
 * has checks and freed by its close after its last write or read (a freed verdict
 * answers "safe"); coord.c reads them for ik_coord_hazards. */
struct ik__backend {
    const ik__backend_ops *ops;
    ik__hazards hz;
};

typedef struct ik__slot_request {
    const char *app;
    const char *identity;
    uint32_t worker_min, worker_max; /* inclusive */
    ik_slot_choice choice;
    int64_t new_record_ms; /* record to write on success (backend writes the
                              max of this and the record it finds) */
} ik__slot_request;

/* What an acknowledged slot write proves: the store keeps the slot ours for at
 * least term_ms from when that write was sent (the lease TTL, or the ZooKeeper
 * session timeout the server granted, which runs from the request at the latest).
 * The backend reports these two facts only; core/lease.c derives from them the
 * window in which the lease may issue, once for every backend (2/3 of the term,
 * counted from the send time: docs/architecture.md, "Lease ⇄ backend"). */
typedef struct ik__lease_proof {
    int64_t sent_mono_ns; /* ik__mono_ns when the proving write was sent */
    int64_t term_ms;      /* IK_FOREVER: the slot never lapses while held (local:) */
} ik__lease_proof;

/* The safe window a proof gives: 2/3 of its term (the lease's L5, docs/guarantees.md
 * promise 10). One rule for the worker lease (core/lease.c) and for the locks that
 * keep a lease or session of their own (recipes/hold.c): ms of a term, and the mono ns
 * until which a proof holds (IK_FOREVER for a term without end). */
static inline int64_t ik__proof_window_ms(int64_t term_ms)
{
    return term_ms * 2 / 3;
}

/* The slack a proof leaves: its term less the safe window, a third of the term.
 * What one answer may take while the proof before it still holds (a renewal or a
 * keepalive waited for this long, sent this often, still lands inside the window of
 * the one before it), and what the store's expiry keeps after the window closes.
 * Every site outside the recipes that spends "a third of the term" names it so. */
static inline int64_t ik__proof_slack_ms(int64_t term_ms)
{
    return term_ms - ik__proof_window_ms(term_ms);
}

static inline int64_t ik__proof_until_ns(const ik__lease_proof *p)
{
    if (p->term_ms == IK_FOREVER) return IK_FOREVER;
    return p->sent_mono_ns + ik__proof_window_ms(p->term_ms) * INT64_C(1000000);
}

typedef struct ik__slot_grant {
    uint32_t worker;
    int64_t old_record_ms; /* the record found (0: none): the floor */
    int64_t record_ms;     /* the record now written: the first ceiling */
    int64_t since_ms;      /* Unix ms the slot was taken */
    ik__lease_proof proof; /* what the take proves */
    void *handle;          /* backend's per-slot state */
} ik__slot_grant;

/* ---- doubts (counters/doubt.c, docs/architecture.md "Doubts ⇄ backend") -------
 *
 * A counter write whose answer was lost may have landed; its range is never handed
 * out, and its fate is decided later by what the store holds. The doubt engine above
 * the seam keeps the table of such writes, picks each advance's writer (a lane), and
 * decides and logs every fate by one rule (ik__doubt_judge in doubt.c): landed, not
 * landed, unknown, or pending until a write fences it. A backend supplies what is its
 * own and reports, as SQLite's VFS says what is on disk and the pager decides whether
 * the journal is hot: a fenced write that carries a writer and a write id
 * (tag_advance), the read that says what the store holds of given write ids (its
 * evidence, below: in tag_advance for the doubts it carries and for its own write,
 * and in tag_settle at the stop), and the proof that rides with each write. No
 * backend decides a fate, keeps a trust horizon or restates the limits below (the
 * test structure checks it). */

/* The trust horizon, one for every store: a store keeps its record of a writer's
 * writes (Redis and etcd: the writer key, by its TTL or the lease; ZooKeeper: a line
 * of the writer table; SQL: a commit mark, pruned after a day) at least
 * IK__DOUBT_KEPT_MS after the write that made it. The engine takes a write's absence
 * from that record as "not landed" only within IK__DOUBT_TRUST_MS of the write, by
 * our clock and by the store's where it gives one: a tenth spares the clocks' rates. */
#define IK__DOUBT_KEPT_MS (10 * 60 * 1000)
#define IK__DOUBT_TRUST_MS (IK__DOUBT_KEPT_MS / 10 * 9)
/* The engine keeps at most this many doubts of one tag's lane (the oldest of one more
 * is logged as a possible gap); a store's record of a writer holds at least its last
 * IK__DOUBT_LANE_MAX writes, so a carried doubt is in it or below where it reaches. */
#define IK__DOUBT_LANE_MAX 16

/* One write whose answer was lost. */
typedef struct ik__doubt {
    uint64_t wid;     /* the write id it carried (increasing, per coord) */
    int64_t delta;    /* the IDs it asked for */
    int64_t first;    /* its range's first ID if it landed; -1: known only from the store
                       * (a gap it may be is logged there, else "first=?") */
    int64_t aux;      /* the backend's own note (zk, etcd: the version it was made at) */
    int64_t aux2[2];  /* more of it, where one is not enough (zk: that node's czxid and
                       * that version's mtime: a node made again, a table too old) */
    int64_t sent_ns;  /* ik__mono_ns() before it was first sent */
    ik_tag_kind kind; /* of the advance */
} ik__doubt;

typedef enum ik__doubt_fate {
    IK__DOUBT_OPEN = 0,   /* not decided: kept for a later read (or pending until fenced) */
    IK__DOUBT_LANDED,     /* recorded, and never handed out: a gap at `first` (an own
                           * write read back within its call: handed out) */
    IK__DOUBT_NOT_LANDED, /* not recorded, and never will be: settled */
    IK__DOUBT_UNKNOWN,    /* cannot be decided any more: a gap "first=?" */
} ik__doubt_fate;

/* What a backend's read shows of one write in doubt: its evidence, facts about the
 * store only (no verdict: the engine decides). All zero: nothing was read. */
typedef struct ik__doubt_evidence {
    int read;         /* the store's record of the writer's writes was read: the rest
                       * says what it holds (else nothing is known: the doubt stays) */
    int held;         /* the write's (write id, first ID) pair is among those it holds;
                       * for an own write, also: its own answer said it ran */
    int64_t first;    /* held: the first ID paired with it (-1: the write's own first) */
    int intact;       /* the record is whole: where it is not, an absence proves nothing */
    int reaches;      /* the record reaches back to the write: had it landed, its pair
                       * would be there (not pushed out, pruned, or the node made again) */
    int64_t age_ms;   /* how long ago the write was made, by the store's clock (0: the
                       * store gives no clock; the engine counts on ours too) */
    int moved;        /* the version it was made at has moved on, or a lock or a fence
                       * of the store's own ends any send of it still on its way: it can
                       * no longer land */
    int fenced;       /* a write of ours made at that same version landed: of the writes
                       * at one version one lands, so this one never will */
    const char *code; /* held, but never to be handed out: the gap's why= (store_unsafe,
                       * not_replicated, answer_lost, maybe_recorded); NULL: trusted */
    char what[400];   /* what the store showed, in its words, for the log line */
} ik__doubt_evidence;

/* One advance's write, as the doubt engine hands it to tag_advance. */
typedef struct ik__tag_write {
    char writer[33]; /* the lane's writer id: 30 random hex digits of the coord, 2 of the
                      * lane; one advance at a time writes as it */
    int lane;        /* 0 .. tag_lanes - 1 */
    /* This call's write: wid, delta, kind and sent_ns set by the engine, which has
     * recorded it as a doubt before the call; first and aux set by the backend
     * before each send, as it learns them (a doubt of it keeps them). */
    ik__doubt own;
    /* What the backend learned of its own write beyond its answer: read back within
     * the call after its answer was lost (IK_EINDOUBT: the engine hands it out if the
     * evidence says it landed and is trusted, fails the call as not done if it says
     * it never will, and keeps it if it says nothing), or answered as run but not to
     * be trusted (held, with code: a gap; IK_EUNSAFE or IK_EINDOUBT). Cleared by a
     * backend that sends the same write again. */
    ik__doubt_evidence own_ev;
    /* The lane's open doubts of this tag, oldest first (at most IK__DOUBT_LANE_MAX):
     * the write reads what the store holds of them where it can tell in the same
     * round trip (or before the write, which then is not sent if it cannot tell), into
     * ev[i]. */
    const ik__doubt *carried;
    int n_carried;
    ik__doubt_evidence *ev;
    /* The engine's rule, for a backend whose next step within the call hangs on it
     * (zk://: send its own write again, or not): the fate evidence e gives write x
     * now. The engine decides and logs every fate itself, after the call. */
    ik__doubt_fate (*judge)(const ik__doubt *x, const ik__doubt_evidence *e);
    /* Why the call failed, in the store's own words (its error, the refusal it
     * answered, what it showed), for the caller's answer: the engine keeps the last
     * of the tag (ik_tag_last_error). "" : nothing to add to the error code. */
    char why[300];
} ik__tag_write;

struct ik__backend_ops {
    const char *scheme;   /* "local", "zk": coord.c gives it every URI "SCHEME:..." */
    const char *uri_form; /* the URI's shape, for messages: "local:DIR" */
    /* URIs of this scheme that uri_check accepts, NULL-terminated, at least one: the
     * registry's tests check each one through coord.c (test_coord_registry), so that
     * a new backend brings its examples in its row, not in a list of the tests. */
    const char *const *uri_examples;

    /* Checks the whole URI's syntax without opening anything (no I/O; any thread):
     * 0, or IK_EURI with a one-line reason in why. ik_coord_uri_check's answer for
     * this scheme; open is only called on a URI it passed. */
    int (*uri_check)(const char *uri, char *why, size_t why_len);

    /* The backend's lock protocol (recipe.h), the one recipe.c uses for its locks
     * and elections; NULL for a backend without locks, whose lock and election
     * calls then fail with IK_EURI. */
    const ik__recipe_ops *recipe;
    /* Where recipe is NULL: why this backend has no locks and which to use instead
     * (ik_coord_locks_check's answer). NULL: a generic reason. */
    const char *no_locks;

    /* The backend's own options (rules.h, "store options"), ended by a row whose name
     * is NULL; NULL: none. coord.c takes them out of the URI's query and from
     * ik_coord_options.store_options, checks them by their rows, and hands open every
     * row's value (given, else its old field's, else its default) in
     * o->store_options, read with ik__store_opt: open never reads them elsewhere. With
     * a table, a '?' in the URI starts its query. */
    const ik__store_option *options;
    /* The URI's own query keys besides the table's, "db, prefix, user" (redis://), or
     * "*" for any: coord.c leaves those in the URI for uri_check to judge. NULL: none.
     * Any other key is refused, naming both. */
    const char *uri_keys;

    /* 1 if open takes ik_coord_options.leaf_name (joins a Leaf snowflake fleet's
     * worker nodes); coord.c refuses the option for a backend without it. */
    int leaf_fleet;
    /* 1 if open reads ik_coord_options.password (the store logs in with one): the
     * help of --password lists this build's from the rows (ik__coord_password_schemes). */
    int takes_password;

    /* The schema a DBA creates by hand (`idkeeper schema`): SQL statements,
     * NULL-terminated; NULL for a backend without one. */
    const char *const *schema;

    /* uri is the whole URI ("local:DIR", "zk://..."). */
    int (*open)(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                size_t why_len);
    void (*close)(ik__backend *b);
    /* Canonical URI; valid until close. */
    const char *(*uri)(const ik__backend *b);

    /* Takes one free slot: the one the identity held last if free, else one by
     * req->choice. Atomic: two callers racing for one slot cannot both win.
     * IK_ENOSLOT with why naming the range and the holders if none is free. */
    int (*slot_acquire)(ik__backend *b, const ik__slot_request *req, ik__slot_grant *out, char *why,
                        size_t why_len);

    /* Writes record_ms as the slot's time record, only if the slot is still ours.
     * 0: a write was acknowledged: *written_ms = the record it wrote (record_ms, or
     * on a slow store an earlier, lower record whose answer came late), and *proof
     * = that write's send time and the lease's term (never a window: lease.c
     * derives it). IK_EINDOUBT: no answer (connection trouble); the lease is unproven
     * but may still be ours. IK_ELOST: the slot is no longer ours. IK_EUNSAFE: a
     * store hazard is refused (hazard.h): nothing was sent, and the lease must stop
     * issuing at once. IK_ECLOSED: a stop has begun (stop_begin) and the write's
     * answer was not waited for: the lease changes nothing, and the release settles
     * it. */
    int (*slot_persist)(ik__backend *b, void *handle, int64_t record_ms, ik__lease_proof *proof,
                        int64_t *written_ms);

    /* Writes record_ms and frees the slot. Frees handle whatever happens. */
    int (*slot_release)(ik__backend *b, void *handle, int64_t record_ms);

    /* Forgets a slot that is lost (after IK_ELOST) without touching the store; frees
     * handle. May be NULL if release is always safe. */
    void (*slot_forget)(ik__backend *b, void *handle);

    /* After IK_ELOST on a session-based backend: make a new session so that
     * slot_acquire can work again. 0 when ready. May be NULL (nothing to do). */
    int (*recover)(ik__backend *b, char *why, size_t why_len);

    /* All slots of app that exist in the store, ordered by worker; *out freed with
     * ik_free. */
    int (*slots_list)(ik__backend *b, const char *app, ik_slot_info **out, size_t *n);

    /* How long after its holder dies a slot frees (a session or TTL expiry), in ms;
     * 0, or NULL, where it frees at once. The lease's default slot wait is this plus
     * 2 s. */
    int64_t (*slot_free_ms)(ik__backend *b);
    /* The row's word for slot_free_ms, read without a handle (the CLI's help of
     * --slot-wait and --lease-ttl, ik__coord_slot_frees): what a dead holder's slot
     * frees after. NULL where it frees at once (slot_free_ms NULL too);
     * IK__FREES_AFTER_LEASE_TTL where slot_free_ms is ik_coord_options.lease_ttl_ms;
     * else the store's own, "the session timeout". test_coord_registry holds the row
     * to slot_free_ms. */
    const char *slot_frees_after;

    /* Describes the current session into buf ("0x1234abcd", or ""). May be NULL. */
    void (*session)(ik__backend *b, char *buf, size_t len);

    /* Store hazards (hazard.h, docs/hazards.md): runs every check of this store now,
     * on a connection it serves with, and installs the verdicts in b->hz
     * (ik__hazards_update). 0, IK_EUNSAFE (a check refused; why names it) or
     * IK_ESTORE (the store could not be asked). The backend also checks at open
     * (refusing to open with IK_EUNSAFE unless o->check_only), on every new
     * connection, and before a slot or counter write on a connection that is due
     * (ik__hazards_due); while ik__hazards_refused answers IK_EUNSAFE it writes
     * nothing and answers IK_EUNSAFE (certainly not done) instead. NULL: a backend
     * without checks. */
    int (*hazards_check)(ik__backend *b, char *why, size_t why_len);

    /* ---- the stop (docs/guarantees.md promise 13) ------------------------------ */

    /* Cuts the backend for a bounded stop (coord.c calls it once, at the stop's
     * deadline, from a thread of its own): every call blocked on the store returns
     * at once as one that got no answer (a blocked socket is shut, a wait ended),
     * and every later call fails without waiting on the store. close still frees
     * everything. NULL: a backend whose calls never wait on another process. */
    void (*cut)(ik__backend *b);
    /* A stop has begun (coord.c calls it once, from ik_coord_stop_within, before the
     * deadline is armed): the slot's release comes next, within the stop's bound,
     * so a renewal need not wait for its answer any more (it may answer IK_ECLOSED,
     * its write left for the release to settle). NULL: nothing changes. */
    void (*stop_begin)(ik__backend *b);
    /* The longest close waits on the store when it was not cut, in ms (a client
     * library's own bounded wait: ZooKeeper's for the end of the session): a close
     * that begins nearer than this to the stop's deadline cuts first, and a close
     * after a cut waits for nothing (it may leave that wait to a thread of its own),
     * so that close ends by the deadline. 0: close does not wait. */
    int64_t close_wait_ms;

    /* The latest failure's reason, one line into buf ("" if none), for the calls
     * whose signature has no why (ik_coord_last_error, and a slot's failed persist:
     * the lease names it in its doubt); a cause open found that later
     * calls will meet counts too. Any thread, no I/O. NULL: never one. */
    void (*last_error)(ik__backend *b, char *buf, size_t len);

    /* The client library this backend talks through, "NAME VERSION" into buf (the
     * version it reports at run time where it can), for `idkeeper version`. Any
     * thread, no I/O. */
    void (*client_version)(char *buf, size_t len);

    /* ---- tags: durable counters (NULL for a backend without them) ------------ */

    /* Creates t (name, kind, start, step, description; max_id = start). IK_EEXIST if
     * the name exists, of either kind. */
    int (*tag_create)(ik__backend *b, const char *app, const ik_tag_info *t, char *why,
                      size_t why_len);
    /* IK_ENOTFOUND if absent; on another failure why (if why_len > 0) may say why
     * in one line, and nothing is logged. */
    int (*tag_get)(ik__backend *b, const char *app, const char *name, ik_tag_info *out, char *why,
                   size_t why_len);
    /* All tags of app, ordered by name; *out freed with ik_free. */
    int (*tag_list)(ik__backend *b, const char *app, ik_tag_info **out, size_t *n);
    /* Advances the tag's max_id by w->own.delta > 0 if the tag is of `kind`; *first =
     * the old max_id, and the caller alone owns [first, first + delta). Returns 0
     * only once the store durably recorded the advance. IK_ENOTFOUND, IK_EKIND,
     * IK_ERANGE (past INT64_MAX), IK_ESTORE, IK_EUNSAFE or a negated errno (certainly
     * not done: unreachable, a store hazard refused, local:'s disk full), IK_EINDOUBT
     * (may have been done: the caller never hands out that range, and the doubt
     * engine keeps it; where there is none, tags.c logs the gap it may be). The write
     * carries w's writer and write id, and reports what the store holds of w's
     * carried doubts where it can tell (ik__tag_write, above). */
    int (*tag_advance)(ik__backend *b, const char *app, const char *name, ik_tag_kind kind,
                       ik__tag_write *w, int64_t *first);

    /* ---- doubts: counter writes whose answer was lost (counters/doubt.c) --------- */

    /* Reads what the store holds of w's carried doubts of (app, name), into w->ev[i],
     * by one read (and where the store needs it, one fencing write carrying
     * w->own.wid, so that none of them can still land after it: ev[i].fenced), by
     * deadline_mono_ns (nothing read: no answer in time).
     * Called at the stop, after the checks passed, with no advance of the tag
     * running. NULL: a backend whose writes are never in doubt (local:); the doubt
     * engine is then not used. */
    void (*tag_settle)(ik__backend *b, const char *app, const char *name, ik__tag_write *w,
                       int64_t deadline_mono_ns);
    /* Writers of one tag that may advance it at once (1 to 64): each is a lane of its
     * own (its writer id), and a lane's writes reach the store one after another. */
    int tag_lanes;
};

/* store_options.c: for coord.c. Takes table t's items out of uri's query (a key that
 * is neither a row's nor one of uri_keys, as backend.h's uri_keys: IK_EURI) into one list with
 * o->store_options (NULL o: the URI alone) and the deprecated fields t's rows name, each value
 * checked by its row: *uri_out = uri without those items (NULL: uri as it is; freed with
 * ik__store_uri_free), *list_out (if list_out) = "NAME=VALUE" for every row with a
 * value or a default, NULL-terminated, freed with ik__store_options_free. scheme names
 * the backend in messages. 0, IK_EURI (the URI's items), IK_EINVAL (o's) or
 * IK_ENOMEM. */
int ik__store_options_resolve(const ik__store_option *t, const char *uri_keys, const char *scheme,
                              const char *uri, const ik_coord_options *o, char **uri_out,
                              char ***list_out, char *why, size_t why_len);
void ik__store_options_free(char **list); /* wipes each value; NULL is fine */
void ik__store_uri_free(char *uri);       /* wipes it (it may hold a password) */

/* store_options.c: for a backend's open: the value of its option name in what coord.c
 * handed it (o->store_options), or NULL / none where the row has no value. */
const char *ik__store_opt(const ik_coord_options *o, const char *name);
int64_t ik__store_opt_int(const ik_coord_options *o, const char *name, int64_t none);

/* How long ik_coord_settle (and so close) gives the doubts where no stop bound is
 * set (ik_coord_stop_within). */
#define IK__SETTLE_MS 2000

/* slot_frees_after of a backend whose worker slot is a lease of --lease-ttl. */
#define IK__FREES_AFTER_LEASE_TTL "--lease-ttl"

/* coord.c: the registry's backends, in order; *n = how many. For tests. */
const ik__backend_ops *const *ik__coord_backends(size_t *n);

/* What the layers over the seam (core/, counters/, recipes/) read of a coord handle:
 * the first member of coord.c's struct ik_coord, set at open and never changed
 * after, read through the functions below without a call into coord.c. coord.c owns
 * the handle's life, the doubt engine's with it (made at open, settled and freed at
 * close): the layers that use the engine never make or end one, so calls between
 * coord.c and counters/ go one way, down from coord.c. */
typedef struct ik__coord_head {
    ik__backend *be;           /* the backend behind the handle */
    struct ik__doubts *doubts; /* its doubt engine (counters/doubt.h); NULL for a backend
                                  whose writes are never in doubt (no tag_settle) */
    unsigned fork_gen;         /* the process generation it was opened in (fork.c) */
    int test_write_delay_ms;   /* IDKEEPER_TEST_WRITE_DELAY_MS at open (0: none) */
} ik__coord_head;

static inline const ik__coord_head *ik__coord_head_of(const ik_coord *c)
{
    return (const ik__coord_head *)(const void *)c;
}
/* The doubt engine of a coord handle; NULL where the writes are never in doubt. */
static inline struct ik__doubts *ik__coord_doubts(const ik_coord *c)
{
    return ik__coord_head_of(c)->doubts;
}
/* The backend behind a coord handle. */
static inline ik__backend *ik__coord_backend(const ik_coord *c)
{
    return ik__coord_head_of(c)->be;
}
/* 1 if c was opened before this process's fork() (fork.c): the parent's, refused in
 * the child (IK_EFORKED). */
static inline int ik__coord_forked(const ik_coord *c)
{
    return ik__forked(ik__coord_head_of(c)->fork_gen);
}
/* IDKEEPER_TEST_WRITE_DELAY_MS as it was when c was opened (0: none). */
static inline int ik__coord_test_write_delay_ms(const ik_coord *c)
{
    return ik__coord_head_of(c)->test_write_delay_ms;
}

/* tags.c: advances a tag through c's backend, after the test write delay. */
int ik__tag_advance(ik_coord *c, const char *app, const char *name, ik_tag_kind kind, int64_t delta,
                    int64_t *first);

#endif
