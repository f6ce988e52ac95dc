/* backend_sql.c: the generic SQL backend (mysql://, postgresql://) as the seam sees
 * it: open (connect, check the store's hazards: backend_sql_hazards.c, create the
 * schema, check Leaf's columns), close, and the connection pool the tag calls and slot scans share.
 * Its work is done by its other files, over one driver (sql_driver.h):
 *
 *   backend_sql_slots.c  worker slots: rows of idk_slots, expiry on the db clock
 *   backend_sql_tags.c   tags: Leaf's leaf_alloc and Leaf's own statements
 *   recipe_sql.c         locks and elections: the database's session locks
 *   sql_util.c           results and the URI rule, shared with the drivers
 *
 * Calls go one way: coord.c -> the driver's ops table (IK__SQL_BACKEND) -> these
 * files -> the driver's calls (through its table) and sql_util.c.
 * docs/sql.md has the schema and the failure model.
 *
 * Passwords: the password (ik_coord_options.password, else the URI's) is kept
 * apart from the URI; every URI this backend shows (ik__sql_uri, messages) is the
 * URI with it removed.
 */
#include "backend_sql.h"
#include "internal.h"

#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int ik__sql_error(int rc)
{
    switch (rc) {
    case 0:
        return IK_OK;
    case IK__SQL_EDOUBT:
        return IK_EINDOUBT;
    case IK__SQL_EDUPLICATE:
        return IK_EEXIST;
    case IK__SQL_EFOREIGN:
        return IK_EUNSAFE;
    default:
        return rc < 0 && rc >= IK__SQL_EREFUSED ? IK_ESTORE : rc;
    }
}

int ik__sql_abort(const ik__sql_driver *d, ik__sql_conn *c, int rc)
{
    if (ik__sql_dead(rc)) return rc;
    int rb = d->exec(c, IK__SQL_ROLLBACK, NULL, 0, NULL, NULL, 0);
    return ik__sql_dead(rb) ? rb : rc;
}

int ik__sql_exec(const ik__sql_driver *d, ik__sql_conn *c, ik__sql_stmt id,
                 const char *const *params, int n, ik__sql_res *res, char *why, size_t why_len)
{
    if (res) memset(res, 0, sizeof *res);
    return d->exec(c, id, params, n, res, why, why_len);
}

int ik__sql_exec_serial(const ik__sql_driver *d, ik__sql_conn *c, const ik__sql_call *calls, int n,
                        ik__sql_res *res, int *ran, int64_t *ns, char *why, size_t why_len)
{
    memset(res, 0, (size_t)n * sizeof *res);
    *ran = 0;
    for (int i = 0; i < n; i++) {
        int64_t t0 = ns ? ik__mono_ns() : 0;
        int rc = d->exec(c, calls[i].id, calls[i].params, calls[i].nparams, &res[i], why, why_len);
        if (ns) ns[i] = ik__mono_ns() - t0;
        if (rc) return rc;
        (*ran)++;
    }
    return 0;
}

int ik__sql_exec_pipeline(const ik__sql_driver *d, ik__sql_conn *c, const ik__sql_call *calls,
                          int n, ik__sql_res *res, int *ran, char *why, size_t why_len)
{
    if (!d->exec_pipeline) return ik__sql_exec_serial(d, c, calls, n, res, ran, NULL, why, why_len);
    memset(res, 0, (size_t)n * sizeof *res);
    *ran = 0;
    return d->exec_pipeline(c, calls, n, res, ran, why, why_len);
}

/* Connects with target t and checks the new connection's hazards (every new
 * connection is checked: docs/hazards.md): 0, or a class with why. A refused row
 * does not fail the connect: the writes' gates refuse (ik__sql_hazards_gate). */
