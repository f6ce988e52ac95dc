/* test_counters_local_mt.c: tags, segment and sequence IDs on local: (real SQLite
 * files), with threads, and with two allocators on two connections standing in for
 * two servers: no duplicate, segment IDs increasing, sequence IDs one contiguous run;
 * a sequence request withdrawn before its write is never committed; the advance's
 * statement, prepared once, follows what other connections do to the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct fx {
    char dir[64], uri[80];
    ik_coord *c1, *c2;
} fx;

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    local_dir_make(f->dir, f->uri, "ik-counters");
    assert_int_equal(ik_coord_open(f->uri, NULL, &f->c1, NULL, 0), 0);
    assert_int_equal(ik_coord_open(f->uri, NULL, &f->c2, NULL, 0), 0);
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fx *f = *st;
    ik_coord_close(f->c1);
    ik_coord_close(f->c2);
    local_dir_remove(f->dir);
    free(f);
    return 0;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void tags_validate_and_persist(void **st)
{
    fx *f = *st;
    char why[200];
    assert_int_equal(ik_tag_create(f->c1, "app", "orders", IK_TAG_SEGMENT, 1000, 50,
                                   "order numbers", why, sizeof why),
                     0);
    assert_int_equal(
        ik_tag_create(f->c2, "app", "orders", IK_TAG_SEQUENCE, 0, 1, NULL, why, sizeof why),
        IK_EEXIST);
    assert_int_equal(
        ik_tag_create(f->c1, "app", "invoices", IK_TAG_SEQUENCE, 1, 0, NULL, why, sizeof why), 0);
    assert_int_equal(
        ik_tag_create(f->c1, "app", "zero", IK_TAG_SEGMENT, 1, 0, NULL, why, sizeof why),
        IK_EINVAL);
    assert_non_null(strstr(why, "step"));
    assert_int_equal(
        ik_tag_create(f->c1, "app", "neg", IK_TAG_SEGMENT, -1, 10, NULL, why, sizeof why),
        IK_EINVAL);
    assert_non_null(strstr(why, "start"));
    char long_name[200];
    memset(long_name, 'a', 129);
    long_name[129] = '\0';
    assert_int_equal(
        ik_tag_create(f->c1, "app", long_name, IK_TAG_SEGMENT, 1, 10, NULL, why, sizeof why),
        IK_EINVAL);
    assert_int_equal(
        ik_tag_create(f->c1, "app", "bad/name", IK_TAG_SEGMENT, 1, 10, NULL, why, sizeof why),
        IK_EINVAL);
    long_name[128] = '\0';
    assert_int_equal(
        ik_tag_create(f->c1, "app", long_name, IK_TAG_SEGMENT, 1, 10, NULL, why, sizeof why), 0);

    ik_tag_info t;
    assert_int_equal(ik_tag_get(f->c2, "app", "orders", &t), 0);
    assert_int_equal(t.kind, IK_TAG_SEGMENT);
    assert_int_equal(t.start, 1000);
    assert_int_equal(t.max_id, 1000);
    assert_int_equal(t.step, 50);
    assert_string_equal(t.description, "order numbers");
    assert_int_equal(ik_tag_get(f->c2, "app", "nope", &t), IK_ENOTFOUND);
    assert_int_equal(ik_tag_get(f->c2, "other-app", "orders", &t), IK_ENOTFOUND);
    ik_tag_info *v;
    size_t n;
    assert_int_equal(ik_tags_list(f->c1, "app", &v, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(v[0].name, long_name);
    assert_string_equal(v[1].name, "invoices");
    ik_free(v);
}

static void segment_single_thread_increasing_from_start(void **st)
{
    fx *f = *st;
    assert_int_equal(
        ik_tag_create(f->c1, "default", "seg", IK_TAG_SEGMENT, 500, 100, NULL, NULL, 0), 0);
    ik_segment *s;
    assert_int_equal(ik_segment_create(f->c1, "default", NULL, &s), 0);
    int64_t prev = 499, id;
    for (int i = 0; i < 20000; i++) {
        assert_int_equal(ik_segment_next_wait(s, "seg", 1, &id), 0);
        if (id <= prev) fail_msg("id %lld after %lld", (long long)id, (long long)prev);
        prev = id;
    }
    /* unknown tag, wrong kind */
    assert_int_equal(ik_segment_next_wait(s, "nope", 1, &id), IK_ENOTFOUND);
    assert_int_equal(ik_tag_create(f->c1, "default", "seq", IK_TAG_SEQUENCE, 1, 1, NULL, NULL, 0),
                     0);
    assert_int_equal(ik_segment_next_wait(s, "seq", 1, &id), IK_EKIND);
    /* the next block is preloaded before the current runs out */
    ik_segment_tag_status *v;
    size_t n;
    assert_int_equal(ik_segment_status(s, &v, &n), 0);
    assert_int_equal(n, 1);
    assert_true(v[0].step > 100); /* blocks loaded fast grow */
    ik_free(v);
    ik_segment_destroy(s);

    /* a restarted allocator never hands out an ID at or below one before */
    assert_int_equal(ik_segment_create(f->c1, "default", NULL, &s), 0);
    assert_int_equal(ik_segment_next_wait(s, "seg", 1, &id), 0);
    assert_true(id > prev);
    ik_segment_destroy(s);
}

