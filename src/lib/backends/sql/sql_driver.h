/* sql_driver.h: the seam between the generic SQL backend and one database's client
 * library (a "driver": backend_pg.c for libpq, backend_mysql.c for MariaDB
 * Connector/C). docs/sql.md has the schema and the protocols.
 *
 * The generic layer (backend_sql.c, backend_sql_slots.c, backend_sql_tags.c,
 * recipe_sql.c) holds every protocol: Leaf's transaction for tags, the lease
 * table's conditional updates, the fencing counter, the lock's probe. It names no
 * database. A driver holds everything that differs between databases:
 *
 *   - the SQL text: the schema (CREATE TABLE IF NOT EXISTS ..., what `idkeeper
 *     schema` prints) and one statement per ik__sql_stmt below, each with the
 *     parameters and the result columns written beside its id;
 *   - connecting (with the password given apart from the URI), running a
 *     statement with text parameters and text results, a ping, the session
 *     locks, the durability check, and the class of every failure.
 *
 * A new database is a driver in a folder of its own: a driver table
 * (ik__sql_driver) and one IK__SQL_BACKEND line that makes its ops tables from it.
 * Nothing in the generic files changes. The rest of what it takes is the one list,
 * docs/architecture.md, "Adding a backend".
 *
 * Statements. Parameters are text (NULL: SQL NULL); each statement's comment below
 * gives them in order, and they appear in that order in the SQL, each once, so
 * that a driver with positional '?' placeholders binds them as they come. Results
 * are text cells (integers in decimal, booleans as "1"/"0" or "t"/"f": the
 * generic layer reads ik__sql_bool), NULL for SQL NULL. "db ms" below is the
 * database's clock in Unix milliseconds (PostgreSQL clock_timestamp(), MySQL
 * NOW(3)): every expiry is set and compared on it, never on ours.
 *
 * Threads: one connection is used by one thread at a time (the generic layer
 * guarantees it); distinct connections are used from many threads at once, so a
 * driver's calls must be thread-safe across connections. Every call may block on
 * I/O, never longer than the time it is given (IK__SQL_IO_MS when none is).
 */
#ifndef IK_SQL_DRIVER_H
#define IK_SQL_DRIVER_H

#include "backend.h"
#include "recipe.h"

#include <stddef.h>
#include <stdint.h>

/* ---- failure classes ---------------------------------------------------------
 * Every driver call returns 0 (or a count, where it says so) or one of these. The
 * class decides what the generic layer may conclude, so a driver classifies by
 * what the database can have done, not by its error's wording. */
enum {
    /* The request failed and changed nothing; the connection is usable (a
     * constraint, a missing table or column, a syntax error, a lock timeout). */
    IK__SQL_EDEFINITE = -1,
    /* A unique-key violation (an INSERT of a key that exists): definite. */
    IK__SQL_EDUPLICATE = -2,
    /* Sent, and its answer lost: the connection broke or timed out after the
     * request went out. A COMMIT may have applied. The connection is dead (the
     * driver closed its socket); the generic layer closes it and opens another. */
    IK__SQL_EDOUBT = -3,
    /* Nothing sent: no connection, or the session is known dead (the server
     * ended it: its session locks are freed). The connection is dead. */
    IK__SQL_EGONE = -4,
    /* ping, lock: no answer within the time given; the request is still out and
     * the connection is kept (the next ping waits for the same answer). */
    IK__SQL_ETIMEOUT = -5,
    /* lock: cancelled (*cancel became nonzero); nothing held. */
    IK__SQL_ECANCELED = -6,
    /* connect: refused for good (wrong password, no such database or user): the
     * same request will fail again. why says which. */
    IK__SQL_EREFUSED = -7,
    /* A write, or a lock's grant, whose proof of session (the evidence that rides
     * in its round trip, docs/hazards.md "PostgreSQL") shows that it ran in a
     * server session that is not this connection's own: a pooler in transaction
     * mode between us and the database. The connection is dead (the driver rolled
     * back what it could and closed it); a transaction's statements are not
     * committed; an autocommit statement may have applied, in that other session.
     * The connection's hz state says what the proof showed (ik__sql_conn_hz). */
    IK__SQL_EFOREIGN = -8,
};

