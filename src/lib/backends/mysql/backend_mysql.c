/* backend_mysql.c: the mysql:// backend (mysql://USER@HOST[:PORT]/DB), MySQL 5.7+ and
 * MariaDB 10.3+ through MariaDB Connector/C. Only a driver (sql_driver.h): the SQL
 * text of the schema and of each statement in MySQL's dialect, connecting, running
 * a statement, a ping, GET_LOCK, the session settings and hazard checks and the
 * class of each failure. Every protocol (Leaf's transaction, the lease table, fences, the lock
 * monitor) is the generic SQL layer's. docs/sql.md has the schema and the choices.
 *
 * Invariants:
 *   M1 a statement's parameters reach the server as quoted string literals (escaped
 *      for the connection's character set), and the SQL casts each numeric one
 *      (CAST(? AS SIGNED)): MySQL compares a number with a string as strings in
 *      GREATEST, and a string column with a bare number as doubles, so neither
 *      shape is ever written.
 *   M2 no call waits past its deadline: every request goes out through the
 *      connector's non-blocking API and is waited for with poll(2), so a dead
 *      network costs at most IK__SQL_IO_MS (or the lock's own deadline plus it).
 *   M3 CLIENT_FOUND_ROWS: an UPDATE's affected count is the rows it matched, so a
 *      renewal that changes no value still counts as done.
 *   M4 the connection never reconnects by itself (MYSQL_OPT_RECONNECT off): a new
 *      session would have silently dropped the old one's GET_LOCKs.
 *   M5 the password is given to the connector and to nothing else: no message,
 *      log line or URI holds it.
 *   M6 CLIENT_MULTI_STATEMENTS, for my_exec_pipeline's one round trip: only our
 *      own statement texts are ever joined, every parameter a quoted literal (M1),
 *      so no value can end a statement or start another.
 *   M7 the statements every write sends (the proof; on MariaDB Leaf's read-back with
 *      the proof in its row) are prepared once per session (text-protocol PREPARE,
 *      session_setup) and sent as EXECUTE: MariaDB's parser costs a @@GLOBAL item
 *      about as much as a statement's whole overhead, and a prepared one is parsed
 *      once. An EXECUTE reads the settings and the row anew each time (a new query
 *      id: nothing is cached across executions), so the evidence is the same. A
 *      session that could not prepare one, or lost one (ER_UNKNOWN_STMT_HANDLER),
 *      sends the text (stmt_text); the statement that met the loss failed as any
 *      failed statement does (a proof missing after a COMMIT is refused).
 */
#include "internal.h"
#include "mysql_uri.h"
#include "sql_driver.h"
#include "backend_mysql.h"

#include <errmsg.h>
#include <mysql.h>
#include <mariadb_version.h>
#include <mysqld_error.h>

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- the SQL ------------------------------------------------------------------ */

/* The database's clock in Unix ms (statement start, ms precision). */
#define DB_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"
#define INT_P "CAST(? AS SIGNED)"
#define DDL_MS (6 * IK__SQL_IO_MS) /* the longest a schema statement waits (my_run) */
/* The GET_LOCK name of a lock key k (an SQL expression over k): "ik/DB/KEY" while
 * it fits MySQL's 64-character limit on lock names, else "ik#" and the first 61 hex
 * digits of the SHA-256 of "DB/KEY" (docs/recipes.md shows it, for apps that lock
 * alike). GET_LOCK names are the server's, not a database's: without DB, /x of one
 * deployment would block /x of every other on the server. */
#define LOCK_SCOPED(k) "CONCAT(DATABASE(), '/', " k ")"
#define LOCK_NAME(k)                                                                               \
    "IF(CHAR_LENGTH(" LOCK_SCOPED(k) ") <= 61, CONCAT('ik/', " LOCK_SCOPED(                        \
        k) "), "                                                                                   \
           "CONCAT('ik#', LEFT(SHA2(" LOCK_SCOPED(k) ", 256), 61)))"

static const char *const mysql_schema[] = {
    /* Leaf's own table, exactly as Leaf's scripts/leaf_alloc.sql creates it */
    "CREATE TABLE IF NOT EXISTS `leaf_alloc` (\n"
    "  `biz_tag` varchar(128)  NOT NULL DEFAULT '',\n"
    "  `max_id` bigint(20) NOT NULL DEFAULT '1',\n"
    "  `step` int(11) NOT NULL,\n"
    "  `description` varchar(256)  DEFAULT NULL,\n"
    "  `update_time` timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,\n"
    "  PRIMARY KEY (`biz_tag`)\n"
    ") ENGINE=InnoDB",
    /* ours are case-sensitive (utf8mb4_bin), as names and paths are; Leaf's table
     * keeps the database's default collation, as Leaf creates it */
    /* the kind of each idkeeper tag (a Leaf tag has no row: a segment tag) */
    "CREATE TABLE IF NOT EXISTS `idk_tag_kind` (\n"
    "  `biz_tag` varchar(128) NOT NULL,\n"
    "  `app` varchar(64) NOT NULL,\n"
    "  `name` varchar(128) NOT NULL,\n"
    "  `kind` varchar(8) NOT NULL,\n"
    "  `start` bigint NOT NULL,\n"
    "  PRIMARY KEY (`biz_tag`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    /* worker slots: one row per slot ever taken; expiry on the database's clock */
    "CREATE TABLE IF NOT EXISTS `idk_slots` (\n"
    "  `app` varchar(64) NOT NULL,\n"
    "  `worker` int NOT NULL,\n"
    "  `holder` varchar(256) NOT NULL,\n"
    "  `token` varchar(64) NOT NULL,\n"
    "  `expires_ms` bigint NOT NULL,\n"
    "  `record_ms` bigint NOT NULL,\n"
    "  `since_ms` bigint NOT NULL,\n"
    "  PRIMARY KEY (`app`, `worker`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    /* which write of each server last committed a sequence tag's advance, so that
     * a COMMIT whose answer was lost is settled, not guessed */
    "CREATE TABLE IF NOT EXISTS `idk_commit_mark` (\n"
    "  `writer` varchar(32) NOT NULL,\n"
    "  `biz_tag` varchar(128) NOT NULL,\n"
    "  `write_no` bigint NOT NULL,\n"
    "  `at_ms` bigint NOT NULL,\n"
    "  PRIMARY KEY (`writer`, `biz_tag`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    /* locks: the fencing counter of each lock key */
    "CREATE TABLE IF NOT EXISTS `idk_fence` (\n"
    "  `lock_key` varchar(512) NOT NULL,\n"
    "  `fence` bigint NOT NULL,\n"
    "  PRIMARY KEY (`lock_key`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    /* locks: who holds each key (the participant id of an election) */
    "CREATE TABLE IF NOT EXISTS `idk_holder` (\n"
    "  `lock_key` varchar(512) NOT NULL,\n"
    "  `session` bigint NOT NULL,\n"
    "  `id` varchar(256) NOT NULL,\n"
    "  PRIMARY KEY (`lock_key`)\n"
    ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
    NULL,
};

