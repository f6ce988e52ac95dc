/* backend_pg.c: the postgresql:// backend: the PostgreSQL driver of the generic SQL
 * backend (sql_driver.h), through libpq. The schema and every statement in
 * PostgreSQL's dialect, the pipeline, the ping and the advisory locks; the session
 * layer (a connection, a statement, the class of each failure) is pg_conn.c's, the
 * hazard checks pg_hazards.c's (backend_pg.h). The protocols are the generic layer's
 * (backend_sql*.c, recipe_sql.c). docs/sql.md has the schema.
 *
 * URI: postgresql://[USER[:PASSWORD]@]HOST[:PORT][,...]/DB[?KEY=VALUE&...], any
 * parameter libpq knows (sslmode, connect_timeout, ...). The password comes apart
 * (--password-file, IDKEEPER_PASSWORD) and is given to libpq as its own parameter.
 *
 * Lock keys: the session lock of key K ("lock:/a/b") is the advisory lock
 * hashtextextended(K, 0), a bigint that any SQL client can compute:
 *   SELECT pg_advisory_lock(hashtextextended('lock:/a/b', 0));
 * excludes an idkeeper holder of lock /a/b, and the reverse (docs/recipes.md).
 */
#include "backend_pg.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SLOT_COLS                                                                                  \
    "worker, holder, (expires_ms < " NOW_MS ")::int, record_ms, since_ms, expires_ms - " NOW_MS
#define TAG_COLS                                                                                   \
    "a.biz_tag, a.max_id, a.step, COALESCE(a.description, ''), "                                   \
    "(extract(epoch from a.update_time) * 1000)::bigint, k.kind, k.app, k.name, k.start "          \
    "FROM leaf_alloc a LEFT JOIN idk_tag_kind k ON k.biz_tag = a.biz_tag"
#define LOCK_KEY(x) "hashtextextended(" x ", 0)"

static const char *const pg_schema[] = {
    /* Leaf's own table, column for column (Leaf's scripts/leaf_alloc.sql, in
     * PostgreSQL's types) */
    "CREATE TABLE IF NOT EXISTS leaf_alloc (\n"
    "  biz_tag varchar(128) NOT NULL DEFAULT '',\n"
    "  max_id bigint NOT NULL DEFAULT 1,\n"
    "  step integer NOT NULL,\n"
    "  description varchar(256) DEFAULT NULL,\n"
    "  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP,\n"
    "  PRIMARY KEY (biz_tag)\n"
    ")",
    /* the kind of a tag, which Leaf's table lacks: no row, a Leaf segment tag */
    "CREATE TABLE IF NOT EXISTS idk_tag_kind (\n"
    "  biz_tag varchar(128) NOT NULL PRIMARY KEY,\n"
    "  app varchar(64) NOT NULL,\n"
    "  name varchar(128) NOT NULL,\n"
    "  kind varchar(8) NOT NULL CHECK (kind IN ('segment', 'sequence')),\n"
    "  start bigint NOT NULL DEFAULT 0\n"
    ")",
    /* worker slots: expires_ms, record_ms, since_ms are Unix ms, expiry on the
     * database's clock */
    "CREATE TABLE IF NOT EXISTS idk_slots (\n"
    "  app varchar(64) NOT NULL,\n"
    "  worker integer NOT NULL,\n"
    "  holder varchar(256) NOT NULL,\n"
    "  token varchar(64) NOT NULL,\n"
    "  expires_ms bigint NOT NULL,\n"
    "  record_ms bigint NOT NULL,\n"
    "  since_ms bigint NOT NULL,\n"
    "  PRIMARY KEY (app, worker)\n"
    ")",
    /* which write of each server last committed a sequence tag's advance, so that
     * a COMMIT whose answer was lost is settled, not guessed */
    "CREATE TABLE IF NOT EXISTS idk_commit_mark (\n"
    "  writer varchar(32) NOT NULL,\n"
    "  biz_tag varchar(128) NOT NULL,\n"
    "  write_no bigint NOT NULL,\n"
    "  at_ms bigint NOT NULL,\n"
    "  PRIMARY KEY (writer, biz_tag)\n"
    ")",
    /* the fencing token of each lock key */
    "CREATE TABLE IF NOT EXISTS idk_fence (\n"
    "  lock_key varchar(512) NOT NULL PRIMARY KEY,\n"
    "  fence bigint NOT NULL\n"
    ")",
    /* the participant id of each election's latest leader, and its session */
    "CREATE TABLE IF NOT EXISTS idk_holder (\n"
    "  lock_key varchar(512) NOT NULL PRIMARY KEY,\n"
    "  id varchar(256) NOT NULL,\n"
    "  session bigint NOT NULL\n"
    ")",
    NULL,
};