/* The longest a statement, connect or commit waits for its answer before it is
 * IK__SQL_EDOUBT (connect: IK__SQL_EGONE). */
#define IK__SQL_IO_MS 5000

/* ---- statements -------------------------------------------------------------- */
typedef enum ik__sql_stmt {
    IK__SQL_BEGIN,    /* start a transaction (READ COMMITTED is enough) */
    IK__SQL_COMMIT,   /* IK__SQL_EDOUBT from this one means: may have applied */
    IK__SQL_ROLLBACK, /* */

    /* -- tags: Leaf's leaf_alloc, and our side table of kinds -- */
    /* $1 biz_tag -> step, kind, app, name, start (NULL kind: a Leaf tag, no side
     * row): locks the leaf_alloc row until the transaction ends */
    IK__SQL_TAG_LOCK,
    /* Leaf's own statement, word for word:
     * UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = $1
     * -> affected 1; and, where the database has UPDATE ... RETURNING, the row
     * after it: biz_tag, max_id, step (Leaf's SELECT below, without its round
     * trip). Without result columns the generic layer takes max_id from the
     * IK__SQL_TAG_LOCK read plus the step. (Not on the advance's path: its
     * pipeline is sent before the step is read, so the explicit-step variant
     * below serves every delta.) */
    IK__SQL_LEAF_UPDATE,
    /* Leaf's explicit-step variant (updateMaxIdByCustomStep), results as above:
     * UPDATE leaf_alloc SET max_id = max_id + $1 WHERE biz_tag = $2 */
    IK__SQL_LEAF_UPDATE_STEP,
    /* Leaf's own: SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = $1,
     * the read-back after the UPDATE of a driver without `returning`; where the
     * driver sets `back_proof`, IK__SQL_PROOF's columns follow the row's */
    IK__SQL_LEAF_SELECT,
    /* $1 biz_tag, $2 max_id, $3 step, $4 description: a new leaf_alloc row
     * (IK__SQL_EDUPLICATE if biz_tag exists) */
    IK__SQL_TAG_INSERT,
    /* $1 biz_tag, $2 app, $3 name, $4 kind ("segment"/"sequence"), $5 start: its
     * side row (IK__SQL_EDUPLICATE if it exists) */
    IK__SQL_TAG_KIND_INSERT,
    /* $1 biz_tag -> biz_tag, max_id, step, description, update_ms, kind, app, name,
     * start (kind, app, name, start NULL without a side row) */
    IK__SQL_TAG_GET,
    /* no parameters -> the columns of IK__SQL_TAG_GET, every leaf_alloc row,
     * ordered by biz_tag */
    IK__SQL_TAG_LIST,
    /* $1 writer (the doubt engine's writer id of the advance's lane), $2 biz_tag, $3
     * write id: records, in every tag advance, which write of this writer last
     * committed (an upsert of one row per writer and tag, its time = db now) */
    IK__SQL_MARK_SET,
    /* $1 writer, $2 biz_tag -> write number (no row: none committed) */
    IK__SQL_MARK_GET,
    /* no parameters: deletes the marks older than a day (run at open) */
    IK__SQL_MARK_PRUNE,
    /* $1 a LIKE pattern of writers ("0123...%"): deletes their marks (a backend's
     * own, at its close) */
    IK__SQL_MARK_DROP,
    /* no parameters -> nothing (LIMIT 0): names every Leaf column, so that it
     * fails (IK__SQL_EDEFINITE, naming the column) on a leaf_alloc that lacks one */
    IK__SQL_TAG_COLUMNS,

    /* -- worker slots: the lease table (expiry on the db's clock) -- */
    /* $1 app, $2 worker_min, $3 worker_max -> worker, holder, free (1 if the row
     * has expired), record_ms, since_ms, expires_in_ms; ordered by worker */
    IK__SQL_SLOTS_SCAN,
    /* $1 app, $2 worker -> record_ms, free: locks the row until the transaction
     * ends; no row if the slot was never taken */
    IK__SQL_SLOT_LOCK,
    /* $1 app, $2 worker, $3 holder, $4 token, $5 ttl_ms, $6 record_ms: a new row,
     * held (since = db now, expires = db now + ttl); IK__SQL_EDUPLICATE if taken */
    IK__SQL_SLOT_INSERT,
    /* $1 holder, $2 token, $3 ttl_ms, $4 record_ms, $5 app, $6 worker: takes an
     * expired row: record = max(record, $4), since = db now; affected 1 or 0 */
    IK__SQL_SLOT_TAKE,
    /* $1 ttl_ms, $2 record_ms, $3 app, $4 worker, $5 token: renews our unexpired
     * row: expires = db now + ttl, record = max(record, $2); affected 1 or 0 */
    IK__SQL_SLOT_RENEW,
    /* $1 record_ms, $2 app, $3 worker, $4 token: frees our row (expires in the
     * past, token emptied, holder kept: the identity's last slot), record = $1 */
    IK__SQL_SLOT_RELEASE,
    /* $1 app -> the columns of IK__SQL_SLOTS_SCAN, every row of app */
    IK__SQL_SLOTS_LIST,

    /* -- locks: the fencing counter and the leader's id -- */
    /* $1 key: fence = fence + 1; affected 1 or 0 (no row yet) */
    IK__SQL_FENCE_BUMP,
    /* $1 key: a new row, fence 1 (IK__SQL_EDUPLICATE if it exists) */
    IK__SQL_FENCE_INSERT,
    /* $1 key -> fence */
    IK__SQL_FENCE_GET,
    /* $1 key, $2 participant id: records this session as the key's holder (an
     * upsert: replaces the row) */
    IK__SQL_HOLDER_SET,
    /* $1 key -> participant id, if the session recorded by IK__SQL_HOLDER_SET
     * still holds the key's session lock; no row otherwise */
    IK__SQL_HOLDER_GET,
    /* $1 key, $2 value: a row of idk_fence with fence = $2, unless the key has one
     * (nothing changed then): a semaphore's max, "semamax:PATH" (recipe_sql.c) */
    IK__SQL_FENCE_SEED,

    /* -- the proof that rides with a write (docs/hazards.md, "Proof with every
     * write") -- */
    /* no parameters -> one row: what the driver's proof judges (the durability
     * settings as this session sees them now, and the engines or persistence of
     * our tables). Sent in the round trip of the commit point of a slot take, a
     * renewal, a tag advance and a lock's fence, after it (the COMMIT, or the write
     * in autocommit: ik__sql_commit_proved), so that it is read at or after the
     * commit and costs no round trip of its own. NULL: the driver has none; its
     * writes are judged by the interval's check alone */
    IK__SQL_PROOF,
    /* $1 one of our tables -> one row: what keeps that table's writes (MySQL: its
     * engine; PostgreSQL: its persistence). Sent in the round trip of the commit
     * point of a write to that table (ik__sql_commit_proved), judged by table_row:
     * a table changed at run time (ALTER TABLE ... ENGINE = MyISAM, SET UNLOGGED) is
     * seen by the next write. A write's own statements hold the table's lock until
     * its commit, so no ALTER lands between them. Not sent with a COMMIT whose
     * transaction the driver's tx_tables proves. NULL: none. */
    IK__SQL_TABLE_PROOF,

    IK__SQL_NSTMT
} ik__sql_stmt;

