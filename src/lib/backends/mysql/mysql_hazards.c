/* mysql_hazards.c: the store hazard checks of a MySQL/MariaDB session and the proof
 * that rides with each write (docs/hazards.md, "MySQL and MariaDB"): the rows a
 * check reads back, judged by the shared verdicts (hazard.c) above the driver. */
#include "backend_mysql.h"

#include <mysqld_error.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

/* A boolean setting as the server sends it: 0 or 1 (MySQL, MariaDB 10), a word where
 * it became an enum (MariaDB 11's read_only: OFF, ON, NO_LOCK, ...). Anything but
 * off counts as on, the side that refuses: a read_only or a binary log not
 * understood is never taken for off. */
static int setting_on(const char *v)
{
    return strcmp(v, "0") != 0 && strcasecmp(v, "OFF") != 0;
}

/* The rows of the durability settings (PROOF_COLS, v[0..3]) into rows[*k..]: the
 * same rows, under the same names, whether a check or a write's proof read them.
 *   innodb_flush_log_at_trx_commit must be 1, or 3 on MariaDB (its documentation:
 *   "1 and 3 guarantee that after a crash, committed transactions will not be
 *   lost"; 0 and 2 leave up to a second of commits in memory); with the binary log
 *   on, sync_binlog must be 1 too (InnoDB's crash recovery rolls back a prepared
 *   transaction the binary log lacks, and replicas and a failover read only the
 *   binary log); read_only must be off (a read-only server is a replica or one
 *   being demoted: a user with the right to write anyway writes where the
 *   primary's writes will not see it). */
static void durability_rows(const ik__sql_conn *c, const ik__hazards *h, const char *const *v,
                            ik_hazard *rows, size_t *k)
{
    char val[96];
    long flush = strtol(v[0], NULL, 10);
    int log_bin = setting_on(v[1]), read_only = setting_on(v[3]);
    long sync_binlog = strtol(v[2], NULL, 10);
    ik__hazard_row(h, &rows[(*k)++], "innodb_flush_log_at_trx_commit", v[0],
                   !(flush == 1 || (flush == 3 && c->mariadb)),
                   "MySQL acknowledges commits it can lose in a crash: SET GLOBAL "
                   "innodb_flush_log_at_trx_commit = 1 (and in my.cnf), or start with "
                   "--allow-unsafe-store to accept that");
    snprintf(val, sizeof val, "%s (binary log %s)", v[2], log_bin ? "on" : "off");
    ik__hazard_row(h, &rows[(*k)++], "sync_binlog", val, log_bin && sync_binlog != 1,
                   "with the binary log on, MySQL acknowledges commits a crash can take from "
                   "it, and so from recovery and replicas: SET GLOBAL sync_binlog = 1, or "
                   "start with --allow-unsafe-store to accept that");
    const char *ro = strcmp(v[3], "1") == 0 ? "ON"
                     : !read_only           ? "OFF"
                     : v[3][0]              ? v[3]
                                            : "? (not read)";
    ik__hazard_row(h, &rows[(*k)++], "read_only", ro, read_only,
                   "the server is read-only (a replica, or a primary being demoted): point "
                   "idkeeper at the primary");
}

/* The "session transaction" row from the server status of c's last answer
 * (sql_driver.h: proof): with in_tx 0 no transaction may be open, and autocommit
 * must be on. An open one after a COMMIT or an autocommitted write means that write
 * is not committed, whatever the cause: completion_type CHAIN, an init_connect, a
 * setting nobody thought of; the server rolls it back when the session ends. */
static void status_row(ik__sql_conn *c, const ik__hazards *h, int in_tx, ik_hazard *row)
{
    unsigned st = 0;
    mariadb_get_infov(c->m, MARIADB_CONNECTION_SERVER_STATUS, &st);
    int open = (st & SERVER_STATUS_IN_TRANS) != 0, ac = (st & SERVER_STATUS_AUTOCOMMIT) != 0;
    char val[96];
    snprintf(val, sizeof val, "%s, autocommit %s",
             in_tx  ? "ours open"
             : open ? "open"
                    : "none open",
             ac ? "on" : "off");
    ik__hazard_row(h, row, "session transaction", val, (!in_tx && open) || !ac,
                   "the server kept a transaction open after a write that must have "
                   "committed (or turned autocommit off): that write is not committed. "
                   "Look for completion_type, init_connect or a proxy between idkeeper and "
                   "MySQL; connect to MySQL directly");
}

