/* idkeeper.h: the whole public API of libidkeeper.
 *
 * libidkeeper hands out 64-bit IDs that are unique across a fleet: snowflake IDs
 * (time | worker | sequence) whose worker number is leased from a coordination
 * backend (`local:DIR` with flock'ed files, or `zk://` with ZooKeeper ephemeral
 * nodes), fenced so that a lease in doubt stops issuing.
 *
 * Conventions
 * - Every function that can fail returns an int: 0 (IK_OK) on success, a negative
 *   ik_error on failure. ik_strerror() names it. A call that fails changes nothing
 *   and writes none of its out-parameters unless it says otherwise.
 * - Opaque handles come in create/destroy pairs; destroy accepts NULL and always
 *   frees.
 * - Strings passed in are copied; the caller keeps ownership. Memory the library
 *   returns is freed with ik_free() unless the function says otherwise.
 * - Threads: ik_snowflake_next*() are safe from any number of threads at once. Lease
 *   and coordination handles are safe from any thread, but a handle must not be
 *   destroyed while another thread uses it. Callbacks run on library threads, each
 *   named where its type is declared:
 *     ik_lease_options.on_state  the lease's own thread; RELEASED on the thread
 *                                that calls ik_slot_lease_release
 *     ik_ids_cb                  segment: the allocator's loader thread; sequence:
 *                                its committer thread; IK_ECLOSED answers at
 *                                destroy: the thread that calls *_destroy
 *     ik_hold_cb                 lock, semaphore: its hold monitor's thread (never on
 *                                local:); election: the election's own thread
 *     ik_hold_proof_cb           the lock's (semaphore's, election's lock's) hold monitor
 *     ik_log_fn, ik_clock        any library thread
 *   An ik_ids_cb never runs inside the ik_*_next call that queued its request, and
 *   a call that fails synchronously never invokes its callback.
 * - Options structs (ik_coord_options, ik_lease_options, ik_segment_options,
 *   ik_lock_options, ik_election_options, ik_semaphore_options) can grow without
 *   breaking the ABI. Each
 *   begins with `size_t size`, which its *_options_init sets to the struct's size in
 *   the header the program was built with: always call the init, then set fields.
 *   The library reads only the fields within size; a field beyond it (a program
 *   built against an older, smaller struct) takes its default. Fields are only ever
 *   added at the end, and a field added later means "the default" when zero, so a
 *   program built against a newer, larger struct runs on an older library as long
 *   as it leaves the new fields zero; if it sets one the call fails with IK_EINVAL
 *   rather than ignore it (Linux's openat2 and clone3 follow the same rule). A
 *   size of 0 (a struct never given to its init) is IK_EINVAL. The other structs
 *   (ik_layout, the *_info results, ik_clock) are fixed for this .so version.
 *
 * - NULL arguments: every function checks its pointer arguments the same way. A NULL
 *   where a call needs an object (a handle, a struct to read or fill, a name, an
 *   out-parameter) is IK_EINVAL for a call that returns an int or an int64_t (and it
 *   changes nothing); a call that returns nothing then does nothing (a destroy,
 *   close, free, init or *_get_info: an info struct given with a NULL handle is
 *   zeroed, its worker -1); one that returns a pointer returns NULL; ik_lock_state
 *   and ik_election_state return IK_HOLD_IDLE. The exceptions say so where they are
 *   declared: a NULL URI is IK_EURI, a NULL layout text IK_ELAYOUT, and
 *   ik_slot_lease_release(NULL) is IK_OK. An argument documented as optional keeps
 *   its meaning when NULL: options (o), clock, why (whatever why_len), fence,
 *   description, ctx, app ("default"), the log and gap hooks (none: the defaults),
 *   and ik_coord_hazards' out and n (ik_coord_last_error's why is its out-parameter,
 *   never optional). tests/unit/test_null_args.c holds every
 *   function of this header to it.
 * - fork(): a child made by fork() without exec (a pre-fork server, daemon(3))
 *   never issues an ID on its parent's lease or blocks. Every handle made before the
 *   fork (coord, generator, lease, segment, sequence) refuses every call in the
 *   child with IK_EFORKED and touches nothing of the parent's: no store, no lock, no
 *   thread (the child has none of the library's threads, and a mutex one of them
 *   held at the fork stays held). Its destroy, close and release return at once
 *   and leave the copy as it is (ik_slot_lease_release answers IK_EFORKED, and
 *   ik_snowflake_destroy frees the generator, which has no thread): none settles,
 *   writes or releases anything, since the parent goes on using them. The child's
 *   copies of the parent's slot descriptors (local:) are closed at the fork, so the
 *   child never keeps the parent's slot held. Safe in the child: every call that
 *   takes no handle made before the fork (ik_strerror, ik_layout_*, ik_parse_id,
 *   ik_tag_name_check, the *_options_init ...), ik_snowflake_get_info and
 *   ik_slot_lease_get_info (state lost, why saying so), and opening new handles: ik_coord_open,
 * ik_snowflake_create, then a lease, a segment or a sequence on the new coord, which take a slot
 * and blocks of the child's own (docs/local.md, "fork()"). Locks, read-write locks and elections
 * made before the fork must not be used in the child (their files, nodes and threads are the
 *   parent's); one cannot be made there on a coord opened before it (IK_EFORKED).
 *   Only forks made through libc are seen (fork, daemon, system): not a raw
 *   clone(2), nor vfork, whose child may only exec.
 *
 * What this library deliberately does not do: it never issues an ID it cannot prove
 * unique. When in doubt (no lease, clock behind, time record not yet past) it
 * returns an error and the caller answers "try again later".
 */
#ifndef IDKEEPER_H
#define IDKEEPER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define IK_EXTERN __attribute__((visibility("default")))
#else
#define IK_EXTERN
#endif

/* The version of idkeeper: the one place it is written. CMakeLists.txt reads these
 * three lines (the project version, the .so name, idkeeper.pc, the man pages), and
 * tests/integration/t_version.sh holds debian/changelog and NEWS to them. */
#define IK_VERSION_MAJOR 0
#define IK_VERSION_MINOR 6
#define IK_VERSION_PATCH 0
#define IK_VERSION__STR(x) #x
#define IK_VERSION__XSTR(x) IK_VERSION__STR(x)
/* "MAJOR.MINOR.PATCH", built from the three numbers above. */
#define IK_VERSION_STRING                                                                          \
    IK_VERSION__XSTR(IK_VERSION_MAJOR)                                                             \
    "." IK_VERSION__XSTR(IK_VERSION_MINOR) "." IK_VERSION__XSTR(IK_VERSION_PATCH)

/* ------------------------------------------------------------------------------
 * Errors: 0 is success. -1..-4095 are negated errno values (IK_ESYS(errno)).
 * -10000.. are API errors. -20000.. are backend errors: a ZooKeeper error code
 * Z is reported as IK_EZK_BASE + Z (ZooKeeper codes are negative).
 */
typedef enum ik_error {
    IK_OK = 0,
    IK_EINVAL = -10001,     /* an argument is malformed or out of range */
    IK_ENOMEM = -10002,     /* allocation failed */
    IK_ELAYOUT = -10003,    /* the bit layout is invalid */
    IK_ENOLEASE = -10004,   /* no valid worker lease now: not issuing */
    IK_ECLOCKBACK = -10005, /* the clock went back more than max_backward */
    IK_ETIMEGUARD = -10006, /* the clock has not yet passed the slot's time record */
    IK_ENOSLOT = -10007,    /* no free worker slot in the range */
    IK_ETIMEDOUT = -10008,  /* gave up waiting */
    IK_EURI = -10009,       /* the coordination URI is malformed or unsupported */
    IK_ESTORE = -10010,     /* the backend store is unreachable or failed */
    IK_EINDOUBT = -10011,   /* the backend may or may not have done it (its answer was
                               lost: a connection, or on local: an I/O error in a commit) */
    IK_ELOST = -10012,      /* the slot (or session) is no longer ours */
    IK_ECLOSED = -10013,    /* the handle is shutting down */
    IK_ERANGE = -10014,     /* a value lies outside what the layout can hold */
    IK_ENOTFOUND = -10015,  /* no such object (tag, slot, node) */
    IK_EEXIST = -10016,     /* the object exists already */
    IK_EBUSY = -10017,      /* the resource is held by someone else */
    IK_EKIND = -10018,      /* the tag exists, but is of the other kind */
    IK_EUNSAFE = -10019,    /* the store's settings can lose an acknowledged write or a
                               lease now (docs/hazards.md): nothing was written */
    IK_EDENIED = -10020,    /* since 0.6.0: the store refused this client for good (a
                               wrong password, an unknown user or database): trying
                               again will not help; ik_coord_open's why says which */
    IK_EFORKED = -10021,    /* since 0.6.0: the handle was made before this fork(): it is
                               the parent's ("fork()" above); nothing was done */
    IK_ECONFLICT = -10022,  /* since 0.6.0: the object exists with other settings (a
                               semaphore's stored max): nothing was taken */
    IK_EZK_BASE = -20000,   /* IK_EZK_BASE + ZooKeeper error code */
} ik_error;

