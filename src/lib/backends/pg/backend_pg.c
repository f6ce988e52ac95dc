/* backend_pg.c: the postgresql:// backend: the PostgreSQL driver of the generic SQL
 * backend (sql_driver.h), through libpq. The schema and every statement in
 * PostgreSQL's dialect, the connection with its timeouts and session settings, the
 * advisory locks, the hazard checks and the class of each failure; the protocols are the generic
 * layer's (backend_sql*.c, recipe_sql.c). docs/sql.md has the schema.
 *
 * URI: postgresql://[USER[:PASSWORD]@]HOST[:PORT][,...]/DB[?KEY=VALUE&...], any
 * parameter libpq knows (sslmode, connect_timeout, ...). The password comes apart
 * (--password-file, IDKEEPER_PASSWORD) and is given to libpq as its own parameter.
 *
 * Every request goes out with libpq's asynchronous calls and is waited for with
 * poll() up to a time limit (IK__SQL_IO_MS), so that a database that stops
 * answering is a timeout here, never a thread stuck in a read. A request whose
 * answer does not come in time leaves the connection dead (EDOUBT): its answer
 * may still come, and nothing else may be read after it.
 *
 * Lock keys: the session lock of key K ("lock:/a/b") is the advisory lock
 * hashtextextended(K, 0), a bigint that any SQL client can compute:
 *   SELECT pg_advisory_lock(hashtextextended('lock:/a/b', 0));
 * excludes an idkeeper holder of lock /a/b, and the reverse (docs/recipes.md).
 */
#include "internal.h"
#include "sql_driver.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

struct ik__sql_conn {
    PGconn *pg;
    int dead;         /* its answer stream can no longer be trusted */
    int ping_pending; /* a ping is out, unanswered */
    int holds;        /* connected for a session lock (ik__sql_target.holds) */
    /* the session limits set (session_setup), ms; keepalives in s */
    long keep_idle_s, keep_intvl_s, keep_count, user_timeout_ms, idle_session_ms;
    /* the proof of session (proof_check): the server session's pid as connect read
     * it, this connection's mark (MARK_GUC, 32 hex digits), and 1 if connect found
     * another connection's mark already in that session */
    int server_pid, shared;
    char mark[33];
    uint64_t named; /* bit id: statement id (IK__SQL_NSTMT: the proof) parsed (send_named) */
    unsigned gen;   /* of the names: a failed pipeline forgets them all for new ones */
    const int *cut; /* ik__sql_target.cut */
    ik__sql_conn_hz hz;
    /* what the server said besides results (H5 of backend_sql_hazards.c): the first
     * notice of the statement being read (on_notice), and the first that came with
     * a write or COMMIT of the last pipeline, or how a COMMIT was answered if not
     * "COMMIT" (pg_qualified) */
    char note[240], qual[240];
};

/* The proof of session that rides with every write and lock grant (docs/hazards.md,
 * "PostgreSQL"): the server session's pid, and a setting of our own that connect
 * sets to a random mark for this connection alone. A direct connection's pid is the
 * one libpq was told at login (PQbackendPID); PgBouncer gives its clients a random
 * one of its own (its cancel key), so behind it the pid is compared with the one
 * connect read. In session mode both stay ours; in transaction mode another
 * client's statements run in the same server session, which then shows its mark,
 * or ours runs in another session (another pid). */
#define MARK_GUC "idkeeper.session"
#define SESSION_COLS "pg_backend_pid(), current_setting('" MARK_GUC "', true)"
#define PROOF_SQL "SELECT " SESSION_COLS
#define PROOF_CHECK "server session"
#define PROOF_FIX                                                                                  \
    "a pooler in transaction mode shares server sessions between clients, where a session "        \
    "lock is granted twice: connect to PostgreSQL directly, or through PgBouncer in "              \
    "pool_mode = session"

/* A transaction of ours waits only for the server's answers, so one idle this long
 * (ms) has a frozen or vanished client: the server ends it and frees its row locks
 * (docs/sql.md, "Session settings"). */
#define IDLE_TX_MS 5000
/* A row lock wait (ms): less than a statement may take (IK__SQL_IO_MS), so that it
 * ends definite. Not on a lock holder's session: it would end pg_advisory_lock's
 * own wait. */
#define LOCK_WAIT_MS 3000

/* The database's clock, Unix ms. */
#define NOW_MS "(extract(epoch from clock_timestamp()) * 1000)::bigint"
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

/* The durability settings that ride with every write (IK__SQL_PROOF) and open
 * every check (pg_hazards), as this session sees them now: a reload (ALTER SYSTEM,
 * pg_reload_conf()) reaches every session at its next command. */
#define PROOF_COLS                                                                                 \
    "current_setting('fsync'), current_setting('full_page_writes'), "                              \
    "current_setting('synchronous_commit')"
/* idkeeper's tables (those our statements name, as the search path finds them)
 * that are not permanent (relpersistence 'u' UNLOGGED, 't' TEMP), "NAME KIND, ..."
 * or NULL: the "table persistence" row of a check and of every write's proof (an
 * ALTER TABLE ... SET UNLOGGED under running servers is seen by the next write). */