static const char *const pg_stmt[IK__SQL_NSTMT] = {
    [IK__SQL_BEGIN] = "BEGIN",
    [IK__SQL_COMMIT] = "COMMIT",
    [IK__SQL_ROLLBACK] = "ROLLBACK",
    [IK__SQL_TAG_LOCK] =
        "SELECT a.step, k.kind, k.app, k.name, k.start, a.max_id FROM leaf_alloc a "
        "LEFT JOIN idk_tag_kind k ON k.biz_tag = a.biz_tag WHERE a.biz_tag = $1 "
        "FOR UPDATE OF a",
    [IK__SQL_LEAF_UPDATE] = "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = $1 "
                            "RETURNING biz_tag, max_id, step",
    [IK__SQL_LEAF_UPDATE_STEP] = "UPDATE leaf_alloc SET max_id = max_id + $1 WHERE biz_tag = $2 "
                                 "RETURNING biz_tag, max_id, step",
    [IK__SQL_LEAF_SELECT] = "SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag = $1",
    [IK__SQL_TAG_INSERT] = "INSERT INTO leaf_alloc (biz_tag, max_id, step, description, "
                           "update_time) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP)",
    [IK__SQL_TAG_KIND_INSERT] = "INSERT INTO idk_tag_kind (biz_tag, app, name, kind, start) "
                                "VALUES ($1, $2, $3, $4, $5)",
    [IK__SQL_TAG_GET] = "SELECT " TAG_COLS " WHERE a.biz_tag = $1",
    [IK__SQL_TAG_LIST] = "SELECT " TAG_COLS " ORDER BY a.biz_tag",
    [IK__SQL_MARK_SET] = "INSERT INTO idk_commit_mark (writer, biz_tag, write_no, at_ms) VALUES "
                         "($1, $2, $3, " NOW_MS ") ON CONFLICT (writer, biz_tag) DO UPDATE SET "
                         "write_no = EXCLUDED.write_no, at_ms = EXCLUDED.at_ms",
    [IK__SQL_MARK_GET] = "SELECT write_no FROM idk_commit_mark WHERE writer = $1 AND biz_tag = $2",
    [IK__SQL_MARK_PRUNE] = "DELETE FROM idk_commit_mark WHERE at_ms < " NOW_MS " - 86400000",
    [IK__SQL_MARK_DROP] = "DELETE FROM idk_commit_mark WHERE writer LIKE $1",
    [IK__SQL_TAG_COLUMNS] = "SELECT biz_tag, max_id, step, description, update_time "
                            "FROM leaf_alloc LIMIT 0",
    [IK__SQL_SLOTS_SCAN] = "SELECT " SLOT_COLS " FROM idk_slots WHERE app = $1 AND worker "
                           "BETWEEN $2 AND $3 ORDER BY worker",
    [IK__SQL_SLOT_LOCK] = "SELECT record_ms, (expires_ms < " NOW_MS ")::int FROM idk_slots "
                          "WHERE app = $1 AND worker = $2 FOR UPDATE",
    [IK__SQL_SLOT_INSERT] =
        "INSERT INTO idk_slots (app, worker, holder, token, expires_ms, "
        "record_ms, since_ms) VALUES ($1, $2, $3, $4, " NOW_MS " + $5, $6, " NOW_MS ")",
    [IK__SQL_SLOT_TAKE] = "UPDATE idk_slots SET holder = $1, token = $2, expires_ms = " NOW_MS
                          " + $3, record_ms = GREATEST(record_ms, $4), since_ms = " NOW_MS
                          " WHERE app = $5 AND worker = $6 AND expires_ms < " NOW_MS,
    [IK__SQL_SLOT_RENEW] = "UPDATE idk_slots SET expires_ms = " NOW_MS " + $1, record_ms = "
                           "GREATEST(record_ms, $2) WHERE app = $3 AND worker = $4 AND token = $5 "
                           "AND expires_ms > " NOW_MS,
    [IK__SQL_SLOT_RELEASE] = "UPDATE idk_slots SET expires_ms = 0, token = '', record_ms = $1 "
                             "WHERE app = $2 AND worker = $3 AND token = $4",
    [IK__SQL_SLOTS_LIST] = "SELECT " SLOT_COLS " FROM idk_slots WHERE app = $1 ORDER BY worker",
    [IK__SQL_FENCE_BUMP] = "UPDATE idk_fence SET fence = fence + 1 WHERE lock_key = $1",
    [IK__SQL_FENCE_INSERT] = "INSERT INTO idk_fence (lock_key, fence) VALUES ($1, 1)",
    [IK__SQL_FENCE_GET] = "SELECT fence FROM idk_fence WHERE lock_key = $1",
    [IK__SQL_HOLDER_SET] = "INSERT INTO idk_holder (lock_key, id, session) VALUES ($1, $2, "
                           "pg_backend_pid()) ON CONFLICT (lock_key) DO UPDATE SET id = "
                           "EXCLUDED.id, session = EXCLUDED.session",
    /* the key's bigint is split in pg_locks: classid its high 32 bits, objid its low */
    [IK__SQL_HOLDER_GET] = "SELECT h.id FROM idk_holder h JOIN pg_locks l ON l.locktype = "
                           "'advisory' AND l.granted AND l.objsubid = 1 AND l.pid = h.session "
                           "AND ((l.classid::bigint << 32) | l.objid::bigint) = " LOCK_KEY(
                               "h.lock_key") " WHERE h.lock_key = $1 AND l.mode = "
                                             "'ExclusiveLock' LIMIT 1",
    [IK__SQL_FENCE_SEED] = "INSERT INTO idk_fence (lock_key, fence) VALUES ($1, $2) "
                           "ON CONFLICT (lock_key) DO NOTHING",
    [IK__SQL_PROOF] = WRITE_PROOF_SQL,
    [IK__SQL_TABLE_PROOF] = "SELECT relpersistence FROM pg_class WHERE oid = to_regclass($1)",
};