#define IK_ESYS(e) (-(e))

/* Not an error: the answer comes later, through the callback. */
#define IK_PENDING 1
/* Not an error: try again later (ik_snowflake_try_next_n says when). */
#define IK_AGAIN 2

/* Returns a static, human-readable description of err; never NULL. */
IK_EXTERN const char *ik_strerror(int err);
/* Returns a static short name of err ("IK_ENOLEASE", "ENOENT", ...); never NULL. */
IK_EXTERN const char *ik_errname(int err);

/* Frees memory returned by the library. Accepts NULL. */
IK_EXTERN void ik_free(void *p);

/* The library's version ("0.1.0"). */
IK_EXTERN const char *ik_version(void);

/* Where the library writes its few log lines: a lost ZooKeeper answer settled or a
 * sequence gap ("tag gap tag=T first=A count=K why=W", see ik_set_gap_hook), and the
 * ZooKeeper client's errors. fn gets one line without its newline, from any library
 * thread, and must be thread-safe. The default (fn NULL) writes "idkeeper: LINE" to stderr. Set it
 * before opening a backend; the daemon sets it to its own timestamped log. */
typedef void (*ik_log_fn)(void *ctx, const char *line);
IK_EXTERN void ik_set_log(ik_log_fn fn, void *ctx);

/* ------------------------------------------------------------------------------
 * Clock source. The library reads time only through one of these, so tests can
 * step a clock. All callbacks must be thread-safe.
 */
typedef struct ik_clock {
    int64_t (*wall_ns)(void *ctx);           /* CLOCK_REALTIME: ns since the Unix epoch */
    int64_t (*mono_ns)(void *ctx);           /* CLOCK_BOOTTIME: ns, never goes back, and
                                                counts time the host spent suspended */
    void (*sleep_ns)(void *ctx, int64_t ns); /* sleep at least ns (ns > 0) */
    void *ctx;
} ik_clock;

/* The system clock (clock_gettime, clock_nanosleep). Static; never NULL. */
IK_EXTERN const ik_clock *ik_clock_system(void);

/* ------------------------------------------------------------------------------
 * Bit layout of a snowflake ID: 0...0 | time | worker | sequence. The three
 * fields take 63 bits or fewer; the bits above them are zero (a layout of 53 bits
 * or fewer gives IDs a JavaScript number holds exactly). The time field counts
 * units of unit_ms since epoch_ms.
 */
typedef struct ik_layout {
    int64_t epoch_ms;          /* Unix ms of time 0; default 1288834974657 */
    int64_t unit_ms;           /* 1, 10 or 1000; default 1 */
    unsigned time_bits;        /* default 41 */
    unsigned worker_bits;      /* default 10 */
    unsigned seq_bits;         /* default 12 */
    uint32_t worker_min;       /* inclusive; default 0 */
    uint32_t worker_max;       /* inclusive; default 2^worker_bits - 1 */
    uint32_t seq_random_bound; /* 0: each tick starts at sequence 0; else at a
                                  random value below this bound (Leaf's spread) */
} ik_layout;

#define IK_DEFAULT_EPOCH_MS INT64_C(1288834974657)
#define IK_JS53_EPOCH_MS INT64_C(1704067200000) /* 2024-01-01T00:00:00Z */

/* Fills l with the default layout (41/10/12, 1 ms, Twitter/Leaf epoch). */
IK_EXTERN void ik_layout_default(ik_layout *l);

/* Checks that l is usable at wall time now_ms: bits sum to 63 or fewer, each field is wide
 * enough, the unit is 1, 10 or 1000 ms, the worker range fits, the epoch is not in
 * the future, and the time bits last at least 10 more years. Returns 0 or
 * IK_ELAYOUT with a one-line reason in why (if why_len > 0). */
IK_EXTERN int ik_layout_check(const ik_layout *l, int64_t now_ms, char *why, size_t why_len);

/* Parses a layout description into *l, starting from the values already in *l,
 * or from a preset named first ("default", or "js53": bits=37/5/11, unit=10ms,
 * epoch=2024-01-01, workers=0-31, IDs below 2^53 until 2067).
 * Then comma-separated key=value items, any subset, any order:
 *   bits=T/W/S  epoch=UNIX_MS|YYYY-MM-DD  unit=1ms|10ms|1s  workers=A-B
 *   seq-start=0|random:BOUND
 * e.g. "bits=39/8/16,unit=10ms,workers=0-31". Returns 0 or IK_ELAYOUT with why;
 * on failure *l is unchanged. Syntax only: call ik_layout_check() as well. */
IK_EXTERN int ik_layout_parse(ik_layout *l, const char *text, char *why, size_t why_len);

/* Writes the canonical description of l (parseable by ik_layout_parse) into buf.
 * Returns the length it needed (like snprintf). */
IK_EXTERN int ik_layout_format(const ik_layout *l, char *buf, size_t len);

/* Unix ms of the first instant the time field cannot hold (the layout runs out). */
IK_EXTERN int64_t ik_layout_end_ms(const ik_layout *l);

/* Ticks (time units since the epoch) at Unix time wall_ms, floored; negative
 * before the epoch. */
IK_EXTERN int64_t ik_layout_ticks_at(const ik_layout *l, int64_t wall_ms);

typedef struct ik_id_parts {
    int64_t id;
    uint64_t ticks;  /* time field */
    int64_t time_ms; /* Unix ms of the tick's start */
    uint32_t worker;
    uint32_t sequence;
} ik_id_parts;

/* Composes an ID. Returns IK_ERANGE if a field does not fit. */
IK_EXTERN int ik_layout_compose(const ik_layout *l, uint64_t ticks, uint32_t worker,
                                uint32_t sequence, int64_t *id);
/* Splits id into its fields. Returns IK_ERANGE for a negative id, or one with bits
 * set above the layout's fields (not an ID of this layout). */
IK_EXTERN int ik_layout_decode(const ik_layout *l, int64_t id, ik_id_parts *out);

/* Strict decimal parse of a positive or zero int64 (no sign, no spaces, no
 * leading zeros except "0", at most 19 digits, no overflow). Returns 0 or IK_EINVAL. */
IK_EXTERN int ik_parse_id(const char *text, size_t len, int64_t *out);

/* ------------------------------------------------------------------------------
 * Snowflake generator. Issues strictly increasing IDs while it holds a grant (a
 * worker number, a time floor and ceiling, and a monotonic deadline). Without a
 * valid grant it issues nothing (IK_ENOLEASE). Normally an ik_slot_lease grants
 * and extends; embedders with a fixed worker number call ik_snowflake_grant().
 *
 * Clock rules: a tick's sequence used up -> wait for the next tick. Clock behind
 * the last issued tick by at most max_backward_ms -> wait; by more -> IK_ECLOCKBACK
 * until it catches up. Clock not past the grant's floor -> IK_ETIMEGUARD.
 * Clock past the grant's ceiling (the time record not yet persisted) -> wait up to
 * 50 ms for an extension, then IK_ENOLEASE. Never spins for more than one tick.
 */
typedef struct ik_snowflake ik_snowflake;

/* clock may be NULL (system clock); it must outlive the generator. */
IK_EXTERN int ik_snowflake_create(const ik_layout *layout, int64_t max_backward_ms,
                                  const ik_clock *clock, ik_snowflake **out);
IK_EXTERN void ik_snowflake_destroy(ik_snowflake *g);

/* One ID. Thread-safe. */
IK_EXTERN int ik_snowflake_next(ik_snowflake *g, int64_t *id);
/* n IDs, strictly increasing, into ids[0..n-1]; all or nothing. Thread-safe. May
 * sleep, as the clock rules above say (at most one tick, max_backward_ms, or 50 ms). */
