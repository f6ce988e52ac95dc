/* backend_pg.h: what the files of the PostgreSQL driver share (not a seam):
 * pg_conn.c, the session layer at the bottom (a connection, its session settings, a
 * statement and its answer, the proof of session); pg_hazards.c, the store hazard
 * checks and the proof that rides with each write, over it; backend_pg.c, the driver
 * (the SQL, the pipeline, the locks) and its ops tables, over both. Nothing outside
 * this folder includes it. */
#ifndef IK_BACKEND_PG_H
#define IK_BACKEND_PG_H

#include "internal.h"
#include "sql_driver.h"

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
    uint64_t named;   /* bit id: statement id (IK__SQL_NSTMT: the proof) parsed (send_named) */
    unsigned gen;     /* of the names: a failed pipeline forgets them all for new ones */
    const int *cut;   /* ik__sql_target.cut */
    ik__sql_target t; /* what it connected with (its strings the backend's), for the
                       * second connection that proves a pooler's mode (pg_hazards.c) */
    ik__sql_conn_hz hz;
    /* what the server said besides results (SP2 of backend_sql_proof.c): the first
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

/* The durability settings that ride with every write (IK__SQL_PROOF) and open
 * every check (pg_hazards), as this session sees them now: a reload (ALTER SYSTEM,
 * pg_reload_conf()) reaches every session at its next command. */
#define PROOF_COLS                                                                                 \
    "current_setting('fsync'), current_setting('full_page_writes'), "                              \
    "current_setting('synchronous_commit')"
/* idkeeper's tables (those our statements name, as the search path finds them)
 * that are not permanent (relpersistence 'u' UNLOGGED, 't' TEMP), "NAME KIND, ..."
 * or NULL: the "table persistence" row of a check (a write reads its own table's
 * alone: IK__SQL_TABLE_PROOF, so an ALTER TABLE ... SET UNLOGGED under running
 * servers is seen by the next write). */
#define UNDURABLE_TABLES                                                                           \
    "(SELECT string_agg(c.relname || ' ' || CASE c.relpersistence WHEN 'u' THEN 'UNLOGGED' "       \
    "ELSE 'TEMP' END, ', ' ORDER BY c.relname) FROM pg_class c WHERE c.relkind IN ('r', 'p') "     \
    "AND c.relpersistence <> 'p' AND pg_table_is_visible(c.oid) AND c.relname IN ('leaf_alloc', "  \
    "'idk_tag_kind', 'idk_slots', 'idk_commit_mark', 'idk_fence', 'idk_holder'))"
/* A write's proof (IK__SQL_PROOF), read after its commit point (SP1 of
 * backend_sql_proof.c): the durability settings and the proof of session, so that a
 * pipeline that ends with it needs no proof of session of its own
 * (pg_exec_pipeline). */
#define WRITE_PROOF_SQL "SELECT " PROOF_COLS ", " SESSION_COLS
#define WRITE_PROOF_NCOLS 5

/* pg_conn.c, the session layer (each function's contract is at its definition). */
void ik__pg_one_line(const char *msg, char *why, size_t why_len);
int ik__pg_wait_ready(ik__sql_conn *c, int64_t until_ms);
int ik__pg_collect(ik__sql_conn *c, int64_t until_ms, PGresult **out, char *why, size_t why_len);
int ik__pg_fill(const PGresult *r, ik__sql_res *res);
int ik__pg_proof_bad(const ik__sql_conn *c, const char *pid, const char *mark, char *value,
                     size_t len);
/* The proof that rode with a write or a grant on c (docs/hazards.md, "PostgreSQL"):
 * 0 if it shows c's own session; else IK__SQL_EFOREIGN with c's hz state describing
 * it and c dead (whatever the write did is rolled back if it can be). */
int ik__pg_proof_check(ik__sql_conn *c, const char *pid, const char *mark, char *why,
                       size_t why_len);
int ik__pg_request(ik__sql_conn *c, const char *sql, const char *const *params, int n,
                   int64_t until_ms, ik__sql_res *res, char *why, size_t why_len);
int ik__pg_connect(const ik__sql_target *t, ik__sql_conn **out, char *why, size_t why_len);
void ik__pg_close(ik__sql_conn *c);

/* pg_hazards.c: the driver's hazards, proof and table_row calls (sql_driver.h). */
int ik__pg_table_row(ik__sql_conn *c, const ik__hazards *h, const char *table, const ik__sql_res *r,
                     ik_hazard *row);
int ik__pg_hazards(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                   int64_t *db_ms, char *why, size_t why_len);
void ik__pg_proof(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                  ik_hazard *rows, size_t *n);

#endif