void ik__mysql_engines_row(const ik__hazards *h, const char *v, ik_hazard *row)
{
    ik__hazard_row(h, row, "table engines", *v ? v : "all transactional", *v != '\0',
                   "these idkeeper tables are in an engine without transactions: SELECT ... "
                   "FOR UPDATE locks nothing there, so two servers can take one range or one "
                   "worker, and a crash loses their writes; ALTER TABLE ... ENGINE = InnoDB "
                   "each of them");
}

int ik__mysql_table_row(ik__sql_conn *c, const ik__hazards *h, const char *table,
                        const ik__sql_res *r, ik_hazard *row)
{
    (void)c;
    const char *engine = ik__sql_cell(r, 0, 0);
    /* the transactional engines MariaDB and MySQL ship; the check's row reads
     * information_schema.ENGINES itself, for the others (too dear at every write) */
    if (r->nrows == 1 && (!strcasecmp(engine, "InnoDB") || !strcasecmp(engine, "ROCKSDB")))
        return 0;
    char v[96];
    snprintf(v, sizeof v, "%.60s %.30s", table, r->nrows == 1 ? engine : "(no such table)");
    ik__mysql_engines_row(h, v, row);
    return 1;
}

int ik__mysql_tx_tables(ik__sql_conn *c, const ik__hazards *h, ik_hazard *row)
{
    /* said of whole: every answer since the START TRANSACTION was noted */
    if (!c->tx.on || c->tx.answers != c->tx.noted) return -1;
    if (!c->tx.unsafe[0]) return 0;
    char v[96];
    snprintf(v, sizeof v, "a table without transactions in the write (transaction state %s)",
             c->tx.unsafe);
    ik__mysql_engines_row(h, v, row);
    return 1;
}

void ik__mysql_proof(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                     ik_hazard *rows, size_t *n)
{
    size_t k = 0;
    if (r) { /* IK__SQL_PROOF's row, or Leaf's read-back with it (back_proof) */
        size_t at = r->ncols == BACK_NCOLS + PROOF_NCOLS ? BACK_NCOLS : 0;
        int whole = r->nrows == 1 && r->ncols == at + PROOF_NCOLS;
        const char *v[PROOF_NCOLS];
        for (size_t i = 0; i < PROOF_NCOLS; i++)
            v[i] = whole ? ik__sql_cell(r, 0, at + i) : "";
        durability_rows(c, h, v, rows, &k);
    }
    status_row(c, h, in_tx, &rows[k++]);
    *n = k;
}

/* The "replica" row: the server replicates from a primary (SHOW ALL SLAVES STATUS
 * on MariaDB, SHOW REPLICA STATUS on MySQL, has a row). A replica's own writes are
 * overwritten or conflict when the primary's arrive, and a writable one
 * (MariaDB's default read_only = 0) took writes that the primary handed out again.
 * Without the right to read it, MariaDB's Slaves_running (slaves, v) still tells
 * a running replica; otherwise the row is a risk: unverifiable. 0 or a class. */
