/* mysql_conn.c: the MySQL/MariaDB session layer under the driver's files: the
 * connector's start, its error classes, and the non-blocking statement runner every
 * statement goes through (its deadline and cut; docs/sql.md). Calls nothing in
 * backend_mysql.c or mysql_hazards.c, which both call it. */
#include "backend_mysql.h"

#include <errmsg.h>
#include <errno.h>
#include <mysqld_error.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* ---- the connection ----------------------------------------------------------- */

pthread_once_t ik__mysql_lib_once = PTHREAD_ONCE_INIT;
int ik__mysql_lib_rc;
void ik__mysql_lib_init(void)
{
    ik__mysql_lib_rc = mysql_library_init(0, NULL, NULL);
}

/* 1 if err says the connection (not the statement) failed. */
int ik__mysql_conn_errno(unsigned err)
{
    return (err >= 2000 && err < 3000) || err == ER_CONNECTION_KILLED ||
           err == ER_SERVER_SHUTDOWN || err == ER_QUERY_INTERRUPTED || err == ER_NET_READ_ERROR ||
           err == ER_NET_READ_INTERRUPTED || err == ER_NET_ERROR_ON_WRITE ||
           err == ER_NET_WRITE_INTERRUPTED || err == ER_NET_PACKETS_OUT_OF_ORDER;
}

/* Marks c dead and cuts its socket, so that a server that still runs its side sees
 * the session end (and frees its locks) as soon as it looks. */
void ik__mysql_conn_kill(ik__sql_conn *c)
{
    if (c->dead) return;
    c->dead = 1;
    int fd = (int)mysql_get_socket(c->m);
    if (fd >= 0) shutdown(fd, SHUT_RDWR);
}

/* Waits for what the connector's non-blocking call asked (status) until deadline
 * (ik__mono_ms): the status to continue with, or 0 if the deadline passed (or, with
 * cancel, if *cancel became nonzero: then *canceled = 1). */
int ik__mysql_wait_io(ik__sql_conn *c, int status, int64_t deadline, const volatile int *cancel,
                      int *canceled)
{
    struct pollfd p = {.fd = (int)mysql_get_socket(c->m), .events = 0};
    if (status & MYSQL_WAIT_READ) p.events |= POLLIN;
    if (status & MYSQL_WAIT_WRITE) p.events |= POLLOUT;
    if (status & MYSQL_WAIT_EXCEPT) p.events |= POLLPRI;
    for (;;) {
        if (cancel && *cancel) {
            *canceled = 1;
            return 0;
        }
        if (c->cut && __atomic_load_n(c->cut, __ATOMIC_ACQUIRE)) return 0; /* as at the deadline */
        int64_t left = deadline - ik__mono_ms();
        if (left <= 0) return 0;
        int slice = left > 100 ? 100 : (int)left;
        int r = poll(&p, 1, slice);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return MYSQL_WAIT_EXCEPT;
        if (r == 0) continue;
        int got = 0;
        if (p.revents & POLLIN) got |= MYSQL_WAIT_READ;
        if (p.revents & POLLOUT) got |= MYSQL_WAIT_WRITE;
        if (p.revents & POLLPRI) got |= MYSQL_WAIT_EXCEPT;
        if (p.revents & (POLLERR | POLLHUP | POLLNVAL))
            got |= status & (MYSQL_WAIT_READ | MYSQL_WAIT_WRITE);
        return got ? got : status;
    }
}

/* Finishes an outstanding ping (before a statement, which cannot share the wire
 * with it) by deadline: 0, or IK__SQL_EGONE (c is then dead). */
int ik__mysql_ping_finish(ik__sql_conn *c, int64_t deadline)
{
    while (c->ping_status) {
        int got = ik__mysql_wait_io(c, c->ping_status, deadline, NULL, NULL);
        if (!got) {
            ik__mysql_conn_kill(c);
            c->ping_status = 0;
            return IK__SQL_EGONE;
        }
        c->ping_status = mysql_ping_cont(&c->ping_ret, c->m, got);
    }
    if (c->ping_ret) {
        ik__mysql_conn_kill(c);
        return IK__SQL_EGONE;
    }
    return 0;
}

