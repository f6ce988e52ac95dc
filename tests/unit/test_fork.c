/* test_fork.c: fork() with open handles (idkeeper.h, "fork()"; docs/local.md).
 *
 * A child made by fork() without exec holds a copy of its parent's generator, lease,
 * segment blocks and sequence queue, and no thread of them. It must never hand out
 * an ID its parent hands out: every call on a copy refuses with IK_EFORKED, and the
 * child that wants IDs opens a coord of its own.
 *
 *  - child_never_issues_the_parents_ids: a process with a local: coord, a slot lease
 *    (workers 0-1), a segment and a sequence tag draws IDs, forks, and both go on
 *    drawing at once: the parent from its handles, the child first from the copies
 *    (every call IK_EFORKED, every other call on them refused or inert), then from
 *    handles it opens itself (the other slot, fresh blocks). No ID of any kind is
 *    returned to both.
 *  - daemon_after_the_lease: a process takes slot 0 of the range 0-0, draws IDs and
 *    calls daemon(3) (its parent half exits at once). The daemon's first draw on the
 *    copied generator is IK_EFORKED, not an ID of a lease nobody renews; the copy of
 *    the slot's descriptor it inherited is closed (no flock of its parent's kept
 *    alive), so a coord it opens itself takes slot 0 again, and issues above every
 *    ID drawn before the daemon(3).
 *
 * Each child ends with _exit: it leaves its parent's copies as the contract says
 * (unfreed), which LeakSanitizer at exit() would report.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SNOW_N 3000
#define SEG_N 300
#define SEQ_N 300

/* ---- a bounded wait on a callback answer ----------------------------------------- */

typedef struct answer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    int64_t id;
} answer;

static void answer_cb(void *ctx, int status, const int64_t *ids, size_t n)
{
    answer *a = ctx;
    pthread_mutex_lock(&a->mu);
    a->done = 1;
    a->status = status;
    if (status == 0 && n == 1) a->id = ids[0];
    pthread_cond_signal(&a->cv);
    pthread_mutex_unlock(&a->mu);
}

/* rc of the call; IK_OK with *id, an error, or IK_PENDING if no answer came within
 * 2 s (a copy whose loader or committer is not in this process never answers). */
static int await(answer *a, int rc, int64_t *id)
{
    if (rc != IK_PENDING) return rc;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 2;
    pthread_mutex_lock(&a->mu);
    while (!a->done && pthread_cond_timedwait(&a->cv, &a->mu, &ts) == 0) {
    }
    rc = a->done ? a->status : IK_PENDING;
    *id = a->id;
    pthread_mutex_unlock(&a->mu);
    return rc;
}

static int seg_one(ik_segment *s, int64_t *id)
{
    answer *a = calloc(1, sizeof *a); /* leaked if never answered: a late cb stays safe */
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int rc = await(a, ik_segment_next(s, "seg", 1, id, answer_cb, a), id);
    if (rc != IK_PENDING) free(a);
    return rc;
}

static int seq_one(ik_sequence *s, int64_t *id)
{
    answer *a = calloc(1, sizeof *a);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    int rc = await(a, ik_sequence_next(s, "seq", 1, answer_cb, a), id);
    if (rc != IK_PENDING) free(a);
    return rc;
}

/* ---- one process's generator, lease and counters --------------------------------- */

typedef struct kit {
    ik_coord *c;
    ik_snowflake *g;
    ik_slot_lease *l;
    ik_segment *seg;
    ik_sequence *seq;
} kit;

static int kit_open(kit *k, const char *uri, uint32_t wmax, const char *identity, char *why)
{
    memset(k, 0, sizeof *k);
    int rc = ik_coord_open(uri, NULL, &k->c, why, 256);
    if (rc) return rc;
    ik_layout lay;
    ik_layout_default(&lay);
    lay.worker_min = 0;
    lay.worker_max = wmax;
    if ((rc = ik_snowflake_create(&lay, 5, NULL, &k->g))) return rc;
    ik_lease_options o;
    ik_lease_options_init(&o);
    o.identity = identity;
    o.choice = IK_SLOT_LOWEST;
    o.slot_wait_ms = 5000; /* the daemon's parent half may still be exiting */
    if ((rc = ik_slot_lease_start(k->c, k->g, &o, &k->l, why, 256))) return rc;
    if ((rc = ik_segment_create(k->c, "default", NULL, &k->seg))) return rc;
    return ik_sequence_create(k->c, "default", &k->seq);
}

