/* backend_local_tags.c: tags on local: durable counters in SQLite (DIR/idkeeper.db).
 *
 * One table, close to Meituan Leaf's leaf_alloc so that a MySQL or PostgreSQL store
 * for fleets migrating from Leaf can use the same shape (plus app, kind and start):
 *
 *   leaf_alloc(app, biz_tag, kind, start, max_id, step, description, update_time)
 *   PRIMARY KEY (app, biz_tag)
 *
 * max_id is the next ID no server has taken. Taking a block of n is one UPDATE ...
 * RETURNING in its own transaction, so processes on one host (each with its own
 * connection) never take the same range. The database runs in WAL mode with
 * synchronous=FULL: an advance that returned is on disk, and survives a crash of the
 * process or of the machine. A busy database is waited for (busy_timeout 10 s).
 *
 * Invariant LT1: max_id of a tag never decreases; every ID handed out lies below it.
 *
 * Failures say what SQLite said (docs/local.md, "When the data directory fails"):
 * the file, SQLite's words and, where the cause is DIR's (not writable, read-only,
 * full), what to change (ik__local_cause). A call with a why gets it there, and every
 * failure is the backend's latest (ik_coord_last_error); an advance's is also logged
 * (a server's counters: the log is where an operator looks), at most every 10 s
 * while it repeats. A
 * full disk is IK_ESYS(ENOSPC), not a doubt: SQLite rolls back a transaction whose
 * write found no room, and nothing of it is committed. A file that fails SQLite's
 * own check (ik__local_db_check) is refused at open, before it can answer 503s.
 */
#include "backend_local.h"
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *SCHEMA = "PRAGMA journal_mode=WAL;"
                            "PRAGMA synchronous=FULL;"
                            "CREATE TABLE IF NOT EXISTS leaf_alloc ("
                            "  app TEXT NOT NULL,"
                            "  biz_tag TEXT NOT NULL,"
                            "  kind TEXT NOT NULL CHECK (kind IN ('segment', 'sequence')),"
                            "  start INTEGER NOT NULL CHECK (start >= 0),"
                            "  max_id INTEGER NOT NULL,"
                            "  step INTEGER NOT NULL CHECK (step >= 1),"
                            "  description TEXT NOT NULL DEFAULT '',"
                            "  update_time INTEGER NOT NULL," /* Unix ms */
                            "  PRIMARY KEY (app, biz_tag));";

static void db_path(const local_backend *b, char *buf, size_t len)
{
    snprintf(buf, len, "%s/idkeeper.db", b->dir);
}

/* Why db's latest call failed, in one line: the file, what it was doing, SQLite's
 * words, and the OS's error behind them where SQLite had one. rc: SQLite's result
 * code (db may be NULL where the open itself failed). */
static void db_why(const local_backend *b, sqlite3 *db, int rc, const char *doing, char *buf,
                   size_t len)
{
    char path[4200], cause[700] = "";
    db_path(b, path, sizeof path);
    int e = db ? sqlite3_system_errno(db) : 0;
    int code = (db ? sqlite3_extended_errcode(db) : rc) & 0xff;
    const char *said = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
        snprintf(buf, len,
                 "%s is damaged (SQLite, %s: %s): nothing is read or written there; recover it "
                 "as docs/local.md says, never by removing it (its counters would start again)",
                 path, doing, said);
        return;
    }
    if (code == SQLITE_FULL && !e) e = ENOSPC;
    /* SQLite makes idkeeper.db-wal and -shm beside the file: a DIR it cannot write
     * fails it with the errno of its last try (often ENOENT), so DIR's own is told */
    if ((code == SQLITE_CANTOPEN || code == SQLITE_READONLY) &&
        faccessat(AT_FDCWD, b->dir, W_OK, AT_EACCESS) != 0)
        ik__local_cause(b, errno, b->dir, cause, sizeof cause);
    else if (e)
        ik__local_cause(b, e, path, cause, sizeof cause);
    if (cause[0])
        snprintf(buf, len, "cannot use %s (SQLite, %s: %s): %s", path, doing, said, cause);
    else
        snprintf(buf, len, "cannot use %s (SQLite, %s: %s)", path, doing, said);
}

/* The library's answer for a failure db_why describes: a full disk is ENOSPC
 * (nothing committed); anything else IK_ESTORE. */
static int db_rc(sqlite3 *db, int rc)
{
    int code = (db ? sqlite3_extended_errcode(db) : rc) & 0xff;
    return code == SQLITE_FULL ? IK_ESYS(ENOSPC) : IK_ESTORE;
}

