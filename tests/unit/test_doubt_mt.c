/* test_doubt_mt.c: the doubt engine's own bookkeeping and its one rule
 * (counters/doubt.c, D1-D7), on a scripted seam: a backend whose tag_advance answers
 * what each test tells it, reports the evidence it is told to, and records what the
 * engine handed it. The stores' side (what a store holds of a write id) is tested
 * against real stores: conformance tags_doubt_term, close_refused,
 * shutdown_unreachable, t_redis_doubts, t_zk_doubt_full, t_sql_batch_kill9. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "doubt.h"
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- the scripted backend ---------------------------------------------------------- */

static struct {
    pthread_mutex_t mu;
    int answer;                /* what tag_advance returns */
    ik__doubt_fate fate;       /* the fate its evidence of every carried doubt gives */
    int64_t landed_first;      /* for LANDED */
    ik__doubt_evidence own_ev; /* copied into w->own_ev */
    int calls, settles;        /* tag_advance, tag_settle calls */
    int n_carried;             /* of the last call */
    uint64_t carried[32];      /* their write ids */
    uint64_t wid;              /* the last call's own write id */
    char writer[33];           /* the last call's writer */
    int in_call, most_in_call; /* advances of one tag at once */
    int hold_us;               /* each advance sleeps this long */
    char log[64][400];
    int nlog;
} S;

/* Evidence that the rule (D7) decides as fate, for a write made just now. */
static void evidence_for(ik__doubt_fate fate, int64_t first, ik__doubt_evidence *e)
{
    memset(e, 0, sizeof *e);
    e->first = -1;
    if (fate == IK__DOUBT_OPEN) return; /* nothing read */
    e->read = 1;
    if (fate == IK__DOUBT_LANDED) e->held = 1, e->first = first;
    if (fate == IK__DOUBT_NOT_LANDED) e->intact = e->reaches = e->moved = 1;
    /* UNKNOWN: read, a record not whole */
}

static int fake_advance(ik__backend *b, const char *app, const char *name, ik_tag_kind kind,
                        ik__tag_write *w, int64_t *first)
{
    (void)b, (void)app, (void)name, (void)kind;
    pthread_mutex_lock(&S.mu);
    S.calls++;
    if (++S.in_call > S.most_in_call) S.most_in_call = S.in_call;
    S.n_carried = w->n_carried;
    for (int i = 0; i < w->n_carried; i++) {
        S.carried[i] = w->carried[i].wid;
        evidence_for(S.fate, S.landed_first, &w->ev[i]);
    }
    S.wid = w->own.wid;
    memcpy(S.writer, w->writer, sizeof S.writer);
    w->own_ev = S.own_ev;
    int rc = S.answer, hold = S.hold_us;
    pthread_mutex_unlock(&S.mu);
    if (hold) usleep((useconds_t)hold);
    pthread_mutex_lock(&S.mu);
    S.in_call--;
    pthread_mutex_unlock(&S.mu);
    *first = 100;
    return rc;
}

static void fake_settle(ik__backend *b, const char *app, const char *name, ik__tag_write *w,
                        int64_t deadline)
{
    (void)b, (void)app, (void)name, (void)deadline;
    pthread_mutex_lock(&S.mu);
    S.settles++;
    for (int i = 0; i < w->n_carried; i++)
        evidence_for(S.fate, S.landed_first, &w->ev[i]);
    pthread_mutex_unlock(&S.mu);
}

static ik__backend_ops ops = {
    .scheme = "fake", .tag_advance = fake_advance, .tag_settle = fake_settle, .tag_lanes = 4};

static ik__backend be = {.ops = &ops};

static void on_log(void *ctx, const char *line)
{
    (void)ctx;
    pthread_mutex_lock(&S.mu);
    if (S.nlog < 64) snprintf(S.log[S.nlog++], sizeof S.log[0], "%s", line);
    pthread_mutex_unlock(&S.mu);
}

static int logged(const char *needle)
{
    int n = 0;
    for (int i = 0; i < S.nlog; i++)
        n += strstr(S.log[i], needle) != NULL;
    return n;
}