static void kit_close(kit *k)
{
    ik_sequence_destroy(k->seq);
    ik_segment_destroy(k->seg);
    ik_slot_lease_release(k->l);
    ik_snowflake_destroy(k->g);
    ik_coord_close(k->c);
}

/* A snowflake ID, past the time guard of a slot just taken (at most 3 s). */
static int snow_one(ik_snowflake *g, int64_t *id)
{
    int rc = IK_ETIMEGUARD;
    for (int i = 0; i < 300 && rc == IK_ETIMEGUARD; i++) {
        rc = ik_snowflake_next(g, id);
        if (rc == IK_ETIMEGUARD) usleep(10000);
    }
    return rc;
}

/* Draws n IDs of each kind from k into v (3n slots: snowflake, segment, sequence),
 * returns how many failed. */
static int draw(kit *k, int64_t *v, int sn, int gn, int qn)
{
    int bad = 0;
    for (int i = 0; i < sn; i++)
        bad += snow_one(k->g, &v[i]) != 0;
    for (int i = 0; i < gn; i++)
        bad += seg_one(k->seg, &v[sn + i]) != 0;
    for (int i = 0; i < qn; i++)
        bad += seq_one(k->seq, &v[sn + gn + i]) != 0;
    return bad;
}

static int cmp64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* How many of the n IDs in a are also in b (m IDs); sorts both. */
static size_t common(int64_t *a, size_t n, int64_t *b, size_t m)
{
    qsort(a, n, sizeof *a, cmp64);
    qsort(b, m, sizeof *b, cmp64);
    size_t i = 0, j = 0, k = 0;
    while (i < n && j < m) {
        if (a[i] < b[j])
            i++;
        else if (a[i] > b[j])
            j++;
        else
            k++, i++, j++;
    }
    return k;
}

/* ---- the child's report, through a file -------------------------------------------- */

typedef struct report {
    int stage;                         /* 1: copies drawn; 2: their other calls; 3: done */
    pid_t pid;                         /* the process that wrote it */
    int copy_snow, copy_seg, copy_seq; /* what the first call on each copy answered */
    int copy_other;                    /* calls on the copies that were not refused */
    int copy_ids;                      /* IDs the copies handed out anyway */
    int own_rc;                        /* opening a kit of its own */
    int own_bad;                       /* draws from it that failed */
    char why[256];
    int n_snow, n_seg, n_seq; /* the IDs of each kind it got, in: */
    int64_t snow[2 * SNOW_N + 1], seg[2 * SEG_N + 1], seq[SEQ_N + 1];
} report;

static void write_report(const char *path, const report *r)
{
    FILE *f = fopen(path, "w");
    if (!f || fwrite(r, sizeof *r, 1, f) != 1) _exit(3);
    fclose(f);
}

static void read_report(const char *path, report *r)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_int_equal(fread(r, sizeof *r, 1, f), 1);
    fclose(f);
}

/* Every call on the parent's copies, in a child: IK_EFORKED (or nothing done, for
 * the void ones); returns how many were not. */