/* Opens the database on first use. Caller holds db_mu. 0, or an error with why. */
static int db_open(local_backend *b, char *why, size_t why_len)
{
    if (b->db) return IK_OK;
    char path[4200];
    db_path(b, path, sizeof path);
    sqlite3 *db;
    int rc = sqlite3_open_v2(
        path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 10000);
        rc = sqlite3_exec(db, SCHEMA, NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        db_why(b, db, rc, "opening it", why, why_len);
        rc = db_rc(db, rc);
        sqlite3_close(db);
        return rc;
    }
    b->db = db;
    return IK_OK;
}

int ik__local_db_check(local_backend *b, int strict, char *why, size_t why_len)
{
    char path[4200];
    db_path(b, path, sizeof path);
    struct stat st;
    if (stat(path, &st) != 0 && errno == ENOENT) return IK_OK; /* made at the first tag */
    sqlite3 *db = NULL;
    sqlite3_stmt *q = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 10000);
        rc = sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &q, NULL);
    }
    if (rc == SQLITE_OK) rc = sqlite3_step(q);
    const char *verdict = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(q, 0) : NULL;
    int out = IK_OK;
    if (rc == SQLITE_ROW && verdict && strcmp(verdict, "ok") != 0) {
        out = ik__fail(IK_ESTORE, why, why_len,
                       "%s is damaged (SQLite's quick_check: %.160s): nothing is read or written "
                       "there; recover it as docs/local.md says, never by removing it (its "
                       "counters would start again)",
                       path, verdict);
    } else if (rc != SQLITE_ROW) {
        int code = (db ? sqlite3_extended_errcode(db) : rc) & 0xff;
        if (strict || code == SQLITE_CORRUPT || code == SQLITE_NOTADB) {
            db_why(b, db, rc, "checking it", why, why_len);
            out = IK_ESTORE;
        }
    }
    sqlite3_finalize(q);
    sqlite3_close(db);
    return out;
}

void ik__local_tags_close(local_backend *b)
{
    sqlite3_finalize(b->advance);
    b->advance = NULL;
    if (b->db) sqlite3_close(b->db);
    b->db = NULL;
}

static void row_to_info(sqlite3_stmt *st, ik_tag_info *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", (const char *)sqlite3_column_text(st, 0));
    ik_tag_kind_parse((const char *)sqlite3_column_text(st, 1), &t->kind);
    t->start = sqlite3_column_int64(st, 2);
    t->max_id = sqlite3_column_int64(st, 3);
    t->step = sqlite3_column_int64(st, 4);
    snprintf(t->description, sizeof t->description, "%s", (const char *)sqlite3_column_text(st, 5));
    t->update_time_ms = sqlite3_column_int64(st, 6);
}

#define COLUMNS "biz_tag, kind, start, max_id, step, description, update_time"

/* The answer to a failed SQLite call on b->db (rc its result): db_why's line in why
 * (if why_len > 0), and as b's latest failure (ik__local_say), logged where log.
 * Caller holds db_mu. */
static int failed(local_backend *b, int rc, const char *doing, int log, char *why, size_t why_len)
{
    char line[sizeof b->said];
    db_why(b, b->db, rc, doing, line, sizeof line);
    if (why && why_len) snprintf(why, why_len, "%s", line);
    ik__local_say(b, log, line);
    return db_rc(b->db, rc);
}

/* db_open, its failure told as failed() tells one. Caller holds db_mu. */
static int db_ready(local_backend *b, int log, char *why, size_t why_len)
{
    char line[sizeof b->said] = "";
    int rc = db_open(b, line, sizeof line);
    if (rc && why && why_len) snprintf(why, why_len, "%s", line);
    if (rc) ik__local_say(b, log, line);
    return rc;
}

int ik__local_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len)
{
    local_backend *b = (local_backend *)be;
    pthread_mutex_lock(&b->db_mu);
    int rc = db_ready(b, 0, why, why_len);
    sqlite3_stmt *st = NULL;
    int s = rc ? SQLITE_OK
               : sqlite3_prepare_v2(b->db,
                                    "INSERT INTO leaf_alloc (app, " COLUMNS
                                    ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                                    -1, &st, NULL);
    if (rc == 0 && s == SQLITE_OK) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ik_tag_kind_name(t->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, t->start);
        sqlite3_bind_int64(st, 5, t->max_id);
        sqlite3_bind_int64(st, 6, t->step);
        sqlite3_bind_text(st, 7, t->description, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 8, t->update_time_ms);
        s = sqlite3_step(st);
    }
    if (rc == 0 && s == SQLITE_CONSTRAINT)
        rc = ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
    else if (rc == 0 && s != SQLITE_DONE)
        rc = failed(b, s, "storing a tag", 0, why, why_len);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->db_mu);
    return rc;
}