static int setup(void **st)
{
    (void)st;
    memset(&S, 0, sizeof S);
    pthread_mutex_init(&S.mu, NULL);
    ops.tag_lanes = 4;
    ik_set_log(on_log, NULL);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    ik_set_log(NULL, NULL);
    return 0;
}

static int advance(ik__doubts *d, const char *tag, int64_t delta)
{
    int64_t first;
    return ik__doubts_advance(d, &be, "default", tag, IK_TAG_SEQUENCE, delta, &first);
}

/* ---- the tests ---------------------------------------------------------------------- */

/* D2, D3: a write in doubt is kept, and the tag's next advance carries it; another
 * tag's does not. Write ids increase (D1). */
static void doubt_is_carried_by_the_next_advance_of_its_tag(void **st)
{
    (void)st;
    ik__doubts *d;
    assert_int_equal(ik__doubts_new(&d), 0);
    S.answer = IK_EINDOUBT;
    assert_int_equal(advance(d, "a", 5), IK_EINDOUBT);
    uint64_t lost = S.wid;
    assert_int_equal(ik__doubts_open(d), 1);
    S.answer = IK_OK;
    assert_int_equal(advance(d, "b", 5), IK_OK);
    assert_int_equal(S.n_carried, 0);
    S.fate = IK__DOUBT_OPEN; /* the store could not tell yet */
    assert_int_equal(advance(d, "a", 5), IK_OK);
    assert_int_equal(S.n_carried, 1);
    assert_true(S.carried[0] == lost);
    assert_true(S.wid > lost);
    assert_int_equal(ik__doubts_open(d), 1); /* OPEN: kept */
    S.fate = IK__DOUBT_LANDED;
    S.landed_first = 42;
    assert_int_equal(advance(d, "a", 1), IK_OK);
    assert_int_equal(ik__doubts_open(d), 0);
    assert_int_equal(logged("tag gap tag=a first=42 count=5 why=answer_lost"), 1);
    ik__doubts_free(d);
    assert_int_equal(S.nlog, 1);
}

/* D5: not landed is "settled"; unknown is a gap "first=?"; a write of the call that
 * landed but is not handed out is a gap with the backend's code, and not kept. */
static void every_fate_is_one_line(void **st)
{
    (void)st;
    ik__doubts *d;
    assert_int_equal(ik__doubts_new(&d), 0);
    S.answer = IK_EINDOUBT;
    advance(d, "t", 3);
    advance(d, "t", 4); /* carries the first, OPEN, and adds itself */
    assert_int_equal(ik__doubts_open(d), 2);
    S.answer = IK_OK;
    S.fate = IK__DOUBT_NOT_LANDED;
    advance(d, "t", 1);
    assert_int_equal(S.n_carried, 2);
    assert_int_equal(logged("tag doubt settled tag=t count=3"), 1);
    assert_int_equal(logged("tag doubt settled tag=t count=4"), 1);
    S.answer = IK_EINDOUBT;
    advance(d, "t", 6);
    S.answer = IK_OK;
    S.fate = IK__DOUBT_UNKNOWN;
    advance(d, "t", 1);
    assert_int_equal(logged("tag gap tag=t first=? count=6 why=maybe_recorded"), 1);
    S.answer = IK_EUNSAFE;
    S.own_ev = (ik__doubt_evidence){.read = 1, .held = 1, .first = 7, .code = "store_unsafe"};
    snprintf(S.own_ev.what, sizeof S.own_ev.what, "its proof was refused");
    assert_int_equal(advance(d, "t", 9), IK_EUNSAFE);
    assert_int_equal(logged("tag gap tag=t first=7 count=9 why=store_unsafe"), 1);
    assert_int_equal(logged("its proof was refused"), 1);
    assert_int_equal(ik__doubts_open(d), 0);
    ik__doubts_free(d);
}

/* One advance whose backend lost its own answer and read the write back within the
 * call (IK_EINDOUBT, its evidence as fate gives it): the engine's answer, then
 * exactly the line expected and no gap. */