/* The statements that write (the generic layer's slot, tag, fence and leader
 * writes): each goes out with the proof of session in its round trip (pg_exec),
 * as every pipeline does (pg_exec_pipeline). */
static const unsigned char pg_writes[IK__SQL_NSTMT] = {
    [IK__SQL_LEAF_UPDATE] = 1,  [IK__SQL_LEAF_UPDATE_STEP] = 1, [IK__SQL_TAG_INSERT] = 1,
    [IK__SQL_MARK_SET] = 1,     [IK__SQL_SLOT_INSERT] = 1,      [IK__SQL_SLOT_TAKE] = 1,
    [IK__SQL_SLOT_RENEW] = 1,   [IK__SQL_SLOT_RELEASE] = 1,     [IK__SQL_FENCE_BUMP] = 1,
    [IK__SQL_FENCE_INSERT] = 1, [IK__SQL_HOLDER_SET] = 1,       [IK__SQL_FENCE_SEED] = 1,
};

static int pg_exec_pipeline(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                            int *ran, char *why, size_t why_len);

/* SP2: what came with the answer r of call besides its result: a notice (on_notice)
 * with any statement but a proof, or a COMMIT answered as something else ("ROLLBACK"
 * for a transaction that had failed): the pipeline's first such, into c->qual. */
