/* test_recipe_local_mt.c: locks, read-write locks and elections on local:, with real
 * files and real flock in a fresh directory. Several handles in one process
 * exclude each other as processes do (flock belongs to the open file), so threads
 * stand in for processes here; kill -9 of a waiter uses a real child process.
 * Checked: exclusion, try-acquire and timeouts leaving no ticket behind, FIFO order
 * of waiters, cancel, increasing fences, readers together and writers alone (and
 * no reader overtaking a queued writer), election hand-over on resign, who leads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef local_fx fx;

static int setup(void **st)
{
    return local_fx_setup(st, "ik-recipe");
}

static int teardown(void **st)
{
    return local_fx_teardown(st);
}

/* Tickets in the queue directory of a lock file (SUFFIX ".lock" etc.). */
static int tickets(const fx *f, const char *rel)
{
    char p[256];
    snprintf(p, sizeof p, "%s/locks/%s.q", f->dir, rel);
    return local_dir_count(p);
}

static void test_exclusion_and_timeouts(void **st)
{
    fx *f = *st;
    ik_lock *a, *b;
    assert_int_equal(ik_lock_create(f->c, "jobs/nightly", NULL, &a), 0);
    assert_int_equal(ik_lock_create(f->c, "/jobs/nightly", NULL, &b), 0);
    assert_int_equal(ik_lock_state(a), IK_HOLD_IDLE);
    int64_t fa = 0, fb = 0;
    assert_int_equal(ik_lock_acquire(a, -1, &fa), 0);
    assert_true(fa > 0);
    assert_int_equal(ik_lock_state(a), IK_HOLD_HELD);
    assert_int_equal(ik_lock_acquire(a, 0, NULL), IK_EINVAL); /* not reentrant */
    assert_int_equal(ik_lock_acquire(b, 0, &fb), IK_EBUSY);
    int64_t t0 = mono_ms();
    assert_int_equal(ik_lock_acquire(b, 100, &fb), IK_ETIMEDOUT);
    int64_t took = mono_ms() - t0;
    assert_true(took >= 100 && took < 1000);
    assert_int_equal(ik_lock_state(b), IK_HOLD_IDLE);
    assert_int_equal(tickets(f, "jobs/nightly.lock"), 1); /* a's only */
    ik_hold_info hi;
    ik_lock_get_info(a, &hi);
    assert_int_equal(hi.fence, fa);
    assert_non_null(strstr(hi.node, "/locks/jobs/nightly.lock"));
    assert_int_equal(ik_lock_release(a), 0);
    assert_int_equal(ik_lock_release(a), IK_EINVAL);
    assert_int_equal(ik_lock_acquire(b, 0, &fb), 0);
    assert_true(fb > fa);
    ik_lock_destroy(b); /* releases */
    assert_int_equal(ik_lock_acquire(a, 0, &fa), 0);
    assert_true(fa > fb);
    ik_lock_destroy(a);
    assert_int_equal(tickets(f, "jobs/nightly.lock"), 0);
    ik_lock_destroy(NULL);
}

typedef struct waiter {
    ik_lock *lk;
    int64_t timeout;
    int rc;
    int64_t fence;
    int *order;
    int *next;
    int id;
    pthread_mutex_t *mu;
} waiter;

static void *wait_thread(void *arg)
{
    waiter *w = arg;
    w->rc = ik_lock_acquire(w->lk, w->timeout, &w->fence);
    if (w->rc == 0 && w->order) {
        pthread_mutex_lock(w->mu);
        w->order[(*w->next)++] = w->id;
        pthread_mutex_unlock(w->mu);
        sleep_ms(5);
        ik_lock_release(w->lk);
    }
    return NULL;
}