#define TAG_COLS                                                                                   \
    "a.biz_tag, a.max_id, a.step, COALESCE(a.description, ''), "                                   \
    "CAST(UNIX_TIMESTAMP(a.update_time) * 1000 AS SIGNED), k.kind, k.app, k.name, k.start "        \
    "FROM leaf_alloc a LEFT JOIN idk_tag_kind k ON k.biz_tag = a.biz_tag"
#define SLOT_COLS                                                                                  \
    "worker, holder, expires_ms < " DB_MS ", record_ms, since_ms, expires_ms - " DB_MS             \
    " FROM idk_slots"

static const char *const mysql_stmt[IK__SQL_NSTMT] = {
    [IK__SQL_BEGIN] = "START TRANSACTION",
    [IK__SQL_COMMIT] = "COMMIT",
    [IK__SQL_ROLLBACK] = "ROLLBACK",
    [IK__SQL_TAG_LOCK] =
        "SELECT a.step, k.kind, k.app, k.name, k.start, a.max_id FROM leaf_alloc a "
        "LEFT JOIN idk_tag_kind k ON k.biz_tag = a.biz_tag "
        "WHERE a.biz_tag = ? FOR UPDATE",
    [IK__SQL_LEAF_UPDATE] = "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?",
    [IK__SQL_LEAF_UPDATE_STEP] =
        "UPDATE leaf_alloc SET max_id = max_id + " INT_P " WHERE biz_tag = ?",
    /* Leaf's read, and the proof before the COMMIT in the same row (back_proof) */
    [IK__SQL_LEAF_SELECT] =
        "SELECT biz_tag, max_id, step, " PROOF_COLS " FROM leaf_alloc WHERE biz_tag = ?",
    [IK__SQL_TAG_INSERT] = "INSERT INTO leaf_alloc (biz_tag, max_id, step, description) "
                           "VALUES (?, " INT_P ", " INT_P ", ?)",
    [IK__SQL_TAG_KIND_INSERT] = "INSERT INTO idk_tag_kind (biz_tag, app, name, kind, start) "
                                "VALUES (?, ?, ?, ?, " INT_P ")",
    [IK__SQL_TAG_GET] = "SELECT " TAG_COLS " WHERE a.biz_tag = ?",
    [IK__SQL_TAG_LIST] = "SELECT " TAG_COLS " ORDER BY a.biz_tag",
    [IK__SQL_MARK_SET] = "INSERT INTO idk_commit_mark (writer, biz_tag, write_no, at_ms) "
                         "VALUES (?, ?, " INT_P ", " DB_MS ") ON DUPLICATE KEY UPDATE "
                         "write_no = VALUES(write_no), at_ms = VALUES(at_ms)",
    [IK__SQL_MARK_GET] = "SELECT write_no FROM idk_commit_mark WHERE writer = ? AND biz_tag = ?",
    [IK__SQL_MARK_PRUNE] = "DELETE FROM idk_commit_mark WHERE at_ms < " DB_MS " - 86400000",
    [IK__SQL_MARK_DROP] = "DELETE FROM idk_commit_mark WHERE writer LIKE ?",
    [IK__SQL_TAG_COLUMNS] = "SELECT biz_tag, max_id, step, description, update_time "
                            "FROM leaf_alloc LIMIT 0",
    [IK__SQL_SLOTS_SCAN] = "SELECT " SLOT_COLS " WHERE app = ? AND worker BETWEEN " INT_P
                           " AND " INT_P " ORDER BY worker",
    [IK__SQL_SLOT_LOCK] = "SELECT record_ms, expires_ms < " DB_MS " FROM idk_slots "
                          "WHERE app = ? AND worker = " INT_P " FOR UPDATE",
    [IK__SQL_SLOT_INSERT] =
        "INSERT INTO idk_slots "
        "(app, worker, holder, token, expires_ms, record_ms, since_ms) "
        "VALUES (?, " INT_P ", ?, ?, " DB_MS " + " INT_P ", " INT_P ", " DB_MS ")",
    [IK__SQL_SLOT_TAKE] =
        "UPDATE idk_slots SET holder = ?, token = ?, expires_ms = " DB_MS " + " INT_P
        ", record_ms = GREATEST(record_ms, " INT_P "), since_ms = " DB_MS
        " WHERE app = ? AND worker = " INT_P " AND expires_ms < " DB_MS,
    [IK__SQL_SLOT_RENEW] = "UPDATE idk_slots SET expires_ms = " DB_MS " + " INT_P
                           ", record_ms = GREATEST(record_ms, " INT_P
                           ") WHERE app = ? AND worker = " INT_P " AND token = ? AND expires_ms > "
                           "" DB_MS,
    [IK__SQL_SLOT_RELEASE] =
        "UPDATE idk_slots SET record_ms = " INT_P
        ", expires_ms = 0, token = '' WHERE app = ? AND worker = " INT_P " AND token = ?",
    [IK__SQL_SLOTS_LIST] = "SELECT " SLOT_COLS " WHERE app = ? ORDER BY worker",
    [IK__SQL_FENCE_BUMP] = "UPDATE idk_fence SET fence = fence + 1 WHERE lock_key = ?",
    [IK__SQL_FENCE_INSERT] = "INSERT INTO idk_fence (lock_key, fence) VALUES (?, 1)",
    [IK__SQL_FENCE_GET] = "SELECT fence FROM idk_fence WHERE lock_key = ?",
    [IK__SQL_HOLDER_SET] = "REPLACE INTO idk_holder (lock_key, session, id) "
                           "VALUES (?, CONNECTION_ID(), ?)",
    [IK__SQL_HOLDER_GET] = "SELECT h.id FROM idk_holder h WHERE h.lock_key = ? "
                           "AND h.session = IS_USED_LOCK(" LOCK_NAME("h.lock_key") ")",
    [IK__SQL_FENCE_SEED] = "INSERT INTO idk_fence (lock_key, fence) VALUES (?, " INT_P
                           ") ON DUPLICATE KEY UPDATE fence = fence",
    [IK__SQL_PROOF] = "SELECT " PROOF_COLS,
    /* one table: an equality on both names, which information_schema answers from
     * that table's definition alone (an IN list opens every table of the schema) */
    [IK__SQL_TABLE_PROOF] = "SELECT COALESCE(ENGINE, TABLE_TYPE) FROM information_schema.TABLES "
                            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?",
};