static void note_write(ik__sql_conn *c, const ik__sql_call *call, const PGresult *r)
{
    if (c->qual[0] || call->id == IK__SQL_PROOF || call->id == IK__SQL_TABLE_PROOF) return;
    const char *tag = r ? PQcmdStatus((PGresult *)r) : "";
    if (c->note[0])
        snprintf(c->qual, sizeof c->qual, "%s", c->note);
    else if (call->id == IK__SQL_COMMIT && strcmp(tag, "COMMIT") != 0)
        snprintf(c->qual, sizeof c->qual, "%s (not COMMIT)", *tag ? tag : "no command tag");
}

static int pg_qualified(ik__sql_conn *c, char *words, size_t len)
{
    if (!c || !c->qual[0]) return 0;
    snprintf(words, len, "%s", c->qual);
    return 1;
}

/* A write goes out as a pipeline of one, which carries the proof of session. */
static int pg_exec(ik__sql_conn *c, ik__sql_stmt id, const char *const *params, int n,
                   ik__sql_res *res, char *why, size_t why_len)
{
    if ((unsigned)id >= IK__SQL_NSTMT || !pg_stmt[id]) return IK__SQL_EDEFINITE;
    if (!pg_writes[id])
        return ik__pg_request(c, pg_stmt[id], params, n, ik__mono_ms() + IK__SQL_IO_MS, res, why,
                              why_len);
    ik__sql_call call = {id, params, n};
    ik__sql_res one;
    int ran = 0;
    memset(&one, 0, sizeof one);
    int rc = pg_exec_pipeline(c, &call, 1, &one, &ran, why, why_len);
    if (rc == 0 && res)
        *res = one;
    else
        ik__sql_res_clear(&one);
    return rc;
}

/* Queues calls[0..n) and, unless `merged` (the last call is a write's proof, which
 * carries the proof of session), the proof (IK__SQL_NSTMT) as named statements, the
 * session's name "ik<mark>_<gen>_<id>" (no other client's in a shared session):
 * first a Parse of each the session has not had (*parsed, *np), then each one's
 * Bind and Execute, then the Sync. -1, or how many were queued when libpq refused. */
static int send_named(ik__sql_conn *c, const ik__sql_call *calls, int n, int merged,
                      uint64_t *parsed, int *np)
{
    int queued = 0;
    char name[64];
    *parsed = 0, *np = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < n + !merged; i++) {
            int id = i < n ? (int)calls[i].id : IK__SQL_NSTMT, k = i < n ? calls[i].nparams : 0;
            snprintf(name, sizeof name, "ik%.32s_%u_%d", c->mark, c->gen, id);
            const char *sql = id == IK__SQL_NSTMT ? PROOF_SQL : pg_stmt[id];
            /* a COMMIT goes out as its text, unnamed (it costs no plan): what a
             * reader of the wire, a pooler or the tests' fault proxy, looks for. The
             * proof after it stays named (parsed each time, it cost a third more CPU
             * an advance); one that fails for a name the session lost is read again
             * under new names (ik__sql_commit_proved) */
            int plain = id == IK__SQL_COMMIT;
            if (pass == 0 && (plain || ((c->named | *parsed) >> id & 1))) continue;
            if (pass == 0 ? !PQsendPrepare(c->pg, name, sql, k, NULL)
                : plain ? !PQsendQueryParams(c->pg, sql, k, NULL, k ? calls[i].params : NULL, NULL,
                                             NULL, 0)
                        : !PQsendQueryPrepared(c->pg, name, k, k ? calls[i].params : NULL, NULL,
                                               NULL, 0))
                return queued;
            queued++;
            if (pass == 0) *parsed |= (uint64_t)1 << id, (*np)++;
        }
    return PQpipelineSync(c->pg) ? -1 : queued;
}

/* The pipeline of sql_driver.h's exec_pipeline, in libpq's pipeline mode: every
 * statement (extended protocol, parameters apart) and one Sync go out in one
 * write, then the proof of session (PROOF_SQL) in the same transaction (a write's
 * proof at the end carries it: WRITE_PROOF_SQL), and the answers are read in order,
 * all by one deadline, each statement's notices with it (SP2 of
 * backend_sql_proof.c: a notice with a write or a COMMIT, or a COMMIT answered
 * otherwise, qualifies it: pg_qualified). After a failure
 * PostgreSQL skips the rest up to the Sync (PGRES_PIPELINE_ABORTED); a failed
 * transaction stays open, aborted, for the caller's ROLLBACK. The statements are
 * named, parsed once a session (send_named): parsed at every batch they cost the
 * database three times the CPU (docs/sql.md, "Tags"). */