static void test_fifo_order(void **st)
{
    fx *f = *st;
    enum { N = 5 };
    ik_lock *holder, *lk[N];
    assert_int_equal(ik_lock_create(f->c, "fifo", NULL, &holder), 0);
    assert_int_equal(ik_lock_acquire(holder, -1, NULL), 0);
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int order[N], next = 0;
    waiter w[N];
    pthread_t t[N];
    for (int i = 0; i < N; i++) {
        assert_int_equal(ik_lock_create(f->c, "fifo", NULL, &lk[i]), 0);
        w[i] = (waiter){lk[i], -1, -1, 0, order, &next, i, &mu};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
        for (int k = 0; k < 200 && tickets(f, "fifo.lock") < i + 2; k++)
            sleep_ms(1);
    }
    assert_int_equal(ik_lock_release(holder), 0);
    int64_t last = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(w[i].rc, 0);
    }
    for (int i = 0; i < N; i++) {
        assert_int_equal(order[i], i); /* first come, first served */
        assert_true(w[order[i]].fence > last);
        last = w[order[i]].fence;
        ik_lock_destroy(lk[i]);
    }
    ik_lock_destroy(holder);
}

static void test_cancel(void **st)
{
    fx *f = *st;
    ik_lock *a, *b;
    assert_int_equal(ik_lock_create(f->c, "c", NULL, &a), 0);
    assert_int_equal(ik_lock_create(f->c, "c", NULL, &b), 0);
    assert_int_equal(ik_lock_acquire(a, -1, NULL), 0);
    waiter w = {b, -1, 1, 0, NULL, NULL, 0, NULL};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w);
    sleep_ms(30);
    assert_int_equal(ik_lock_state(b), IK_HOLD_WAITING);
    int64_t t0 = mono_ms();
    ik_lock_cancel(b);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, IK_ECLOSED);
    assert_true(mono_ms() - t0 < 500);
    assert_int_equal(tickets(f, "c.lock"), 1);
    /* consumed: the next acquire is not cancelled */
    ik_lock_release(a);
    assert_int_equal(ik_lock_acquire(b, 0, NULL), 0);
    /* a cancel before an acquire cancels that one */
    ik_lock_cancel(a);
    assert_int_equal(ik_lock_acquire(a, -1, NULL), IK_ECLOSED);
    ik_lock_destroy(a);
    ik_lock_destroy(b);
}

static void test_rwlock(void **st)
{
    fx *f = *st;
    ik_rwlock *r1, *r2, *w1, *r3;
    assert_int_equal(ik_rwlock_create(f->c, "rw", NULL, &r1), 0);
    assert_int_equal(ik_rwlock_create(f->c, "rw", NULL, &r2), 0);
    assert_int_equal(ik_rwlock_create(f->c, "rw", NULL, &w1), 0);
    assert_int_equal(ik_rwlock_create(f->c, "rw", NULL, &r3), 0);
    assert_int_equal(ik_lock_acquire(ik_rwlock_read(r1), 0, NULL), 0);
    assert_int_equal(ik_lock_acquire(ik_rwlock_read(r2), 0, NULL), 0); /* readers together */
    assert_int_equal(ik_lock_acquire(ik_rwlock_write(w1), 0, NULL), IK_EBUSY);
    /* a queued writer: a later reader waits behind it */
    waiter ww = {ik_rwlock_write(w1), -1, 1, 0, NULL, NULL, 0, NULL};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &ww);
    for (int k = 0; k < 200 && tickets(f, "rw.rwlock") < 3; k++)
        sleep_ms(1);
    assert_int_equal(ik_lock_acquire(ik_rwlock_read(r3), 50, NULL), IK_ETIMEDOUT);
    ik_lock_release(ik_rwlock_read(r1));
    ik_lock_release(ik_rwlock_read(r2));
    pthread_join(t, NULL);
    assert_int_equal(ww.rc, 0);
    assert_int_equal(ik_lock_acquire(ik_rwlock_read(r3), 0, NULL), IK_EBUSY);
    ik_lock_destroy(ik_rwlock_write(w1)); /* a half: not freed alone */
    ik_lock_release(ik_rwlock_write(w1));
    assert_int_equal(ik_lock_acquire(ik_rwlock_read(r3), 0, NULL), 0);
    /* the mutex on the same path is another lock */
    ik_lock *m;
    assert_int_equal(ik_lock_create(f->c, "rw", NULL, &m), 0);
    assert_int_equal(ik_lock_acquire(m, 0, NULL), 0);
    ik_lock_destroy(m);
    ik_rwlock_destroy(r1);
    ik_rwlock_destroy(r2);
    ik_rwlock_destroy(w1);
    ik_rwlock_destroy(r3);
    ik_rwlock_destroy(NULL);
}

typedef struct seen {
    pthread_mutex_t mu;
    int held, lost;
} seen;