IK_EXTERN int ik_snowflake_next_n(ik_snowflake *g, size_t n, int64_t *ids);

/* The state of one request through ik_snowflake_try_next_n: zero it before the
 * first call, pass it unchanged to the next. */
typedef struct ik_snowflake_try {
    size_t done;              /* IDs issued so far: ids[0..done-1] */
    int64_t wait_ns;          /* after IK_AGAIN: call again this much later */
    int64_t ceiling_since_ns; /* when the request began waiting for the ceiling (0: not
                                 yet; a caller that queues a request may set its
                                 arrival, on the clock's mono_ns) */
} ik_snowflake_try;

/* ik_snowflake_next_n for an event loop: it never sleeps. Where next_n would wait
 * it returns IK_AGAIN with st->wait_ns set and ids[0..st->done-1] issued; call again
 * with the same ids, n and st after that wait (on a timer) to go on. IK_OK: all n
 * issued. An error: the request fails, and the IDs issued so far must be dropped
 * (never returned: they are burned, not reused). The ceiling wait still ends in
 * IK_ENOLEASE 50 ms after it began, counted across calls. Thread-safe; st belongs
 * to one request. */
IK_EXTERN int ik_snowflake_try_next_n(ik_snowflake *g, size_t n, int64_t *ids,
                                      ik_snowflake_try *st);

#define IK_NO_CEILING UINT64_MAX
#define IK_FOREVER INT64_MAX

/* Grants the generator worker number `worker`: it may issue ticks t with
 * floor_tick < t <= ceiling_tick while the clock's mono_ns (CLOCK_BOOTTIME for the
 * system clock) is before valid_until_mono_ns. A new grant never lets IDs go down:
 * issued ticks stay above any tick issued under an earlier grant. Returns IK_ERANGE
 * if worker is outside the layout's range. */
IK_EXTERN int ik_snowflake_grant(ik_snowflake *g, uint32_t worker, uint64_t floor_tick,
                                 uint64_t ceiling_tick, int64_t valid_until_mono_ns);
/* Extends the current grant (same worker). Values only move forward. Returns
 * IK_ENOLEASE if there is no grant. */
IK_EXTERN int ik_snowflake_extend(ik_snowflake *g, uint64_t ceiling_tick,
                                  int64_t valid_until_mono_ns);
/* Withdraws the grant: from return on, no call issues an ID under it. */
IK_EXTERN void ik_snowflake_revoke(ik_snowflake *g);

typedef struct ik_snowflake_info {
    int granted; /* a grant is installed (it may have lapsed) */
    uint32_t worker;
    uint64_t floor_tick, ceiling_tick;
    int64_t valid_until_mono_ns;
    uint64_t last_tick;         /* highest tick issued so far (0: none) */
    uint64_t issued;            /* IDs issued */
    uint64_t tick_waits;        /* waits for the next tick (sequence used up) */
    uint64_t backward_waits;    /* waits for a clock that went back a little */
    uint64_t backward_refusals; /* refusals for a clock that went back too far */
    int64_t last_backward_ms;   /* size of the latest backward jump seen */
} ik_snowflake_info;

IK_EXTERN void ik_snowflake_get_info(const ik_snowflake *g, ik_snowflake_info *out);
IK_EXTERN const ik_layout *ik_snowflake_layout(const ik_snowflake *g);

/* ------------------------------------------------------------------------------
 * Coordination backends: "local:DIR" or "zk://HOST:PORT[,HOST:PORT...][/CHROOT]".
 */
typedef struct ik_coord ik_coord;

typedef struct ik_coord_options {
    size_t size; /* set by ik_coord_options_init ("Options structs" above) */
    /* Deprecated since 0.6.0 (kept for the layout): zk://'s session-timeout and auth
     * store options (store_options below, which wins). */
    int zk_session_timeout_ms; /* default 10000 */
    const char *zk_auth;       /* "user:password" for digest auth, or NULL */
    /* Since 0.3.0, for the stores that log in with one (mysql://, postgresql://,
     * redis://, etcd://; `idkeeper serve --help` lists a build's): the password, or
     * NULL for none (or the one the URI holds). Copied
     * by ik_coord_open: the caller may wipe its own copy once that returns. The
     * library never shows it: every URI it logs or answers has its password removed. */
    const char *password;
    /* Since 0.3.0, for the stores whose worker slots are leases with an expiry
     * (mysql://, postgresql://, redis://, etcd://; `idkeeper serve --help` lists a
     * build's, from its backends' ops tables): a slot's time to live, default 10000 ms. A
     * killed holder's slot frees after it; a holder that cannot renew stops issuing
     * at a safe part of it (docs/guarantees.md promise 10). */
    int lease_ttl_ms;
    /* Since 0.3.0: 1 to serve (slots and counters) on a store whose settings can lose
     * an acknowledged write or a lease: each such setting is then a logged "risk"
     * rather than a refusal (docs/hazards.md); default 0. */
    int allow_unsafe_store;
    /* Deprecated since 0.6.0 (kept for the layout): redis://'s wait-replicas store
     * option (store_options below, which wins).
     * Since 0.3.0, redis:// only: each counter write waits (WAIT) until this many
     * replicas have it; one not confirmed in time is in doubt and its range is never
     * handed out (docs/redis.md). Default 0: no WAIT. */
    int redis_wait_replicas;
    /* Since 0.4.0: 1 opens the store even where one of its settings would be refused,
     * for ik_coord_check (`idkeeper check`) to report on it. Such a coord refuses every
     * slot and counter write with IK_EUNSAFE while a setting is refused. Default 0:
     * ik_coord_open fails with IK_EUNSAFE, naming the setting. */
    int check_only;
    /* Since 0.5.0, zk:// only: the leaf.name of a Meituan Leaf snowflake fleet to join
     * (docs/migration-from-leaf.md). Worker slots are then Leaf's own nodes,
     * /snowflake/NAME/forever/IP:PORT-NNNNNNNNNN, fenced by an ephemeral node of ours;
     * the identity must be Leaf's IP:PORT. NULL (the default): idkeeper's own slots.
     * Another scheme with it set fails with IK_EINVAL. Copied by ik_coord_open. */
    const char *leaf_name;
    /* Since 0.6.0: the store's own options, "NAME=VALUE" each, NULL-terminated (NULL:
     * none). NAME is one of the backend's (its note, and docs/configuration.md, "Store
     * options"): the same names its URI's query takes ("zk://h:2181/app?session-timeout=
     * 4000" is {"session-timeout=4000", NULL}). A name the backend has not, a bad value,
     * or a name given here and in the URI with two values: IK_EINVAL, naming the
     * options that exist. Copied by ik_coord_open. The fields zk_session_timeout_ms,
     * zk_auth and redis_wait_replicas above are deprecated: each is still honoured by
     * its backend (as session-timeout, auth, wait-replicas) where neither this list nor
     * the URI gives that option, and ignored by the other backends. */
    const char *const *store_options;
    /* Since 0.6.0, with leaf_name: the identity (IP:PORT, the server's own) whose node
     * a Leaf server wrote may be taken over. A Leaf server starts on the number cached
     * in its workerID.properties whenever its start-up checks fail, and writes nothing
     * then, so nothing can fence it: by default a server takes only a number no Leaf
     * server has held (a node idkeeper made). Set this only once that identity's Leaf
     * deployment and its cache are gone (docs/migration-from-leaf.md). NULL (the
     * default): never. Another identity than the server's fails its take with
     * IK_EINVAL; without leaf_name, ik_coord_open fails with IK_EINVAL. Copied by
     * ik_coord_open. */
    const char *leaf_takeover;
} ik_coord_options;

IK_EXTERN void ik_coord_options_init(ik_coord_options *o);

/* Opens the backend named by uri. o may be NULL (defaults). why (if why_len > 0)
 * gets a one-line reason on failure (IK_EURI for a malformed URI or a scheme this
 * build lacks, IK_EINVAL for options, IK_ESTORE if it cannot be reached). */
IK_EXTERN int ik_coord_open(const char *uri, const ik_coord_options *o, ik_coord **out, char *why,
                            size_t why_len);
/* Closes c: first settles or logs every doubt still open (as ik_coord_settle),
 * then frees the backend. Accepts NULL. */
IK_EXTERN void ik_coord_close(ik_coord *c);