#define UNDURABLE_TABLES                                                                           \
    "(SELECT string_agg(c.relname || ' ' || CASE c.relpersistence WHEN 'u' THEN 'UNLOGGED' "       \
    "ELSE 'TEMP' END, ', ' ORDER BY c.relname) FROM pg_class c WHERE c.relkind IN ('r', 'p') "     \
    "AND c.relpersistence <> 'p' AND pg_table_is_visible(c.oid) AND c.relname IN ('leaf_alloc', "  \
    "'idk_tag_kind', 'idk_slots', 'idk_commit_mark', 'idk_fence', 'idk_holder'))"
/* A write's proof (IK__SQL_PROOF), read after its commit point (H4 of
 * backend_sql_hazards.c): the durability settings, the tables' persistence, and the
 * proof of session, so that a pipeline that ends with it needs no proof of session
 * of its own (pg_exec_pipeline). */
#define WRITE_PROOF_SQL "SELECT " PROOF_COLS ", " UNDURABLE_TABLES ", " SESSION_COLS
#define WRITE_PROOF_NCOLS 6

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
    [IK__SQL_PROOF] = WRITE_PROOF_SQL,
};

/* The statements that write (the generic layer's slot, tag, fence and leader
 * writes): each goes out with the proof of session in its round trip (pg_exec),
 * as every pipeline does (pg_exec_pipeline). */
static const unsigned char pg_writes[IK__SQL_NSTMT] = {
    [IK__SQL_LEAF_UPDATE] = 1,  [IK__SQL_LEAF_UPDATE_STEP] = 1, [IK__SQL_TAG_INSERT] = 1,
    [IK__SQL_MARK_SET] = 1,     [IK__SQL_SLOT_INSERT] = 1,      [IK__SQL_SLOT_TAKE] = 1,
    [IK__SQL_SLOT_RENEW] = 1,   [IK__SQL_SLOT_RELEASE] = 1,     [IK__SQL_FENCE_BUMP] = 1,
    [IK__SQL_FENCE_INSERT] = 1, [IK__SQL_HOLDER_SET] = 1,
};

/* One line of libpq's message into why: newlines and runs of spaces as one
 * space, "ERROR:  " and the like kept. */
static void one_line(const char *msg, char *why, size_t why_len)
{
    if (!why || why_len == 0) return;
    size_t o = 0;
    int space = 0;
    for (const char *p = msg ? msg : ""; *p && o + 1 < why_len; p++) {
        if (*p == '\n' || *p == '\r' || *p == '\t' || *p == ' ') {
            space = o > 0;
            continue;
        }
        if (space && o + 2 < why_len) why[o++] = ' ';
        space = 0;
        why[o++] = *p;
    }
    why[o] = '\0';
    if (o == 0) snprintf(why, why_len, "no message");
}

static int64_t now_ms(void)
{
    return ik__mono_ms();
}

/* Waits until the answer to the request out is complete (PQisBusy false) or
 * until_ms: 0, IK__SQL_ETIMEOUT, or IK__SQL_EGONE (the connection broke). */
static int wait_ready(ik__sql_conn *c, int64_t until_ms)
{
    for (;;) {
        if (!PQconsumeInput(c->pg)) return IK__SQL_EGONE;
        if (!PQisBusy(c->pg)) return 0;
        int64_t left = until_ms - now_ms();
        if (left <= 0) return IK__SQL_ETIMEOUT;
        if (c->cut && __atomic_load_n(c->cut, __ATOMIC_ACQUIRE)) return IK__SQL_ETIMEOUT;
        struct pollfd pfd = {.fd = PQsocket(c->pg), .events = POLLIN};
        int n = poll(&pfd, 1, left > 100 ? 100 : (int)left);
        if (n < 0 && errno != EINTR) return IK__SQL_EGONE;
    }
}

/* The class of a failed result on c. */
static int class_of(ik__sql_conn *c, const PGresult *r)
{
    if (PQstatus(c->pg) == CONNECTION_BAD) {
        c->dead = 1;
        return IK__SQL_EDOUBT;
    }
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    if (state && strcmp(state, "23505") == 0) return IK__SQL_EDUPLICATE;
    if (state && (strncmp(state, "08", 2) == 0 || strncmp(state, "57P", 3) == 0)) {
        c->dead = 1; /* connection exception, server shutting down */
        return IK__SQL_EDOUBT;
    }
    return IK__SQL_EDEFINITE;
}

/* Reads every result of the request out, keeping the first failure or the last
 * result. 0 and *out (PQclear'ed by the caller), or a class. */
static int collect(ik__sql_conn *c, int64_t until_ms, PGresult **out, char *why, size_t why_len)
{
    PGresult *keep = NULL;
    int rc = 0;
    for (;;) {
        int w = wait_ready(c, until_ms);
        if (w) {
            c->dead = 1;
            PQclear(keep);
            one_line(w == IK__SQL_ETIMEOUT ? "no answer in time" : PQerrorMessage(c->pg), why,
                     why_len);
            return IK__SQL_EDOUBT;
        }
        PGresult *r = PQgetResult(c->pg);
        if (!r) break;
        ExecStatusType st = PQresultStatus(r);
        if (rc == 0 && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            rc = class_of(c, r);
            one_line(PQresultErrorMessage(r), why, why_len);
        }
        if (rc == 0) {
            PQclear(keep);
            keep = r;
        } else {
            PQclear(r);
        }
    }
    if (rc) {
        PQclear(keep);
        return rc;
    }
    *out = keep;
    return 0;
}