/* A statement's result: affected rows, and nrows x ncols text cells (row-major,
 * each malloc'd by the driver, NULL for SQL NULL). ik__sql_res_clear frees it. */
typedef struct ik__sql_res {
    int64_t affected;
    size_t nrows, ncols;
    char **cell;
} ik__sql_res;

/* What connect gets: the URI as given (the driver parses it: its own syntax, its
 * own options), the password (from --password-file, IDKEEPER_PASSWORD or the URI;
 * NULL: none), and the URI with the password removed, for messages. A driver never
 * writes the password into why or a log. */
typedef struct ik__sql_target {
    const char *uri;
    const char *password;
    const char *shown; /* the URI without its password */
    /* --lease-ttl: the session limits connect sets are derived from it
     * (docs/sql.md, "Session settings") */
    int64_t ttl_ms;
    /* 1: the connection will hold a session lock (recipe_sql.c), which the server
     * must free soon after its holder's host vanishes; 0: a pooled or slot
     * connection, which holds nothing between its transactions */
    int holds;
    /* The backend's cut (backend.h), read atomically: once nonzero, the driver's
     * waits on this connection (its connect included) end as if their deadline had
     * passed. NULL: never cut. */
    const int *cut;
} ik__sql_target;

typedef struct ik__sql_conn ik__sql_conn; /* the driver's connection */