int ik__local_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len)
{
    local_backend *b = (local_backend *)be;
    pthread_mutex_lock(&b->db_mu);
    int rc = db_ready(b, 0, why, why_len); /* tag_get logs nothing (backend.h) */
    sqlite3_stmt *st = NULL;
    int s = rc ? SQLITE_OK
               : sqlite3_prepare_v2(
                     b->db, "SELECT " COLUMNS " FROM leaf_alloc WHERE app = ?1 AND biz_tag = ?2",
                     -1, &st, NULL);
    if (rc == 0 && s == SQLITE_OK) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        s = sqlite3_step(st);
    }
    if (rc == 0 && s == SQLITE_ROW) {
        row_to_info(st, out);
    } else if (rc == 0 && s == SQLITE_DONE) {
        rc = IK_ENOTFOUND;
    } else if (rc == 0) {
        rc = failed(b, s, "reading a tag", 0, why, why_len);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->db_mu);
    return rc;
}

int ik__local_tag_list(ik__backend *be, const char *app, ik_tag_info **out, size_t *n_out)
{
    local_backend *b = (local_backend *)be;
    *out = NULL;
    *n_out = 0;
    pthread_mutex_lock(&b->db_mu);
    int rc = db_ready(b, 0, NULL, 0); /* its caller reads ik_coord_last_error */
    sqlite3_stmt *st = NULL;
    int s = rc ? SQLITE_OK
               : sqlite3_prepare_v2(
                     b->db, "SELECT " COLUMNS " FROM leaf_alloc WHERE app = ?1 ORDER BY biz_tag",
                     -1, &st, NULL);
    ik_tag_info *v = NULL;
    size_t n = 0, cap = 0;
    if (rc == 0 && s == SQLITE_OK) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
                rc = IK_ENOMEM;
                break;
            }
            row_to_info(st, &v[n++]);
        }
    }
    if (rc == 0 && s != SQLITE_DONE) rc = failed(b, s, "listing the tags", 0, NULL, 0);
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->db_mu);
    if (rc) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return IK_OK;
}

int ik__local_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                          ik__tag_write *w, int64_t *first)
{
    int64_t delta = w->own.delta;
    local_backend *b = (local_backend *)be;
    int rc = ik__local_hazards_gate(b);
    if (rc) return rc;
    pthread_mutex_lock(&b->db_mu);
    rc = db_ready(b, 1, NULL, 0); /* a server's counters: the log is where it is read */
    /* one statement, one transaction: the row is advanced and read atomically. It is
     * prepared once: its parse and plan were a tenth of a -P 1 sequence server's CPU
     * (docs/BENCHMARKS.md); SQLite prepares it again by itself if the schema changes */
    int s =
        rc || b->advance
            ? SQLITE_OK
            : sqlite3_prepare_v3(b->db,
                                 "UPDATE leaf_alloc SET max_id = max_id + ?3, update_time = ?4 "
                                 "WHERE app = ?1 AND biz_tag = ?2 AND kind = ?5 AND max_id <= ?6 "
                                 "RETURNING max_id - ?3",
                                 -1, SQLITE_PREPARE_PERSISTENT, &b->advance, NULL);
    sqlite3_stmt *st = b->advance;
    int have = 0, maybe = 0;
    if (rc == 0 && s == SQLITE_OK) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, delta);
        sqlite3_bind_int64(st, 4, ik__wall_ms());
        sqlite3_bind_text(st, 5, ik_tag_kind_name(kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, INT64_MAX - delta);
        s = sqlite3_step(st);
        if (s == SQLITE_ROW) {
            *first = sqlite3_column_int64(st, 0);
            have = 1;
            s = sqlite3_step(st); /* the commit happens when the statement completes */
            /* an I/O error during the commit may leave it done or not (a full disk
             * leaves it undone: SQLite rolled it back) */
            maybe = (sqlite3_extended_errcode(b->db) & 0xff) == SQLITE_IOERR;
        }
    }
    if (rc == 0 && s == SQLITE_DONE && !have) {
        rc = IK_ENOTFOUND; /* refined below */
    } else if (rc == 0 && s != SQLITE_DONE) {
        rc = failed(b, s, "advancing a tag", 1, NULL, 0);
        if (maybe) rc = IK_EINDOUBT;
    }
    if (st) { /* ends the statement's transaction, keeps its plan; no binding outlives the call */
        sqlite3_reset(st);
        sqlite3_clear_bindings(st);
    }
    pthread_mutex_unlock(&b->db_mu);
    if (rc == IK_ENOTFOUND) {
        ik_tag_info t;
        memset(&t, 0, sizeof t);
        int g = ik__local_tag_get(be, app, name, &t, NULL, 0);
        if (g) return g;
        return t.kind != kind ? IK_EKIND : IK_ERANGE;
    }
    return rc;
}