/* M7: the statements a session prepares, by name, and what runs them. MySQL's
 * EXECUTE takes only user variables after USING, so a statement with parameters is
 * prepared on MariaDB only (which takes the quoted literals of M1). */
static const struct {
    ik__sql_stmt id;
    const char *name, *exec;
    int params;
} prepared[] = {
    {IK__SQL_PROOF, "ik_proof", "EXECUTE ik_proof", 0},
    {IK__SQL_LEAF_SELECT, "ik_back", "EXECUTE ik_back USING ?", 1},
};
#define NPREPARED (sizeof prepared / sizeof prepared[0])

/* The text that runs statement id on c: its EXECUTE where c prepared it (M7). */
static const char *stmt_text(const ik__sql_conn *c, ik__sql_stmt id)
{
    for (size_t i = 0; i < NPREPARED; i++)
        if (prepared[i].id == id && (c->ps & (1u << i))) return prepared[i].exec;
    return mysql_stmt[id];
}

/* After a failed statement: a prepared one the session lost (M7) leaves every
 * statement of c to its text from then on. */
static void ps_lost(ik__sql_conn *c)
{
    if (c->ps && !c->dead && mysql_errno(c->m) == ER_UNKNOWN_STMT_HANDLER) c->ps = 0;
}

/* Copies a result into r (text cells, NULL for SQL NULL). 0 or IK_ENOMEM. */
static int take_rows(MYSQL_RES *res, int64_t affected, ik__sql_res *r)
{
    memset(r, 0, sizeof *r);
    r->affected = affected;
    if (!res) return 0;
    r->nrows = (size_t)mysql_num_rows(res);
    r->ncols = mysql_num_fields(res);
    if (r->nrows && r->ncols) {
        r->cell = calloc(r->nrows * r->ncols, sizeof *r->cell);
        if (!r->cell) {
            r->nrows = r->ncols = 0;
            return IK_ENOMEM;
        }
    }
    MYSQL_ROW row;
    for (size_t i = 0; i < r->nrows && (row = mysql_fetch_row(res)); i++) {
        unsigned long *len = mysql_fetch_lengths(res);
        for (size_t j = 0; j < r->ncols; j++) {
            if (!row[j]) continue;
            char *s = malloc(len[j] + 1);
            if (!s) {
                ik__sql_res_clear(r);
                return IK_ENOMEM;
            }
            memcpy(s, row[j], len[j]);
            s[len[j]] = '\0';
            r->cell[i * r->ncols + j] = s;
        }
    }
    return 0;
}

/* A growable query text. */
typedef struct qbuf {
    char *s;
    size_t n, cap;
    int oom;
} qbuf;