static int other_calls_refused(kit *k)
{
    int bad = 0;
    char why[128] = "";
    ik_tag_info ti;
    ik_tag_info *tv;
    ik_slot_info *sv;
    ik_hazard *hv;
    ik_segment_tag_status *st;
    size_t n;
    int64_t ids[2];
    ik_snowflake_try tr = {0, 0, 0};
    bad += ik_snowflake_next_n(k->g, 2, ids) != IK_EFORKED;
    bad += ik_snowflake_try_next_n(k->g, 2, ids, &tr) != IK_EFORKED;
    bad += ik_snowflake_grant(k->g, 0, 0, IK_NO_CEILING, IK_FOREVER) != IK_EFORKED;
    bad += ik_snowflake_extend(k->g, IK_NO_CEILING, IK_FOREVER) != IK_EFORKED;
    bad += ik_segment_next_wait(k->seg, "seg", 1, ids) != IK_EFORKED;
    bad += ik_segment_status(k->seg, &st, &n) != IK_EFORKED;
    bad += ik_sequence_next_wait(k->seq, "seq", 1, ids) != IK_EFORKED;
    bad += ik_sequence_cancel(k->seq, "seq", answer_cb, NULL) != IK_EFORKED;
    bad += ik_slot_lease_wait_held(k->l, 0, why, sizeof why) != IK_EFORKED;
    ik_lease_info li;
    ik_slot_lease_get_info(k->l, &li);
    bad += li.worker != -1;
    bad += ik_tag_get(k->c, "default", "seq", &ti) != IK_EFORKED;
    bad += ik_tags_list(k->c, "default", &tv, &n) != IK_EFORKED;
    bad += ik_tag_create(k->c, "default", "x", IK_TAG_SEQUENCE, 0, 1, NULL, why, sizeof why) !=
           IK_EFORKED;
    bad += ik_slots_list(k->c, "default", &sv, &n) != IK_EFORKED;
    bad += ik_coord_check(k->c, &hv, &n, why, sizeof why) != IK_EFORKED;
    bad += ik_coord_stop_within(k->c, 1000) != IK_EFORKED;
    ik_segment *s2;
    ik_sequence *q2;
    ik_lock *lk;
    ik_slot_lease *l2;
    ik_lease_options o;
    ik_lease_options_init(&o);
    o.identity = "child";
    bad += ik_segment_create(k->c, "default", NULL, &s2) != IK_EFORKED;
    bad += ik_sequence_create(k->c, "default", &q2) != IK_EFORKED;
    bad += ik_slot_lease_begin(k->c, k->g, &o, &l2, why, sizeof why) != IK_EFORKED;
    bad += ik_lock_create(k->c, "/forked", NULL, &lk) != IK_EFORKED;
    /* the parent's: released, destroyed and closed without touching its threads or
     * its store (each would hang or write the parent's slot otherwise) */
    bad += ik_slot_lease_release(k->l) != IK_EFORKED;
    ik_sequence_destroy(k->seq);
    ik_segment_destroy(k->seg);
    ik_coord_settle(k->c);
    ik_coord_close(k->c);
    return bad;
}

/* ---- the tests ------------------------------------------------------------------------ */