static int pg_exec_pipeline(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                            int *ran, char *why, size_t why_len)
{
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    *ran = 0;
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) {
        ik__pg_one_line("the connection is gone", why, why_len);
        return IK__SQL_EGONE;
    }
    if (c->ping_pending) { /* a ping's late answer first, as ik__pg_request() */
        PGresult *r = NULL;
        int rc = ik__pg_collect(c, until, &r, why, why_len);
        PQclear(r);
        c->ping_pending = 0;
        if (rc) return IK__SQL_EGONE;
    }
    for (int i = 0; i < n; i++)
        if ((unsigned)calls[i].id >= IK__SQL_NSTMT || !pg_stmt[calls[i].id]) {
            ik__pg_one_line("no such statement", why, why_len);
            return IK__SQL_EDEFINITE;
        }
    if (!PQenterPipelineMode(c->pg)) {
        c->dead = 1;
        ik__pg_one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    uint64_t parsed;
    int merged = n > 0 && calls[n - 1].id == IK__SQL_PROOF;
    c->qual[0] = '\0';
    int np, queued = send_named(c, calls, n, merged, &parsed, &np);
    if (queued >= 0) {
        c->dead = 1; /* what was queued may have gone out: the caller rolls back */
        ik__pg_one_line(PQerrorMessage(c->pg), why, why_len);
        return queued ? IK__SQL_EDOUBT : IK__SQL_EGONE;
    }
    int rc = 0;
    ik__sql_res proof;
    memset(&proof, 0, sizeof proof);
    for (int i = -np; i < n + !merged; i++) { /* the Parses', then each statement's results */
        PGresult *r = NULL;
        ik__sql_res *into = i < 0 ? NULL : i < n ? &res[i] : &proof;
        c->note[0] = '\0';
        int q = ik__pg_collect(c, until, &r, rc ? NULL : why, rc ? 0 : why_len);
        if (q == 0 && rc == 0 && ik__pg_fill(r, into) != 0) q = IK__SQL_EDEFINITE;
        if (q == 0 && rc == 0 && i >= 0 && i < n) note_write(c, &calls[i], r);
        PQclear(r);
        if (c->dead) {
            ik__sql_res_clear(&proof);
            return rc ? rc : q; /* the answers are lost with it */
        }
        if (q == 0 && rc == 0 && i < n)
            *ran += i >= 0;
        else if (rc == 0)
            rc = q;
    }
    for (;;) { /* the Sync's answer: the pipeline is idle again */
        if (ik__pg_wait_ready(c, until) != 0) {
            c->dead = 1;
            ik__pg_one_line("no answer in time", rc ? NULL : why, rc ? 0 : why_len);
            ik__sql_res_clear(&proof);
            return rc ? rc : IK__SQL_EDOUBT;
        }
        PGresult *r = PQgetResult(c->pg);
        ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
        PQclear(r);
        if (st == PGRES_PIPELINE_SYNC) break;
        if (!r || PQstatus(c->pg) == CONNECTION_BAD) {
            c->dead = 1;
            ik__sql_res_clear(&proof);
            return rc ? rc : IK__SQL_EDOUBT;
        }
    }
    if (!PQexitPipelineMode(c->pg)) {
        c->dead = 1;
        ik__pg_one_line(PQerrorMessage(c->pg), rc ? NULL : why, rc ? 0 : why_len);
        ik__sql_res_clear(&proof);
        return rc ? rc : IK__SQL_EDOUBT;
    }
    if (rc == 0 && merged) /* the write's proof ends with SESSION_COLS */
        rc = ik__pg_proof_check(c, ik__sql_cell(&res[n - 1], 0, WRITE_PROOF_NCOLS - 2),
                                ik__sql_cell(&res[n - 1], 0, WRITE_PROOF_NCOLS - 1), why, why_len);
    else if (rc == 0)
        rc = ik__pg_proof_check(c, ik__sql_cell(&proof, 0, 0), ik__sql_cell(&proof, 0, 1), why,
                                why_len);
    ik__sql_res_clear(&proof);
    c->named = rc ? 0 : c->named | parsed; /* a name whose Parse is in doubt is never reused */
    c->gen += rc != 0;
    return rc;
}