/* A stop with a bound (docs/guarantees.md promise 13). From timeout_ms after this
 * call, every call of c still blocked on the store is cut (its socket shut, its wait
 * ended: it fails as a store that did not answer) and every later one fails without
 * waiting on the store, so that ik_coord_settle, ik_slot_lease_release and
 * ik_coord_close end within about that time whatever the store does. From the call
 * on, a slot lease's renewals wait for no answer (the release, which should follow,
 * settles them). 0, or IK_EINVAL (negative timeout, or called twice). Any thread. */
IK_EXTERN int ik_coord_stop_within(ik_coord *c, int64_t timeout_ms);

/* Settles every open doubt of c's counters (a tag advance whose answer was lost)
 * with one read each, or logs it as a gap of unknown place ("tag gap ... first=?
 * ... why=maybe_recorded"), before it returns: never through a store whose checks
 * refuse (they are run once more first; a refusal logs the doubts without touching
 * the store). A daemon calls it at its stop before it releases
 * its slot, so that a supervisor's kill never lands before the line. Any thread,
 * with no tag advance of c running; blocks on I/O (bounded by ik_coord_stop_within,
 * where called). */
IK_EXTERN void ik_coord_settle(ik_coord *c);
/* The canonical URI ("local:/abs/dir", "zk://h:p/chroot"); valid until close. */
IK_EXTERN const char *ik_coord_uri(const ik_coord *c);
/* Checks an URI's syntax without opening it. */
IK_EXTERN int ik_coord_uri_check(const char *uri, char *why, size_t why_len);
/* Since 0.3.0: the SQL schema that the backend of uri (mysql://, postgresql://)
 * creates on first use, for a DBA who creates the tables by hand: *out (freed with
 * ik_free) holds its statements, each ending with ";" and a blank line. No I/O.
 * IK_EURI for a malformed URI (why says why); IK_ENOTFOUND for a backend without a
 * schema (local:, zk://). */
IK_EXTERN int ik_coord_schema(const char *uri, char **out, char *why, size_t why_len);
/* Store hazards (docs/hazards.md): every setting or condition of the store that can
 * lose an acknowledged write, a lease or a lock, each judged by one check. A
 * backend checks them at open, again on every new connection and, while serving, at
 * least every hazard interval (the lease TTL or ZooKeeper session timeout / 3, at
 * most 10 s) on the connections it uses. While a check is refused the coord writes
 * nothing: slot renewals and counter advances fail with IK_EUNSAFE (the lease goes
 * in doubt and its generator stops at once), until a later check finds it safe. */
typedef enum ik_verdict {
    IK_VERDICT_OK = 0,      /* safe */
    IK_VERDICT_RISK = 1,    /* unsafe or unverifiable, but accepted: allow_unsafe_store,
                               logged; serving goes on without this guarantee */
    IK_VERDICT_REFUSED = 2, /* unsafe: the coord refuses to write while it lasts */
} ik_verdict;

typedef struct ik_hazard {
    char check[48]; /* what is checked: "appendfsync", "maxmemory-policy", ... */
    char value[96]; /* the value found ("?" where it could not be read) */
    ik_verdict verdict;
    char fix[240]; /* what to change; "" when the verdict is ok */
} ik_hazard;

/* The verdict's name: "ok", "risk", "refused". Static; never NULL. */
IK_EXTERN const char *ik_verdict_name(ik_verdict v);

/* Runs every hazard check of c's backend now, on a connection it serves with, and
 * returns one row per check in *out (*n rows, freed with ik_free). The verdicts
 * also become c's current ones (they stop or resume writes as the block above
 * says). IK_ESTORE (why says why) if the store cannot be asked. Any thread; blocks
 * on I/O. */
IK_EXTERN int ik_coord_check(ik_coord *c, ik_hazard **out, size_t *n, char *why, size_t why_len);

/* The verdicts of c's latest checks, without I/O (*out freed with ik_free; *n may be
 * 0 before the first check). Returns 0 if no check is refused now, else IK_EUNSAFE
 * with why naming the first refused setting, its value and what to change (out,
 * n and why may each be NULL/0 to skip). Any thread. */
IK_EXTERN int ik_coord_hazards(ik_coord *c, ik_hazard **out, size_t *n, char *why, size_t why_len);

/* 0 if c's backend offers locks and elections; else IK_EURI with why saying why not
 * and which backends do (redis:// cannot fence them). */
IK_EXTERN int ik_coord_locks_check(const ik_coord *c, char *why, size_t why_len);

/* Since 0.6.0: why c's store failed last, in one line (the path, the errno or the
 * store's own words, and what to change), for a call that failed with IK_ESTORE or
 * a system error and has no why of its own (ik_tags_list, ik_slots_list,
 * ik_lock_acquire ...), or a cause the open found that later calls will meet (on
 * local:, a DIR this user cannot write). 0 with why filled, or IK_ENOTFOUND (why "")
 * where the backend has nothing to say. The latest reason stays until another
 * replaces it: read it right after the call that failed. Any thread; no I/O. */
IK_EXTERN int ik_coord_last_error(const ik_coord *c, char *why, size_t why_len);

/* ------------------------------------------------------------------------------
 * Worker slot lease (docs/guarantees.md promises 6-13). Holds one slot of the app's range and
 * drives an ik_snowflake: grants it the slot, extends the grant after each acknowledged write of
 * the time record, withdraws it when the lease is lost, and takes a slot again (with the time
 * guard) after the backend session expires. A lease in doubt keeps its grant, whose deadline (the
 * window the last acknowledged write proved) runs out by itself: past that safe window the
 * generator stops issuing (IK_ENOLEASE) while the lease stays IN_DOUBT, and issues again once the
 * store answers on the same session.
 *
 *   ACQUIRING --acquired--> HELD --store unreachable--> IN_DOUBT --store answers--> HELD
 *   IN_DOUBT --safe window passed--> IN_DOUBT (not issuing; why says so)
 *   HELD, IN_DOUBT --session expired or slot taken over--> LOST --> ACQUIRING
 *   any --ik_slot_lease_release()--> RELEASED
 */
typedef enum ik_lease_state {
    IK_LEASE_ACQUIRING = 0,
    IK_LEASE_HELD = 1,
    IK_LEASE_IN_DOUBT = 2,
    IK_LEASE_LOST = 3,
    IK_LEASE_RELEASED = 4,
} ik_lease_state;

typedef enum ik_slot_choice { IK_SLOT_RANDOM = 0, IK_SLOT_LOWEST = 1 } ik_slot_choice;

typedef struct ik_lease_options {
    size_t size;                 /* set by ik_lease_options_init ("Options structs") */
    const char *app;             /* namespace; default "default" */
    const char *identity;        /* who holds the slot; required */
    ik_slot_choice choice;       /* when the identity's last slot is not free */
    int64_t persist_interval_ms; /* time record written at least this often; default 1000 */
    /* No free slot at start: wait up to this long for one to free up (docs/guarantees.md promise
     * 9), ACQUIRING meanwhile. IK_SLOT_WAIT_DEFAULT (ik_lease_options_init's value): the backend's,
     * the time a dead holder's slot takes to free plus 2 s (zk://: this coord's negotiated session
     * timeout + 2 s; local: 0, a slot frees at once). At most IK_SLOT_WAIT_MAX. */
    int64_t slot_wait_ms;
    /* Called at each state change, on the lease thread (RELEASED: on the thread
     * that calls ik_slot_lease_release); may be NULL. */
    void (*on_state)(void *ctx, ik_lease_state state, int worker, const char *why);
    void *ctx;
} ik_lease_options;

#define IK_SLOT_WAIT_DEFAULT (-1)
#define IK_SLOT_WAIT_MAX INT64_C(86400000)

typedef struct ik_slot_lease ik_slot_lease;

IK_EXTERN void ik_lease_options_init(ik_lease_options *o);

/* Takes a slot in the generator's layout range [worker_min, worker_max] and starts
 * the lease thread. Returns when a slot is held (the generator may still wait for
 * the time guard), or fails: IK_ENOSLOT with why naming the range and the holders
 * (after o->slot_wait_ms of waiting for one to free up). The coord and generator
 * must outlive the lease. Equivalent to ik_slot_lease_begin, then
 * ik_slot_lease_wait_held without a timeout, then ik_slot_lease_release on error. */
