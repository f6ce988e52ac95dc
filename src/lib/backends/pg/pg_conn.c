/* pg_conn.c: the session layer of the PostgreSQL driver (backend_pg.h): a
 * connection through libpq with its timeouts and session settings, one statement and
 * its answer by a deadline, the class of each failure, and the proof of session
 * (docs/hazards.md, "PostgreSQL"). Every request goes out with libpq's asynchronous
 * calls and is waited for with poll() up to a time limit (IK__SQL_IO_MS), so that a
 * database that stops answering is a timeout here, never a thread stuck in a read. A
 * request whose answer does not come in time leaves the connection dead (EDOUBT):
 * its answer may still come, and nothing else may be read after it. */
#include "backend_pg.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

/* One line of libpq's message into why: newlines and runs of spaces as one
 * space, "ERROR:  " and the like kept. */
void ik__pg_one_line(const char *msg, char *why, size_t why_len)
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

/* Waits until the answer to the request out is complete (PQisBusy false) or
 * until_ms: 0, IK__SQL_ETIMEOUT, or IK__SQL_EGONE (the connection broke). */
int ik__pg_wait_ready(ik__sql_conn *c, int64_t until_ms)
{
    for (;;) {
        if (!PQconsumeInput(c->pg)) return IK__SQL_EGONE;
        if (!PQisBusy(c->pg)) return 0;
        int64_t left = until_ms - ik__mono_ms();
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
int ik__pg_collect(ik__sql_conn *c, int64_t until_ms, PGresult **out, char *why, size_t why_len)
{
    PGresult *keep = NULL;
    int rc = 0;
    for (;;) {
        int w = ik__pg_wait_ready(c, until_ms);
        if (w) {
            c->dead = 1;
            PQclear(keep);
            ik__pg_one_line(w == IK__SQL_ETIMEOUT ? "no answer in time" : PQerrorMessage(c->pg),
                            why, why_len);
            return IK__SQL_EDOUBT;
        }
        PGresult *r = PQgetResult(c->pg);
        if (!r) break;
        ExecStatusType st = PQresultStatus(r);
        if (rc == 0 && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            rc = class_of(c, r);
            ik__pg_one_line(PQresultErrorMessage(r), why, why_len);
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

int ik__pg_fill(const PGresult *r, ik__sql_res *res)
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
int ik__pg_proof_bad(const ik__sql_conn *c, const char *pid, const char *mark, char *value,
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

/* Sends sql with params and waits for its answer up to until_ms. */
int ik__pg_request(ik__sql_conn *c, const char *sql, const char *const *params, int n,
                   int64_t until_ms, ik__sql_res *res, char *why, size_t why_len)
{
    if (!c || c->dead || PQstatus(c->pg) != CONNECTION_OK) {
        ik__pg_one_line("the connection is gone", why, why_len);
        return IK__SQL_EGONE;
    }
    if (c->ping_pending) { /* a ping's late answer first (recipe_sql.c's release) */
        PGresult *r = NULL;
        int rc = ik__pg_collect(c, until_ms, &r, why, why_len);
        PQclear(r);
        c->ping_pending = 0;
        if (rc) return IK__SQL_EGONE;
    }
    if (!PQsendQueryParams(c->pg, sql, n, NULL, params, NULL, NULL, 0)) {
        c->dead = 1;
        ik__pg_one_line(PQerrorMessage(c->pg), why, why_len);
        return IK__SQL_EGONE;
    }
    PGresult *r = NULL;
    int rc = ik__pg_collect(c, until_ms, &r, why, why_len);
    if (rc == 0 && ik__pg_fill(r, res) != 0) rc = IK__SQL_EDEFINITE;
    PQclear(r);
    return rc;
}

int ik__pg_proof_check(ik__sql_conn *c, const char *pid, const char *mark, char *why,
                       size_t why_len)
{
    if (!ik__pg_proof_bad(c, pid, mark, c->hz.foreign_value, sizeof c->hz.foreign_value)) return 0;
    c->hz.foreign = 1;
    c->hz.foreign_check = PROOF_CHECK;
    c->hz.foreign_fix = PROOF_FIX;
    /* a transaction's writes are not committed (an autocommit one is, elsewhere) */
    ik__pg_request(c, "ROLLBACK", NULL, 0, ik__mono_ms() + IK__SQL_IO_MS, NULL, NULL, 0);
    c->dead = 1;
    if (why && why_len)
        snprintf(why, why_len, "%s is %s: %s", PROOF_CHECK, c->hz.foreign_value, PROOF_FIX);
    return IK__SQL_EFOREIGN;
}

/* libpq prints NOTICEs ("relation ... already exists, skipping") to stderr by
 * default: they are not the operator's business; but one that comes with a write is
 * part of its evidence (SP2 of backend_sql_proof.c), so the first of each
 * statement is kept, in one line, for note_write. */
static void on_notice(void *arg, const PGresult *r)
{
    ik__sql_conn *c = arg;
    if (!c->note[0]) ik__pg_one_line(PQresultErrorMessage(r), c->note, sizeof c->note);
}

/* Sets the session state our statements rely on and the session limits, derived
 * from the lease TTL (docs/sql.md, "Session settings"); ik__pg_hazards reads them back.
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
    int rc = ik__pg_request(c, q, NULL, 0, ik__mono_ms() + IK__SQL_IO_MS, &r, why, why_len);
    if (rc) return rc;
    c->server_pid = (int)ik__sql_int(&r, 0, 0);
    c->shared = *ik__sql_cell(&r, 0, 1) != '\0';
    ik__sql_res_clear(&r);
    return 0;
}

int ik__pg_connect(const ik__sql_target *t, ik__sql_conn **out, char *why, size_t why_len)
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
    c->t = *t;
    /* non-blocking, so that a cut (ik__sql_target.cut) ends a connect under way;
     * libpq leaves connect_timeout to us then: IK__SQL_IO_MS in all */
    c->pg = PQconnectStartParams(keys, vals, 1);
    if (!c->pg) {
        free(c);
        return IK_ENOMEM;
    }
    int64_t until = ik__mono_ms() + IK__SQL_IO_MS;
    PostgresPollingStatusType ps = PGRES_POLLING_WRITING;
    while (PQstatus(c->pg) != CONNECTION_BAD && ps != PGRES_POLLING_OK &&
           ps != PGRES_POLLING_FAILED) {
        int64_t left = until - ik__mono_ms();
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
        ik__pg_one_line(msg, why, why_len);
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

void ik__pg_close(ik__sql_conn *c)
{
    if (!c) return;
    PQfinish(c->pg);
    free(c);
}