static void qb_add(qbuf *b, const char *s, size_t n)
{
    if (b->oom) return;
    if (!b->s || b->n + n + 1 > b->cap) { /* (!b->s: for the analyzer, which wraps n) */
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

/* Appends v as a quoted literal escaped for c's character set, or NULL (M1). */
static void qb_literal(qbuf *b, ik__sql_conn *c, const char *v)
{
    if (!v) {
        qb_add(b, "NULL", 4);
        return;
    }
    size_t n = strlen(v);
    char *e = malloc(2 * n + 3);
    if (!e) {
        b->oom = 1;
        return;
    }
    e[0] = '\'';
    unsigned long k = mysql_real_escape_string(c->m, e + 1, v, (unsigned long)n);
    e[k + 1] = '\'';
    qb_add(b, e, k + 2);
    free(e);
}

/* sql with each '?' replaced by the next parameter (M1): 0, IK_ENOMEM, or
 * IK__SQL_EDEFINITE if the counts differ. */
static int bind_params(qbuf *b, ik__sql_conn *c, const char *sql, const char *const *params,
                       int nparams)
{
    int used = 0;
    for (const char *p = sql; *p;) {
        const char *q = strchr(p, '?');
        if (!q) {
            qb_add(b, p, strlen(p));
            break;
        }
        qb_add(b, p, (size_t)(q - p));
        if (used >= nparams) return IK__SQL_EDEFINITE;
        qb_literal(b, c, params[used++]);
        p = q + 1;
    }
    if (b->oom) return IK_ENOMEM;
    return used == nparams ? 0 : IK__SQL_EDEFINITE;
}

/* SP5 of backend_sql_proof.c: notes into c->tx what the answer just read of
 * statement id said of its transaction (rows: it was a result set; failed: it
 * failed). MariaDB and MySQL send the transaction state (session_track_transaction_
 * info = STATE) in an OK packet whenever it changed: eight letters, the first 'T'
 * inside a START TRANSACTION, 'r' and 'w' where a table without transactions was read
 * or written, 'R' and 'W' for one with them (the server's session_tracker.cc,
 * Transaction_state_tracker::store; a table's letter from its handler's
 * has_transactions() as the statement locks it). A result set's state comes with the
 * next OK: without CLIENT_DEPRECATE_EOF its end carries none, and what the connector
 * holds then is the last OK's. So the state is read from OK packets only, and a
 * transaction counts as said of only if its START TRANSACTION was answered with one:
 * tracking on, it always is (the state goes from none to 'T'). The state is sent
 * only where it changed, so a transaction is said of whole only if tx_note saw
 * every answer since its START TRANSACTION: a statement answered on c that it did
 * not see (d->run's, a test hook's) may have carried the one change, and ends on.
 * A table a proof names (commit_proved's) is written by a statement answered with
 * an OK, so its 'w' never waits in a result set for the COMMIT's OK. */
static void tx_note(ik__sql_conn *c, ik__sql_stmt id, int rows, int failed)
{
    int unseen = c->tx.answers != c->tx.noted + 1; /* an answer came that was not noted */
    c->tx.noted = c->tx.answers;
    if (id == IK__SQL_BEGIN || id == IK__SQL_COMMIT || id == IK__SQL_ROLLBACK || failed) {
        c->tx.on = 0;
        c->tx.unsafe[0] = '\0';
    }
    if (unseen && id != IK__SQL_BEGIN) c->tx.on = 0;
    if (failed || rows || id == IK__SQL_COMMIT || id == IK__SQL_ROLLBACK) return;
    if (id != IK__SQL_BEGIN && !c->tx.on) return;
    const char *s = NULL;
    size_t n = 0;
    if (mysql_session_track_get_first(c->m, SESSION_TRACK_TRANSACTION_STATE, &s, &n) != 0) {
        return; /* unchanged; at a START TRANSACTION: not tracked */
    }
    if (n != 8 || s[0] != 'T') { /* not a state we know, or no longer in our transaction */
        c->tx.on = 0;
        return;
    }
    c->tx.on = 1;
    if (!c->tx.unsafe[0] && (s[1] == 'r' || s[3] == 'w')) {
        memcpy(c->tx.unsafe, s, n);
        c->tx.unsafe[n] = '\0';
    }
}

static int my_exec(ik__sql_conn *c, ik__sql_stmt id, const char *const *params, int nparams,
                   ik__sql_res *res, char *why, size_t why_len)
{
    if ((unsigned)id >= IK__SQL_NSTMT || !mysql_stmt[id])
        return ik__fail(IK__SQL_EDEFINITE, why, why_len, "no such statement %d", (int)id);
    qbuf b = {0};
    int rc = bind_params(&b, c, stmt_text(c, id), params, nparams);
    if (rc) {
        free(b.s);
        return rc == IK_ENOMEM ? rc
                               : ik__fail(rc, why, why_len, "statement %d: %d parameters given",
                                          (int)id, nparams);
    }
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    rc = ik__mysql_run(c, b.s, b.n, ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, why, why_len);
    free(b.s);
    tx_note(c, id, r != NULL, rc != 0);
    if (rc) ps_lost(c);
    if (rc) return rc;
    if (res) rc = take_rows(r, affected, res);
    mysql_free_result(r);
    return rc;
}

/* Moves to the next result of a multi-statement by deadline: 0 with *ret (0: its
 * statement ran, else failed: query_result reports it), 1 if there is none, or
 * IK__SQL_EDOUBT (no answer in time: c is dead). */
static int next_result(ik__sql_conn *c, int64_t deadline, int *ret, char *why, size_t why_len)
{
    int r = 0;
    int st = mysql_next_result_start(&r, c->m);
    while (st) {
        int got = ik__mysql_wait_io(c, st, deadline, NULL, NULL);
        if (!got) {
            ik__mysql_conn_kill(c);
            return ik__fail(IK__SQL_EDOUBT, why, why_len, "MySQL: no answer in time");
        }
        st = mysql_next_result_cont(&r, c->m, got);
    }
    if (r == -1) return 1;
    *ret = r;
    return 0;
}

/* The pipeline of sql_driver.h's exec_pipeline: the statements joined by ';' into
 * one text (each bound as my_exec binds it, M1), one round trip on a connection
 * with CLIENT_MULTI_STATEMENTS; the server runs none after the first that fails
 * (its transaction stays open for the caller's ROLLBACK). Every result is read,
 * all by one deadline. */
static int my_exec_pipeline(ik__sql_conn *c, const ik__sql_call *calls, int n, ik__sql_res *res,
                            int *ran, char *why, size_t why_len)
{
    *ran = 0;
    qbuf b = {0};
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        if ((unsigned)calls[i].id >= IK__SQL_NSTMT || !mysql_stmt[calls[i].id]) {
            rc = IK__SQL_EDEFINITE;
            break;
        }
        if (i) qb_add(&b, "; ", 2);
        rc = bind_params(&b, c, stmt_text(c, calls[i].id), calls[i].params, calls[i].nparams);
    }
    if (rc) {
        free(b.s);
        return rc == IK_ENOMEM ? rc : ik__fail(rc, why, why_len, "a pipeline's statements");
    }
    int64_t deadline = ik__mono_ms() + IK__SQL_IO_MS;
    int st = 0, ret = 0;
    c->qual[0] = '\0';
    rc = ik__mysql_query_start(c, b.s, b.n, deadline, &st, &ret, why, why_len);
    if (!rc) rc = ik__mysql_query_wait(c, &st, &ret, deadline, NULL, why, why_len);
    free(b.s);
    for (int i = 0; rc == 0; i++) {
        if (i > 0) {
            int none = next_result(c, deadline, &ret, why, why_len);
            if (none == 1) break;
            if (none) {
                rc = none;
                break;
            }
        }
        MYSQL_RES *r = NULL;
        int64_t affected = 0;
        rc = ik__mysql_query_result(c, ret, deadline, &r, &affected, why, why_len);
        if (i < n) tx_note(c, calls[i].id, r != NULL, rc != 0);
        if (rc) ps_lost(c);
        if (rc) break;
        unsigned warnings = mysql_warning_count(c->m);
        if (warnings && i < n && calls[i].id != IK__SQL_PROOF &&
            calls[i].id != IK__SQL_TABLE_PROOF && !c->qual[0])
            snprintf(c->qual, sizeof c->qual, "%u warning%s with its %s", warnings,
                     warnings == 1 ? "" : "s", calls[i].id == IK__SQL_COMMIT ? "COMMIT" : "write");
        if (i >= n || take_rows(r, affected, &res[i]) != 0) {
            rc = ik__fail(IK__SQL_EDEFINITE, why, why_len,
                          i >= n ? "MySQL: more results than statements" : "out of memory");
        } else {
            (*ran)++;
        }
        mysql_free_result(r);
        if (rc) { /* the server still sends the rest: read them, then report */
            int more = 0;
            while (!c->dead && next_result(c, deadline, &more, NULL, 0) == 0) {
                MYSQL_RES *x = NULL;
                if (ik__mysql_query_result(c, more, deadline, &x, &affected, NULL, 0) != 0) break;
                mysql_free_result(x);
            }
            if (c->dead) rc = IK__SQL_EDOUBT;
        }
    }
    if (rc == 0 && *ran != n)
        rc = ik__fail(IK__SQL_EDEFINITE, why, why_len, "MySQL: fewer results");
    c->used_ms = ik__mono_ms();
    return rc;
}

static int my_qualified(ik__sql_conn *c, char *words, size_t len)
{
    if (!c || !c->qual[0]) return 0;
    snprintf(words, len, "%s", c->qual);
    return 1;
}

static int my_run(ik__sql_conn *c, const char *sql, char *why, size_t why_len)
{
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    /* schema statements only, at open: DDL syncs the data dictionary and can take
     * seconds on a loaded server, so it gets longer than a statement of the
     * protocols (seen: CREATE TABLE over 5 s with two test stages at once) */
    int rc =
        ik__mysql_run(c, sql, strlen(sql), ik__mono_ms() + DDL_MS, &r, &affected, why, why_len);
    mysql_free_result(r);
    return rc;
}

static int connect_to(const ik__mysql_uri *u, const char *password, const int *cut, MYSQL **out,
                      char *why, size_t why_len)
{
    pthread_once(&ik__mysql_lib_once, ik__mysql_lib_init);
    if (ik__mysql_lib_rc)
        return ik__fail(IK__SQL_EGONE, why, why_len, "MariaDB Connector/C did not start");
    MYSQL *m = mysql_init(NULL);
    if (!m) return IK_ENOMEM;
    unsigned secs = (IK__SQL_IO_MS + 999) / 1000;
    my_bool off = 0;
    mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
    mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &secs);
    mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &secs);
    mysql_optionsv(m, MYSQL_OPT_RECONNECT, &off); /* M4 */
    mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_optionsv(m, MYSQL_INIT_COMMAND, "SET SESSION time_zone = '+00:00'");
    mysql_optionsv(m, MYSQL_INIT_COMMAND, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");
    mysql_optionsv(m, MYSQL_OPT_NONBLOCK, 0);
    /* non-blocking, so that a cut (ik__sql_target.cut) ends a connect under way */
    MYSQL *ok = NULL;
    ik__sql_conn w = {.m = m, .cut = cut};
    int64_t deadline = ik__mono_ms() + IK__SQL_IO_MS;
    int st = mysql_real_connect_start(
        &ok, m, u->host, u->user, password ? password : "", u->db, u->port, NULL,
        CLIENT_FOUND_ROWS /* M3 */ | CLIENT_MULTI_STATEMENTS /* M6 */);
    while (st) {
        int got = ik__mysql_wait_io(&w, st, deadline, NULL, NULL);
        if (!got) {
            int fd = (int)mysql_get_socket(m);
            if (fd >= 0) shutdown(fd, SHUT_RDWR);
            mysql_close(m);
            return ik__fail(IK__SQL_EGONE, why, why_len,
                            "cannot reach MySQL at %s:%u: no answer in time", u->host, u->port);
        }
        st = mysql_real_connect_cont(&ok, m, got);
    }
    if (ok) {
        *out = m;
        return 0;
    }
    unsigned e = mysql_errno(m);
    int rc;
    if (e == ER_ACCESS_DENIED_ERROR || e == ER_ACCESS_DENIED_NO_PASSWORD_ERROR ||
        e == ER_DBACCESS_DENIED_ERROR)
        rc = ik__fail(IK__SQL_EREFUSED, why, why_len,
                      "MySQL refused user %s on %s:%u (%s: check the password from "
                      "--password-file or IDKEEPER_PASSWORD, and the user's grants)",
                      u->user, u->host, u->port,
                      password && *password ? "password given" : "no password given");
    else if (e == ER_BAD_DB_ERROR)
        rc = ik__fail(IK__SQL_EREFUSED, why, why_len,
                      "MySQL on %s:%u has no database %s (CREATE DATABASE it first)", u->host,
                      u->port, u->db);
    else
        rc = ik__fail(IK__SQL_EGONE, why, why_len, "cannot reach MySQL at %s:%u: %s (%u)", u->host,
                      u->port, mysql_error(m), e);
    mysql_close(m);
    return rc;
}