/* One statement of a pipeline (exec_pipeline): its id and parameters, as exec
 * takes them. */
typedef struct ik__sql_call {
    ik__sql_stmt id;
    const char *const *params;
    int nparams;
} ik__sql_call;

/* What the generic layer keeps per connection for its hazard checks
 * (backend_sql_hazards.c); the driver keeps it in its connection, zeroed, and
 * gives it out through hz_state. */
typedef struct ik__sql_conn_hz {
    int64_t checked_ns; /* ik__mono_ns of its last check (0: never) */
    /* set by the driver with IK__SQL_EFOREIGN: the hazard row it makes
     * (ik__sql_hazards_foreign): the check's name, the value the proof showed, and
     * what to change (a static string) */
    int foreign;
    const char *foreign_check, *foreign_fix;
    char foreign_value[96];
} ik__sql_conn_hz;

/* At most this many rows from one driver's hazard check. */
#define IK__SQL_HAZARDS_MAX 20
/* At most this many rows from one driver's proof. */
#define IK__SQL_PROOF_MAX 8

/* A driver's scheme, URI form, URI check, schema and client version are its
 * backend's: the arguments of IK__SQL_BACKEND below, held once, in the ops table. */
typedef struct ik__sql_driver {
    const char *name; /* "PostgreSQL", for messages */
    /* The SQL of each ik__sql_stmt, indexed by it. */
    const char *const *stmt;

    /* Connects within IK__SQL_IO_MS: 0, IK__SQL_EREFUSED (wrong password, no such
     * database: why says which), IK__SQL_EGONE (unreachable). */
    int (*connect)(const ik__sql_target *t, ik__sql_conn **out, char *why, size_t why_len);
    /* Closes and frees c (NULL is fine); a session lock it held is freed by the
     * server. */
    void (*close)(ik__sql_conn *c);
    /* Runs one statement of SQL text without parameters (a schema statement),
     * results dropped: 0 or a class with why. */
    int (*run)(ik__sql_conn *c, const char *sql, char *why, size_t why_len);
    /* Runs statement id with params[0..nparams-1]. res may be NULL (results
     * dropped); on success the caller frees it with ik__sql_res_clear. 0, or a
     * class (why: the database's message). */
    int (*exec)(ik__sql_conn *c, ik__sql_stmt id, const char *const *params, int nparams,
                ik__sql_res *res, char *why, size_t why_len);
    /* Runs calls[0..n-1] in order, as exec would one after another, but sent
     * together in one round trip (PostgreSQL: libpq's pipeline mode; MariaDB: one
     * multi-statement text): the database runs none after the first that fails. 0
     * with res[0..n-1] filled; or the class of the first failure, with *ran the
     * calls that succeeded before it (res[0..*ran-1] filled, the rest zeroed: the
     * caller clears them all). A COMMIT (or a write in autocommit) comes only last
     * but for the IK__SQL_PROOF after it (ik__sql_commit_proved): there a lost
     * answer (EDOUBT) with *ran 0 may mean committed; anywhere else a lost answer
     * leaves the calls' transaction open on a dead connection, which the database
     * rolls back, so any failure means nothing was committed.
     * NULL: the generic layer sends them one by one (ik__sql_exec_pipeline). */
    int (*exec_pipeline)(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                         int *ran, char *why, size_t why_len);
    /* Proves the session alive: sends a ping unless one is out already, and waits
     * up to timeout_ms for its answer. 0, IK__SQL_ETIMEOUT (still out: the next
     * call waits for it), IK__SQL_EGONE (the session is dead), IK__SQL_EFOREIGN
     * (the ping's proof of session shows another session: the connection is dead). */
    int (*ping)(ik__sql_conn *c, int timeout_ms);
    /* Takes the session lock of `key` (a lock path with its kind: "lock:/a/b"),
     * shared for IK__LOCK_READ, exclusive otherwise, waiting in the database's own
     * queue until deadline_ms (ik__mono_ms; -1: no limit; 0: try once) or until
     * *cancel is nonzero (looked at least every 100 ms). 1 held; 0 not held by the
     * deadline; IK__SQL_ECANCELED; IK__SQL_EDEFINITE for a kind the database
     * cannot lock (why says so); a connection class. Nothing is held unless 1. */
    int (*lock)(ik__sql_conn *c, ik__lock_kind kind, const char *key, int64_t deadline_ms,
                const volatile int *cancel, char *why, size_t why_len);
    /* Releases what lock took: 0, or a connection class (the session's end frees
     * it anyway). */
    int (*unlock)(ik__sql_conn *c, ik__lock_kind kind, const char *key);
    /* The store hazards of this connection (docs/hazards.md): reads back the
     * session state and limits that connect set (connect fails if it cannot set
     * them), and the server's settings that decide whether a commit it
     * acknowledged survives its crash; one row per check into rows (at most
     * IK__SQL_HAZARDS_MAX, built with ik__hazard_row on h), *n rows; *db_ms the
     * database's clock (Unix ms) as the check read it. 0 or a class (why). */
    int (*hazards)(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                   int64_t *db_ms, char *why, size_t why_len);
    /* The proof of the write that just ran on c (docs/hazards.md, "Proof with
     * every write"), no I/O: r the IK__SQL_PROOF result read after the write's
     * commit point in its round trip, judged by the rules of hazards and under the
     * same row names (NULL: none rode); and what the database said of the
     * session with its last answer: in_tx 1 if the write ran inside our own open
     * transaction, 0 if it must have left none open (after a COMMIT, or an
     * autocommitted statement), where an open one means the write is not
     * committed (MySQL: SERVER_STATUS_IN_TRANS). One row per check into rows (at
     * most IK__SQL_PROOF_MAX, built with ik__hazard_row on h), *n rows. NULL: the
     * driver has no proof. */
    void (*proof)(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                  ik_hazard *rows, size_t *n);
    /* The verdict of an IK__SQL_TABLE_PROOF result r for table, no I/O: 1 with row
     * refused, under the check's row name for the tables ("table engines", "table
     * persistence", its value naming table), where table cannot keep a write (no
     * transactions, or not crash-safe); 0 (no row: the check's row stands) where it
     * can. NULL: none. */
    int (*table_row)(ik__sql_conn *c, const ik__hazards *h, const char *table, const ik__sql_res *r,
                     ik_hazard *row);
    /* The verdict of the tables the transaction open on c has used, from what the
     * database said while its statements ran (MariaDB: the transaction state of
     * session_track_transaction_info), no I/O; asked before its COMMIT is sent. 1 with
     * row refused (as table_row's: a table without transactions was used); 0 where
     * every table it used has transactions; -1 where the database did not say so for
     * the whole transaction (the caller then reads IK__SQL_TABLE_PROOF after the
     * COMMIT, as without it: evidence missing is never taken for evidence safe).
     * The table's metadata lock, held from a statement's use of it to the COMMIT,
     * keeps what was said true until then. NULL: never known (-1). */
    int (*tx_tables)(ik__sql_conn *c, const ik__hazards *h, ik_hazard *row);
    /* What the store said of the writes of c's last exec_pipeline besides their
     * results (SP2 of backend_sql_proof.c): 1 if it qualified one (a notice or a
     * warning with a COMMIT or an autocommitted write, or a COMMIT answered as
     * something else: PostgreSQL's "might not have been replicated" after a
     * cancelled synchronous-replication wait), its words into words; 0 if none did.
     * No I/O. NULL: the driver cannot tell. */
    int (*qualified)(ik__sql_conn *c, char *words, size_t len);
    /* 1 if IK__SQL_LEAF_UPDATE_STEP answers the row it wrote (UPDATE ... RETURNING);
     * 0: the generic layer reads it back with IK__SQL_LEAF_SELECT after the UPDATE,
     * in the same round trip. Either way an advance trusts only what the store says
     * it stored (a trigger that rewrites max_id shows). */
    int returning;
    /* 1 if IK__SQL_LEAF_SELECT answers IK__SQL_PROOF's columns after the row's: the
     * advance's proof before its COMMIT (SP3 of backend_sql_proof.c) then rides in
     * the read-back instead of a statement of its own. */
    int back_proof;
    /* The generic layer's per-connection hazard state, kept in c. */
    ik__sql_conn_hz *(*hz_state)(ik__sql_conn *c);
    /* Describes the session ("pid 1234"): the database's id of the connection. */
    void (*session)(ik__sql_conn *c, char *buf, size_t len);
    /* The connection's socket (-1: none). The generic layer only polls it, on an
     * idle connection of the pool before reusing it: between requests the
     * database sends nothing, so a readable socket means it ended the session
     * (an idle timeout, a restart, a terminated backend; ik__sql_idle_alive). */
    int (*socket)(ik__sql_conn *c);
    /* 1 if the idle connection c may be ended by the database's own idle limit at
     * any moment (MySQL's wait_timeout, set on every session): the generic layer
     * replaces it before a request rather than send on it (ik__sql_reusable).
     * NULL: no idle limit of ours. */
    int (*stale)(ik__sql_conn *c);
} ik__sql_driver;