static int fill(const PGresult *r, ik__sql_res *res)
{
    if (!res) return 0;
    memset(res, 0, sizeof *res);
    const char *aff = r ? PQcmdTuples((PGresult *)r) : "";
    res->affected = *aff ? strtoll(aff, NULL, 10) : 0;
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) return 0;
    size_t nr = (size_t)PQntuples(r), nc = (size_t)PQnfields(r);
    if (nr * nc == 0) {
        res->nrows = nr;
        res->ncols = nc;
        return 0;
    }
    res->cell = calloc(nr * nc, sizeof *res->cell);
    if (!res->cell) return IK_ENOMEM;
    res->nrows = nr;
    res->ncols = nc;
    for (size_t i = 0; i < nr; i++)
        for (size_t j = 0; j < nc; j++) {
            if (PQgetisnull(r, (int)i, (int)j)) continue;
            if (!(res->cell[i * nc + j] = strdup(PQgetvalue(r, (int)i, (int)j)))) {
                ik__sql_res_clear(res);
                return IK_ENOMEM;
            }
        }
    return 0;
}

/* The verdict of a proof of session (SESSION_COLS) that read pid and mark on c: 0 if
 * it ran in c's own server session; else 1 with value saying what it showed. */
static int proof_bad(const ik__sql_conn *c, const char *pid, const char *mark, char *value,
                     size_t len)
{
    long got = strtol(pid, NULL, 10);
    if (c->shared)
        snprintf(value, len, "pid %ld, which another connection had used (its mark was there)",
                 got);
    else if (got != c->server_pid)
        snprintf(value, len, "pid %ld, not this connection's (pid %d)", got, c->server_pid);
    else if (strcmp(mark, c->mark) != 0)
        snprintf(value, len, "pid %ld, its mark %s", got,
                 *mark ? "another connection's" : "gone (the session was reset)");
    else
        return 0;
    return 1;
}

/* The proof that rode with a write or a grant on c (docs/hazards.md, "PostgreSQL"):
 * 0 if it shows c's own session; else IK__SQL_EFOREIGN with c's hz state describing
 * it and c dead (whatever the write did is rolled back if it can be). */
static int proof_check(ik__sql_conn *c, const char *pid, const char *mark, char *why,
                       size_t why_len);

/* Sends sql with params and waits for its answer up to until_ms. */
static int request(ik__sql_conn *c, const char *sql, const char *const *params, int n,
                   int64_t until_ms, ik__sql_res *res, char *why, size_t why_len)
{
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) {
        one_line("the connection is gone", why, why_len);
        return IK__SQL_EGONE;
    }
    if (c->ping_pending) { /* a ping's late answer first (recipe_sql.c's release) */
        PGresult *r = NULL;
        int rc = collect(c, until_ms, &r, why, why_len);
        PQclear(r);
        c->ping_pending = 0;
        if (rc) return IK__SQL_EGONE;
    }
    if (!PQsendQueryParams(c->pg, sql, n, NULL, params, NULL, NULL, 0)) {
        c->dead = 1;
        one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    PGresult *r = NULL;
    int rc = collect(c, until_ms, &r, why, why_len);
    if (rc == 0 && fill(r, res) != 0) rc = IK__SQL_EDEFINITE;
    PQclear(r);
    return rc;
}

