/* backend_mysql.h: what the files of the MySQL/MariaDB driver share (not a seam):
 * mysql_conn.c, the session layer at the bottom; mysql_hazards.c, the store hazard
 * checks and the proof that rides with each write, over it; backend_mysql.c, the
 * driver and its ops tables, over both. Nothing outside this folder includes it. */
#ifndef IK_BACKEND_MYSQL_H
#define IK_BACKEND_MYSQL_H

#include "internal.h"
#include "mysql_uri.h"
#include "sql_driver.h"

#include <mysql.h>
#include <pthread.h>

#define DB_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

/* The durability settings that ride with every write (IK__SQL_PROOF) and open
 * every check (my_hazards), in durability_rows's order: they can all change at run
 * time (SET GLOBAL), so each write carries them. Bare variables: each item costs the
 * server's parser as much as a statement's overhead (an IF() around one, a third
 * more), and durability_rows reads the booleans as the server sends them. */
#define PROOF_COLS                                                                                 \
    "@@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.log_bin, @@GLOBAL.sync_binlog, "            \
    "@@GLOBAL.read_only"
#define PROOF_NCOLS 4
/* The columns of Leaf's read-back (IK__SQL_LEAF_SELECT: biz_tag, max_id, step),
 * which PROOF_COLS follow (the driver's back_proof). */
#define BACK_NCOLS 3
/* idkeeper's tables, for the engine check: every one needs transactions (SELECT ...
 * FOR UPDATE locks nothing without them, a failed advance is not rolled back, and a
 * crash loses what is not in the redo log). */
#define OUR_TABLES                                                                                 \
    "'leaf_alloc', 'idk_tag_kind', 'idk_slots', 'idk_commit_mark', 'idk_fence', 'idk_holder'"
/* Those of them in an engine without transactions, "TABLE ENGINE, ..." or NULL: the
 * "table engines" row of a check (a write reads its own table's engine alone:
 * IK__SQL_TABLE_PROOF, so an ALTER TABLE ... ENGINE under running servers is seen
 * by the next write). */
#define ENGINES_COL                                                                                \
    "(SELECT GROUP_CONCAT(CONCAT(t.TABLE_NAME, ' ', COALESCE(t.ENGINE, t.TABLE_TYPE)) "            \
    "ORDER BY t.TABLE_NAME SEPARATOR ', ') FROM information_schema.TABLES t "                      \
    "LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE "                               \
    "WHERE t.TABLE_SCHEMA = DATABASE() AND t.TABLE_NAME IN (" OUR_TABLES ") "                      \
    "AND COALESCE(e.TRANSACTIONS, 'NO') <> 'YES')"

/* The per-session idle-in-transaction bound on MariaDB, s: a transaction of ours
 * waits for the server's answers only, so one idle this long has a frozen or
 * vanished client, whose row locks it frees (docs/sql.md, "Session settings"). */
#define IDLE_TX_S 5
/* The row lock wait (innodb_lock_wait_timeout), s: less than a statement may take
 * (IK__SQL_IO_MS), so that a wait ends definite. */
#define LOCK_WAIT_S 3
#define SQL_MODE "STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION"