static void on_change(void *ctx, ik_hold_state s, const char *why)
{
    (void)why;
    seen *x = ctx;
    pthread_mutex_lock(&x->mu);
    if (s == IK_HOLD_HELD) x->held++;
    if (s == IK_HOLD_LOST) x->lost++;
    pthread_mutex_unlock(&x->mu);
}

static void test_election(void **st)
{
    fx *f = *st;
    seen s1 = {PTHREAD_MUTEX_INITIALIZER, 0, 0}, s2 = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    ik_election_options o1, o2;
    ik_election_options_init(&o1);
    o1.on_change = on_change;
    o1.ctx = &s1;
    o2 = o1;
    o2.ctx = &s2;
    ik_election *e1, *e2;
    char *id = NULL;
    assert_int_equal(ik_election_leader(f->c, "svc", &id), IK_ENOTFOUND);
    assert_int_equal(ik_election_create(f->c, "svc", "one", &o1, &e1), 0);
    assert_int_equal(ik_election_create(f->c, "svc", "two", &o2, &e2), 0);
    assert_int_equal(ik_election_create(f->c, "svc", "bad\nid", NULL, &e2), IK_EINVAL);
    assert_int_equal(ik_election_await(e1, 0), IK_ECLOSED); /* not campaigning */
    assert_int_equal(ik_election_campaign(e1), 0);
    assert_int_equal(ik_election_campaign(e1), IK_EINVAL);
    assert_int_equal(ik_election_await(e1, 2000), 0);
    assert_int_equal(ik_election_state(e1), IK_HOLD_HELD);
    assert_int_equal(ik_election_leader(f->c, "svc", &id), 0);
    assert_string_equal(id, "one");
    ik_free(id);
    ik_hold_info h1;
    ik_election_get_info(e1, &h1);
    assert_true(h1.fence > 0);

    assert_int_equal(ik_election_campaign(e2), 0);
    assert_int_equal(ik_election_await(e2, 50), IK_ETIMEDOUT);
    assert_int_equal(ik_election_state(e2), IK_HOLD_WAITING);
    int64_t t0 = mono_ms();
    assert_int_equal(ik_election_resign(e1), 0);
    assert_int_equal(ik_election_await(e2, 2000), 0);
    int64_t handover = mono_ms() - t0;
    /* Printed, not asserted: the await above bounds it; a speed bound here would
     * fail on a loaded machine (ground rule 5), and 50 ms told nothing anyway,
     * since even the no-inotify fallback polls every 10 ms. */
    print_message("hand-over after resign: %lld ms\n", (long long)handover);
    assert_int_equal(ik_election_state(e1), IK_HOLD_IDLE);
    assert_int_equal(ik_election_leader(f->c, "/svc", &id), 0);
    assert_string_equal(id, "two");
    ik_free(id);
    ik_hold_info h2;
    ik_election_get_info(e2, &h2);
    assert_true(h2.fence > h1.fence);
    assert_int_equal(ik_election_resign(e1), IK_EINVAL);
    /* campaign again after a resign */
    assert_int_equal(ik_election_campaign(e1), 0);
    assert_int_equal(ik_election_await(e1, 50), IK_ETIMEDOUT);
    ik_election_destroy(e2); /* resigns */
    assert_int_equal(ik_election_await(e1, 2000), 0);
    /* the callback comes on the election's thread, maybe just after await returns */
    int held1 = 0, lost1 = 0, held2 = 0;
    for (int k = 0; k < 200 && held1 < 2; k++) {
        pthread_mutex_lock(&s1.mu);
        held1 = s1.held;
        lost1 = s1.lost;
        pthread_mutex_unlock(&s1.mu);
        if (held1 < 2) sleep_ms(5);
    }
    pthread_mutex_lock(&s2.mu);
    held2 = s2.held;
    pthread_mutex_unlock(&s2.mu);
    assert_int_equal(held1, 2);
    assert_int_equal(lost1, 0);
    assert_int_equal(held2, 1);
    ik_election_destroy(e1);
    assert_int_equal(ik_election_leader(f->c, "svc", &id), IK_ENOTFOUND);
    ik_election_destroy(NULL);
}