/* The wait_timeout of every session of ours, s: the lease TTL (at least 2 s), after
 * which the server ends the session of a host that vanished without a FIN (and
 * frees a lock holder's GET_LOCKs) instead of keeping it for 8 h, one of
 * max_connections each (docs/sql.md, "Session settings"). A lock's monitor pings
 * every half second and a slot's renewals come every TTL/3, so neither is idle that
 * long while it lives; a pooled connection idle for half of it is replaced before
 * its next use (my_stale), so that the server never ends one under a request. */
static long session_wait_s(int64_t ttl_ms)
{
    long s = (long)((ttl_ms + 999) / 1000);
    return s < 2 ? 2 : s;
}

/* Sets the session state our statements rely on, whatever the server's globals
 * (docs/sql.md, "Session settings"): autocommit on (with a global autocommit=0,
 * every renewal would sit in a transaction that never commits), completion_type
 * NO_CHAIN (with CHAIN, a COMMIT opens the next transaction at once, and every
 * renewal after a take's COMMIT would sit in it, never committed), sql_mode (strict,
 * and no silent engine substitution: a table that is not InnoDB has no
 * transactions), the row lock wait, MariaDB's idle-in-transaction bound, on a
 * lock's session no statement time limit, wait_timeout, and the transaction state
 * in every answer that changes it (tx_note; whatever the server's global, which is
 * OFF by default). The isolation level and time zone are init commands.
 * my_hazards reads them back. Then the statements of M7 are prepared. 0 or a class. */