static int connect_as(ik__sql_backend *b, const ik__sql_target *t, ik__sql_conn **c, char *why,
                      size_t why_len)
{
    char inner[256] = "";
    pthread_mutex_lock(&b->mu);
    int cut = b->cut;
    pthread_mutex_unlock(&b->mu);
    if (cut) return ik__fail(IK__SQL_EGONE, why, why_len, "the stop's deadline passed");
    ik__sql_target tc = *t;
    tc.cut = &b->cut;
    int rc = b->d->connect(&tc, c, inner, sizeof inner);
    if (rc) return ik__fail(rc, why, why_len, "cannot connect: %s", inner);
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < IK__SQL_LIVE; i++)
        if (!b->live[i]) {
            b->live[i] = *c;
            break;
        }
    int fd = b->cut && b->d->socket ? b->d->socket(*c) : -1;
    if (fd >= 0) shutdown(fd, SHUT_RDWR); /* cut while it connected */
    pthread_mutex_unlock(&b->mu);
    if (b->opening) return 0; /* open checks it, and fails without a log line */
    rc = ik__sql_hazards_run(b, *c, inner, sizeof inner);
    if (rc && rc != IK_EUNSAFE) {
        ik__sql_conn_close(b, *c);
        *c = NULL;
        return ik__fail(rc < 0 && rc >= IK__SQL_EREFUSED ? rc : IK__SQL_EGONE, why, why_len,
                        "cannot connect: %s", inner);
    }
    return 0;
}

void ik__sql_conn_close(ik__sql_backend *b, ik__sql_conn *c)
{
    if (!c) return;
    pthread_mutex_lock(&b->mu);
    for (int i = 0; i < IK__SQL_LIVE; i++)
        if (b->live[i] == c) b->live[i] = NULL;
    pthread_mutex_unlock(&b->mu);
    b->d->close(c);
}

void ik__sql_cut(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    pthread_mutex_lock(&b->mu);
    __atomic_store_n(&b->cut, 1, __ATOMIC_RELEASE); /* the drivers' waits read it */
    for (int i = 0; i < IK__SQL_LIVE; i++) {
        int fd = b->live[i] && b->d->socket ? b->d->socket(b->live[i]) : -1;
        if (fd >= 0) shutdown(fd, SHUT_RDWR);
    }
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

int ik__sql_connect(ik__sql_backend *b, ik__sql_conn **c, char *why, size_t why_len)
{
    return connect_as(b, &b->t, c, why, why_len);
}

int ik__sql_connect_holder(ik__sql_backend *b, ik__sql_conn **c, char *why, size_t why_len)
{
    ik__sql_target t = b->t;
    t.holds = 1;
    return connect_as(b, &t, c, why, why_len);
}

/* 1 if the idle connection c (pooled, or a slot's between renewals) may be used
 * again; 0 if the database ended it while it sat idle (its socket is readable: an
 * idle timeout such as MySQL's wait_timeout or PostgreSQL's idle_session_timeout, a
 * restart, a terminated session), or may end it any moment now (the driver's
 * stale: idle for half the wait_timeout we set; docs/sql.md, "Connections").
 * Sending on it would fail the request as in doubt, for a statement that never
 * reached the database. */
int ik__sql_reusable(const ik__sql_driver *d, ik__sql_conn *c)
{
    if (d->stale && d->stale(c)) return 0;
    int fd = d->socket ? d->socket(c) : -1;
    if (fd < 0) return 1; /* nothing to look at: the request will tell */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    return !(n > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)));
}

int ik__sql_get(ik__sql_backend *b, int *idx, ik__sql_conn **c, char *why, size_t why_len)
{
    pthread_mutex_lock(&b->mu);
    int i;
    for (;;) {
        for (i = 0; i < IK__SQL_POOL && b->busy[i]; i++) {
        }
        if (i < IK__SQL_POOL) break;
        pthread_cond_wait(&b->cv, &b->mu);
    }
    /* prefer a connected one */
    for (int j = i; j < IK__SQL_POOL; j++)
        if (!b->busy[j] && b->pool[j]) {
            i = j;
            break;
        }
    b->busy[i] = 1;
    ik__sql_conn *have = b->pool[i];
    pthread_mutex_unlock(&b->mu);
    int rc = 0;
    if (have && !ik__sql_reusable(b->d, have)) { /* ended while idle: a new one */
        ik__sql_conn_close(b, have);
        have = NULL;
    }
    if (!have) {
        rc = ik__sql_connect(b, &have, why, why_len);
        pthread_mutex_lock(&b->mu);
        b->pool[i] = rc ? NULL : have;
        if (rc) {
            b->busy[i] = 0;
            pthread_cond_signal(&b->cv);
        }
        pthread_mutex_unlock(&b->mu);
        if (rc) return rc;
    }
    *idx = i;
    *c = have;
    return 0;
}