/* A waiter killed -9 leaves a dead ticket: the queue goes on past it. */
static void test_dead_waiter(void **st)
{
    fx *f = *st;
    ik_lock *a, *b;
    assert_int_equal(ik_lock_create(f->c, "dead", NULL, &a), 0);
    assert_int_equal(ik_lock_create(f->c, "dead", NULL, &b), 0);
    assert_int_equal(ik_lock_acquire(a, -1, NULL), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ik_coord *c;
        ik_lock *lk;
        if (ik_coord_open(f->uri, NULL, &c, NULL, 0) || ik_lock_create(c, "dead", NULL, &lk))
            _exit(3);
        ik_lock_acquire(lk, -1, NULL);
        _exit(4); /* never: killed while waiting */
    }
    for (int k = 0; k < 500 && tickets(f, "dead.lock") < 2; k++)
        sleep_ms(1);
    assert_int_equal(tickets(f, "dead.lock"), 2);
    waiter w = {b, 3000, 1, 0, NULL, NULL, 0, NULL};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w); /* queued behind the child */
    for (int k = 0; k < 500 && tickets(f, "dead.lock") < 3; k++)
        sleep_ms(1);
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status));
    int64_t t0 = mono_ms();
    ik_lock_release(a);
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    assert_true(mono_ms() - t0 < 1000);
    ik_lock_release(b);
    assert_int_equal(tickets(f, "dead.lock"), 0); /* the dead ticket was reaped */
    ik_lock_destroy(a);
    ik_lock_destroy(b);
}

/* The flock of the lock file dropped after the last event its holder makes (the
 * kernel sends a close event before it drops a closed file's flock), or with no
 * event at all (flock(1)'s `flock -u`, its descriptor kept open): the waiter takes
 * the lock all the same, on its bounded retry (recipe_local.c, F4). Before, it slept
 * in poll(-1) until its timeout. */
static void test_unlock_without_event(void **st)
{
    fx *f = *st;
    char path[200];
    snprintf(path, sizeof path, "%s/locks/quiet.lock", f->dir);
    ik_lock *a;
    assert_int_equal(ik_lock_create(f->c, "quiet", NULL, &a), 0);
    assert_int_equal(ik_lock_acquire(a, 0, NULL), 0); /* makes the files */
    assert_int_equal(ik_lock_release(a), 0);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX), 0);
    waiter w = {a, 8000, 1, 0, NULL, NULL, 0, NULL};
    pthread_t t;
    pthread_create(&t, NULL, wait_thread, &w);
    for (int k = 0; k < 500 && tickets(f, "quiet.lock") < 1; k++)
        sleep_ms(1);
    sleep_ms(50); /* the waiter is in its wait on the lock file */
    int other = open(path, O_RDONLY | O_CLOEXEC);
    assert_true(other >= 0);
    close(other); /* a close event while the flock still holds */
    sleep_ms(50); /* the waiter tried after it, and found the file locked */
    int64_t t0 = mono_ms();
    assert_int_equal(flock(fd, LOCK_UN), 0); /* no event: the descriptor stays open */
    pthread_join(t, NULL);
    assert_int_equal(w.rc, 0);
    assert_true(mono_ms() - t0 < 2000);
    ik_lock_release(a);
    close(fd);
    ik_lock_destroy(a);
}

static void test_bad_args(void **st)
{
    fx *f = *st;
    ik_lock *lk;
    assert_int_equal(ik_lock_create(f->c, "/a/../b", NULL, &lk), IK_EINVAL);
    assert_int_equal(ik_lock_create(f->c, "", NULL, &lk), IK_EINVAL);
    assert_int_equal(ik_lock_create(NULL, "a", NULL, &lk), IK_EINVAL);
    assert_int_equal(ik_lock_create(f->c, "a", NULL, &lk), 0);
    assert_int_equal(ik_lock_acquire(lk, -2, NULL), IK_EINVAL);
    assert_int_equal(ik_lock_release(lk), IK_EINVAL);
    assert_string_equal(ik_hold_state_name(ik_lock_state(lk)), "idle");
    assert_string_equal(ik_hold_state_name(IK_HOLD_IN_DOUBT), "in_doubt");
    ik_lock_destroy(lk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_exclusion_and_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rwlock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_election, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dead_waiter, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unlock_without_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_args, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