static void child_never_issues_the_parents_ids(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256] = "", rpath[128];
    local_dir_make(dir, uri, "ik-fork");
    snprintf(rpath, sizeof rpath, "%s/child.report", dir);
    kit p;
    if (kit_open(&p, uri, 1, "parent", why)) fail_msg("parent's kit: %s", why);
    ik_coord *c = p.c;
    assert_int_equal(ik_tag_create(c, "default", "seg", IK_TAG_SEGMENT, 1, 1000, NULL, why, 256),
                     0);
    assert_int_equal(ik_tag_create(c, "default", "seq", IK_TAG_SEQUENCE, 1, 1, NULL, why, 256), 0);
    /* blocks loaded, a lease renewed: the state a child would copy */
    int64_t warm[3];
    assert_int_equal(draw(&p, warm, 1, 1, 1), 0);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        static report r;
        memset(&r, 0, sizeof r);
        int64_t id = 0;
        /* the copies first: each must refuse, never hand out an ID; and the child
         * keeps drawing from them, as a pre-fork worker that never checks would.
         * The report is written after each kind: a copy whose loader or committer
         * is not in this process may hang the next call. */
        r.copy_snow = ik_snowflake_next(p.g, &id);
        if (r.copy_snow == 0) r.snow[r.n_snow++] = id;
        for (int i = 0; i < SNOW_N; i++)
            if (ik_snowflake_next(p.g, &id) == 0) r.snow[r.n_snow++] = id;
        r.copy_ids = r.n_snow;
        write_report(rpath, &r);
        r.copy_seg = seg_one(p.seg, &id);
        if (r.copy_seg == 0) r.seg[r.n_seg++] = id;
        for (int i = 0; i < SEG_N; i++)
            if (ik_segment_next(p.seg, "seg", 1, &id, answer_cb, NULL) == 0) r.seg[r.n_seg++] = id;
        r.copy_ids = r.n_snow + r.n_seg;
        write_report(rpath, &r);
        r.copy_seq = seq_one(p.seq, &id);
        if (r.copy_seq == 0) r.seq[r.n_seq++] = id;
        r.copy_ids = r.n_snow + r.n_seg + r.n_seq;
        r.stage = 1;
        write_report(rpath, &r);
        r.copy_other = other_calls_refused(&p);
        r.stage = 2;
        write_report(rpath, &r);
        /* then handles of its own: the other slot, blocks of its own */
        kit own;
        r.own_rc = kit_open(&own, uri, 1, "child", r.why);
        if (r.own_rc == 0) {
            static int64_t v[SNOW_N + SEG_N + SEQ_N];
            r.own_bad = draw(&own, v, SNOW_N, SEG_N, SEQ_N);
            memcpy(&r.snow[r.n_snow], v, SNOW_N * sizeof *v);
            memcpy(&r.seg[r.n_seg], v + SNOW_N, SEG_N * sizeof *v);
            memcpy(&r.seq[r.n_seq], v + SNOW_N + SEG_N, SEQ_N * sizeof *v);
            r.n_snow += SNOW_N, r.n_seg += SEG_N, r.n_seq += SEQ_N;
            kit_close(&own);
        }
        r.stage = 3;
        write_report(rpath, &r);
        _exit(0);
    }

    static int64_t mine[SNOW_N + SEG_N + SEQ_N];
    int bad = draw(&p, mine, SNOW_N, SEG_N, SEQ_N);
    int ws = 0, waited = 0;
    pid_t w;
    while ((w = waitpid(pid, &ws, WNOHANG)) == 0 && waited++ < 600)
        usleep(100000);
    if (w == 0) { /* a call on a copy that waits for a thread the child has not */
        kill(pid, SIGKILL);
        waitpid(pid, &ws, 0);
    }
    assert_int_equal(bad, 0);
    static report r;
    read_report(rpath, &r);

    /* the property itself, whatever the codes: no ID of a kind returned twice */
    size_t snow = common(mine, SNOW_N, r.snow, (size_t)r.n_snow);
    size_t seg = common(mine + SNOW_N, SEG_N, r.seg, (size_t)r.n_seg);
    size_t seq = common(mine + SNOW_N + SEG_N, SEQ_N, r.seq, (size_t)r.n_seq);
    if (snow || seg || seq)
        fail_msg("IDs returned to both the parent and its fork()'s child: %zu of %d snowflake, "
                 "%zu of %d segment, %zu of %d sequence",
                 snow, SNOW_N, seg, SEG_N, seq, SEQ_N);
    /* and how the copies refused */
    if (r.stage < 3)
        fail_msg("the child hung (at stage %d) in calls on its parent's copies", r.stage);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_int_equal(r.copy_ids, 0);
    assert_int_equal(r.copy_snow, IK_EFORKED);
    assert_int_equal(r.copy_seg, IK_EFORKED);
    assert_int_equal(r.copy_seq, IK_EFORKED);
    assert_int_equal(r.copy_other, 0);
    if (r.own_rc) fail_msg("the child's own kit: %s: %s", ik_errname(r.own_rc), r.why);
    assert_int_equal(r.own_bad, 0);

    /* the parent's handles still serve, and its slot is still its own */
    int64_t after[3];
    assert_int_equal(draw(&p, after, 1, 1, 1), 0);
    ik_lease_info li;
    ik_slot_lease_get_info(p.l, &li);
    assert_int_equal(li.state, IK_LEASE_HELD);
    kit_close(&p);
    local_dir_remove(dir);
}