/* ---- the backend and lock protocol a driver makes ----------------------------
 * In the driver's file, after its driver table:
 *
 *   IK__SQL_BACKEND(pg, ik__sql_pg_driver, "postgresql", "postgresql://USER@HOST[:PORT]/DB",
 *                   pg_uri_examples, pg_uri_check, pg_schema, pg_client_version);
 *
 * defines ik__backend_pg_ops (named in coord.c's registry) and its lock protocol,
 * whose calls are the generic layer's, on that driver. The other arguments are the
 * backend's own, written only here: SCHEME (URIs SCHEME:...), URI_FORM (for
 * messages and help), URI_EXAMPLES (URIs its check accepts, NULL-terminated: the
 * ops table's uri_examples), URI_CHECK (the whole URI's syntax, no I/O: 0, or IK_EURI
 * with a one-line reason), SCHEMA (one statement each, NULL-terminated: run in
 * order at open and printed by `idkeeper schema`; CREATE ... IF NOT EXISTS only,
 * so running it on a database that has the tables changes nothing) and
 * CLIENT_VERSION (the ops table's client_version: "libpq 15.4"). */
struct ik_coord_options;
int ik__sql_open(const ik__sql_driver *d, const ik__backend_ops *ops, const char *uri,
                 const ik_coord_options *o, ik__backend **out, char *why, size_t why_len);