IK_EXTERN int ik_slot_lease_start(ik_coord *c, ik_snowflake *g, const ik_lease_options *o,
                                  ik_slot_lease **out, char *why, size_t why_len);

/* Starts the lease thread, which takes the first slot in the background: returns
 * at once (IK_EINVAL for bad options) with *out ACQUIRING; ik_slot_lease_get_info
 * tells what it is doing (why: "waiting ... for a free slot: ..." while the range
 * is full). ik_slot_lease_wait_held tells the outcome. */
IK_EXTERN int ik_slot_lease_begin(ik_coord *c, ik_snowflake *g, const ik_lease_options *o,
                                  ik_slot_lease **out, char *why, size_t why_len);

/* Waits up to timeout_ms (< 0: no limit) for the first acquisition of l: 0 once a
 * slot is held, IK_ETIMEDOUT if still acquiring (why, since 0.6.0: what it waits
 * for, uncut, where ik_lease_info.why may be cut; "" before a first try failed), or
 * the error that ended it (why says why: IK_ENOSLOT names the range and the
 * holders). After an error only ik_slot_lease_release is valid. Any thread. */
IK_EXTERN int ik_slot_lease_wait_held(ik_slot_lease *l, int64_t timeout_ms, char *why,
                                      size_t why_len);

typedef struct ik_lease_info {
    ik_lease_state state;
    int worker;            /* -1 while none is held */
    int64_t since_ms;      /* Unix ms the slot was taken */
    int64_t record_ms;     /* time record last persisted (Unix ms) */
    int64_t valid_for_ms;  /* how long IDs may still flow without a backend answer */
    uint64_t acquisitions; /* slots taken so far (1 + re-acquisitions) */
    char session[64];      /* backend session ("0x..." on zk, "" on local) */
    char why[160];         /* reason of the latest state change */
} ik_lease_info;

IK_EXTERN void ik_slot_lease_get_info(ik_slot_lease *l, ik_lease_info *out);
/* Stops the lease thread, revokes the grant, persists the time record, releases
 * the slot and frees l. Accepts NULL. Returns the release's error, if any. */
IK_EXTERN int ik_slot_lease_release(ik_slot_lease *l);

IK_EXTERN const char *ik_lease_state_name(ik_lease_state s);

/* One slot of an app, as the backend sees it. */
typedef struct ik_slot_info {
    uint32_t worker;
    int held;          /* 1 if a live holder has it */
    char holder[256];  /* holder's identity ("" if never held) */
    char detail[128];  /* pid, host, session: backend-specific, may be "" */
    int64_t since_ms;  /* Unix ms the current holder took it (0 if free) */
    int64_t record_ms; /* time record (Unix ms; 0 if none) */
} ik_slot_info;

/* Lists every slot the app has ever used, ordered by worker. *out is freed with
 * ik_free(). */
IK_EXTERN int ik_slots_list(ik_coord *c, const char *app, ik_slot_info **out, size_t *n);

/* ------------------------------------------------------------------------------
 * Tags: named durable counters for segment and sequence IDs (docs/guarantees.md promises 3-5). A
 * tag's max_id is its high-water mark: the next ID no server has taken yet. Taking a block of n
 * advances it by n atomically (SQLite transaction on local:, version-checked setData on zk://), so
 * two servers never take the same ID.
 */
typedef enum ik_tag_kind { IK_TAG_SEGMENT = 1, IK_TAG_SEQUENCE = 2 } ik_tag_kind;

#define IK_TAG_NAME_MAX 128

typedef struct ik_tag_info {
    char name[IK_TAG_NAME_MAX + 1];
    ik_tag_kind kind;
    int64_t start;          /* the first ID */
    int64_t step;           /* segment: the smallest block; sequence: 1 */
    int64_t max_id;         /* the next ID no server has taken */
    int64_t update_time_ms; /* last advance (Unix ms) */
    char description[256];
} ik_tag_info;

/* Tag names: 1 to 128 bytes of [A-Za-z0-9._:-]. IK_EINVAL with a reason. */
IK_EXTERN int ik_tag_name_check(const char *name, char *why, size_t why_len);
/* "segment" / "sequence". */
IK_EXTERN const char *ik_tag_kind_name(ik_tag_kind k);
IK_EXTERN int ik_tag_kind_parse(const char *text, ik_tag_kind *out);

/* A gap the library found in a tag's IDs: count IDs of tag (of app, and of kind)
 * from first (first < 0: the place is not known) were recorded in the store, were
 * never answered and are never handed out. why names the cause: "answer_lost" (a
 * store write whose answer was lost had recorded them), "maybe_recorded" (such a
 * write may have, and cannot be placed), "not_replicated" (recorded, but fewer
 * replicas than asked confirmed it in time), "store_unsafe" (recorded, but the
 * write's own proof of durability was refused: docs/hazards.md, "Proof with every
 * write"). The library logs each one first, as
 * "tag gap tag=T first=A count=K why=W (...)" (first=? when not known), then calls
 * fn, on the library thread that found it; fn must be thread-safe, must not block
 * and must not call into the library. The daemon counts sequence gaps in /metrics
 * (ik_sequence_gap_ids_total). Since 0.3.0. Set it before opening a backend. */
typedef void (*ik_gap_fn)(void *ctx, const char *app, const char *tag, ik_tag_kind kind,
                          int64_t first, int64_t count, const char *why);
IK_EXTERN void ik_set_gap_hook(ik_gap_fn fn, void *ctx);

/* Creates a tag whose first ID is start (>= 0) and whose step is >= 1 (segment;
 * sequence tags take 1). IK_EEXIST if the name is taken (of either kind), IK_EINVAL
 * with a reason for a bad name, start or step. description may be NULL. */
IK_EXTERN int ik_tag_create(ik_coord *c, const char *app, const char *name, ik_tag_kind kind,
                            int64_t start, int64_t step, const char *description, char *why,
                            size_t why_len);
/* IK_ENOTFOUND if there is no such tag. */
IK_EXTERN int ik_tag_get(ik_coord *c, const char *app, const char *name, ik_tag_info *out);
/* ik_tag_get, and on a failure other than IK_ENOTFOUND a one-line reason in why (if
 * why_len > 0; "" when the backend has none), e.g. the store's key that does not
 * hold a tag's value. Since 0.6.0. */
IK_EXTERN int ik_tag_read(ik_coord *c, const char *app, const char *name, ik_tag_info *out,
                          char *why, size_t why_len);
/* Why the last advance of the app's tag through c failed, in the store's own words
 * (what it refused and why: a trigger that rewrote max_id, "OOM command not allowed
 * when used memory > 'maxmemory'", "etcdserver: mvcc: database space exceeded"),
 * into why (its out-parameter, never optional): 1 if the store said something, 0 if
 * not (why ""), or if the last advance succeeded; IK_EINVAL for a NULL c, name or
 * why. For an answer that names the cause: an advance's own status is only its code.
 * Any thread. Since 0.6.0. */
IK_EXTERN int ik_tag_last_error(ik_coord *c, const char *app, const char *name, char *why,
                                size_t why_len);
/* All tags of the app, by name; *out freed with ik_free. */
IK_EXTERN int ik_tags_list(ik_coord *c, const char *app, ik_tag_info **out, size_t *n);

/* Where a pending request's IDs arrive: called exactly once, with status 0 and n IDs
 * (valid only during the call), or with a negative status and no IDs. Thread: an
 * ik_segment's loader thread or an ik_sequence's committer thread, never the thread
 * inside ik_*_next; the IK_ECLOSED answers of requests still waiting at destroy
 * come on the thread that calls ik_segment_destroy or ik_sequence_destroy. It must
 * not block for long and must not destroy the allocator. */
typedef void (*ik_ids_cb)(void *ctx, int status, const int64_t *ids, size_t n);

/* ------------------------------------------------------------------------------
 * Segment IDs (Leaf's segment mode): unique, increasing per server, with gaps. Each
 * tag has two blocks in memory, the current one and the next, loaded in the
 * background once preload_at of the current is used, so a request waits on the
 * store only when both are empty. Block size adapts to the rate: a block that lasted
 * less than grow_below_ms doubles the next (up to max_step), one that lasted more
 * than shrink_above_ms halves it (not below the tag's step). Thread-safe.
 */
typedef struct ik_segment ik_segment;