static void reread(ik__doubts *d, ik__doubt_fate fate, int64_t first, int64_t delta,
                   const char *what, int answer, const char *line)
{
    S.answer = IK_EINDOUBT;
    evidence_for(fate, first, &S.own_ev);
    snprintf(S.own_ev.what, sizeof S.own_ev.what, "%s", what);
    int64_t got = -1;
    assert_int_equal(ik__doubts_advance(d, &be, "default", "r", IK_TAG_SEQUENCE, delta, &got),
                     answer);
    if (answer == IK_OK) assert_int_equal(got, first); /* handed out, by the engine */
    assert_int_equal(logged(line), 1);
    assert_int_equal(logged("tag gap"), 0);
}

/* D5, D7, the call's own write: a backend that lost its answer and read back within
 * the same call what the store holds of it reports its evidence, and the engine
 * decides and writes the line: landed is handed out (0, at its range) and "settled",
 * not a gap; not landed fails the call (IK_ESTORE) and is "settled"; neither is kept.
 * No backend decides or logs a fate of its own. */
static void the_calls_own_reread_is_decided_by_the_engine(void **st)
{
    (void)st;
    ik__doubts *d;
    assert_int_equal(ik__doubts_new(&d), 0);
    reread(d, IK__DOUBT_LANDED, 40, 5, "written at version 3, now 4", IK_OK,
           "tag doubt settled tag=r first=40 count=5 (app default): the write whose answer was "
           "lost landed: handed out (written at version 3, now 4)");
    reread(d, IK__DOUBT_NOT_LANDED, -1, 2, "its writer's commit mark is of write 1", IK_ESTORE,
           "tag doubt settled tag=r count=2 (app default): the write whose answer was lost did "
           "not land, and never will (its writer's commit mark is of write 1)");
    assert_int_equal(S.nlog, 2);
    assert_int_equal(ik__doubts_open(d), 0);
    ik__doubts_free(d);
}

/* D7: the one rule, branch by branch, for a write made at `sent` and read now. */
static ik__doubt_fate rule(ik__doubt_evidence e, int64_t age_ms, int at_stop)
{
    ik__doubt x = {.wid = 5, .delta = 3, .first = 10, .sent_ns = ik__mono_ns() - age_ms * 1000000};
    ik__doubt_verdict v;
    ik__doubt_judge(&x, &e, ik__mono_ns(), at_stop, &v);
    return v.fate;
}

static void one_rule_decides_every_fate(void **st)
{
    (void)st;
    ik__doubt_evidence none = {0}, held = {.read = 1, .held = 1, .first = -1};
    ik__doubt_evidence gone = {.read = 1, .intact = 1, .moved = 1};
    ik__doubt_evidence absent = {.read = 1, .intact = 1, .moved = 1, .reaches = 1};
    ik__doubt_evidence pending = {.read = 1, .intact = 1, .reaches = 1};
    ik__doubt_evidence fenced = pending, torn = absent;
    fenced.fenced = 1;
    torn.intact = 0;
    assert_int_equal(rule(none, 0, 0), IK__DOUBT_OPEN);                    /* nothing read: kept */
    assert_int_equal(rule(held, 0, 0), IK__DOUBT_LANDED);                  /* its pair held */
    assert_int_equal(rule(held, IK__DOUBT_TRUST_MS, 0), IK__DOUBT_LANDED); /* held: no horizon */
    assert_int_equal(rule(absent, 0, 0), IK__DOUBT_NOT_LANDED);
    assert_int_equal(rule(absent, IK__DOUBT_TRUST_MS, 0), IK__DOUBT_UNKNOWN); /* our clock */
    absent.age_ms = IK__DOUBT_TRUST_MS; /* the store's clock */
    assert_int_equal(rule(absent, 0, 0), IK__DOUBT_UNKNOWN);
    assert_int_equal(rule(gone, 0, 0), IK__DOUBT_UNKNOWN);    /* out of the record's reach */
    assert_int_equal(rule(torn, 0, 0), IK__DOUBT_UNKNOWN);    /* a record not whole */
    assert_int_equal(rule(pending, 0, 0), IK__DOUBT_OPEN);    /* pending until fenced */
    assert_int_equal(rule(pending, 0, 1), IK__DOUBT_UNKNOWN); /* the stop fences nothing */
    assert_int_equal(rule(fenced, IK__DOUBT_TRUST_MS, 1), IK__DOUBT_NOT_LANDED);
    ik__doubt x = {.wid = 5, .delta = 3, .first = 10, .sent_ns = ik__mono_ns()};
    ik__doubt_verdict v;
    held.code = "store_unsafe";
    ik__doubt_judge(&x, &held, ik__mono_ns(), 0, &v);
    assert_true(v.fate == IK__DOUBT_LANDED && v.first == 10 && v.code == held.code);
}