/* Writes the server's message for the failed request into why. */
int ik__mysql_failed(ik__sql_conn *c, int sent, char *why, size_t why_len)
{
    unsigned e = mysql_errno(c->m);
    if (ik__mysql_conn_errno(e)) {
        ik__fail(0, why, why_len, "MySQL connection failed: %s (%u)", mysql_error(c->m), e);
        ik__mysql_conn_kill(c);
        return sent ? IK__SQL_EDOUBT : IK__SQL_EGONE;
    }
    ik__fail(0, why, why_len, "MySQL: %s (%u)", mysql_error(c->m), e);
    return e == ER_DUP_ENTRY ? IK__SQL_EDUPLICATE : IK__SQL_EDEFINITE;
}

/* Drives a query begun with mysql_real_query_start (*st, *ret) until the server
 * answers or deadline passes: 0 (answered: *ret is the connector's verdict),
 * IK__SQL_ECANCELED if *cancel became nonzero (the request is still out: *st and
 * *ret say where to go on), or IK__SQL_EDOUBT (no answer by deadline: c is dead). */
int ik__mysql_query_wait(ik__sql_conn *c, int *st, int *ret, int64_t deadline,
                         const volatile int *cancel, char *why, size_t why_len)
{
    while (*st) {
        int canceled = 0;
        int got = ik__mysql_wait_io(c, *st, deadline, cancel, &canceled);
        if (canceled) return IK__SQL_ECANCELED;
        if (!got) {
            ik__mysql_conn_kill(c);
            return ik__fail(IK__SQL_EDOUBT, why, why_len, "MySQL: no answer in time");
        }
        *st = mysql_real_query_cont(ret, c->m, got);
    }
    return 0;
}

/* Reads the whole result of a query that the server answered (*ret from
 * query_wait) by deadline: 0 with *out (NULL for a statement without rows) and
 * *affected, or a class. */
int ik__mysql_query_result(ik__sql_conn *c, int ret, int64_t deadline, MYSQL_RES **out,
                           int64_t *affected, char *why, size_t why_len)
{
    *out = NULL;
    c->tx.answers++; /* for tx_note (backend_mysql.c): every answer, read or failed */
    if (ret) return ik__mysql_failed(c, 1, why, why_len);
    MYSQL_RES *res = NULL;
    int st = mysql_store_result_start(&res, c->m);
    while (st) {
        int got = ik__mysql_wait_io(c, st, deadline, NULL, NULL);
        if (!got) {
            ik__mysql_conn_kill(c);
            return ik__fail(IK__SQL_EDOUBT, why, why_len, "MySQL: no answer in time");
        }
        st = mysql_store_result_cont(&res, c->m, got);
    }
    if (!res && mysql_field_count(c->m) > 0) return ik__mysql_failed(c, 1, why, why_len);
    *affected = res ? (int64_t)mysql_num_rows(res) : (int64_t)mysql_affected_rows(c->m);
    *out = res;
    return 0;
}

/* Begins q on c (after any ping that is out): 0 with *st, *ret set for query_wait,
 * or a class. */
int ik__mysql_query_start(ik__sql_conn *c, const char *q, size_t qlen, int64_t deadline, int *st,
                          int *ret, char *why, size_t why_len)
{
    if (c->dead) return ik__fail(IK__SQL_EGONE, why, why_len, "MySQL connection closed");
    int rc = ik__mysql_ping_finish(c, deadline);
    if (rc) return ik__fail(rc, why, why_len, "MySQL connection lost (no answer to a ping)");
    *ret = 0;
    *st = mysql_real_query_start(ret, c->m, q, (unsigned long)qlen);
    return 0;
}

/* Sends q and reads its whole result by deadline (M2): 0 with *out (NULL for a
 * statement without rows) and *affected, or a class. */
int ik__mysql_run(ik__sql_conn *c, const char *q, size_t qlen, int64_t deadline, MYSQL_RES **out,
                  int64_t *affected, char *why, size_t why_len)
{
    int st = 0, ret = 0;
    *out = NULL;
    int rc = ik__mysql_query_start(c, q, qlen, deadline, &st, &ret, why, why_len);
    if (!rc) rc = ik__mysql_query_wait(c, &st, &ret, deadline, NULL, why, why_len);
    if (!rc) rc = ik__mysql_query_result(c, ret, deadline, out, affected, why, why_len);
    c->used_ms = ik__mono_ms(); /* the server's idle time began before this */
    return rc;
}

const char *ik__mysql_stmt_limit(const ik__sql_conn *c)
{
    return c->mariadb ? "max_statement_time" : "max_execution_time";
}