void ik__sql_put(ik__sql_backend *b, int idx, int rc)
{
    ik__sql_conn *dead = NULL;
    pthread_mutex_lock(&b->mu);
    if (ik__sql_dead(rc)) {
        dead = b->pool[idx];
        b->pool[idx] = NULL;
    }
    b->busy[idx] = 0;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
    if (dead) {
        ik__sql_hazards_foreign(b, dead, rc);
        ik__sql_conn_close(b, dead);
    }
}

/* Creates the schema (CREATE ... IF NOT EXISTS) and checks leaf_alloc's columns, on
 * c (its hazards were checked as it connected). 0 or an ik_error with why. */
static int prepare(ik__sql_backend *b, ik__sql_conn *c, char *why, size_t why_len)
{
    const ik__sql_driver *d = b->d;
    const char *const *schema = b->base.ops->schema; /* IK__SQL_BACKEND's SCHEMA */
    char inner[256] = "";
    int rc = 0;
    for (int i = 0; schema[i]; i++) {
        /* two servers creating one table at once can trip over each other (a
         * unique violation in the catalog): the second try finds it made */
        for (int attempt = 0; attempt < 3; attempt++) {
            rc = d->run(c, schema[i], inner, sizeof inner);
            if (rc != IK__SQL_EDUPLICATE && rc != IK__SQL_EDEFINITE) break;
        }
        if (rc)
            return ik__fail(ik__sql_error(rc), why, why_len, "cannot create the schema: %s", inner);
    }
    rc = d->exec(c, IK__SQL_TAG_COLUMNS, NULL, 0, NULL, inner, sizeof inner);
    if (rc)
        return ik__fail(ik__sql_error(rc), why, why_len,
                        "leaf_alloc is not Leaf's table (biz_tag, max_id, step, "
                        "description, update_time): %s",
                        inner);
    return 0;
}

/* The hazards of open's first connection: a refused row fails the open with one
 * message naming it (docs/hazards.md), and nothing logged, unless the caller only
 * checks (idkeeper check); otherwise the rows are installed (risks accepted by
 * --allow-unsafe-store are logged then). 0 or an ik_error with why. */
static int open_hazards(ik__sql_backend *b, ik__sql_conn *c, int check_only, char *why,
                        size_t why_len)
{
    ik_hazard rows[IK__SQL_HAZARDS_MAX + 1];
    size_t n = 0;
    char inner[256] = "";
    int rc = ik__sql_hazards_read(b, c, rows, &n, inner, sizeof inner);
    if (rc) return ik__fail(ik__sql_error(rc), why, why_len, "%s", inner);
    for (size_t i = 0; i < n && !check_only; i++)
        if (rows[i].verdict == IK_VERDICT_REFUSED)
            return ik__fail(IK_EUNSAFE, why, why_len, "%s is %s (%s): %s", rows[i].check,
                            rows[i].value, b->shown, rows[i].fix);
    rc = ik__hazards_update(&b->base.hz, rows, n, NULL, 0);
    return rc == IK_EUNSAFE && check_only ? 0 : rc;
}

void ik__sql_close(ik__backend *be)
{
    ik__sql_backend *b = ik__sql_of(be);
    if (!b) return;
    for (int i = 0; i < IK__SQL_POOL; i++)
        if (b->pool[i]) ik__sql_conn_close(b, b->pool[i]);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    if (b->password) {
        memset(b->password, 0, strlen(b->password));
        free(b->password);
    }
    free(b->uri);
    free(b->shown);
    free(b->test_before_take_commit);
    free(b->test_before_advance_commit);
    free(b->test_commit_hold);
    ik__hazards_free(&b->base.hz);
    free(b);
}