void ik__sql_close(ik__backend *be);
/* backend_sql_tags.c, called by the ops table's open and close (IK__SQL_BACKEND in
 * sql_driver.h, above both this file and backend_sql.c): at open (after
 * ik__sql_open), deletes the commit marks older than a day; at close (before
 * ik__sql_close), deletes this backend's own marks if every doubt it left to the
 * doubt engine was settled (its ST8). */
void ik__sql_marks_prune(ik__backend *be);
void ik__sql_tags_close(ik__backend *be);
/* The seam's tag_settle (backend_sql_tags.c) and cut (backend_sql.c). */
void ik__sql_tag_settle(ik__backend *be, const char *app, const char *name, ik__tag_write *w,
                        int64_t deadline_mono_ns);
void ik__sql_cut(ik__backend *be);
const char *ik__sql_uri(const ik__backend *be);
void ik__sql_session(ik__backend *be, char *buf, size_t len);
int64_t ik__sql_slot_free_ms(ik__backend *be);
int ik__sql_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                         char *why, size_t why_len);
int ik__sql_slot_persist(ik__backend *be, void *handle, int64_t record_ms, ik__lease_proof *proof,
                         int64_t *written_ms);
int ik__sql_slot_release(ik__backend *be, void *handle, int64_t record_ms);
void ik__sql_slot_forget(ik__backend *be, void *handle);
int ik__sql_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n);
int ik__sql_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                       size_t why_len);
int ik__sql_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out, char *why,
                    size_t why_len);