static int replica_row(ik__sql_conn *c, const ik__hazards *h, const char *slaves, ik_hazard *row,
                       char *why, size_t why_len)
{
    const char *q = c->mariadb                                ? "SHOW ALL SLAVES STATUS"
                    : mysql_get_server_version(c->m) >= 80022 ? "SHOW REPLICA STATUS"
                                                              : "SHOW SLAVE STATUS";
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    char inner[200] = "";
    int rc = ik__mysql_run(c, q, strlen(q), ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, inner,
                           sizeof inner);
    if (rc && rc != IK__SQL_EDEFINITE) return ik__fail(rc, why, why_len, "%s", inner);
    const char *fix = "the server is a replica: its writes are lost or repeated when its "
                      "primary's arrive; point idkeeper at the primary";
    char val[160];
    if (rc) { /* not allowed to see it */
        long running = strtol(slaves, NULL, 10);
        snprintf(val, sizeof val, "%s (%s)", running > 0 ? "running" : "unreadable", inner);
        ik__hazard_row(h, row, "replica", val, 1, "%s",
                       running > 0 ? fix
                                   : "cannot tell whether the server is a replica: grant "
                                     "idkeeper's user REPLICATION CLIENT (MySQL) or SLAVE "
                                     "MONITOR (MariaDB), or check by hand");
        if (running <= 0) row->verdict = IK_VERDICT_RISK;
        return 0;
    }
    my_ulonglong rows = r ? mysql_num_rows(r) : 0;
    if (rows) {
        MYSQL_FIELD *f = mysql_fetch_fields(r);
        MYSQL_ROW x = mysql_fetch_row(r);
        const char *host = "?", *port = "?";
        for (unsigned i = 0; x && i < mysql_num_fields(r); i++) {
            if (!x[i]) continue;
            if (!strcmp(f[i].name, "Master_Host") || !strcmp(f[i].name, "Source_Host")) host = x[i];
            if (!strcmp(f[i].name, "Master_Port") || !strcmp(f[i].name, "Source_Port")) port = x[i];
        }
        snprintf(val, sizeof val, "replica of %s:%s", host, port);
    } else {
        snprintf(val, sizeof val, "no");
    }
    ik__hazard_row(h, row, "replica", val, rows > 0, "%s", fix);
    mysql_free_result(r);
    return 0;
}

/* The store hazards of c (sql_driver.h: hazards; docs/hazards.md, "MySQL and
 * MariaDB"): the server's durability settings (durability_rows, the same rows a
 * write's proof gives), innodb_doublewrite, whether it is a replica, the engines
 * of our tables, and the session state that session_setup set, read back (a proxy
 * that pools sessions behind us, or a server that ignored a SET, shows here). */