/* A request that needs more than two blocks (count 1000 on a step of 10: blocks of
 * 10, 20, 40, ... as they grow) makes the loader take block after block; every block
 * taken from the store is used, none is overwritten while still pending: IDs drawn +
 * IDs still held in the blocks equal max_id's advance. */
static void segment_big_request_wastes_no_block(void **st)
{
    fx *f = *st;
    assert_int_equal(ik_tag_create(f->c1, "default", "big", IK_TAG_SEGMENT, 1, 10, NULL, NULL, 0),
                     0);
    ik_segment *s;
    assert_int_equal(ik_segment_create(f->c1, "default", NULL, &s), 0);
    int64_t drawn = 0, prev = 0;
    static int64_t ids[1000];
    for (int round = 0; round < 5; round++) {
        size_t n = round == 0 ? 1 : 1000;
        assert_int_equal(ik_segment_next_wait(s, "big", n, ids), 0);
        for (size_t i = 0; i < n; i++) {
            if (ids[i] <= prev) fail_msg("id %lld after %lld", (long long)ids[i], (long long)prev);
            prev = ids[i];
        }
        drawn += (int64_t)n;
    }
    ik_segment_tag_status *v;
    size_t nv;
    int64_t held = 0;
    ik_tag_info t;
    /* the loader may still be preloading: wait until it has settled */
    for (int tries = 0; tries < 500; tries++) {
        assert_int_equal(ik_segment_status(s, &v, &nv), 0);
        assert_int_equal(nv, 1);
        int loading = v[0].loading;
        held = (v[0].cur_end - v[0].cur_next) + (v[0].next_end - v[0].next_start);
        ik_free(v);
        assert_int_equal(ik_tag_get(f->c1, "default", "big", &t), 0);
        if (!loading && t.max_id - 1 == drawn + held) break;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    if (t.max_id - 1 != drawn + held)
        fail_msg("max_id advanced by %lld, but %lld IDs were drawn and %lld are held: %lld "
                 "wasted",
                 (long long)(t.max_id - 1), (long long)drawn, (long long)held,
                 (long long)(t.max_id - 1 - drawn - held));
    ik_segment_destroy(s);
}

typedef struct seg_arg {
    ik_segment *s;
    int64_t *ids;
    int count;
    int rc;
} seg_arg;

static void *seg_run(void *p)
{
    seg_arg *a = p;
    for (int i = 0; i < a->count;) {
        int n = 1 + (i % 7);
        if (n > a->count - i) n = a->count - i;
        int rc = ik_segment_next_wait(a->s, "shared", (size_t)n, &a->ids[i]);
        if (rc) {
            a->rc = rc;
            return NULL;
        }
        i += n;
    }
    return NULL;
}

static void segment_two_servers_two_threads_no_duplicate(void **st)
{
    fx *f = *st;
    assert_int_equal(
        ik_tag_create(f->c1, "default", "shared", IK_TAG_SEGMENT, 1, 10, NULL, NULL, 0), 0);
    ik_segment *s1, *s2;
    assert_int_equal(ik_segment_create(f->c1, "default", NULL, &s1), 0);
    assert_int_equal(ik_segment_create(f->c2, "default", NULL, &s2), 0);
    enum { PER = 100000, T = 4 };
    int64_t *all = malloc(sizeof(int64_t) * PER * T);
    seg_arg a[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        a[i] = (seg_arg){i < 2 ? s1 : s2, all + (size_t)i * PER, PER, 0};
        pthread_create(&th[i], NULL, seg_run, &a[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++) {
        assert_int_equal(a[i].rc, 0);
        for (int k = 1; k < PER; k++)
            if (a[i].ids[k] <= a[i].ids[k - 1]) fail_msg("thread %d not increasing at %d", i, k);
    }
    qsort(all, (size_t)PER * T, sizeof *all, cmp64);
    for (size_t k = 1; k < (size_t)PER * T; k++)
        if (all[k] == all[k - 1]) fail_msg("duplicate %lld", (long long)all[k]);
    free(all);
    ik_segment_destroy(s1);
    ik_segment_destroy(s2);
}

typedef struct seq_arg {
    ik_sequence *s;
    int64_t *ids;
    int count;
    int rc;
} seq_arg;

static void *seq_run(void *p)
{
    seq_arg *a = p;
    for (int i = 0; i < a->count;) {
        int n = 1 + (i % 5);
        if (n > a->count - i) n = a->count - i;
        int rc = ik_sequence_next_wait(a->s, "contig", (size_t)n, &a->ids[i]);
        if (rc) {
            a->rc = rc;
            return NULL;
        }
        for (int k = 1; k < n; k++)
            if (a->ids[i + k] != a->ids[i] + k) {
                a->rc = -1;
                return NULL;
            }
        i += n;
    }
    return NULL;
}

static void sequence_two_servers_contiguous(void **st)
{
    fx *f = *st;
    assert_int_equal(
        ik_tag_create(f->c1, "default", "contig", IK_TAG_SEQUENCE, 7, 1, NULL, NULL, 0), 0);
    ik_sequence *s1, *s2;
    assert_int_equal(ik_sequence_create(f->c1, "default", &s1), 0);
    assert_int_equal(ik_sequence_create(f->c2, "default", &s2), 0);
    enum { PER = 3000, T = 6 };
    int64_t *all = malloc(sizeof(int64_t) * PER * T);
    seq_arg a[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
        a[i] = (seq_arg){i % 2 ? s1 : s2, all + (size_t)i * PER, PER, 0};
        pthread_create(&th[i], NULL, seq_run, &a[i]);
    }
    for (int i = 0; i < T; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < T; i++)
        assert_int_equal(a[i].rc, 0);
    qsort(all, (size_t)PER * T, sizeof *all, cmp64);
    for (size_t k = 0; k < (size_t)PER * T; k++)
        if (all[k] != 7 + (int64_t)k)
            fail_msg("position %zu holds %lld, want %lld", k, (long long)all[k], 7 + (long long)k);
    int64_t id;
    assert_int_equal(ik_sequence_next_wait(s1, "nope", 1, &id), IK_ENOTFOUND);
    ik_sequence_destroy(s1);
    ik_sequence_destroy(s2);
    ik_tag_info t;
    assert_int_equal(ik_tag_get(f->c1, "default", "contig", &t), 0);
    assert_int_equal(t.max_id, 7 + PER * T); /* nothing taken that was not handed out */
    free(all);
}

/* One request's answer, for the cancel tests: set by the callback. With block set,
 * the callback holds the committer until go is set (the tag's next requests then
 * queue behind a write that has begun). */
typedef struct answer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int called, status, block, entered, go;
    size_t n;
    int64_t ids[8];
} answer;

static void answer_init(answer *a, int block)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    a->block = block;
}

static void answer_destroy(answer *a)
{
    pthread_cond_destroy(&a->cv);
    pthread_mutex_destroy(&a->mu);
}

static void answer_cb(void *ctx, int status, const int64_t *ids, size_t n)
{
    answer *a = ctx;
    pthread_mutex_lock(&a->mu);
    a->called++;
    a->status = status;
    a->n = n;
    if (status == 0) memcpy(a->ids, ids, (n < 8 ? n : 8) * sizeof *ids);
    a->entered = 1;
    pthread_cond_broadcast(&a->cv);
    while (a->block && !a->go)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

/* Waits until a's callback has run (entered: it may still be blocking). */
static void answer_wait(answer *a)
{
    pthread_mutex_lock(&a->mu);
    while (!a->entered)
        pthread_cond_wait(&a->cv, &a->mu);
    pthread_mutex_unlock(&a->mu);
}

static void answer_go(answer *a)
{
    pthread_mutex_lock(&a->mu);
    a->go = 1;
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* A request still queued behind a write that has begun is withdrawn: its callback
 * never runs and nothing is committed for it; a request whose write has begun is
 * not; a queue emptied by cancels commits nothing. */
static void sequence_cancel_queued(void **st)
{
    fx *f = *st;
    assert_int_equal(ik_tag_create(f->c1, "default", "cq", IK_TAG_SEQUENCE, 1, 1, NULL, NULL, 0),
                     0);
    ik_sequence *s;
    assert_int_equal(ik_sequence_create(f->c1, "default", &s), 0);
    answer a1, a2, a3, a4, a5;
    answer_init(&a1, 1);
    answer_init(&a2, 0);
    answer_init(&a3, 0);
    answer_init(&a4, 1);
    answer_init(&a5, 0);

    assert_int_equal(ik_sequence_next(s, "cq", 1, answer_cb, &a1), IK_PENDING);
    answer_wait(&a1); /* the committer is inside write 1's callbacks */
    assert_int_equal(ik_sequence_next(s, "cq", 5, answer_cb, &a2), IK_PENDING);
    assert_int_equal(ik_sequence_next(s, "cq", 2, answer_cb, &a3), IK_PENDING);
    assert_int_equal(ik_sequence_cancel(s, "cq", answer_cb, &a2), IK_OK);
    assert_int_equal(ik_sequence_cancel(s, "cq", answer_cb, &a2), IK_ENOTFOUND);
    assert_int_equal(ik_sequence_cancel(s, "cq", answer_cb, &a1), IK_ENOTFOUND); /* answered */
    assert_int_equal(ik_sequence_cancel(s, "other", answer_cb, &a3), IK_ENOTFOUND);
    assert_int_equal(ik_sequence_cancel(s, "cq", answer_cb, &a5), IK_ENOTFOUND); /* never queued */
    assert_int_equal(ik_sequence_cancel(NULL, "cq", answer_cb, &a3), IK_EINVAL);
    assert_int_equal(ik_sequence_cancel(s, NULL, answer_cb, &a3), IK_EINVAL);
    assert_int_equal(ik_sequence_cancel(s, "cq", NULL, &a3), IK_EINVAL);
    answer_go(&a1);
    answer_wait(&a3);
    assert_int_equal(a1.status, 0);
    assert_int_equal(a1.ids[0], 1);
    assert_int_equal(a3.status, 0);
    assert_int_equal(a3.n, 2);
    assert_int_equal(a3.ids[0], 2); /* not 7: nothing was committed for a2 */
    assert_int_equal(a3.ids[1], 3);

    /* the whole queue withdrawn: the batch is empty and writes nothing */
    assert_int_equal(ik_sequence_next(s, "cq", 1, answer_cb, &a4), IK_PENDING);
    answer_wait(&a4);
    assert_int_equal(ik_sequence_next(s, "cq", 3, answer_cb, &a5), IK_PENDING);
    assert_int_equal(ik_sequence_cancel(s, "cq", answer_cb, &a5), IK_OK);
    answer_go(&a4);
    int64_t id;
    assert_int_equal(ik_sequence_next_wait(s, "cq", 1, &id), 0);
    assert_int_equal(a4.ids[0], 4);
    assert_int_equal(id, 5);
    ik_sequence_destroy(s);
    assert_int_equal(a2.called, 0);
    assert_int_equal(a5.called, 0);
    ik_tag_info t;
    assert_int_equal(ik_tag_get(f->c1, "default", "cq", &t), 0);
    assert_int_equal(t.max_id, 6); /* 1..5 handed out, nothing more taken */
    answer *all[] = {&a1, &a2, &a3, &a4, &a5};
    for (size_t i = 0; i < 5; i++)
        answer_destroy(all[i]);
}

enum { RACE_THREADS = 6, RACE_PER = 300 };

typedef struct race_arg {
    ik_sequence *s;
    int cancel; /* withdraw each request right after queueing it */
    int64_t ids[RACE_PER * 3];
    size_t nids;
    int withdrawn, rc;
} race_arg;

static void *race_run(void *p)
{
    race_arg *a = p;
    for (int i = 0; i < RACE_PER; i++) {
        answer x;
        answer_init(&x, 0);
        size_t n = 1 + (size_t)(i % 3);
        int rc = ik_sequence_next(a->s, "race", n, answer_cb, &x);
        if (rc != IK_PENDING) {
            a->rc = rc;
            answer_destroy(&x);
            return NULL;
        }
        if (a->cancel && ik_sequence_cancel(a->s, "race", answer_cb, &x) == IK_OK) {
            a->withdrawn++;
        } else {
            answer_wait(&x);
            pthread_mutex_lock(&x.mu); /* the callback has let go of x */
            if (x.status != 0 || x.n != n) a->rc = x.status ? x.status : -1;
            for (size_t k = 0; k < x.n; k++)
                a->ids[a->nids++] = x.ids[k];
            pthread_mutex_unlock(&x.mu);
        }
        answer_destroy(&x);
        if (a->rc) return NULL;
    }
    return NULL;
}

/* Threads queue requests while others withdraw theirs at once: the IDs answered
 * are one contiguous run and the store's max_id is its end, so no withdrawn
 * request was committed (and no answered one was withdrawn). */
static void sequence_cancel_races_commits(void **st)
{
    fx *f = *st;
    assert_int_equal(ik_tag_create(f->c1, "default", "race", IK_TAG_SEQUENCE, 10, 1, NULL, NULL, 0),
                     0);
    ik_sequence *s;
    assert_int_equal(ik_sequence_create(f->c1, "default", &s), 0);
    race_arg *a = calloc(RACE_THREADS, sizeof *a);
    pthread_t th[RACE_THREADS];
    for (int i = 0; i < RACE_THREADS; i++) {
        a[i].s = s;
        a[i].cancel = i % 2;
        pthread_create(&th[i], NULL, race_run, &a[i]);
    }
    size_t total = 0;
    int withdrawn = 0;
    for (int i = 0; i < RACE_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].rc, 0);
        total += a[i].nids;
        withdrawn += a[i].withdrawn;
    }
    ik_sequence_destroy(s);
    int64_t *all = malloc(total * sizeof *all);
    size_t k = 0;
    for (int i = 0; i < RACE_THREADS; i++)
        for (size_t j = 0; j < a[i].nids; j++)
            all[k++] = a[i].ids[j];
    qsort(all, total, sizeof *all, cmp64);
    for (k = 0; k < total; k++)
        if (all[k] != 10 + (int64_t)k)
            fail_msg("position %zu holds %lld, want %lld", k, (long long)all[k], 10 + (long long)k);
    ik_tag_info t;
    assert_int_equal(ik_tag_get(f->c1, "default", "race", &t), 0);
    assert_int_equal(t.max_id, 10 + (int64_t)total);
    assert_true(withdrawn > 0);
    free(all);
    free(a);
}

/* Runs sql on DIR/idkeeper.db through a connection of its own, as another process
 * (an older or newer idkeeper, an operator's sqlite3) would. */
static void other_connection(const fx *f, const char *sql)
{
    char path[128];
    snprintf(path, sizeof path, "%s/idkeeper.db", f->dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
    sqlite3_close(db);
}

/* The advance's statement is prepared once and kept (backend_local_tags.c): between
 * two advances another connection changes the table's schema, advances the tag
 * itself, and removes and makes again the tag's row. Each advance reads the file as
 * it is then: the IDs continue past every other writer's, none is handed twice, and
 * a removed tag is refused (not advanced from a plan made for the old row). */
static void sequence_prepared_once_follows_the_file(void **st)
{
    fx *f = *st;
    assert_int_equal(ik_tag_create(f->c1, "default", "kept", IK_TAG_SEQUENCE, 1, 1, NULL, NULL, 0),
                     0);
    ik_sequence *s;
    assert_int_equal(ik_sequence_create(f->c1, "default", &s), 0);
    int64_t ids[3];
    assert_int_equal(ik_sequence_next_wait(s, "kept", 3, ids), 0);
    assert_int_equal(ids[0], 1);

    other_connection(f, "ALTER TABLE leaf_alloc ADD COLUMN note TEXT");
    assert_int_equal(ik_sequence_next_wait(s, "kept", 2, ids), 0);
    assert_int_equal(ids[0], 4); /* the schema changed: prepared again, same row */
    assert_int_equal(ids[1], 5);

    other_connection(f, "UPDATE leaf_alloc SET max_id = max_id + 100 WHERE biz_tag = 'kept'");
    assert_int_equal(ik_sequence_next_wait(s, "kept", 1, ids), 0);
    assert_int_equal(ids[0], 106); /* past the other writer's 6..105 */

    other_connection(f, "DELETE FROM leaf_alloc WHERE biz_tag = 'kept'");
    assert_int_equal(ik_sequence_next_wait(s, "kept", 1, ids), IK_ENOTFOUND);
    other_connection(f, "INSERT INTO leaf_alloc (app, biz_tag, kind, start, max_id, step, "
                        "update_time) VALUES ('default', 'kept', 'sequence', 1, 500, 1, 0)");
    assert_int_equal(ik_sequence_next_wait(s, "kept", 2, ids), 0);
    assert_int_equal(ids[0], 500);
    assert_int_equal(ids[1], 501);
    /* the second connection of this process (another server) goes on from there */
    ik_sequence *s2;
    assert_int_equal(ik_sequence_create(f->c2, "default", &s2), 0);
    assert_int_equal(ik_sequence_next_wait(s2, "kept", 1, ids), 0);
    assert_int_equal(ids[0], 502);
    assert_int_equal(ik_sequence_next_wait(s, "kept", 1, ids), 0);
    assert_int_equal(ids[0], 503);
    ik_sequence_destroy(s2);
    ik_sequence_destroy(s);
    ik_tag_info t;
    assert_int_equal(ik_tag_get(f->c1, "default", "kept", &t), 0);
    assert_int_equal(t.max_id, 504);
}

/* Probes (requests for names not known yet) in flight are bounded (256, segment.c):
 * one more is refused as busy, IK_EBUSY (HTTP 503, try again), not IK_ENOMEM (500).
 * The loader is held inside the first probe's callback, so the next 256 stay in
 * flight. */
static void count_cb(void *ctx, int status, const int64_t *ids, size_t n)
{
    (void)status;
    (void)ids;
    (void)n;
    __atomic_add_fetch((int *)ctx, 1, __ATOMIC_SEQ_CST);
}

static void segment_probes_full_is_busy(void **st)
{
    fx *f = *st;
    ik_segment *s;
    assert_int_equal(ik_segment_create(f->c1, "default", NULL, &s), 0);
    answer first;
    answer_init(&first, 1);
    int64_t id;
    assert_int_equal(ik_segment_next(s, "nope-first", 1, &id, answer_cb, &first), IK_PENDING);
    answer_wait(&first); /* the loader is in our callback now */
    int called = 0;
    char name[32];
    for (int i = 0; i < 256; i++) {
        snprintf(name, sizeof name, "nope-%d", i);
        assert_int_equal(ik_segment_next(s, name, 1, &id, count_cb, &called), IK_PENDING);
    }
    assert_int_equal(ik_segment_next(s, "nope-one-more", 1, &id, count_cb, &called), IK_EBUSY);
    answer_go(&first);
    ik_segment_destroy(s);
    assert_int_equal(__atomic_load_n(&called, __ATOMIC_SEQ_CST), 256);
    assert_int_equal(first.status, IK_ENOTFOUND);
    answer_destroy(&first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tags_validate_and_persist, setup, teardown),
        cmocka_unit_test_setup_teardown(segment_single_thread_increasing_from_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(segment_big_request_wastes_no_block, setup, teardown),
        cmocka_unit_test_setup_teardown(segment_probes_full_is_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(segment_two_servers_two_threads_no_duplicate, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(sequence_two_servers_contiguous, setup, teardown),
        cmocka_unit_test_setup_teardown(sequence_cancel_queued, setup, teardown),
        cmocka_unit_test_setup_teardown(sequence_cancel_races_commits, setup, teardown),
        cmocka_unit_test_setup_teardown(sequence_prepared_once_follows_the_file, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