int ik__sql_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n);
int ik__sql_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                        ik__tag_write *w, int64_t *first);
int ik__sql_hazards_check(ik__backend *be, char *why, size_t why_len);
int ik__sql_lock_init(ik_lock *lk);
void ik__sql_lock_fini(ik_lock *lk);
int ik__sql_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence);
int ik__sql_release(ik_lock *lk);
void ik__sql_cancel(ik_lock *lk, int on);
void ik__sql_info(ik_lock *lk, ik_hold_info *out);
int ik__sql_leader(ik__backend *be, const char *path, char **id);
void ik__sql_proof_of_grant(ik_lock *lk, ik__hold_evidence *out);
void ik__sql_probe(ik_lock *lk, int64_t deadline_ns, const int *stop, ik__hold_evidence *out);
void ik__sql_watch(ik_lock *lk, int64_t deadline_ns, const int *stop, ik__hold_evidence *out);
int ik__sql_sema_max(ik_lock *lk, int64_t *stored, char *why, size_t why_len);
int ik__sql_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout,
                         int64_t *max, ik_semaphore_holder **out, size_t *n);
/* The size of recipe_sql.c's lock struct, at least (it checks so at build time). */
#define IK__SQL_LOCK_SIZE 4096

#define IK__SQL_BACKEND(NAME, DRIVER, SCHEME, URI_FORM, URI_EXAMPLES, URI_CHECK, SCHEMA,           \
                        CLIENT_VERSION)                                                            \
    extern const ik__backend_ops ik__backend_##NAME##_ops; /* named by coord.c */                  \
    static const ik__recipe_ops ik__recipe_##NAME##_ops = {                                        \
        .scheme = (SCHEME),                                                                        \
        .lock_size = IK__SQL_LOCK_SIZE,                                                            \
        .lock_init = ik__sql_lock_init,                                                            \
        .lock_fini = ik__sql_lock_fini,                                                            \
        .acquire = ik__sql_acquire,                                                                \
        .release = ik__sql_release,                                                                \
        .cancel = ik__sql_cancel,                                                                  \
        .info = ik__sql_info,                                                                      \
        .leader = ik__sql_leader,                                                                  \
        .proof_of_grant = ik__sql_proof_of_grant,                                                  \
        .probe = ik__sql_probe,                                                                    \
        .watch = ik__sql_watch,                                                                    \
        .sema_max = ik__sql_sema_max,                                                              \
        .sema_holders = ik__sql_sema_holders,                                                      \
    };                                                                                             \
    static int NAME##_be_open(const char *uri, const ik_coord_options *o, ik__backend **out,       \
                              char *why, size_t why_len)                                           \
    {                                                                                              \
        int rc = ik__sql_open(&(DRIVER), &ik__backend_##NAME##_ops, uri, o, out, why, why_len);    \
        if (rc == 0) ik__sql_marks_prune(*out);                                                    \
        return rc;                                                                                 \
    }                                                                                              \
    static void NAME##_be_close(ik__backend *be)                                                   \
    {                                                                                              \
        ik__sql_tags_close(be); /* first: it uses the pool */                                      \
        ik__sql_close(be);                                                                         \
    }                                                                                              \
    const ik__backend_ops ik__backend_##NAME##_ops = {                                             \
        .scheme = (SCHEME),                                                                        \
        .uri_form = (URI_FORM),                                                                    \
        .uri_examples = (URI_EXAMPLES),                                                            \
        .takes_password = 1,                                                                       \
        .uri_check = (URI_CHECK),                                                                  \
        .recipe = &ik__recipe_##NAME##_ops,                                                        \
        .schema = (SCHEMA),                                                                        \
        .open = NAME##_be_open,                                                                    \
        .close = NAME##_be_close,                                                                  \
        .uri = ik__sql_uri,                                                                        \
        .slot_acquire = ik__sql_slot_acquire,                                                      \
        .slot_persist = ik__sql_slot_persist,                                                      \
        .slot_release = ik__sql_slot_release,                                                      \
        .slot_forget = ik__sql_slot_forget,                                                        \
        .recover = NULL,                                                                           \
        .slots_list = ik__sql_slots_list,                                                          \
        .slot_free_ms = ik__sql_slot_free_ms,                                                      \
        .slot_frees_after = IK__FREES_AFTER_LEASE_TTL,                                             \
        .session = ik__sql_session,                                                                \
        .cut = ik__sql_cut,                                                                        \
        .client_version = (CLIENT_VERSION),                                                        \
        .tag_create = ik__sql_tag_create,                                                          \
        .tag_get = ik__sql_tag_get,                                                                \
        .tag_list = ik__sql_tag_list,                                                              \
        .tag_advance = ik__sql_tag_advance,                                                        \
        .tag_settle = ik__sql_tag_settle,                                                          \
        .tag_lanes = 64,                                                                           \
        .hazards_check = ik__sql_hazards_check,                                                    \
    }