int ik__sql_open(const ik__sql_driver *d, const ik__backend_ops *ops, const char *uri,
                 const ik_coord_options *o, ik__backend **out, char *why, size_t why_len)
{
    if (o->lease_ttl_ms < 1000 || o->lease_ttl_ms > 600000)
        return ik__fail(IK_EINVAL, why, why_len, "lease TTL must be 1000 to 600000 ms");
    ik__sql_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = ops;
    b->d = d;
    b->ttl_ms = o->lease_ttl_ms;
    const char *cyc = getenv("IDKEEPER_BENCH_CYCLE"); /* benchmarks only */
    b->cycle = !cyc || !*cyc || strcmp(cyc, "0") == 0 ? 0 : strcmp(cyc, "serial") == 0 ? 2 : 1;
    const char *pause = getenv("IDKEEPER_TEST_SQL_COMMIT_PAUSE_MS"); /* tests only */
    long pause_ms = pause ? strtol(pause, NULL, 10) : 0;
    b->test_commit_pause_ms = pause_ms > 0 && pause_ms <= 60000 ? (int)pause_ms : 0;
    const char *take = getenv("IDKEEPER_TEST_SQL_BEFORE_TAKE_COMMIT"); /* tests only */
    const char *adv = getenv("IDKEEPER_TEST_SQL_BEFORE_ADVANCE_COMMIT");
    const char *hold = getenv("IDKEEPER_TEST_SQL_COMMIT_HOLD");
    if ((take && *take && !(b->test_before_take_commit = strdup(take))) ||
        (adv && *adv && !(b->test_before_advance_commit = strdup(adv))) ||
        (hold && *hold && !(b->test_commit_hold = strdup(hold)))) {
        free(b->test_before_take_commit);
        free(b->test_before_advance_commit);
        free(b);
        return IK_ENOMEM;
    }
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    char *uri_password = NULL;
    b->uri = ik__sql_uri_redact(uri, &uri_password); /* for the driver: no password */
    size_t shown_len = strlen(uri) + 8;
    if ((b->shown = malloc(shown_len))) ik__uri_redact(uri, b->shown, shown_len);
    if (o->password) {
        b->password = strdup(o->password);
        if (uri_password) memset(uri_password, 0, strlen(uri_password));
        free(uri_password);
    } else {
        b->password = uri_password;
    }
    if (!b->uri || !b->shown || (o->password && !b->password)) {
        ik__sql_close(&b->base);
        return IK_ENOMEM;
    }
    b->t.uri = b->uri; /* the driver gets the password apart */
    b->t.shown = b->shown;
    b->t.password = b->password;
    b->t.ttl_ms = b->ttl_ms;
    ik__hazards_init(&b->base.hz, o, b->ttl_ms, b->shown);
    ik__sql_conn *c = NULL;
    b->opening = 1;
    int rc = ik__sql_connect(b, &c, why, why_len);
    b->opening = 0;
    if (rc) {
        ik__sql_close(&b->base);
        return rc == IK__SQL_EREFUSED ? IK_EDENIED : ik__sql_error(rc);
    }
    b->pool[0] = c;
    rc = open_hazards(b, c, o->check_only, why, why_len);
    if (rc) {
        ik__sql_close(&b->base);
        return rc;
    }
    rc = prepare(b, c, why, why_len);
    if (rc && !o->check_only) {
        ik__sql_close(&b->base);
        return rc;
    }
    if (rc) { /* check: a schema serve could not make is a refused row, not exit 0 */
        ik_hazard row;
        ik__hazard_row(&b->base.hz, &row, "schema", why, 1,
                       "serve cannot make or use idkeeper's tables here: %s", why);
        row.verdict = IK_VERDICT_REFUSED; /* not a risk: serve fails whatever is allowed */
        ik__hazards_update(&b->base.hz, &row, 1, NULL, 0);
    }
    b->opened = 1;
    *out = &b->base;
    return IK_OK;
}

const char *ik__sql_uri(const ik__backend *be)
{
    return ((const ik__sql_backend *)be)->shown;
}

void ik__sql_session(ik__backend *be, char *buf, size_t len)
{
    ik__sql_backend *b = ik__sql_of(be);
    pthread_mutex_lock(&b->mu);
    snprintf(buf, len, "%s", b->session);
    pthread_mutex_unlock(&b->mu);
}

int64_t ik__sql_slot_free_ms(ik__backend *be)
{
    return ik__sql_of(be)->ttl_ms;
}

int ik__sql_hazards_check(ik__backend *be, char *why, size_t why_len)
{
    ik__sql_backend *b = ik__sql_of(be);
    ik__sql_conn *c;
    int idx;
    int rc = ik__sql_get(b, &idx, &c, why, why_len);
    if (rc) return ik__sql_error(rc);
    rc = ik__sql_hazards_run(b, c, why, why_len);
    ik__sql_put(b, idx, rc == IK_EUNSAFE ? 0 : rc);
    return rc == IK_EUNSAFE || rc == 0 ? rc : ik__sql_error(rc);
}