/* D4: a lane keeps 16 doubts; the oldest of the 17th is logged "first=?" at once. */
static void the_table_is_bounded_and_logs_what_it_drops(void **st)
{
    (void)st;
    ik__doubts *d;
    assert_int_equal(ik__doubts_new(&d), 0);
    ops.tag_lanes = 1;
    S.answer = IK_EINDOUBT;
    S.fate = IK__DOUBT_OPEN;
    advance(d, "q", 1000); /* the oldest: count 1000 */
    for (int i = 0; i < 16; i++)
        advance(d, "q", 2);
    assert_int_equal(ik__doubts_open(d), 16);
    assert_int_equal(logged("tag gap tag=q first=? count=1000 why=maybe_recorded"), 1);
    assert_int_equal(logged("tag gap"), 1);
    S.answer = IK_OK;
    advance(d, "q", 1);
    assert_int_equal(S.n_carried, 16);
    ik__doubts_free(d); /* D5: what is left at exit is logged, never dropped */
    assert_int_equal(logged("still open at exit"), 16);
}

/* D6: the stop settles through tag_settle, or, refused, logs each without a call. */
static void the_stop_settles_or_logs_without_a_word_to_the_store(void **st)
{
    (void)st;
    ik__doubts *d;
    assert_int_equal(ik__doubts_new(&d), 0);
    S.answer = IK_EINDOUBT;
    S.fate = IK__DOUBT_OPEN;
    advance(d, "x", 2);
    advance(d, "y", 3);
    ik__doubts_settle(d, &be, ik__mono_ns() + 1000000000LL, "the store's checks refuse it: no");
    assert_int_equal(S.settles, 0);
    assert_int_equal(logged("tag gap tag=x first=? count=2 why=maybe_recorded"), 1);
    assert_int_equal(logged("not settled (the store's checks refuse it: no)"), 2);
    assert_int_equal(ik__doubts_open(d), 0);

    advance(d, "x", 5);
    S.fate = IK__DOUBT_NOT_LANDED;
    ik__doubts_settle(d, &be, ik__mono_ns() + 1000000000LL, NULL);
    assert_int_equal(S.settles, 1);
    assert_int_equal(logged("tag doubt settled tag=x count=5"), 1);

    S.fate = IK__DOUBT_OPEN; /* no answer by the deadline */
    advance(d, "x", 7);
    ik__doubts_settle(d, &be, ik__mono_ns() + 1000000000LL, NULL);
    assert_int_equal(logged("tag gap tag=x first=? count=7"), 1);
    assert_int_equal(logged("no answer by the deadline"), 1);
    ik__doubts_free(d);
}

/* D3: at most tag_lanes advances of one tag at once, each as a writer of its own. */
static ik__doubts *shared;
static void *hammer(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        advance(shared, "h", 1);
    return NULL;
}

static void lanes_bound_the_writers_of_a_tag(void **st)
{
    (void)st;
    assert_int_equal(ik__doubts_new(&shared), 0);
    S.answer = IK_OK;
    S.hold_us = 200;
    ops.tag_lanes = 2;
    pthread_t t[6];
    for (int i = 0; i < 6; i++)
        pthread_create(&t[i], NULL, hammer, NULL);
    for (int i = 0; i < 6; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(S.calls, 300);
    assert_true(S.most_in_call <= 2);
    assert_true(S.most_in_call >= 1);
    assert_int_equal((int)strlen(S.writer), 32);
    ik__doubts_free(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(doubt_is_carried_by_the_next_advance_of_its_tag, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(every_fate_is_one_line, setup, teardown),
        cmocka_unit_test_setup_teardown(the_calls_own_reread_is_decided_by_the_engine, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(one_rule_decides_every_fate, setup, teardown),
        cmocka_unit_test_setup_teardown(the_table_is_bounded_and_logs_what_it_drops, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(the_stop_settles_or_logs_without_a_word_to_the_store, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(lanes_bound_the_writers_of_a_tag, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
