/* sql_naive.c: the naive gap-free peer of the SQL benchmarks (bench/sql_sequence.sh,
 * sql_acquire.sh): CLIENTS connections, each on a thread of its own, each running
 * one autocommit statement per ID for SECONDS:
 *   PostgreSQL: UPDATE leaf_alloc SET max_id = max_id + 1 WHERE biz_tag = 'naive'
 *               RETURNING max_id
 *   MariaDB:    UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + 1)
 *               WHERE biz_tag = 'naive'   (the new value comes back with the OK
 *               packet, mysql_insert_id(): no second round trip)
 * One durable commit per ID, the value read back: what a service writes when it
 * wants contiguous numbers straight from its database. Prints
 *   ids_per_s=N p50_ms=X p99_ms=Y ids=N
 * and fails if the IDs it got are not distinct (they come from one row).
 *   sql_naive URI CLIENTS SECONDS
 * With a fourth argument "lock", the peer of the lock benchmark (bench/sql_lock.sh):
 * each client takes and releases the database's own session lock in a loop
 *   PostgreSQL: SELECT pg_advisory_lock(4242); SELECT pg_advisory_unlock(4242)
 *   MariaDB:    SELECT GET_LOCK('ik_bench', 10); SELECT RELEASE_LOCK('ik_bench')
 * and prints cycles_per_s=N p50_ms=X p99_ms=Y (a cycle: acquire + release).
 * URI: postgresql://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB; the password
 * is $IDKEEPER_PASSWORD. The row biz_tag = 'naive' must exist. */
#include <libpq-fe.h>
#include <mysql.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *uri, *password;
static int is_pg, lock_mode;
static double seconds;
static char user[128], host[128], db[128];
static unsigned port;

typedef struct {
    int64_t *lat, *ids;
    size_t n, cap;
    int failed;
} client;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(client *c, int64_t lat, int64_t id)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 4096;
        c->lat = realloc(c->lat, c->cap * sizeof *c->lat);
        c->ids = realloc(c->ids, c->cap * sizeof *c->ids);
        if (!c->lat || !c->ids) abort();
    }
    c->lat[c->n] = lat;
    c->ids[c->n++] = id;
}

static void run_pg(client *c, int64_t until)
{
    char conninfo[512];
    snprintf(conninfo, sizeof conninfo, "host=%s port=%u user=%s dbname=%s password=%s", host, port,
             user, db, password);
    PGconn *pg = PQconnectdb(conninfo);
    if (PQstatus(pg) != CONNECTION_OK) {
        fprintf(stderr, "sql_naive: %s", PQerrorMessage(pg));
        c->failed = 1;
        PQfinish(pg);
        return;
    }
    if (lock_mode) {
        while (!c->failed && now_ns() < until) {
            int64_t t0 = now_ns();
            PGresult *a = PQexec(pg, "SELECT pg_advisory_lock(4242)");
            PGresult *b = PQexec(pg, "SELECT pg_advisory_unlock(4242)");
            if (PQresultStatus(a) != PGRES_TUPLES_OK || PQresultStatus(b) != PGRES_TUPLES_OK ||
                strcmp(PQgetvalue(b, 0, 0), "t")) {
                fprintf(stderr, "sql_naive: %s", PQerrorMessage(pg));
                c->failed = 1;
            } else {
                record(c, now_ns() - t0, (int64_t)c->n);
            }
            PQclear(a);
            PQclear(b);
        }
        PQfinish(pg);
        return;
    }
    PGresult *r = PQprepare(pg, "next",
                            "UPDATE leaf_alloc SET max_id = max_id + 1 WHERE biz_tag = 'naive' "
                            "RETURNING max_id",
                            0, NULL);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) c->failed = 1;
    PQclear(r);
    while (!c->failed && now_ns() < until) {
        int64_t t0 = now_ns();
        r = PQexecPrepared(pg, "next", 0, NULL, NULL, NULL, 0);
        if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) {
            fprintf(stderr, "sql_naive: %s", PQerrorMessage(pg));
            c->failed = 1;
        } else {
            record(c, now_ns() - t0, atoll(PQgetvalue(r, 0, 0)));
        }
        PQclear(r);
    }
    PQfinish(pg);
}

