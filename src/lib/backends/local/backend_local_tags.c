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
 */
#include "backend_local.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

/* Opens the database on first use. Caller holds db_mu. */
static int db_open(local_backend *b)
{
    if (b->db) return IK_OK;
    char path[4200];
    snprintf(path, sizeof path, "%s/idkeeper.db", b->dir);
    sqlite3 *db;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                        NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return IK_ESTORE;
    }
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, SCHEMA, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_close(db);
        return IK_ESTORE;
    }
    b->db = db;
    return IK_OK;
}

void ik__local_tags_close(local_backend *b)
{
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

int ik__local_tag_create(ik__backend *be, const char *app, const ik_tag_info *t, char *why,
                         size_t why_len)
{
    (void)why, (void)why_len;
    local_backend *b = (local_backend *)be;
    pthread_mutex_lock(&b->db_mu);
    int rc = db_open(b);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(b->db,
                                      "INSERT INTO leaf_alloc (app, " COLUMNS
                                      ") VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
                                      -1, &st, NULL) != SQLITE_OK)
        rc = IK_ESTORE;
    if (rc == 0) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, t->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ik_tag_kind_name(t->kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, t->start);
        sqlite3_bind_int64(st, 5, t->max_id);
        sqlite3_bind_int64(st, 6, t->step);
        sqlite3_bind_text(st, 7, t->description, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 8, t->update_time_ms);
        int s = sqlite3_step(st);
        if (s == SQLITE_CONSTRAINT)
            rc = ik__fail(IK_EEXIST, why, why_len, "tag %s exists already", t->name);
        else if (s != SQLITE_DONE)
            rc = ik__fail(IK_ESTORE, why, why_len, "cannot store tag %s: %s", t->name,
                          sqlite3_errmsg(b->db));
    } else if (rc) {
        ik__fail(rc, why, why_len, "cannot open %s/idkeeper.db", b->dir);
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->db_mu);
    return rc;
}

int ik__local_tag_get(ik__backend *be, const char *app, const char *name, ik_tag_info *out,
                      char *why, size_t why_len)
{
    local_backend *b = (local_backend *)be;
    pthread_mutex_lock(&b->db_mu);
    int rc = db_open(b);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(
                       b->db, "SELECT " COLUMNS " FROM leaf_alloc WHERE app = ?1 AND biz_tag = ?2",
                       -1, &st, NULL) != SQLITE_OK)
        rc = IK_ESTORE;
    if (rc == 0) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        int s = sqlite3_step(st);
        if (s == SQLITE_ROW)
            row_to_info(st, out);
        else
            rc = s == SQLITE_DONE ? IK_ENOTFOUND : IK_ESTORE;
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
    int rc = db_open(b);
    sqlite3_stmt *st = NULL;
    if (rc == 0 && sqlite3_prepare_v2(
                       b->db, "SELECT " COLUMNS " FROM leaf_alloc WHERE app = ?1 ORDER BY biz_tag",
                       -1, &st, NULL) != SQLITE_OK)
        rc = IK_ESTORE;
    ik_tag_info *v = NULL;
    size_t n = 0, cap = 0;
    if (rc == 0) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        int s;
        while ((s = sqlite3_step(st)) == SQLITE_ROW) {
            if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
                rc = IK_ENOMEM;
                break;
            }
            row_to_info(st, &v[n++]);
        }
        if (rc == 0 && s != SQLITE_DONE) rc = IK_ESTORE;
    }
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
    rc = db_open(b);
    sqlite3_stmt *st = NULL;
    /* one statement, one transaction: the row is advanced and read atomically */
    if (rc == 0 &&
        sqlite3_prepare_v2(b->db,
                           "UPDATE leaf_alloc SET max_id = max_id + ?3, update_time = ?4 "
                           "WHERE app = ?1 AND biz_tag = ?2 AND kind = ?5 AND max_id <= ?6 "
                           "RETURNING max_id - ?3",
                           -1, &st, NULL) != SQLITE_OK)
        rc = IK_ESTORE;
    if (rc == 0) {
        sqlite3_bind_text(st, 1, app, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 3, delta);
        sqlite3_bind_int64(st, 4, ik__wall_ms());
        sqlite3_bind_text(st, 5, ik_tag_kind_name(kind), -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 6, INT64_MAX - delta);
        int s = sqlite3_step(st);
        int64_t got = 0;
        int have = 0;
        if (s == SQLITE_ROW) {
            got = sqlite3_column_int64(st, 0);
            have = 1;
            s = sqlite3_step(st); /* the commit happens when the statement completes */
        }
        if (s == SQLITE_DONE && have) {
            *first = got;
        } else if (s == SQLITE_DONE) {
            rc = IK_ENOTFOUND; /* refined below */
        } else {
            int ext = sqlite3_extended_errcode(b->db);
            /* an I/O error during the commit may leave it done or not */
            rc = (ext & 0xff) == SQLITE_IOERR || (ext & 0xff) == SQLITE_FULL ? IK_EINDOUBT
                                                                             : IK_ESTORE;
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&b->db_mu);
    if (rc == IK_ENOTFOUND) {
        ik_tag_info t;
        int g = ik__local_tag_get(be, app, name, &t, NULL, 0);
        if (g) return g;
        return t.kind != kind ? IK_EKIND : IK_ERANGE;
    }
    return rc;
}