typedef struct ik_segment_options {
    size_t size;             /* set by ik_segment_options_init ("Options structs") */
    double preload_at;       /* 0.1 */
    int64_t max_step;        /* 1000000 */
    int64_t grow_below_ms;   /* 15 minutes */
    int64_t shrink_above_ms; /* 30 minutes */
    int64_t wait_ms;         /* a request waiting for the store gives up after: 3000 */
} ik_segment_options;

IK_EXTERN void ik_segment_options_init(ik_segment_options *o);
/* The coord must outlive the allocator. o may be NULL (defaults). */
IK_EXTERN int ik_segment_create(ik_coord *c, const char *app, const ik_segment_options *o,
                                ik_segment **out);
/* Stops the loader thread; pending requests get IK_ECLOSED. Accepts NULL. */
IK_EXTERN void ik_segment_destroy(ik_segment *s);

/* n IDs of tag, increasing. IK_OK: ids[0..n-1] filled now, cb not called.
 * IK_PENDING: both blocks are empty; cb gets the IDs (or an error) later. Else an
 * error (IK_EINVAL for a bad name or n, or a NULL cb, even when the IDs are at
 * hand), and cb is not called. Errors through cb: IK_ENOTFOUND, IK_EKIND, IK_ESTORE
 * or IK_ETIMEDOUT (store unreachable), IK_ECLOSED, or a system error of the store
 * (IK_ESYS(ENOSPC): local:'s disk full; nothing was taken). */
IK_EXTERN int ik_segment_next(ik_segment *s, const char *tag, size_t n, int64_t *ids, ik_ids_cb cb,
                              void *ctx);
/* The same, waiting for a pending answer. */
IK_EXTERN int ik_segment_next_wait(ik_segment *s, const char *tag, size_t n, int64_t *ids);

typedef struct ik_segment_tag_status {
    char name[IK_TAG_NAME_MAX + 1];
    int64_t cur_next, cur_end;    /* current block: next ID to hand out, end (exclusive) */
    int64_t next_start, next_end; /* the preloaded block (0,0 if none) */
    int64_t step;                 /* size of the latest block loaded */
    int loading;                  /* a load is in flight */
    char last_error[96];          /* latest load failure, "" if none */
    uint64_t issued;              /* IDs of the tag this ik_segment has handed out */
} ik_segment_tag_status;

/* The state of every tag in use; *out freed with ik_free. */
IK_EXTERN int ik_segment_status(ik_segment *s, ik_segment_tag_status **out, size_t *n);

/* ------------------------------------------------------------------------------
 * Sequence IDs: strictly increasing and gap-free across the fleet. Every ID is
 * durably recorded in the store before it is returned; requests that arrive while a
 * commit is in flight are committed together in the next write (group commit), so
 * throughput grows with concurrency. Thread-safe.
 */
typedef struct ik_sequence ik_sequence;

IK_EXTERN int ik_sequence_create(ik_coord *c, const char *app, ik_sequence **out);
/* Waits for the commit in flight, then stops; queued requests get IK_ECLOSED. */
IK_EXTERN void ik_sequence_destroy(ik_sequence *s);
/* Queues a request for n consecutive IDs of tag: IK_PENDING and cb later, or an
 * error now (cb not called). Errors through cb: IK_ENOTFOUND, IK_EKIND, IK_ESTORE,
 * IK_EINDOUBT (the store may have recorded the IDs; they are never handed out, and
 * the gap they may be is logged), IK_ENOMEM (nothing was committed), IK_ECLOSED, or a
 * system error of the store (IK_ESYS(ENOSPC): local:'s disk full; nothing was
 * committed). */
IK_EXTERN int ik_sequence_next(ik_sequence *s, const char *tag, size_t n, ik_ids_cb cb, void *ctx);
/* Withdraws the request that ik_sequence_next(s, tag, n, cb, ctx) queued, if its
 * write has not begun: IK_OK, nothing was or will be committed for it, and cb is
 * never called. IK_ENOTFOUND: no such request is queued (its write has begun, or it
 * has been answered): cb is called as usual, or has been, and a range committed for
 * a caller that no longer wants it is a gap the caller should report. IK_EINVAL for
 * a NULL argument. cb and ctx name the request: while a request is out, its ctx
 * must not be used for another request of the same tag. Any thread, from cb too.
 * Cost: a walk of the tag's queue (the requests that came during the write in
 * flight). */
IK_EXTERN int ik_sequence_cancel(ik_sequence *s, const char *tag, ik_ids_cb cb, void *ctx);
/* The same, waiting for the answer; ids[0..n-1] on success. */
IK_EXTERN int ik_sequence_next_wait(ik_sequence *s, const char *tag, size_t n, int64_t *ids);

/* ------------------------------------------------------------------------------
 * Locks, read-write locks and leader election (docs/guarantees.md promises 19-22), on local:,
 * zk://, postgresql://, mysql:// and etcd:// (not redis://: ik_coord_locks_check says why).
 * docs/recipes.md has the protocols and the state diagrams.
 *
 * A PATH names a lock or an election: '/'-separated segments of printable bytes
 * (no empty segment, no "." or ".."), 1 to 400 bytes; a missing leading '/' is
 * added. On zk:// it is the ZooKeeper node under which the contenders' nodes live
 * (below the URI's chroot), the same path a Curator InterProcessMutex, LeaderLatch
 * or a kazoo Lock is given. On local:DIR it names files under DIR/locks/. Locks,
 * read-write locks and elections on one PATH are three separate things (their
 * nodes or files are named differently); --app does not apply to them.
 *
 * Fair: contenders are served first come, first served; each waiter watches only
 * the contender just ahead of it (no herd). Every grant carries a fencing token
 * that strictly increases with each grant of the same lock: on zk:// the creation
 * zxid of the lock node, on local: a counter in a side file (fsync'ed).
 *
 * The state of a grant (a held lock, or leadership):
 *
 *   IDLE --acquire / campaign--> WAITING --granted--> HELD
 *   HELD --a probe unanswered, the connection lost--> IN_DOUBT
 *   IN_DOUBT --a proof sent after the doubt began (same session or lease)--> HELD
 *   HELD, IN_DOUBT --the store says it is gone (session expired, our node or key
 *                   deleted, the lease revoked, the database session ended): at
 *                   once; or no proof for 2/3 of the term T (the session timeout
 *                   or lease TTL) since the last proof's send--> LOST
 *   any --release / resign--> IDLE
 *
 * One hold monitor decides this for every backend (docs/recipes.md, "The hold
 * monitor"). IN_DOUBT: the holder may have lost it and must not start anything it
 * guards; someone else may hold it soon. LOST: treat it as gone and stop; it comes
 * at least T/3 before the store can hand the grant to anyone else (a grant ended by
 * hand is handed on as it is told), so someone else may hold it soon or already.
 * The library never gives a lost grant back by itself: ik_lock_release does (an
 * election: by itself, or with keep_on_loss at ik_election_rejoin), once what the
 * grant guarded has stopped. A lock is never reported HELD on a session known to be
 * dead. On local: a grant cannot be lost while the process lives (the kernel keeps
 * the flock), so IN_DOUBT and LOST never happen there.
 */
typedef enum ik_hold_state {
    IK_HOLD_IDLE = 0,     /* neither held nor waited for */
    IK_HOLD_WAITING = 1,  /* acquire or campaign in progress */
    IK_HOLD_HELD = 2,     /* held (lock) or leading (election), on a live session */
    IK_HOLD_IN_DOUBT = 3, /* was held; connection lost: it may have been lost */
    IK_HOLD_LOST = 4,     /* was held; certainly not any more */
} ik_hold_state;

/* "idle", "waiting", "held", "in_doubt", "lost". */
IK_EXTERN const char *ik_hold_state_name(ik_hold_state s);

/* Called when a grant changes state: IN_DOUBT, HELD (restored after IN_DOUBT, or
 * leadership gained) and LOST; why is a one-line reason, in the store's words where
 * it gave some, valid during the call. Thread: for an ik_lock (and each half of an
 * ik_rwlock), the lock's hold monitor thread, which starts at its first grant (on
 * local: a grant cannot be lost, and the callback is never called); for an
 * ik_election, the election's own thread. One call at a time per object. It must not
 * block for long, and must not release, resign or destroy the object it is called
 * for (set a flag instead). */
typedef void (*ik_hold_cb)(void *ctx, ik_hold_state state, const char *why);