static int session_setup(ik__sql_conn *c, int64_t ttl_ms, char *why, size_t why_len)
{
    const char *info = mysql_get_server_info(c->m);
    c->mariadb = info && strstr(info, "MariaDB") != NULL;
    char q[512];
    int n = snprintf(q, sizeof q,
                     "SET SESSION autocommit = 1, SESSION completion_type = 'NO_CHAIN', "
                     "SESSION sql_mode = '" SQL_MODE "', SESSION innodb_lock_wait_timeout = %d, "
                     "SESSION session_track_transaction_info = 'STATE'",
                     LOCK_WAIT_S);
    if (c->mariadb)
        n += snprintf(q + n, sizeof q - (size_t)n, ", SESSION idle_transaction_timeout = %d",
                      IDLE_TX_S);
    if (c->holds) /* a user's or the server's limit would end GET_LOCK's wait */
        n += snprintf(q + n, sizeof q - (size_t)n, ", SESSION %s = 0", ik__mysql_stmt_limit(c));
    c->wait_s = session_wait_s(ttl_ms);
    snprintf(q + n, sizeof q - (size_t)n,
             ", SESSION wait_timeout = %ld, SESSION interactive_timeout = %ld", c->wait_s,
             c->wait_s);
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    int rc =
        ik__mysql_run(c, q, strlen(q), ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, why, why_len);
    mysql_free_result(r);
    if (rc) return rc;
    /* M7: a statement that will not prepare (max_prepared_stmt_count reached, a
     * proxy that refuses PREPARE) is sent as text; only a lost connection fails */
    c->ps = 0;
    for (size_t i = 0; i < NPREPARED; i++) {
        if (prepared[i].params && !c->mariadb) continue;
        qbuf p = {0};
        qb_add(&p, "PREPARE ", 8);
        qb_add(&p, prepared[i].name, strlen(prepared[i].name));
        qb_add(&p, " FROM '", 7);
        qb_add(&p, mysql_stmt[prepared[i].id], strlen(mysql_stmt[prepared[i].id]));
        qb_add(&p, "'", 1);
        if (p.oom) {
            free(p.s);
            return IK_ENOMEM;
        }
        char inner[200];
        rc = ik__mysql_run(c, p.s, p.n, ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, inner,
                           sizeof inner);
        free(p.s);
        mysql_free_result(r);
        r = NULL;
        if (rc == 0)
            c->ps |= 1u << i;
        else if (c->dead)
            return ik__fail(rc, why, why_len, "%s", inner);
    }
    return 0;
}

static void my_close(ik__sql_conn *c);

static int my_connect(const ik__sql_target *t, ik__sql_conn **out, char *why, size_t why_len)
{
    ik__sql_conn *c = calloc(1, sizeof *c);
    if (!c) return IK_ENOMEM;
    int rc = ik__mysql_uri_parse(t->uri, &c->u, why, why_len);
    if (rc) {
        free(c);
        return IK__SQL_EREFUSED;
    }
    if (t->password && !(c->password = strdup(t->password))) {
        free(c);
        return IK_ENOMEM;
    }
    c->cut = t->cut;
    rc = connect_to(&c->u, c->password, c->cut, &c->m, why, why_len);
    if (rc) {
        free(c->password);
        free(c);
        return rc;
    }
    c->holds = t->holds;
    rc = session_setup(c, t->ttl_ms, why, why_len);
    if (rc) {
        ik__mysql_conn_kill(c);
        my_close(c);
        return rc == IK__SQL_EDEFINITE ? IK__SQL_EREFUSED : IK__SQL_EGONE;
    }
    *out = c;
    return 0;
}