static int pg_run(ik__sql_conn *c, const char *sql, char *why, size_t why_len)
{
    return ik__pg_request(c, sql, NULL, 0, ik__mono_ms() + IK__SQL_IO_MS, NULL, why, why_len);
}

static int pg_ping(ik__sql_conn *c, int timeout_ms)
{
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) return IK__SQL_EGONE;
    if (!c->ping_pending) {
        if (!PQsendQuery(c->pg, PROOF_SQL)) {
            c->dead = 1;
            return IK__SQL_EGONE;
        }
        c->ping_pending = 1;
    }
    int w = ik__pg_wait_ready(c, ik__mono_ms() + timeout_ms);
    if (w == IK__SQL_ETIMEOUT) return w;
    if (w) {
        c->dead = 1;
        return IK__SQL_EGONE;
    }
    PGresult *r = NULL;
    int rc = ik__pg_collect(c, ik__mono_ms() + IK__SQL_IO_MS, &r, NULL, 0);
    ik__sql_res p;
    memset(&p, 0, sizeof p);
    if (rc == 0 && ik__pg_fill(r, &p) != 0) rc = IK__SQL_EGONE;
    PQclear(r);
    c->ping_pending = 0;
    /* the proof of session: a held lock's session is still ours (SL6 in recipe_sql.c) */
    if (rc == 0)
        rc = ik__pg_proof_check(c, ik__sql_cell(&p, 0, 0), ik__sql_cell(&p, 0, 1), NULL, 0);
    ik__sql_res_clear(&p);
    if (rc == IK__SQL_EFOREIGN) return rc;
    if (rc || PQstatus(c->pg) != CONNECTION_OK) {
        c->dead = 1;
        return IK__SQL_EGONE;
    }
    return 0;
}

/* How long a lock wait's cancel request may take before the wait is abandoned. */
#define CANCEL_MS 1000

/* A cancel request, sent by a thread of its own: PQcancel opens a new connection to
 * the postmaster and waits for the postmaster to close it, with no time limit, so a
 * postmaster that does not answer (stopped, swapping, a lost network path) would hold
 * the caller past its deadline for ever. Whichever of the caller and the thread is
 * last frees it. */
typedef struct pg_cancel_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    PGcancel *pc;
    int done, abandoned;
} pg_cancel_job;

static void cancel_job_free(pg_cancel_job *j)
{
    PQfreeCancel(j->pc);
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
    free(j);
}

static void *cancel_thread(void *arg)
{
    pg_cancel_job *j = arg;
    char err[128];
    PQcancel(j->pc, err, sizeof err);
    pthread_mutex_lock(&j->mu);
    j->done = 1;
    int abandoned = j->abandoned;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) cancel_job_free(j);
    return NULL;
}

/* Asks the server to cancel c's request, waiting at most ms: 1 once the request was
 * delivered (or refused: the answer to the request out tells), 0 if it was not done
 * in time (the request is still out; the caller abandons the connection). */
static int cancel_bounded(ik__sql_conn *c, int ms)
{
    pg_cancel_job *j = calloc(1, sizeof *j);
    if (!j) return 0;
    if (!(j->pc = PQgetCancel(c->pg))) {
        free(j);
        return 0;
    }
    pthread_mutex_init(&j->mu, NULL);
    ik__cond_init_mono(&j->cv);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    int started = pthread_create(&t, &attr, cancel_thread, j) == 0;
    pthread_attr_destroy(&attr);
    if (!started) {
        cancel_job_free(j);
        return 0;
    }
    struct timespec ts;
    ik__deadline_ts(&ts, ms);
    pthread_mutex_lock(&j->mu);
    while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &ts) != ETIMEDOUT) {
    }
    int done = j->done;
    if (!done) j->abandoned = 1; /* the thread frees it when PQcancel returns */
    pthread_mutex_unlock(&j->mu);
    if (done) cancel_job_free(j);
    return done;
}