/* Called with each proof of a grant that moves the end of its trust window, with the
 * new end (as ik_lock_trusted_until gives it: CLOCK_MONOTONIC ns). A program that
 * must stop what a grant guards before anyone else can hold it (`idkeeper lock` and
 * `elect` hand it to the guardian of CMD's tree) keeps the latest and stops by it,
 * whatever this process does meanwhile. Thread: the lock's hold monitor (the thread
 * that probes the grant, docs/recipes.md "The hold monitor"), for every grant of the
 * lock or election, from its first proof to its release; never on local:, where a
 * grant cannot lapse. It must not block, and must not call back into the object. */
typedef void (*ik_hold_proof_cb)(void *ctx, int64_t trusted_until_ns);

/* What a caller learns about a grant. */
typedef struct ik_hold_info {
    ik_hold_state state;
    int64_t fence;    /* fencing token of the current grant (0: none) */
    char node[512];   /* zk://: the full path of our node (chroot included), for
                         zoo_multi checks; etcd://: our key; SQL: the lock's key;
                         local: the file held; "" if none */
    char session[64]; /* zk://: the session holding it ("0x..."); etcd://: "lease HEX";
                         SQL: the database's id of the session; local: "" */
    char why[160];    /* reason of the latest state change, or of a failed acquire
                         (in the store's words where it gave some) */
    /* the grant's term T: zk://, the session timeout the server granted; etcd:// and
     * SQL, the lease TTL (--lease-ttl). A LOST notice comes at least T/3 before
     * anyone else can hold the grant. local: 0 */
    int64_t session_timeout_ms;
} ik_hold_info;

typedef struct ik_lock_options {
    size_t size;          /* set by ik_lock_options_init ("Options structs") */
    ik_hold_cb on_change; /* may be NULL */
    void *ctx;
    const char *data;          /* stored in our node or ticket, for people looking at the
                                  contenders; NULL: "pid=PID host=HOST" */
    ik_hold_proof_cb on_proof; /* may be NULL; called with ctx, as on_change */
} ik_lock_options;

IK_EXTERN void ik_lock_options_init(ik_lock_options *o);

/* Mutex (Curator's InterProcessMutex and, with extra_lock_patterns=["-lock-"],
 * kazoo's Lock on the same zk:// path). Not reentrant: one grant per ik_lock.
 * Threads: acquire and release from one thread at a time (any thread);
 * ik_lock_cancel, ik_lock_state and ik_lock_get_info from any thread at any time. */
typedef struct ik_lock ik_lock;

/* Makes a lock handle for path; nothing is taken yet. o may be NULL. The coord must
 * outlive the lock. IK_EINVAL for a bad path or options; IK_EURI if the coord's
 * backend has no locks. */
IK_EXTERN int ik_lock_create(ik_coord *c, const char *path, const ik_lock_options *o,
                             ik_lock **out);
/* Releases the lock if held and frees lk. On zk:// it waits (at most one session
 * timeout) for the deletion of our node to be confirmed. Accepts NULL. Must not be
 * called on the halves of an ik_rwlock (ik_rwlock_destroy frees them). */
IK_EXTERN void ik_lock_destroy(ik_lock *lk);

/* Waits for the lock: timeout_ms -1 forever, 0 try once, else at most that long.
 * 0: held, *fence (may be NULL) = the grant's fencing token. IK_EBUSY (timeout 0)
 * or IK_ETIMEDOUT: not held, and our node or ticket is removed (on zk:// even
 * across a reconnect, which may make the call return up to one session timeout
 * late). IK_ECLOSED: cancelled by ik_lock_cancel. IK_EINVAL: already held or
 * waited for (a LOST grant is cleaned up first, as by ik_lock_release). IK_ESTORE:
 * the backend failed for good, or still failed at the deadline (local: a file could
 * not be made); ik_lock_get_info's why says why, in the store's words. A store that
 * fails or does not answer for a while (a leader killed, a restart, no connection)
 * is waited out until the deadline, as a holder waits it out. */
IK_EXTERN int ik_lock_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence);
/* Gives the lock up: no callback for this grant once it returns. 0; IK_ELOST if the
 * grant was lost before (nothing more to do); IK_EINVAL if not held. On zk:// the
 * deletion of our node is sent, not waited for: this session's later requests come
 * after it, the next contender is told by ZooKeeper, and a lost answer is sent
 * again after the reconnect (until the session ends, which deletes the node too). */
IK_EXTERN int ik_lock_release(ik_lock *lk);
/* Makes the acquire in progress, or else the next one, return IK_ECLOSED soon.
 * Safe from any thread (not from a signal handler). */
IK_EXTERN void ik_lock_cancel(ik_lock *lk);
IK_EXTERN ik_hold_state ik_lock_state(ik_lock *lk);
IK_EXTERN void ik_lock_get_info(ik_lock *lk, ik_hold_info *out);
/* CLOCK_MONOTONIC ns until which the current grant is trusted: the send time of the
 * last round trip that proved it plus the safe window, 2/3 of the session timeout or
 * lease TTL (docs/recipes.md, "The hold monitor"); the store cannot hand it to
 * anyone else before that plus the other third. INT64_MAX where a grant cannot lapse
 * while this process lives (local:); 0 when nothing is held (idle, waiting, lost).
 * The value stays what the last proof made it while the grant is in doubt: the
 * monitor says LOST by it at the latest. IK_EINVAL (negative: long past) for a NULL
 * lk. Any thread, any time; no I/O. */
IK_EXTERN int64_t ik_lock_trusted_until(ik_lock *lk);

/* Read-write lock (Curator's InterProcessReadWriteLock: nodes `_c_<uuid>-__READ__<seq>`
 * and `_c_<uuid>-__WRIT__<seq>`). A writer waits for every contender ahead of it; a
 * reader waits only for writers ahead of it. Each half is an ik_lock, used with the
 * ik_lock_* calls and freed with the rwlock. No upgrade or downgrade. */
typedef struct ik_rwlock ik_rwlock;

IK_EXTERN int ik_rwlock_create(ik_coord *c, const char *path, const ik_lock_options *o,
                               ik_rwlock **out);
/* Releases both halves if held and frees rw. Accepts NULL. */
IK_EXTERN void ik_rwlock_destroy(ik_rwlock *rw);
/* The read and the write half; valid until ik_rwlock_destroy. */
IK_EXTERN ik_lock *ik_rwlock_read(ik_rwlock *rw);
IK_EXTERN ik_lock *ik_rwlock_write(ik_rwlock *rw);

/* Leader election (Curator's LeaderLatch: nodes `_c_<uuid>-latch-<seq>` holding the
 * participant id; the smallest sequence leads). A campaign runs on the election's
 * own thread: it waits its turn, leads (callback HELD), and after a loss (callback
 * LOST) campaigns again by itself until ik_election_resign (with keep_on_loss: once
 * its owner calls ik_election_rejoin). A grant that is in doubt
 * or lost before leadership was reported (the process paused right after its node
 * came first) is reported as such: its first callback is IN_DOUBT or LOST, and HELD
 * comes only once the same session answers again. Threads: every call is safe from
 * any thread, except ik_election_destroy (not while another call runs). */
typedef struct ik_election ik_election;

typedef struct ik_election_options {
    size_t size;          /* set by ik_election_options_init ("Options structs") */
    ik_hold_cb on_change; /* HELD (leading), IN_DOUBT, LOST; may be NULL */
    void *ctx;
    ik_hold_proof_cb on_proof; /* each proof of a grant; may be NULL; called with ctx */
    /* 1: after LOST, the election keeps its node (or ticket, or session lock) and does
     * not campaign again until ik_election_rejoin: its owner first ends what it ran
     * as leader, and only then gives the grant back (docs/recipes.md, "One order").
     * 0 (the default): it gives the lost grant back and campaigns again by itself at
     * once. */
    int keep_on_loss;
} ik_election_options;

IK_EXTERN void ik_election_options_init(ik_election_options *o);

/* id: this participant's id (1 to 255 bytes, no control characters), what
 * ik_election_leader and Curator's LeaderLatch.getLeader() report. o may be NULL.
 * The coord must outlive the election. */
IK_EXTERN int ik_election_create(ik_coord *c, const char *path, const char *id,
                                 const ik_election_options *o, ik_election **out);