static int proof_check(ik__sql_conn *c, const char *pid, const char *mark, char *why,
                       size_t why_len)
{
    if (!proof_bad(c, pid, mark, c->hz.foreign_value, sizeof c->hz.foreign_value)) return 0;
    c->hz.foreign = 1;
    c->hz.foreign_check = PROOF_CHECK;
    c->hz.foreign_fix = PROOF_FIX;
    /* a transaction's writes are not committed (an autocommit one is, elsewhere) */
    request(c, "ROLLBACK", NULL, 0, now_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
    c->dead = 1;
    if (why && why_len)
        snprintf(why, why_len, "%s is %s: %s", PROOF_CHECK, c->hz.foreign_value, PROOF_FIX);
    return IK__SQL_EFOREIGN;
}

static int pg_exec_pipeline(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                            int *ran, char *why, size_t why_len);

/* H5: what came with the answer r of call besides its result: a notice (on_notice)
 * with any statement but a proof, or a COMMIT answered as something else ("ROLLBACK"
 * for a transaction that had failed): the pipeline's first such, into c->qual. */
static void note_write(ik__sql_conn *c, const ik__sql_call *call, const PGresult *r)
{
    if (c->qual[0] || call->id == IK__SQL_PROOF) return;
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
        return request(c, pg_stmt[id], params, n, now_ms() + IK__SQL_IO_MS, res, why, why_len);
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
             * reader of the wire, a pooler or the tests' fault proxy, looks for */
            int plain = id == IK__SQL_COMMIT;
            if (pass == 0 && (plain || ((c->named | *parsed) >> id & 1))) continue;
            if (pass == 0 ? !PQsendPrepare(c->pg, name, sql, k, NULL)
                : plain   ? !PQsendQueryParams(c->pg, sql, 0, NULL, NULL, NULL, NULL, 0)
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
 * all by one deadline, each statement's notices with it (H5 of
 * backend_sql_hazards.c: a notice with a write or a COMMIT, or a COMMIT answered
 * otherwise, qualifies it: pg_qualified). After a failure
 * PostgreSQL skips the rest up to the Sync (PGRES_PIPELINE_ABORTED); a failed
 * transaction stays open, aborted, for the caller's ROLLBACK. The statements are
 * named, parsed once a session (send_named): parsed at every batch they cost the
 * database three times the CPU (docs/sql.md, "Tags"). */
static int pg_exec_pipeline(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                            int *ran, char *why, size_t why_len)
{
    int64_t until = now_ms() + IK__SQL_IO_MS;
    *ran = 0;
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) {
        one_line("the connection is gone", why, why_len);
        return IK__SQL_EGONE;
    }
    if (c->ping_pending) { /* a ping's late answer first, as request() */
        PGresult *r = NULL;
        int rc = collect(c, until, &r, why, why_len);
        PQclear(r);
        c->ping_pending = 0;
        if (rc) return IK__SQL_EGONE;
    }
    for (int i = 0; i < n; i++)
        if ((unsigned)calls[i].id >= IK__SQL_NSTMT || !pg_stmt[calls[i].id]) {
            one_line("no such statement", why, why_len);
            return IK__SQL_EDEFINITE;
        }
    if (!PQenterPipelineMode(c->pg)) {
        c->dead = 1;
        one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    uint64_t parsed;
    int merged = n > 0 && calls[n - 1].id == IK__SQL_PROOF;
    c->qual[0] = '\0';
    int np, queued = send_named(c, calls, n, merged, &parsed, &np);
    if (queued >= 0) {
        c->dead = 1; /* what was queued may have gone out: the caller rolls back */
        one_line(PQerrorMessage(c->pg), why, why_len);
        return queued ? IK__SQL_EDOUBT : IK__SQL_EGONE;
    }
    int rc = 0;
    ik__sql_res proof;
    memset(&proof, 0, sizeof proof);
    for (int i = -np; i < n + !merged; i++) { /* the Parses', then each statement's results */
        PGresult *r = NULL;
        ik__sql_res *into = i < 0 ? NULL : i < n ? &res[i] : &proof;
        c->note[0] = '\0';
        int q = collect(c, until, &r, rc ? NULL : why, rc ? 0 : why_len);
        if (q == 0 && rc == 0 && fill(r, into) != 0) q = IK__SQL_EDEFINITE;
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
        if (wait_ready(c, until) != 0) {
            c->dead = 1;
            one_line("no answer in time", rc ? NULL : why, rc ? 0 : why_len);
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
        one_line(PQerrorMessage(c->pg), rc ? NULL : why, rc ? 0 : why_len);
        ik__sql_res_clear(&proof);
        return rc ? rc : IK__SQL_EDOUBT;
    }
    if (rc == 0 && merged) /* the write's proof ends with SESSION_COLS */
        rc = proof_check(c, ik__sql_cell(&res[n - 1], 0, WRITE_PROOF_NCOLS - 2),
                         ik__sql_cell(&res[n - 1], 0, WRITE_PROOF_NCOLS - 1), why, why_len);
    else if (rc == 0)
        rc = proof_check(c, ik__sql_cell(&proof, 0, 0), ik__sql_cell(&proof, 0, 1), why, why_len);
    ik__sql_res_clear(&proof);
    c->named = rc ? 0 : c->named | parsed; /* a name whose Parse is in doubt is never reused */
    c->gen += rc != 0;
    return rc;
}

static int pg_run(ik__sql_conn *c, const char *sql, char *why, size_t why_len)
{
    return request(c, sql, NULL, 0, now_ms() + IK__SQL_IO_MS, NULL, why, why_len);
}

/* libpq prints NOTICEs ("relation ... already exists, skipping") to stderr by
 * default: they are not the operator's business; but one that comes with a write is
 * part of its evidence (H5 of backend_sql_hazards.c), so the first of each
 * statement is kept, in one line, for note_write. */
static void on_notice(void *arg, const PGresult *r)
{
    ik__sql_conn *c = arg;
    if (!c->note[0]) one_line(PQresultErrorMessage(r), c->note, sizeof c->note);
}

/* Sets the session state our statements rely on and the session limits, derived
 * from the lease TTL (docs/sql.md, "Session settings"); pg_hazards reads them back.
 * First the proof of session's start: the server pid, and this connection's mark
 * (SESSION_COLS), noting a mark that was there before (c->shared).
 *   every session: READ COMMITTED; idle_in_transaction_session_timeout (a frozen
 *     server's transaction ends, and with it a tag's row lock); the server's TCP
 *     keepalives and tcp_user_timeout (a vanished host's session ends);
 *   not a lock holder: lock_timeout;
 *   a lock holder: statement_timeout = 0 (a role's or database's own would end the
 *     wait in pg_advisory_lock: a waiter would give up while the holder holds);
 *   a lock holder (PostgreSQL 14+): idle_session_timeout = the TTL: its monitor
 *     pings every half second, so only a frozen or vanished holder is idle that
 *     long. Pooled connections get none: they may idle for hours, holding nothing.
 * The keepalives: idle TTL/3, then probes every TTL/9, 3 of them: a holder whose
 * host vanished is dropped about 2/3 of the TTL after its last packet (each at
 * least 1 s). 0 or a class. */
static int session_setup(ik__sql_conn *c, int64_t ttl_ms, char *why, size_t why_len)
{
    int ver = PQserverVersion(c->pg);
    c->keep_idle_s = ttl_ms / 3000 < 1 ? 1 : (long)(ttl_ms / 3000);
    c->keep_intvl_s = ttl_ms / 9000 < 1 ? 1 : (long)(ttl_ms / 9000);
    c->keep_count = 3;
    c->user_timeout_ms = ver >= 120000 ? (long)(ttl_ms < 2000 ? 2000 : ttl_ms) : 0;
    c->idle_session_ms = c->holds && ver >= 140000 ? (long)(ttl_ms < 2000 ? 2000 : ttl_ms) : 0;
    unsigned char rnd[16];
    if (ik__random_bytes(rnd, sizeof rnd) != 0)
        return ik__fail(IK__SQL_EGONE, why, why_len, "no randomness for the session's mark");
    for (int i = 0; i < 16; i++)
        snprintf(c->mark + 2 * i, 3, "%02x", rnd[i]);
    char q[1200];
    /* the pid and a mark found in the session (another connection's: a pooler shares
     * the session) before ours is set: the target list is evaluated in order */
    int n = snprintf(q, sizeof q,
                     "SELECT " SESSION_COLS ", set_config('" MARK_GUC "', '%s', false), "
                     "set_config('default_transaction_isolation', 'read committed', "
                     "false), set_config('idle_in_transaction_session_timeout', '%d', false), "
                     "set_config('lock_timeout', '%d', false), "
                     "set_config('tcp_keepalives_idle', '%ld', false), "
                     "set_config('tcp_keepalives_interval', '%ld', false), "
                     "set_config('tcp_keepalives_count', '%ld', false)",
                     c->mark, IDLE_TX_MS, c->holds ? 0 : LOCK_WAIT_MS, c->keep_idle_s,
                     c->keep_intvl_s, c->keep_count);
    if (c->user_timeout_ms)
        n += snprintf(q + n, sizeof q - (size_t)n, ", set_config('tcp_user_timeout', '%ld', false)",
                      c->user_timeout_ms);
    if (c->idle_session_ms)
        n += snprintf(q + n, sizeof q - (size_t)n,
                      ", set_config('idle_session_timeout', '%ld', false)", c->idle_session_ms);
    if (c->holds) /* a role's statement_timeout would end pg_advisory_lock's wait */
        snprintf(q + n, sizeof q - (size_t)n, ", set_config('statement_timeout', '0', false)");
    ik__sql_res r;
    int rc = request(c, q, NULL, 0, now_ms() + IK__SQL_IO_MS, &r, why, why_len);
    if (rc) return rc;
    c->server_pid = (int)ik__sql_int(&r, 0, 0);
    c->shared = *ik__sql_cell(&r, 0, 1) != '\0';
    ik__sql_res_clear(&r);
    return 0;
}

static int pg_connect(const ik__sql_target *t, ik__sql_conn **out, char *why, size_t why_len)
{
    ik__sql_conn *c = calloc(1, sizeof *c);
    if (!c) return IK_ENOMEM;
    /* libpq's own defaults first (a URI's own connect_timeout wins), then the URI,
     * then the password given apart */
    const char *keys[] = {"connect_timeout",
                          "keepalives_idle",
                          "keepalives_interval",
                          "keepalives_count",
                          "application_name",
                          "dbname",
                          "password",
                          NULL};
    const char *vals[] = {"5", "5", "2", "3", "idkeeper", t->uri, t->password, NULL};
    if (!t->password) keys[6] = NULL;
    c->cut = t->cut;
    /* non-blocking, so that a cut (ik__sql_target.cut) ends a connect under way;
     * libpq leaves connect_timeout to us then: IK__SQL_IO_MS in all */
    c->pg = PQconnectStartParams(keys, vals, 1);
    if (!c->pg) {
        free(c);
        return IK_ENOMEM;
    }
    int64_t until = now_ms() + IK__SQL_IO_MS;
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    while (PQstatus(c->pg) != CONNECTION_BAD && ps != PGRES_POLLING_OK &&
           ps != PGRES_POLLING_FAILED) {
        int64_t left = until - now_ms();
        if (left <= 0 || (c->cut && __atomic_load_n(c->cut, __ATOMIC_ACQUIRE))) break;
        struct pollfd pfd = {.fd = PQsocket(c->pg),
                             .events = ps == PGRES_POLLING_READING ? POLLIN : POLLOUT};
        int n = poll(&pfd, 1, left > 100 ? 100 : (int)left);
        if (n > 0) ps = PQconnectPoll(c->pg);
    }
    if (PQstatus(c->pg) != CONNECTION_OK) {
        const char *msg = ps == PGRES_POLLING_OK || ps == PGRES_POLLING_FAILED ||
                                  PQstatus(c->pg) == CONNECTION_BAD
                              ? PQerrorMessage(c->pg)
                              : "no answer in time";
        one_line(msg, why, why_len);
        int refused = strstr(msg, "authentication failed") || strstr(msg, "does not exist") ||
                      strstr(msg, "no password supplied") || strstr(msg, "no pg_hba.conf");
        PQfinish(c->pg);
        free(c);
        return refused ? IK__SQL_EREFUSED : IK__SQL_EGONE;
    }
    PQsetNoticeReceiver(c->pg, on_notice, c);
    c->holds = t->holds;
    int rc = session_setup(c, t->ttl_ms, why, why_len);
    if (rc) {
        PQfinish(c->pg);
        free(c);
        return rc == IK__SQL_EDEFINITE ? IK__SQL_EREFUSED : IK__SQL_EGONE;
    }
    *out = c;
    return 0;
}

static void pg_close(ik__sql_conn *c)
{
    if (!c) return;
    PQfinish(c->pg);
    free(c);
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
    int w = wait_ready(c, now_ms() + timeout_ms);
    if (w == IK__SQL_ETIMEOUT) return w;
    if (w) {
        c->dead = 1;
        return IK__SQL_EGONE;
    }
    PGresult *r = NULL;
    int rc = collect(c, now_ms() + IK__SQL_IO_MS, &r, NULL, 0);
    ik__sql_res p;
    memset(&p, 0, sizeof p);
    if (rc == 0 && fill(r, &p) != 0) rc = IK__SQL_EGONE;
    PQclear(r);
    c->ping_pending = 0;
    /* the proof of session: a held lock's session is still ours (SL6 in recipe_sql.c) */
    if (rc == 0) rc = proof_check(c, ik__sql_cell(&p, 0, 0), ik__sql_cell(&p, 0, 1), NULL, 0);
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
    if (!proof_bad(c, pid, mark, value, sizeof value)) return 1;
    pg_unlock(c, kind, key);
    return proof_check(c, pid, mark, why, why_len);
}

static int pg_lock(ik__sql_conn *c, ik__lock_kind kind, const char *key, int64_t deadline_ms,
                   const volatile int *cancel, char *why, size_t why_len)
{
    int shared = kind == IK__LOCK_READ;
    const char *params[] = {key};
    if (deadline_ms == 0) {
        ik__sql_res r;
        int rc = request(
            c,
            shared ? "SELECT pg_try_advisory_lock_shared(" LOCK_KEY("$1::text") "), " SESSION_COLS
                   : "SELECT pg_try_advisory_lock(" LOCK_KEY("$1::text") "), " SESSION_COLS,
            params, 1, now_ms() + IK__SQL_IO_MS, &r, why, why_len);
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
        one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    int stopped = 0; /* 1: deadline, 2: cancel */
    for (;;) {
        int64_t until = now_ms() + 100;
        if (deadline_ms > 0 && deadline_ms < until) until = deadline_ms;
        int w = wait_ready(c, until);
        if (w == 0) break;
        if (w != IK__SQL_ETIMEOUT) {
            c->dead = 1;
            one_line(PQerrorMessage(c->pg), why, why_len);
            return IK__SQL_EGONE;
        }
        if (*cancel)
            stopped = 2;
        else if (deadline_ms > 0 && now_ms() >= deadline_ms)
            stopped = 1;
        if (stopped) {
            if (cancel_bounded(c, CANCEL_MS)) break;
            /* no answer from the postmaster: the wait is abandoned with its
             * connection, which the caller closes. Nothing is ours: a session
             * whose client is gone frees a grant as soon as it gets one (docs/sql.md,
             * "Locks and elections") */
            c->dead = 1;
            one_line("the cancel request got no answer from the postmaster: the connection is "
                     "abandoned",
                     why, why_len);
            return stopped == 2 ? IK__SQL_ECANCELED : 0;
        }
    }
    PGresult *r = NULL;
    int rc = collect(c, now_ms() + IK__SQL_IO_MS, &r, why, why_len);
    ik__sql_res g;
    memset(&g, 0, sizeof g);
    if (rc == 0 && !stopped && fill(r, &g) != 0) rc = IK__SQL_EDEFINITE;
    PQclear(r);
    if (rc == 0 && !stopped) { /* the grant's proof of session (SL6 in recipe_sql.c) */
        rc = grant_proof(c, kind, key, &g, 1, why, why_len);
        ik__sql_res_clear(&g);
        return rc;
    }
    if (rc == IK__SQL_EDEFINITE && stopped)
        rc = 0;                    /* canceled in the queue: not held */
    else if (rc == 0 && stopped) { /* granted as we gave up: give it back */
        request(c,
                shared ? "SELECT pg_advisory_unlock_shared(" LOCK_KEY("$1::text") ")"
                       : "SELECT pg_advisory_unlock(" LOCK_KEY("$1::text") ")",
                params, 1, now_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
    }
    if (rc) return rc;
    return stopped == 2 ? IK__SQL_ECANCELED : 0;
}

static int pg_unlock(ik__sql_conn *c, ik__lock_kind kind, const char *key)
{
    const char *params[] = {key};
    return request(c,
                   kind == IK__LOCK_READ
                       ? "SELECT pg_advisory_unlock_shared(" LOCK_KEY("$1::text") ")"
                       : "SELECT pg_advisory_unlock(" LOCK_KEY("$1::text") ")",
                   params, 1, now_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
}

/* The rows of PROOF_COLS (r's first three cells) into rows[*k..]: the same rows,
 * under the same names, whether a check or a write's proof read them. */
static void durability_rows(const ik__hazards *h, const ik__sql_res *r, ik_hazard *rows, size_t *k)
{
    const char *fsync = ik__sql_cell(r, 0, 0), *fpw = ik__sql_cell(r, 0, 1);
    const char *sc = ik__sql_cell(r, 0, 2);
    ik__hazard_row(h, &rows[(*k)++], "fsync", fsync, strcmp(fsync, "on") != 0,
                   "PostgreSQL acknowledges commits a crash of its host can lose, and can "
                   "corrupt: set fsync = on (postgresql.conf, then reload), or start with "
                   "--allow-unsafe-store to accept that");
    ik__hazard_row(h, &rows[(*k)++], "full_page_writes", fpw, strcmp(fpw, "on") != 0,
                   "a crash can leave torn pages that recovery cannot repair: set "
                   "full_page_writes = on, or start with --allow-unsafe-store to accept that");
    ik__hazard_row(h, &rows[(*k)++], "synchronous_commit", sc, strcmp(sc, "off") == 0,
                   "PostgreSQL acknowledges commits before they are flushed: set "
                   "synchronous_commit = on (server, role and database settings), or start "
                   "with --allow-unsafe-store to accept that");
}

/* The "session transaction" row: after a write that must have committed (or a
 * check, outside any transaction of ours) no transaction is open on c. */
static void tx_row(ik__sql_conn *c, const ik__hazards *h, ik_hazard *row)
{
    PGTransactionStatusType ts = PQtransactionStatus(c->pg);
    int open = ts == PQTRANS_INTRANS || ts == PQTRANS_INERROR;
    ik__hazard_row(h, row, "session transaction", open ? "open" : "none open", open,
                   "the server kept a transaction open after a write that must have "
                   "committed: that write is not committed; connect to PostgreSQL "
                   "directly, not through a pooler in transaction mode");
}

/* The "table persistence" row: und is UNDURABLE_TABLES's answer. */
static void persistence_row(const ik__hazards *h, const char *und, ik_hazard *row)
{
    ik__hazard_row(h, row, "table persistence", *und ? und : "all logged", *und != '\0',
                   "these idkeeper tables are UNLOGGED or TEMP: a crash empties an UNLOGGED "
                   "table (counters and slot records start again), and a TEMP one is this "
                   "session's alone; ALTER TABLE ... SET LOGGED each of them");
}

/* The proof of a write (sql_driver.h: proof): its PROOF_COLS and the tables'
 * persistence, and, where the write must have committed, no transaction left open
 * on the session. */
static void pg_proof(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                     ik_hazard *rows, size_t *n)
{
    size_t k = 0;
    if (r && r->nrows == 1 && r->ncols == WRITE_PROOF_NCOLS) {
        durability_rows(h, r, rows, &k);
        persistence_row(h, ik__sql_cell(r, 0, 3), &rows[k++]);
    }
    if (!in_tx) tx_row(c, h, &rows[k++]);
    *n = k;
}

/* The store hazards of c (sql_driver.h: hazards; docs/hazards.md, "PostgreSQL"):
 * fsync, full_page_writes and synchronous_commit as this session sees them (a
 * role's or database's own synchronous_commit = off shows here), and the session
 * state that session_setup set, read back; the proof of session (a pooler in
 * transaction mode between us and the server shows here, as with every write),
 * whether the server is a standby (its writes fail: the row says why), and whether
 * any of our tables is UNLOGGED or TEMP. */
static int pg_hazards(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                      int64_t *db_ms, char *why, size_t why_len)
{
    ik__sql_res r;
    int rc = request(
        c,
        "SELECT " PROOF_COLS ", current_setting('transaction_isolation'), "
        "(SELECT setting FROM pg_settings WHERE name = "
        "'idle_in_transaction_session_timeout'), "
        "(SELECT setting FROM pg_settings WHERE name = 'lock_timeout'), "
        "(SELECT setting FROM pg_settings WHERE name = 'tcp_keepalives_idle'), "
        "(SELECT setting FROM pg_settings WHERE name = 'idle_session_timeout'), "
        "inet_server_addr() IS NULL, " NOW_MS ", " SESSION_COLS ", pg_is_in_recovery(), "
        "(SELECT setting FROM pg_settings WHERE name = 'statement_timeout'), " UNDURABLE_TABLES,
        NULL, 0, now_ms() + IK__SQL_IO_MS, &r, why, why_len);
    if (rc) return rc;
    if (r.nrows != 1 || r.ncols != 15) {
        ik__sql_res_clear(&r);
        return ik__fail(IK__SQL_EDEFINITE, why, why_len, "PostgreSQL: no settings row");
    }
    size_t k = 0;
    char val[96];
    const char *iso = ik__sql_cell(&r, 0, 3);
    durability_rows(h, &r, rows, &k);
    tx_row(c, h, &rows[k++]);
    ik__hazard_row(h, &rows[k++], "session isolation", iso, strcmp(iso, "read committed") != 0,
                   "the session did not keep READ COMMITTED as idkeeper set it; connect to "
                   "PostgreSQL directly, not through a pooler in transaction mode");
    snprintf(val, sizeof val, "%s ms", ik__sql_cell(&r, 0, 4));
    ik__hazard_row(h, &rows[k++], "session idle_in_transaction_session_timeout", val,
                   ik__sql_int(&r, 0, 4) != IDLE_TX_MS,
                   "the session did not keep idle_in_transaction_session_timeout = %d as "
                   "idkeeper set it (a frozen server would keep a tag's row lock); connect "
                   "to PostgreSQL directly, not through a pooler in transaction mode",
                   IDLE_TX_MS);
    snprintf(val, sizeof val, "%s ms", ik__sql_cell(&r, 0, 5));
    ik__hazard_row(h, &rows[k++], c->holds ? "lock session lock_timeout" : "session lock_timeout",
                   val, ik__sql_int(&r, 0, 5) != (c->holds ? 0 : LOCK_WAIT_MS),
                   "the session did not keep lock_timeout = %d as idkeeper set it; connect to "
                   "PostgreSQL directly, not through a pooler in transaction mode",
                   c->holds ? 0 : LOCK_WAIT_MS);
    if (!ik__sql_bool(&r, 0, 8)) { /* TCP (a Unix socket has no keepalives) */
        snprintf(val, sizeof val, "%s s", ik__sql_cell(&r, 0, 6));
        ik__hazard_row(h, &rows[k++], "session tcp_keepalives_idle", val,
                       ik__sql_int(&r, 0, 6) != c->keep_idle_s,
                       "the session did not keep tcp_keepalives_idle = %ld as idkeeper set it "
                       "(a vanished host's session would live for hours); connect to "
                       "PostgreSQL directly",
                       c->keep_idle_s);
    }
    if (c->holds) {
        snprintf(val, sizeof val, "%s ms", ik__sql_cell(&r, 0, 13));
        ik__hazard_row(h, &rows[k++], "lock session statement_timeout", val,
                       ik__sql_int(&r, 0, 13) != 0,
                       "the lock's session did not keep statement_timeout = 0 as idkeeper set "
                       "it (a lock wait would end before its --timeout); connect to "
                       "PostgreSQL directly");
    }
    if (c->idle_session_ms) {
        snprintf(val, sizeof val, "%s ms", ik__sql_cell(&r, 0, 7));
        ik__hazard_row(h, &rows[k++], "lock session idle_session_timeout", val,
                       ik__sql_int(&r, 0, 7) != c->idle_session_ms,
                       "the lock's session did not keep idle_session_timeout = %ld as "
                       "idkeeper set it; connect to PostgreSQL directly",
                       c->idle_session_ms);
    }
    int foreign = proof_bad(c, ik__sql_cell(&r, 0, 10), ik__sql_cell(&r, 0, 11), val, sizeof val);
    if (!foreign) /* behind PgBouncer, PQbackendPID is its own random cancel key */
        snprintf(val, sizeof val, "pid %d, %s", c->server_pid,
                 PQbackendPID(c->pg) == c->server_pid ? "this connection's"
                                                      : "kept by a pooler in session mode");
    ik__hazard_row(h, &rows[k++], PROOF_CHECK, val, foreign, "%s", PROOF_FIX);
    int standby = ik__sql_bool(&r, 0, 12);
    ik__hazard_row(h, &rows[k++], "pg_is_in_recovery()", standby ? "true (a standby)" : "false",
                   standby,
                   "this server is a standby in recovery: it refuses every write (a slot's, a "
                   "counter's, a lock's fence); point idkeeper at the primary");
    persistence_row(h, ik__sql_cell(&r, 0, 14), &rows[k++]);
    *db_ms = ik__sql_int(&r, 0, 9);
    *n = k;
    ik__sql_res_clear(&r);
    return 0;
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
        one_line(err ? err : "out of memory", line, sizeof line);
        PQfreemem(err);
        return ik__fail(IK_EURI, why, why_len, "bad postgresql URI: %s", line);
    }
    PQconninfoFree(o);
    return IK_OK;
}

const ik__sql_driver ik__sql_pg_driver = {
    .name = "PostgreSQL",
    .stmt = pg_stmt,
    .connect = pg_connect,
    .close = pg_close,
    .run = pg_run,
    .exec = pg_exec,
    .exec_pipeline = pg_exec_pipeline,
    .ping = pg_ping,
    .lock = pg_lock,
    .unlock = pg_unlock,
    .hazards = pg_hazards,
    .proof = pg_proof,
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

IK__SQL_BACKEND(pg, ik__sql_pg_driver, "postgresql", "postgresql://USER@HOST[:PORT]/DB",
                pg_uri_check, pg_schema, pg_client_version);