static int my_conn_socket(ik__sql_conn *c)
{
    return c && c->m ? (int)mysql_get_socket(c->m) : -1;
}

/* 1 if c has been idle for half its wait_timeout or more: the server may end it at
 * any moment, so it is replaced rather than used (sql_driver.h: stale). Its idle
 * time on the server began before used_ms (the answer's way to us): half the limit
 * leaves that way at least a second. */
static int my_stale(ik__sql_conn *c)
{
    return c && c->wait_s > 0 && ik__mono_ms() - c->used_ms >= c->wait_s * 1000 / 2;
}

static void my_close(ik__sql_conn *c)
{
    if (!c) return;
    /* a dead or busy connection is not told goodbye: COM_QUIT could block */
    if (c->dead || c->ping_status) {
        int fd = (int)mysql_get_socket(c->m);
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    mysql_close(c->m);
    if (c->password) {
        memset(c->password, 0, strlen(c->password));
        free(c->password);
    }
    free(c);
}

static int my_ping(ik__sql_conn *c, int timeout_ms)
{
    if (c->dead) return IK__SQL_EGONE;
    if (!c->ping_status) {
        c->ping_ret = 0;
        c->ping_status = mysql_ping_start(&c->ping_ret, c->m);
    }
    int64_t deadline = ik__mono_ms() + timeout_ms;
    while (c->ping_status) {
        int got = ik__mysql_wait_io(c, c->ping_status, deadline, NULL, NULL);
        if (!got) return IK__SQL_ETIMEOUT;
        c->ping_status = mysql_ping_cont(&c->ping_ret, c->m, got);
    }
    if (c->ping_ret) {
        ik__mysql_conn_kill(c);
        return IK__SQL_EGONE;
    }
    return 0;
}

/* SQL text for FN(<lock name of key>[, secs]) into b: LOCK_NAME with key's
 * literal (M1). */
static int lock_sql(qbuf *b, ik__sql_conn *c, const char *fn, const char *key, long secs)
{
    qb_add(b, "SELECT ", 7);
    qb_add(b, fn, strlen(fn));
    qb_add(b, "(", 1);
    const char *name = LOCK_NAME("?");
    for (const char *p = name; *p; p++) {
        if (*p == '?')
            qb_literal(b, c, key);
        else
            qb_add(b, p, 1);
    }
    if (secs >= 0) {
        char t[32];
        int n = snprintf(t, sizeof t, ", %ld", secs);
        qb_add(b, t, (size_t)n);
    }
    qb_add(b, ")", 1);
    return b->oom ? IK_ENOMEM : 0;
}

static int my_unlock(ik__sql_conn *c, ik__lock_kind kind, const char *key);

/* How long a lock wait that is given up (its deadline, or a cancel) waits for its
 * answer after the KILL QUERY, before it is abandoned with its connection: the
 * bound of a give-up whatever the server does (PostgreSQL's cancel has one too,
 * backend_pg.c). */
#define KILL_WAIT_MS 500

/* A KILL QUERY of a lock wait, sent by a thread of its own: its connection and
 * statement wait up to the connector's timeouts (5 s each) on a server that does
 * not answer, which the caller does not wait for. The thread owns the job. */
typedef struct kill_job {
    ik__mysql_uri u;
    char *password;
    unsigned long thread_id;
} kill_job;

static void *kill_thread(void *arg)
{
    kill_job *j = arg;
    MYSQL *k = NULL;
    char why[256];
    if (connect_to(&j->u, j->password, NULL, &k, why, sizeof why) == 0) {
        char q[64];
        snprintf(q, sizeof q, "KILL QUERY %lu", j->thread_id);
        (void)mysql_query(k, q);
        mysql_close(k);
    }
    if (j->password) {
        memset(j->password, 0, strlen(j->password));
        free(j->password);
    }
    free(j);
    return NULL;
}

/* Asks the server to end the GET_LOCK that c waits for (it then answers NULL, or an
 * interrupted query, and the session lives on), without waiting for the request:
 * the server may not answer at all (stopped, or cut off). */
static void lock_interrupt(ik__sql_conn *c)
{
    kill_job *j = calloc(1, sizeof *j);
    if (!j) return;
    j->u = c->u;
    j->thread_id = mysql_thread_id(c->m);
    if (c->password && !(j->password = strdup(c->password))) {
        free(j);
        return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &attr, kill_thread, j) != 0) {
        if (j->password) {
            memset(j->password, 0, strlen(j->password));
            free(j->password);
        }
        free(j);
    }
    pthread_attr_destroy(&attr);
}

/* The GET_LOCK answer in r: 1 granted, 0 timed out, -1 NULL (interrupted, or an
 * error in the name). Frees r. */
static int lock_answer(MYSQL_RES *r)
{
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    int v = !row || !row[0] ? -1 : strcmp(row[0], "1") == 0 ? 1 : 0;
    mysql_free_result(r);
    return v;
}