/* Resigns (if campaigning) and frees e. Accepts NULL. */
IK_EXTERN void ik_election_destroy(ik_election *e);
/* Starts campaigning in the background; returns at once. IK_EINVAL if already. */
IK_EXTERN int ik_election_campaign(ik_election *e);
/* Waits until this participant leads: 0, IK_ETIMEDOUT, or IK_ECLOSED if it is not
 * campaigning (never started, or resigned meanwhile). timeout_ms -1: forever. The
 * HELD callback may still be running, or about to run, when this returns. */
IK_EXTERN int ik_election_await(ik_election *e, int64_t timeout_ms);
/* Stops campaigning and gives leadership up (our node or ticket is removed, so the
 * next candidate leads at once); returns once the election's thread has ended and
 * the removal is sent, as ik_lock_release. No callback. 0, or IK_EINVAL if not
 * campaigning. */
IK_EXTERN int ik_election_resign(ik_election *e);
/* With keep_on_loss: gives the lost grant back (our node, ticket or session lock is
 * removed if it is still there) and campaigns again; returns once the removal is
 * sent, as ik_election_resign. 0; IK_EINVAL if the election is not waiting to
 * rejoin (no keep_on_loss, or no grant lost since the last rejoin). Any thread. */
IK_EXTERN int ik_election_rejoin(ik_election *e);
/* The election's state, never HELD while its lock's own check knows the session
 * dead (LOST) or cut off (IN_DOUBT), even before that notice has been delivered.
 * fence: a token that strictly increases with each leadership grant on the path. */
IK_EXTERN ik_hold_state ik_election_state(ik_election *e);
IK_EXTERN void ik_election_get_info(ik_election *e, ik_hold_info *out);
/* As ik_lock_trusted_until, for the grant the election leads by (HELD or IN_DOUBT);
 * 0 otherwise (campaigning, lost, waiting to rejoin). */
IK_EXTERN int64_t ik_election_trusted_until(ik_election *e);

/* Who leads at path now: *id (freed with ik_free) = the leader's participant id
 * (Curator's too). IK_ENOTFOUND if no one campaigns there. */
IK_EXTERN int ik_election_leader(ik_coord *c, const char *path, char **id);

/* Counting semaphore (since 0.6.0): at most max leases of PATH are held at once,
 * across processes and hosts, on local:, zk://, postgresql://, mysql:// and etcd://
 * (docs/recipes.md, "Semaphores", has each store's layout). A lease is a grant like a
 * lock's: the same states, the same hold monitor, the same callbacks and trust
 * window, and a fencing token that strictly increases with each lease granted on the
 * semaphore (on zk:// the lease node's creation zxid).
 *
 * Fair and herd-free: contenders queue in order of arrival (the semaphore's queue is
 * a mutex of the store's own kind), and only the one at the head of the queue waits
 * for a lease, so a lease given back wakes one waiter.
 *
 * On zk:// a semaphore joins one peer's layout on the same PATH, so that its leases
 * and the peer's count against one limit: Curator's InterProcessSemaphoreV2 (the
 * default: PATH/locks, PATH/leases) or kazoo's Semaphore (PATH-__lock__, leases under
 * PATH, the max as PATH's data). Curator and kazoo do not share leases with each
 * other: pick the layout of the peer that uses PATH.
 *
 * The max is stored with the semaphore at its first use (zk://: PATH's data, where
 * kazoo keeps it) and checked at every acquire: a semaphore whose stored max is
 * another is refused (IK_ECONFLICT), never joined with a second limit.
 *
 * One ik_semaphore holds at most one lease (a program that needs k leases makes k
 * handles). Threads: as ik_lock (acquire and release from one thread at a time;
 * cancel, state, info and trusted_until from any thread at any time); callbacks on
 * the lease's hold monitor thread, as ik_hold_cb and ik_hold_proof_cb say. Ownership:
 * the coord must outlive the semaphore. fork(): a child must not use a semaphore its
 * parent made (the lease, its session and its threads stay the parent's). */
typedef struct ik_semaphore ik_semaphore;

typedef enum ik_semaphore_layout {
    IK_SEMAPHORE_CURATOR = 0, /* zk://: Curator's InterProcessSemaphoreV2 (the default;
                                 the only layout of the other stores) */
    IK_SEMAPHORE_KAZOO = 1,   /* zk://: kazoo's Semaphore */
} ik_semaphore_layout;

/* The largest max a semaphore takes. */
#define IK_SEMAPHORE_MAX_LEASES 10000

typedef struct ik_semaphore_options {
    size_t size;                /* set by ik_semaphore_options_init ("Options structs") */
    int64_t max;                /* leases held at once: 1 to IK_SEMAPHORE_MAX_LEASES; required */
    ik_semaphore_layout layout; /* zk:// only; IK_SEMAPHORE_KAZOO elsewhere is IK_EURI */
    ik_hold_cb on_change;       /* the lease's IN_DOUBT, HELD again, LOST; may be NULL */
    void *ctx;
    const char *data;          /* stored in our lease (a peer's lease_holders() shows it);
                                  NULL: "pid=PID host=HOST" */
    ik_hold_proof_cb on_proof; /* may be NULL; called with ctx, as on_change */
} ik_semaphore_options;

IK_EXTERN void ik_semaphore_options_init(ik_semaphore_options *o);

/* Makes a semaphore handle for path (the rules of a lock PATH, at most 390 bytes); no
 * lease is taken yet. o is required (it carries the max). IK_EINVAL for a bad path or
 * options (o NULL included); IK_EURI if the coord's backend has no locks, or not the
 * layout asked for (kazoo's is zk:// only). */
IK_EXTERN int ik_semaphore_create(ik_coord *c, const char *path, const ik_semaphore_options *o,
                                  ik_semaphore **out);
/* Gives the lease back if held and frees s, as ik_lock_destroy. Accepts NULL. */
IK_EXTERN void ik_semaphore_destroy(ik_semaphore *s);
/* Waits for a lease, as ik_lock_acquire waits for a lock (timeout_ms -1 forever, 0 try
 * once): 0 and *fence (may be NULL) the lease's fencing token; IK_EBUSY (timeout 0),
 * IK_ETIMEDOUT, IK_ECLOSED (cancelled), IK_EINVAL (already held or waited for),
 * IK_ESTORE (ik_semaphore_get_info's why says why); IK_ECONFLICT: the max stored with
 * the semaphore is not this handle's (why names both), nothing was taken. */
IK_EXTERN int ik_semaphore_acquire(ik_semaphore *s, int64_t timeout_ms, int64_t *fence);
/* Gives the lease back, as ik_lock_release. */
IK_EXTERN int ik_semaphore_release(ik_semaphore *s);
/* Makes the acquire in progress, or else the next one, return IK_ECLOSED soon. */
IK_EXTERN void ik_semaphore_cancel(ik_semaphore *s);
IK_EXTERN ik_hold_state ik_semaphore_state(ik_semaphore *s);
/* As ik_lock_get_info, for the lease (node: our lease node or key, or the slot held). */
IK_EXTERN void ik_semaphore_get_info(ik_semaphore *s, ik_hold_info *out);
/* As ik_lock_trusted_until, for the lease held (IK_EINVAL for a NULL s). */
IK_EXTERN int64_t ik_semaphore_trusted_until(ik_semaphore *s);

/* A lease held, as ik_semaphore_holders reports it. */
typedef struct ik_semaphore_holder {
    char node[512];   /* zk://: the lease node's path; etcd://: its key; SQL: its session
                         lock's key; local: its slot file */
    char data[256];   /* what the holder stored in it (Curator: its node data; kazoo:
                         its identifier; idkeeper: ik_semaphore_options.data) */
    int64_t fence;    /* the lease's fencing token, where the store has one to read (0:
                         none) */
    char session[64]; /* zk://: the session holding it; etcd://: "lease HEX"; else "" */
} ik_semaphore_holder;

/* The leases held at path now, in the layout given: *out (freed with ik_free, NULL
 * when *n is 0) in the order they were granted, and *max the max stored with the
 * semaphore (0: none stored). IK_EINVAL for a bad path; IK_EURI for a layout the
 * backend has not; IK_ESTORE. No lease is taken. */
IK_EXTERN int ik_semaphore_holders(ik_coord *c, const char *path, ik_semaphore_layout layout,
                                   int64_t *max, ik_semaphore_holder **out, size_t *n);

#ifdef __cplusplus
}
#endif
#endif /* IDKEEPER_H */