static void run_my(client *c, int64_t until)
{
    static const char q[] =
        "UPDATE leaf_alloc SET max_id = LAST_INSERT_ID(max_id + 1) WHERE biz_tag = 'naive'";
    MYSQL *my = mysql_init(NULL);
    if (!my || !mysql_real_connect(my, host, user, password, db, port, NULL, 0)) {
        fprintf(stderr, "sql_naive: %s\n", my ? mysql_error(my) : "out of memory");
        c->failed = 1;
        if (my) mysql_close(my);
        return;
    }
    while (lock_mode && !c->failed && now_ns() < until) {
        static const char a[] = "SELECT GET_LOCK('ik_bench', 10)",
                          b[] = "SELECT RELEASE_LOCK('ik_bench')";
        int64_t t0 = now_ns();
        int ok = 1;
        for (int k = 0; k < 2 && ok; k++) {
            MYSQL_RES *res = NULL;
            MYSQL_ROW row;
            ok = !mysql_real_query(my, k ? b : a, k ? sizeof b - 1 : sizeof a - 1) &&
                 (res = mysql_store_result(my)) && (row = mysql_fetch_row(res)) && row[0] &&
                 !strcmp(row[0], "1");
            if (res) mysql_free_result(res);
        }
        if (!ok) {
            fprintf(stderr, "sql_naive: lock: %s\n", mysql_error(my));
            c->failed = 1;
        } else {
            record(c, now_ns() - t0, (int64_t)c->n);
        }
    }
    while (!lock_mode && !c->failed && now_ns() < until) {
        int64_t t0 = now_ns();
        if (mysql_real_query(my, q, sizeof q - 1) || mysql_affected_rows(my) != 1) {
            fprintf(stderr, "sql_naive: %s\n", mysql_error(my));
            c->failed = 1;
        } else {
            record(c, now_ns() - t0, (int64_t)mysql_insert_id(my));
        }
    }
    mysql_close(my);
}

static int64_t start_at;

static void *client_main(void *arg)
{
    client *c = arg;
    int64_t until = start_at + (int64_t)(seconds * 1e9);
    if (is_pg)
        run_pg(c, until);
    else
        run_my(c, until);
    return NULL;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    lock_mode = argc == 5 && !strcmp(argv[4], "lock");
    if (argc != 4 && !lock_mode) {
        fprintf(stderr, "usage: sql_naive URI CLIENTS SECONDS\n");
        return 2;
    }
    uri = argv[1];
    int n = atoi(argv[2]);
    seconds = atof(argv[3]);
    password = getenv("IDKEEPER_PASSWORD");
    if (!password) password = "";
    const char *rest;
    if (!strncmp(uri, "postgresql://", 13)) {
        is_pg = 1;
        rest = uri + 13;
    } else if (!strncmp(uri, "mysql://", 8)) {
        rest = uri + 8;
    } else {
        fprintf(stderr, "sql_naive: a postgresql:// or mysql:// URI\n");
        return 2;
    }
    if (n < 1 || n > 1024 || seconds <= 0 ||
        sscanf(rest, "%127[^@]@%127[^:]:%u/%127[^?]", user, host, &port, db) != 4) {
        fprintf(stderr, "usage: sql_naive SCHEME://USER@HOST:PORT/DB CLIENTS SECONDS\n");
        return 2;
    }
    if (!is_pg) mysql_library_init(0, NULL, NULL);
    client *cs = calloc((size_t)n, sizeof *cs);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!cs || !t) return 1;
    start_at = now_ns() + 200000000; /* connect first, then run together */
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, client_main, &cs[i]);
    size_t total = 0;
    int failed = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        total += cs[i].n;
        failed |= cs[i].failed;
    }
    if (failed || total == 0) return 1;
    int64_t *lat = malloc(total * sizeof *lat), *ids = malloc(total * sizeof *ids);
    if (!lat || !ids) return 1;
    size_t k = 0;
    for (int i = 0; i < n; i++) {
        memcpy(lat + k, cs[i].lat, cs[i].n * sizeof *lat);
        memcpy(ids + k, cs[i].ids, cs[i].n * sizeof *ids);
        k += cs[i].n;
    }
    qsort(lat, total, sizeof *lat, cmp64);
    if (lock_mode) {
        printf("cycles_per_s=%.0f p50_ms=%.3f p99_ms=%.3f cycles=%zu\n", (double)total / seconds,
               lat[total / 2] / 1e6, lat[(total * 99) / 100] / 1e6, total);
        return 0;
    }
    qsort(ids, total, sizeof *ids, cmp64);
    for (size_t i = 1; i < total; i++)
        if (ids[i] == ids[i - 1]) {
            fprintf(stderr, "sql_naive: ID %lld twice\n", (long long)ids[i]);
            return 1;
        }
    printf("ids_per_s=%.0f p50_ms=%.3f p99_ms=%.3f ids=%zu\n", (double)total / seconds,
           lat[total / 2] / 1e6, lat[(total * 99) / 100] / 1e6, total);
    return 0;
}
