/* pg_hazards.c: the store hazard checks of a PostgreSQL session and the proof that
 * rides with each write (docs/hazards.md, "PostgreSQL"): the rows a check reads
 * back, judged by the shared verdicts (hazard.c) above the driver. */
#include "backend_pg.h"

#include <stdlib.h>
#include <string.h>

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

int ik__pg_table_row(ik__sql_conn *c, const ik__hazards *h, const char *table, const ik__sql_res *r,
                     ik_hazard *row)
{
    (void)c;
    const char *p = ik__sql_cell(r, 0, 0);
    if (r->nrows == 1 && !strcmp(p, "p")) return 0; /* permanent */
    char v[96];
    snprintf(v, sizeof v, "%.60s %s", table,
             r->nrows != 1     ? "(no such table)"
             : !strcmp(p, "u") ? "UNLOGGED"
                               : "TEMP");
    persistence_row(h, v, row);
    return 1;
}

/* The proof of a write (sql_driver.h: proof): its PROOF_COLS, and, where the write
 * must have committed, no transaction left open on the session. */
void ik__pg_proof(ik__sql_conn *c, const ik__hazards *h, const ik__sql_res *r, int in_tx,
                  ik_hazard *rows, size_t *n)
{
    size_t k = 0;
    if (r && r->nrows == 1 && r->ncols == WRITE_PROOF_NCOLS) durability_rows(h, r, rows, &k);
    if (!in_tx) tx_row(c, h, &rows[k++]);
    *n = k;
}

/* The pid and mark of the server session a statement on c runs in, judged as a proof
 * of session (ik__pg_proof_bad, no side effect): 0 if c's own, else 1 (or a class). */
static int session_moved(ik__sql_conn *c)
{
    ik__sql_res r;
    char value[96];
    int rc = ik__pg_request(c, PROOF_SQL, NULL, 0, ik__mono_ms() + IK__SQL_IO_MS, &r, NULL, 0);
    if (rc) return rc;
    rc = ik__pg_proof_bad(c, ik__sql_cell(&r, 0, 0), ik__sql_cell(&r, 0, 1), value, sizeof value);
    ik__sql_res_clear(&r);
    return rc;
}

/* A connection whose PQbackendPID is not its server session's goes through a pooler
 * (PgBouncer hands out a cancel key of its own). From one connection, session mode
 * cannot be told from transaction mode with a pool nobody else uses: so a second
 * connection is opened while c stays open, and each runs a statement after the
 * other's setup. In session mode each keeps a server session of its own: the second
 * finds no mark and another pid, and both still find their own marks. In transaction
 * mode they meet in one server session (a pool of one always; a larger pool reuses
 * the session a client just gave back). 1 and value "proven", 0 (shared: value says
 * how), or -1 (not proven: the second connection failed; value says why). */
static int pooler_mode(ik__sql_conn *c, char *value, size_t len)
{
    ik__sql_conn *c2 = NULL;
    char inner[160] = "";
    if (ik__pg_connect(&c->t, &c2, inner, sizeof inner) != 0) {
        snprintf(value, len,
                 "pid %d behind a pooler, its mode unproven (a second connection: %.60s)",
                 c->server_pid, inner);
        return -1;
    }
    int shared = c2->shared || c2->server_pid == c->server_pid;
    int moved = shared ? 0 : session_moved(c);
    int moved2 = shared || moved ? 0 : session_moved(c2);
    ik__pg_close(c2);
    if (moved < 0 || moved2 < 0) {
        snprintf(value, len, "pid %d behind a pooler, its mode unproven (no answer)",
                 c->server_pid);
        return -1;
    }
    if (shared || moved || moved2) {
        snprintf(value, len,
                 "pid %d, shared by two of our connections (a pooler in transaction mode)",
                 c->server_pid);
        return 0;
    }
    snprintf(value, len, "pid %d, kept by a pooler in session mode (proven by a second connection)",
             c->server_pid);
    return 1;
}

/* The store hazards of c (sql_driver.h: hazards; docs/hazards.md, "PostgreSQL"):
 * fsync, full_page_writes and synchronous_commit as this session sees them (a
 * role's or database's own synchronous_commit = off shows here), and the session
 * state that session_setup set, read back; the proof of session (a pooler in
 * transaction mode between us and the server shows here, as with every write),
 * whether the server is a standby (its writes fail: the row says why), and whether
 * any of our tables is UNLOGGED or TEMP. */
int ik__pg_hazards(ik__sql_conn *c, const ik__hazards *h, ik_hazard *rows, size_t *n,
                   int64_t *db_ms, char *why, size_t why_len)
{
    ik__sql_res r;
    int rc = ik__pg_request(
        c,
        "SELECT " PROOF_COLS ", current_setting('transaction_isolation'), "
        "(SELECT setting FROM pg_settings WHERE name = "
        "'idle_in_transaction_session_timeout'), "
        "(SELECT setting FROM pg_settings WHERE name = 'lock_timeout'), "
        "(SELECT setting FROM pg_settings WHERE name = 'tcp_keepalives_idle'), "
        "(SELECT setting FROM pg_settings WHERE name = 'idle_session_timeout'), "
        "inet_server_addr() IS NULL, " NOW_MS ", " SESSION_COLS ", pg_is_in_recovery(), "
        "(SELECT setting FROM pg_settings WHERE name = 'statement_timeout'), " UNDURABLE_TABLES,
        NULL, 0, ik__mono_ms() + IK__SQL_IO_MS, &r, why, why_len);
    if (rc) return rc;
    if (r.nrows != 1 || r.ncols != 15) {
        ik__sql_res_clear(&r);
        return ik__fail(IK__SQL_EDEFINITE, why, why_len, "PostgreSQL: no settings row");
    }
    size_t k = 0;
    char val[160];
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
    int foreign =
        ik__pg_proof_bad(c, ik__sql_cell(&r, 0, 10), ik__sql_cell(&r, 0, 11), val, sizeof val);
    int pooled = !foreign && PQbackendPID(c->pg) != c->server_pid, mode = 1;
    if (!foreign && !pooled)
        snprintf(val, sizeof val, "pid %d, this connection's", c->server_pid);
    else if (pooled) /* behind PgBouncer, PQbackendPID is its own random cancel key */
        foreign = (mode = pooler_mode(c, val, sizeof val)) <= 0;
    ik__hazard_row(h, &rows[k++], PROOF_CHECK, val, foreign, "%s",
                   mode < 0 ? "a pooler's mode could not be proven: connect to PostgreSQL "
                              "directly, or through PgBouncer in pool_mode = session, where "
                              "a second connection gets a server session of its own"
                            : PROOF_FIX);
    if (mode < 0) rows[k - 1].verdict = IK_VERDICT_RISK;
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