static int pg_unlock(ik__sql_conn *c, ik__lock_kind kind, const char *key);

/* A grant's proof of session (SL6 in recipe_sql.c), its cells pid and mark from
 * col: 1 held, or IK__SQL_EFOREIGN after giving back what the grant added to the
 * session it ran in (another client's: the lock is re-entrant there). */
static int grant_proof(ik__sql_conn *c, ik__lock_kind kind, const char *key, const ik__sql_res *g,
                       size_t col, char *why, size_t why_len)
{
    char value[96];
    const char *pid = ik__sql_cell(g, 0, col), *mark = ik__sql_cell(g, 0, col + 1);
    if (!ik__pg_proof_bad(c, pid, mark, value, sizeof value)) return 1;
    pg_unlock(c, kind, key);
    return ik__pg_proof_check(c, pid, mark, why, why_len);
}

static int pg_lock(ik__sql_conn *c, ik__lock_kind kind, const char *key, int64_t deadline_ms,
                   const volatile int *cancel, char *why, size_t why_len)
{
    int shared = kind == IK__LOCK_READ;
    const char *params[] = {key};
    if (deadline_ms == 0) {
        ik__sql_res r;
        int rc = ik__pg_request(
            c,
            shared ? "SELECT pg_try_advisory_lock_shared(" LOCK_KEY("$1::text") "), " SESSION_COLS
                   : "SELECT pg_try_advisory_lock(" LOCK_KEY("$1::text") "), " SESSION_COLS,
            params, 1, ik__mono_ms() + IK__SQL_IO_MS, &r, why, why_len);
        if (rc) return rc;
        int got = ik__sql_bool(&r, 0, 0);
        if (got) got = grant_proof(c, kind, key, &r, 1, why, why_len);
        ik__sql_res_clear(&r);
        return got;
    }
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) return IK__SQL_EGONE;
    /* the blocking call: we wait in the server's queue, in arrival order */
    if (!PQsendQueryParams(
            c->pg,
            shared ? "SELECT pg_advisory_lock_shared(" LOCK_KEY("$1::text") "), " SESSION_COLS
                   : "SELECT pg_advisory_lock(" LOCK_KEY("$1::text") "), " SESSION_COLS,
            1, NULL, params, NULL, NULL, 0)) {
        c->dead = 1;
        ik__pg_one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    int stopped = 0; /* 1: deadline, 2: cancel */
    for (;;) {
        int64_t until = ik__mono_ms() + 100;
        if (deadline_ms > 0 && deadline_ms < until) until = deadline_ms;
        int w = ik__pg_wait_ready(c, until);
        if (w == 0) break;
        if (w != IK__SQL_ETIMEOUT) {
            c->dead = 1;
            ik__pg_one_line(PQerrorMessage(c->pg), why, why_len);
            return IK__SQL_EGONE;
        }
        if (*cancel)
            stopped = 2;
        else if (deadline_ms > 0 && ik__mono_ms() >= deadline_ms)
            stopped = 1;
        if (stopped) {
            if (cancel_bounded(c, CANCEL_MS)) break;
            /* no answer from the postmaster: the wait is abandoned with its
             * connection, which the caller closes. Nothing is ours: a session
             * whose client is gone frees a grant as soon as it gets one (docs/sql.md,
             * "Locks and elections") */
            c->dead = 1;
            ik__pg_one_line(
                "the cancel request got no answer from the postmaster: the connection is "
                "abandoned",
                why, why_len);
            return stopped == 2 ? IK__SQL_ECANCELED : 0;
        }
    }
    PGresult *r = NULL;
    int rc = ik__pg_collect(c, ik__mono_ms() + IK__SQL_IO_MS, &r, why, why_len);
    ik__sql_res g;
    memset(&g, 0, sizeof g);
    if (rc == 0 && !stopped && ik__pg_fill(r, &g) != 0) rc = IK__SQL_EDEFINITE;
    PQclear(r);
    if (rc == 0 && !stopped) { /* the grant's proof of session (SL6 in recipe_sql.c) */
        rc = grant_proof(c, kind, key, &g, 1, why, why_len);
        ik__sql_res_clear(&g);
        return rc;
    }
    if (rc == IK__SQL_EDEFINITE && stopped)
        rc = 0;                    /* canceled in the queue: not held */
    else if (rc == 0 && stopped) { /* granted as we gave up: give it back */
        ik__pg_request(c,
                       shared ? "SELECT pg_advisory_unlock_shared(" LOCK_KEY("$1::text") ")"
                              : "SELECT pg_advisory_unlock(" LOCK_KEY("$1::text") ")",
                       params, 1, ik__mono_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
    }
    if (rc) return rc;
    return stopped == 2 ? IK__SQL_ECANCELED : 0;
}

static int pg_unlock(ik__sql_conn *c, ik__lock_kind kind, const char *key)
{
    const char *params[] = {key};
    return ik__pg_request(c,
                          kind == IK__LOCK_READ
                              ? "SELECT pg_advisory_unlock_shared(" LOCK_KEY("$1::text") ")"
                              : "SELECT pg_advisory_unlock(" LOCK_KEY("$1::text") ")",
                          params, 1, ik__mono_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
}

static ik__sql_conn_hz *pg_hz_state(ik__sql_conn *c)
{
    return &c->hz;
}

static void pg_session(ik__sql_conn *c, char *buf, size_t len)
{
    if (c && c->pg)
        snprintf(buf, len, "pid %d", PQbackendPID(c->pg));
    else if (len)
        buf[0] = '\0';
}

static int pg_socket(ik__sql_conn *c)
{
    return c && c->pg ? PQsocket(c->pg) : -1;
}

/* The shared rule, then libpq's own parse of the query parameters (no I/O). */
static int pg_uri_check(const char *uri, char *why, size_t why_len)
{
    int rc = ik__sql_uri_check(uri, "postgresql", why, why_len);
    if (rc) return rc;
    char *err = NULL;
    char *shown = ik__sql_uri_redact(uri, NULL); /* no password in libpq's message */
    if (!shown) return IK_ENOMEM;
    PQconninfoOption *o = PQconninfoParse(shown, &err);
    free(shown);
    if (!o) {
        char line[200];
        ik__pg_one_line(err ? err : "out of memory", line, sizeof line);
        PQfreemem(err);
        return ik__fail(IK_EURI, why, why_len, "bad postgresql URI: %s", line);
    }
    PQconninfoFree(o);
    return IK_OK;
}

const ik__sql_driver ik__sql_pg_driver = {
    .name = "PostgreSQL",
    .stmt = pg_stmt,
    .connect = ik__pg_connect,
    .close = ik__pg_close,
    .run = pg_run,
    .exec = pg_exec,
    .exec_pipeline = pg_exec_pipeline,
    .ping = pg_ping,
    .lock = pg_lock,
    .unlock = pg_unlock,
    .hazards = ik__pg_hazards,
    .proof = ik__pg_proof,
    .table_row = ik__pg_table_row,
    .qualified = pg_qualified,
    .returning = 1,
    .hz_state = pg_hz_state,
    .session = pg_session,
    .socket = pg_socket,
};

static void pg_client_version(char *buf, size_t len)
{
    int v = PQlibVersion(); /* 150018: 15.18 (major * 10000 + minor since 10) */
    snprintf(buf, len, "libpq %d.%d", v / 10000, v % 10000);
}

static const char *const pg_uri_examples[] = {"postgresql://idkeeper@127.0.0.1:5432/idkeeper",
                                              "postgresql://idkeeper@[::1]/ids?sslmode=require",
                                              NULL};

IK__SQL_BACKEND(pg, ik__sql_pg_driver, "postgresql", "postgresql://USER@HOST[:PORT]/DB",
                pg_uri_examples, pg_uri_check, pg_schema, pg_client_version);