static void daemon_after_the_lease(void **st)
{
    (void)st;
    char dir[64], uri[80], pre[128], post[128];
    local_dir_make(dir, uri, "ik-daemon");
    snprintf(pre, sizeof pre, "%s/before", dir);
    snprintf(post, sizeof post, "%s/daemon.report", dir);
    int done[2];
    assert_int_equal(pipe(done), 0);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { /* the program that starts a lease, then daemonizes */
        close(done[0]);
        kit k;
        char why[256] = "";
        memset(&k, 0, sizeof k);
        ik_layout lay;
        ik_layout_default(&lay);
        lay.worker_min = lay.worker_max = 0;
        ik_lease_options o;
        ik_lease_options_init(&o);
        o.identity = "app";
        if (ik_coord_open(uri, NULL, &k.c, why, sizeof why) ||
            ik_snowflake_create(&lay, 5, NULL, &k.g) ||
            ik_slot_lease_start(k.c, k.g, &o, &k.l, why, sizeof why))
            _exit(2);
        static int64_t before[SNOW_N];
        for (int i = 0; i < SNOW_N; i++)
            if (snow_one(k.g, &before[i])) _exit(2);
        FILE *f = fopen(pre, "w");
        if (!f || fwrite(before, sizeof before, 1, f) != 1 || fclose(f)) _exit(2);
        if (daemon(1, 1) != 0) _exit(2); /* its parent half exits here */

        static report r;
        memset(&r, 0, sizeof r);
        int64_t id;
        r.copy_snow = ik_snowflake_next(k.g, &id);
        if (r.copy_snow == 0) r.snow[r.n_snow++] = id;
        r.copy_ids = r.n_snow;
        r.stage = 1;
        r.pid = getpid();
        write_report(post, &r); /* what the test reads if the rest hangs */
        ik_lease_info li;
        ik_slot_lease_get_info(k.l, &li);
        r.copy_other = li.state != IK_LEASE_LOST || li.worker != -1;
        r.copy_other += ik_slot_lease_release(k.l) != IK_EFORKED;
        ik_coord_close(k.c);
        ik_snowflake_destroy(k.g);
        /* a coord of its own: slot 0 again, once the parent half's descriptor is
         * closed by its exit (the daemon's copy was closed at the fork) */
        kit own;
        memset(&own, 0, sizeof own);
        r.own_rc = ik_coord_open(uri, NULL, &own.c, r.why, sizeof r.why);
        if (!r.own_rc) r.own_rc = ik_snowflake_create(&lay, 5, NULL, &own.g);
        o.slot_wait_ms = 5000;
        if (!r.own_rc)
            r.own_rc = ik_slot_lease_start(own.c, own.g, &o, &own.l, r.why, sizeof r.why);
        for (int i = 0; !r.own_rc && i < SNOW_N; i++)
            r.own_bad += snow_one(own.g, &r.snow[r.n_snow++]) != 0;
        if (!r.own_rc) {
            ik_slot_lease_release(own.l);
            ik_snowflake_destroy(own.g);
            ik_coord_close(own.c);
        }
        r.stage = 3;
        write_report(post, &r);
        _exit(0); /* closes `done`: the test reads its end of file */
    }
    close(done[1]);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid); /* daemon(3)'s parent half */
    if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) fail_msg("the program failed before daemon(3)");
    struct pollfd pf = {done[0], POLLIN, 0};
    char c;
    int finished = poll(&pf, 1, 60000) == 1 && read(done[0], &c, 1) == 0;
    close(done[0]); /* a daemon still running is left to its 600 s lease... of nothing */

    static int64_t before[SNOW_N];
    FILE *f = fopen(pre, "r");
    assert_non_null(f);
    assert_int_equal(fread(before, sizeof before, 1, f), 1);
    fclose(f);
    static report r;
    read_report(post, &r);
    if (!finished && r.pid > 0) kill(r.pid, SIGKILL); /* hung in a call on a copy */
    if (r.copy_snow != IK_EFORKED)
        fail_msg("the daemon's first draw on its parent's generator: %s, not IK_EFORKED",
                 ik_errname(r.copy_snow));
    if (!finished || r.stage < 3) fail_msg("the daemon did not finish within 60 s");
    int64_t first_own = r.n_snow > r.copy_ids ? r.snow[r.copy_ids] : 0;
    size_t both = common(before, SNOW_N, r.snow, (size_t)r.n_snow);
    if (both) fail_msg("%zu IDs drawn before daemon(3) drawn again after it", both);
    assert_int_equal(r.copy_snow, IK_EFORKED);
    assert_int_equal(r.copy_ids, 0);
    assert_int_equal(r.copy_other, 0);
    if (r.own_rc) fail_msg("the daemon's own lease: %s: %s", ik_errname(r.own_rc), r.why);
    assert_int_equal(r.own_bad, 0);
    /* slot 0 again: every new ID above every ID of the lease before (the time guard) */
    assert_true(first_own > before[SNOW_N - 1]);
    local_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(child_never_issues_the_parents_ids),
        cmocka_unit_test(daemon_after_the_lease),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