static int my_lock(ik__sql_conn *c, ik__lock_kind kind, const char *key, int64_t deadline_ms,
                   const volatile int *cancel, char *why, size_t why_len)
{
    const char *k = key; /* READ and WRITE halves share "rwlock:PATH": one
                            exclusive lock, since GET_LOCK has no shared mode */
    long secs;
    if (deadline_ms < 0) {
        secs = 365L * 86400; /* MySQL and MariaDB read a negative timeout differently */
    } else {
        int64_t left = deadline_ms - ik__mono_ms();
        secs = left <= 0 ? 0 : (long)((left + 999) / 1000);
    }
    qbuf b = {0};
    if (lock_sql(&b, c, "GET_LOCK", k, secs)) {
        free(b.s);
        return IK_ENOMEM;
    }
    /* the server ends the wait itself after secs (whole seconds, rounded up); we
     * give up at our own deadline (no limit: -1; a try: a statement's time) */
    int64_t now = ik__mono_ms();
    int64_t until = deadline_ms < 0                        ? INT64_MAX
                    : deadline_ms > 0 && deadline_ms > now ? deadline_ms
                                                           : now + IK__SQL_IO_MS;
    int st = 0, ret = 0;
    int rc = ik__mysql_query_start(c, b.s, b.n, until, &st, &ret, why, why_len);
    free(b.s);
    if (rc) return rc;
    int stopped = 0; /* 1: the deadline passed, 2: cancelled */
    while (st) {
        int canceled = 0;
        int got = ik__mysql_wait_io(c, st, until, cancel, &canceled);
        if (!got) {
            stopped = canceled ? 2 : 1;
            break;
        }
        st = mysql_real_query_cont(&ret, c->m, got);
    }
    if (stopped == 1 && secs == 0) { /* a try without an answer */
        ik__mysql_conn_kill(c);
        return ik__fail(IK__SQL_EDOUBT, why, why_len, "MySQL: no answer in time");
    }
    if (stopped) {
        /* given up: a KILL QUERY from a thread of its own ends the server's side of
         * the wait (its answer then comes at once, and the server's queue holds no
         * waiter of ours), and the wait's answer is awaited KILL_WAIT_MS at most.
         * A server that does not answer by then is abandoned with the connection
         * (the caller closes it: a lock wait's connection holds nothing else); a
         * grant it makes later is freed as that session ends, when the server finds
         * the connection gone. */
        lock_interrupt(c);
        int64_t grace = ik__mono_ms() + KILL_WAIT_MS;
        while (st) {
            int got = ik__mysql_wait_io(c, st, grace, NULL, NULL);
            if (!got) break;
            st = mysql_real_query_cont(&ret, c->m, got);
        }
        if (st) {
            ik__mysql_conn_kill(c);
            ik__fail(0, why, why_len,
                     "MySQL did not answer the lock wait's end within %d ms: the connection "
                     "is abandoned",
                     KILL_WAIT_MS);
            return stopped == 2 ? IK__SQL_ECANCELED : 0;
        }
        /* KILL QUERY's error: nothing held, the session lives on */
        if (ret && mysql_errno(c->m) == ER_QUERY_INTERRUPTED)
            return stopped == 2 ? IK__SQL_ECANCELED : 0;
    }
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    rc = ik__mysql_query_result(c, ret, ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, why, why_len);
    if (rc) return rc;
    int v = lock_answer(r);
    if (stopped) {
        if (v == 1) my_unlock(c, kind, key); /* granted just before the kill */
        return stopped == 2 ? IK__SQL_ECANCELED : 0;
    }
    if (v == 1) return 1;
    if (v == 0) return 0;
    return ik__fail(IK__SQL_EDEFINITE, why, why_len, "MySQL GET_LOCK answered NULL");
}

static int my_unlock(ik__sql_conn *c, ik__lock_kind kind, const char *key)
{
    char why[256];
    qbuf b = {0};
    if (lock_sql(&b, c, "RELEASE_LOCK", key, -1)) {
        free(b.s);
        return IK_ENOMEM;
    }
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    int rc =
        ik__mysql_run(c, b.s, b.n, ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, why, sizeof why);
    free(b.s);
    mysql_free_result(r);
    return rc == IK__SQL_EDEFINITE ? 0 : rc;
}

static ik__sql_conn_hz *my_hz_state(ik__sql_conn *c)
{
    return &c->hz;
}

static void my_session(ik__sql_conn *c, char *buf, size_t len)
{
    snprintf(buf, len, "thread %lu", c && c->m ? mysql_thread_id(c->m) : 0UL);
}

static const ik__sql_driver ik__sql_mysql_driver = {
    .name = "MySQL",
    .stmt = mysql_stmt,
    .connect = my_connect,
    .close = my_close,
    .run = my_run,
    .exec = my_exec,
    .exec_pipeline = my_exec_pipeline,
    .ping = my_ping,
    .lock = my_lock,
    .unlock = my_unlock,
    .hazards = ik__mysql_hazards,
    .proof = ik__mysql_proof,
    .table_row = ik__mysql_table_row,
    .tx_tables = ik__mysql_tx_tables,
    .qualified = my_qualified,
    .hz_state = my_hz_state,
    .back_proof = 1,
    .session = my_session,
    .socket = my_conn_socket,
    .stale = my_stale,
};

static void mysql_client_version(char *buf, size_t len)
{
    /* the connector's own version, as built against (mysql_get_client_info() gives
     * the server version it is compatible with) */
    snprintf(buf, len, "mariadb-connector-c %s", MARIADB_PACKAGE_VERSION);
}

static const char *const mysql_uri_examples[] = {"mysql://idkeeper@127.0.0.1:3306/idkeeper",
                                                 "mysql://idkeeper@db.example/ids", NULL};

IK__SQL_BACKEND(mysql, ik__sql_mysql_driver, "mysql", "mysql://USER@HOST[:PORT]/DB",
                mysql_uri_examples, ik__mysql_uri_check, mysql_schema, mysql_client_version);