/* ---- helpers shared by the drivers and the generic layer (sql_util.c) ------- */
void ik__sql_res_clear(ik__sql_res *r);
/* The cell at row, col ("" if out of range or NULL). */
const char *ik__sql_cell(const ik__sql_res *r, size_t row, size_t col);
/* A cell as int64 (0 if absent or malformed) and as a boolean ("1", "t", "true"). */
int64_t ik__sql_int(const ik__sql_res *r, size_t row, size_t col);
int ik__sql_bool(const ik__sql_res *r, size_t row, size_t col);
/* The shared URI rule, SCHEME://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...]/DB
 * [?KEY=VALUE&...] (HOST a name, an IPv4 address or [IPv6]; DB non-empty): 0 or
 * IK_EURI with a reason that never quotes the password. Drivers whose syntax is
 * wider check the rest themselves. */
int ik__sql_uri_check(const char *uri, const char *scheme, char *why, size_t why_len);
/* uri with ":PASSWORD" of its user part and any password query item removed
 * (ik__uri_query_password: its key decoded first),
 * malloc'd (NULL: out of memory). *password (if not NULL) gets the password the
 * URI carried, percent-decoded as psql does, malloc'd, or NULL. The user part is
 * found by rules.h's ik__uri_userinfo, the rule of every URI idkeeper reads and of
 * the redaction of every URI it shows. */
char *ik__sql_uri_redact(const char *uri, char **password);

#endif