int ik__mysql_hazards(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                      int64_t *db_ms, char *why, size_t why_len)
{
    char q[1400];
    snprintf(q, sizeof q,
             "SELECT " PROOF_COLS ", @@SESSION.autocommit, @@SESSION.%s, @@SESSION.sql_mode, "
             "@@SESSION.innodb_lock_wait_timeout, %s, @@SESSION.wait_timeout, "
             "@@SESSION.completion_type, IF(@@GLOBAL.innodb_doublewrite, 1, 0), " ENGINES_COL
             ", %s, " DB_MS ", @@SESSION.%s",
             c->mariadb ? "tx_isolation" : "transaction_isolation",
             c->mariadb ? "@@SESSION.idle_transaction_timeout" : "NULL",
             c->mariadb ? "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                          "WHERE VARIABLE_NAME = 'SLAVES_RUNNING')"
                        : "NULL",
             ik__mysql_stmt_limit(c));
    enum { NCOLS = PROOF_NCOLS + 12 };
    MYSQL_RES *r = NULL;
    int64_t affected = 0;
    int rc =
        ik__mysql_run(c, q, strlen(q), ik__mono_ms() + IK__SQL_IO_MS, &r, &affected, why, why_len);
    if (rc) return rc;
    MYSQL_ROW row = r ? mysql_fetch_row(r) : NULL;
    if (!row || mysql_num_fields(r) != NCOLS) {
        mysql_free_result(r);
        return ik__fail(IK__SQL_EDEFINITE, why, why_len, "MySQL: no settings row");
    }
    const char *v[NCOLS];
    for (int i = 0; i < NCOLS; i++)
        v[i] = row[i] ? row[i] : "";
    const char *const *s = v + PROOF_NCOLS; /* the session's and the rest */
    size_t k = 0;
    char val[200];
    durability_rows(c, h, v, rows, &k);
    status_row(c, h, 0, &rows[k++]);
    ik__hazard_row(h, &rows[k++], "session autocommit", s[0], strcmp(s[0], "1") != 0,
                   "the session did not keep autocommit = 1 as idkeeper set it: its writes "
                   "would never commit; connect to MySQL directly, not through a proxy "
                   "that shares sessions");
    ik__hazard_row(h, &rows[k++], "session completion_type", s[6], strcmp(s[6], "NO_CHAIN") != 0,
                   "the session did not keep completion_type = NO_CHAIN as idkeeper set it: "
                   "every write after a COMMIT would sit in a transaction that never commits; "
                   "connect to MySQL directly, not through a proxy that shares sessions");
    ik__hazard_row(h, &rows[k++], "session isolation", s[1], strcmp(s[1], "READ-COMMITTED") != 0,
                   "the session did not keep READ COMMITTED as idkeeper set it; connect to "
                   "MySQL directly, not through a proxy that shares sessions");
    ik__hazard_row(h, &rows[k++], "session sql_mode", s[2], strcmp(s[2], SQL_MODE) != 0,
                   "the session did not keep sql_mode " SQL_MODE " as idkeeper set it; "
                   "connect to MySQL directly, not through a proxy that shares sessions");
    snprintf(val, sizeof val, "%s s", s[3]);
    ik__hazard_row(h, &rows[k++], "session innodb_lock_wait_timeout", val,
                   strtol(s[3], NULL, 10) != LOCK_WAIT_S,
                   "the session did not keep innodb_lock_wait_timeout = %d as idkeeper set "
                   "it; connect to MySQL directly",
                   LOCK_WAIT_S);
    if (c->mariadb) {
        snprintf(val, sizeof val, "%s s", s[4]);
        ik__hazard_row(h, &rows[k++], "session idle_transaction_timeout", val,
                       strtol(s[4], NULL, 10) != IDLE_TX_S,
                       "the session did not keep idle_transaction_timeout = %d as idkeeper "
                       "set it (a frozen server would keep a tag's row lock); connect to "
                       "MariaDB directly",
                       IDLE_TX_S);
    }
    snprintf(val, sizeof val, "%s s", s[5]);
    ik__hazard_row(h, &rows[k++], c->holds ? "lock session wait_timeout" : "session wait_timeout",
                   val, strtol(s[5], NULL, 10) != c->wait_s,
                   "the %s did not keep wait_timeout = %ld as idkeeper set it (%s); connect to "
                   "MySQL directly",
                   c->holds ? "lock's session" : "session", c->wait_s,
                   c->holds ? "a vanished holder would keep its lock for hours"
                            : "a vanished host's sessions would stay for hours");
    if (c->holds) {
        snprintf(val, sizeof val, "%s", s[11]);
        ik__hazard_row(h, &rows[k++],
                       c->mariadb ? "lock session max_statement_time"
                                  : "lock session max_execution_time",
                       val, strtod(s[11], NULL) != 0,
                       "the lock's session did not keep %s = 0 as idkeeper set it (a lock "
                       "wait would end before its --timeout); connect to MySQL directly",
                       ik__mysql_stmt_limit(c));
    }
    /* torn pages: as PostgreSQL's full_page_writes = off, refused (docs/hazards.md) */
    ik__hazard_row(h, &rows[k++], "innodb_doublewrite", strcmp(s[7], "1") == 0 ? "ON" : "OFF",
                   strcmp(s[7], "1") != 0,
                   "without the doublewrite buffer a crash in the middle of a page write "
                   "leaves a torn page that InnoDB's recovery cannot repair, and the rows on "
                   "it (a counter, a slot record) are lost: set innodb_doublewrite = ON in "
                   "my.cnf and restart, or start with --allow-unsafe-store to accept that");
    ik__mysql_engines_row(h, s[8], &rows[k++]);
    *db_ms = strtoll(s[10], NULL, 10);
    char slaves[32];
    snprintf(slaves, sizeof slaves, "%s", s[9]);
    mysql_free_result(r);
    rc = replica_row(c, h, slaves, &rows[k], why, why_len);
    if (rc) return rc;
    k++;
    *n = k;
    return 0;
}