struct ik__sql_conn {
    MYSQL *m;
    int dead;        /* the session is gone or in doubt: every call answers EGONE */
    int ping_status; /* a ping is out: the non-blocking status to continue with */
    int ping_ret;
    ik__mysql_uri u;
    char *password;  /* for the second connection that cancels a lock wait */
    int mariadb;     /* the server is MariaDB (not MySQL) */
    int holds;       /* connected for a session lock (ik__sql_target.holds) */
    long wait_s;     /* the session's wait_timeout, s (session_setup) */
    int64_t used_ms; /* ik__mono_ms when its last statement ended (my_stale) */
    const int *cut;  /* ik__sql_target.cut */
    ik__sql_conn_hz hz;
    /* SP2 of backend_sql_proof.c: the first warning count that came with a write or
     * a COMMIT of the last pipeline, said in words ("": none; my_qualified) */
    char qual[160];
    /* M7 of backend_mysql.c: a bit (1u << i) per statement of its `prepared` table
     * this session has prepared (session_setup); 0 after a lost one */
    unsigned ps;
    /* SP5 of backend_sql_proof.c: what the server's transaction state (session
     * tracking, set by session_setup) said of the transaction begun by our last
     * START TRANSACTION (tx_note): on 1 once the START TRANSACTION was answered with
     * it, while every state since was whole and in that transaction; unsafe the
     * first state that showed a table without transactions used, "" none;
     * answers the statements' answers read on c (ik__mysql_query_result), noted
     * the count tx_note had seen: an answer it did not see (a statement sent some
     * other way, whose state change no later answer repeats) ends on */
    struct {
        int on;
        char unsafe[16];
        unsigned long answers, noted;
    } tx;
};

/* mysql_conn.c, the session layer (each function's contract is at its definition):
 * the connector's one start (ik__mysql_lib_once, ik__mysql_lib_init, its result
 * ik__mysql_lib_rc), error classes, the cut, and the non-blocking statement runner. */
extern pthread_once_t ik__mysql_lib_once;
extern int ik__mysql_lib_rc;
void ik__mysql_lib_init(void);
int ik__mysql_conn_errno(unsigned err);
void ik__mysql_conn_kill(ik__sql_conn *c);
int ik__mysql_wait_io(ik__sql_conn *c, int status, int64_t deadline, const volatile int *cancel,
                      int *canceled);
int ik__mysql_ping_finish(ik__sql_conn *c, int64_t deadline);
int ik__mysql_failed(ik__sql_conn *c, int sent, char *why, size_t why_len);
int ik__mysql_query_wait(ik__sql_conn *c, int *st, int *ret, int64_t deadline,
                         const volatile int *cancel, char *why, size_t why_len);
int ik__mysql_query_result(ik__sql_conn *c, int ret, int64_t deadline, MYSQL_RES **out,
                           int64_t *affected, char *why, size_t why_len);
int ik__mysql_query_start(ik__sql_conn *c, const char *q, size_t qlen, int64_t deadline, int *st,
                          int *ret, char *why, size_t why_len);
/* Sends q and reads its whole result by deadline (ik__mono_ms): *out the result set
 * or NULL, *affected the rows changed. 0 or a class (sql_driver.h), why set. */
int ik__mysql_run(ik__sql_conn *c, const char *q, size_t qlen, int64_t deadline, MYSQL_RES **out,
                  int64_t *affected, char *why, size_t why_len);
/* The statement time limit of c's server: MariaDB's max_statement_time (s), MySQL's
 * max_execution_time (ms, SELECTs only: GET_LOCK is one). */
const char *ik__mysql_stmt_limit(const ik__sql_conn *c);

/* mysql_hazards.c: the driver's hazards and proof calls (sql_driver.h). */
int ik__mysql_hazards(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                      int64_t *db_ms, char *why, size_t why_len);
void ik__mysql_proof(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                     ik_hazard *rows, size_t *n);
/* The "table engines" row from ENGINES_COL's answer v. */
void ik__mysql_engines_row(const ik__hazards *h, const char *v, ik_hazard *row);
/* sql_driver.h's table_row: one table's engine (IK__SQL_TABLE_PROOF), refused if it
 * is not one with transactions (InnoDB, RocksDB). */
int ik__mysql_table_row(ik__sql_conn *c, const ik__hazards *h, const char *table,
                        const ik__sql_res *r, ik_hazard *row);
/* sql_driver.h's tx_tables: the verdict of c->tx (SP5 of backend_sql_proof.c). */
int ik__mysql_tx_tables(ik__sql_conn *c, const ik__hazards *h, ik_hazard *row);

#endif
