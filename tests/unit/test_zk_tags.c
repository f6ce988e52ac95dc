/* test_zk_tags.c: the pure parts of the ZooKeeper tag store (backend_zk_data.c, for
 * backend_zk_tags.c): the counter node's encoding, the writer table a write carries
 * forward, the evidence a node read afterwards gives of a write whose answer was
 * lost, as the doubt engine's rule decides it (counters/doubt.c), and what one
 * advance reports of the engine's writes. The calls that talk to ZooKeeper are tested
 * against a real one (tests/integration/t_zk_counters_*.sh, t_zk_doubt_*.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "backend.h"
#include "backend_zk.h"
#include "doubt.h"
#include "internal.h"

#include <string.h>

#define NONCE_A UINT64_C(0x16f9014d6ca10942)
#define NONCE_B UINT64_C(0x9b06cdc4c6c4df5d)
#define MIN 60000

/* Reads the node back the way a server would: data through parse, stat set. */
static void reread(const ik__zk_counter *in, int version, int64_t mtime, int64_t czxid,
                   ik__zk_counter *out)
{
    char buf[4096];
    int len = ik__zk_counter_format(buf, sizeof buf, in);
    assert_true(len > 8);
    assert_int_equal(ik__zk_counter_parse(buf, len, out), 0);
    out->version = version;
    out->mtime = mtime;
    out->czxid = czxid;
}

/* A write of delta IDs, write id wid, made at node n, as the doubt engine keeps it. */
static ik__doubt made_at(const ik__zk_counter *n, int64_t delta, uint64_t wid)
{
    ik__doubt x;
    memset(&x, 0, sizeof x);
    x.wid = wid;
    x.delta = delta;
    ik__zk_note(&x, n);
    return x;
}

/* Adds to d the write of delta IDs, write id wid, made at node n: the doubt engine's
 * record of it, with the notes the backend gives it before sending (made_at). */
static int add(ik__zk_doubt *d, const ik__zk_counter *n, int64_t delta, uint64_t wid)
{
    ik__doubt x = made_at(n, delta, wid);
    return ik__zk_doubt_add(d, &x);
}

static void encoding_is_curators_then_the_table(void **st)
{
    (void)st;
    ik__zk_counter n;
    memset(&n, 0, sizeof n);
    n.max_id = INT64_C(0x0102030405060708);
    n.has_table = 1;
    n.since = 3;
    n.nw = 1;
    n.w[0] = (ik__zk_writer){NONCE_A, 42, 1795316385635};
    char buf[256];
    int len = ik__zk_counter_format(buf, sizeof buf, &n);
    static const char want[] = "\x01\x02\x03\x04\x05\x06\x07\x08"
                               "since=3\nw=16f9014d6ca10942:42:1795316385635\n";
    assert_int_equal(len, (int)sizeof want - 1);
    assert_memory_equal(buf, want, sizeof want - 1);

    ik__zk_counter r;
    assert_int_equal(ik__zk_counter_parse(buf, len, &r), 0);
    assert_true(r.max_id == n.max_id && r.has_table && r.since == 3 && r.nw == 1);
    assert_true(r.w[0].nonce == NONCE_A && r.w[0].count == 42 && r.w[0].ms == 1795316385635);
    assert_int_equal(ik__zk_counter_format(buf, 20, &n), -1); /* does not fit */

    /* Curator's DistributedAtomicLong writes exactly 8 bytes: a value, no table */
    static const char curator[8] = {0, 0, 0, 0, 0, 0, 0x04, 0x01};
    assert_int_equal(ik__zk_counter_parse(curator, 8, &r), 0);
    assert_true(r.max_id == 1025 && !r.has_table && r.nw == 0);
    assert_int_equal(ik__zk_counter_parse(curator, 7, &r), -1);
    /* lines that do not parse are skipped; w= lines without since= are not trusted */
    static const char junk[] = "\0\0\0\0\0\0\0\x05w=zz:1:2\nother\nw=16f9014d6ca10942:1:2\n";
    assert_int_equal(ik__zk_counter_parse(junk, sizeof junk - 1, &r), 0);
    assert_true(r.max_id == 5 && !r.has_table && r.nw == 0);
}

static void a_write_puts_its_line_first_and_drops_stale_ones(void **st)
{
    (void)st;
    ik__zk_counter v0, v1, v2, v3;
    memset(&v0, 0, sizeof v0);
    v0.max_id = 100;
    v0.has_table = 1; /* a new tag: since=0, empty table */
    v0.mtime = 1000 * MIN;
    ik__zk_counter_next(&v0, NONCE_A, 1, 10, &v1);
    assert_true(v1.max_id == 110 && v1.since == 0 && v1.nw == 1 && v1.w[0].nonce == NONCE_A &&
                v1.w[0].count == 1 && v1.w[0].ms == 1000 * MIN);
    v1.version = 1;
    v1.mtime = 1001 * MIN;
    ik__zk_counter_next(&v1, NONCE_B, 7, 5, &v2);
    assert_true(v2.max_id == 115 && v2.nw == 2 && v2.w[0].nonce == NONCE_B &&
                v2.w[1].nonce == NONCE_A);
    v2.version = 2;
    v2.mtime = 1002 * MIN;
    /* A again: its older line goes, the new one is first */
    ik__zk_counter_next(&v2, NONCE_A, 3, 5, &v3);
    assert_true(v3.nw == 2 && v3.w[0].nonce == NONCE_A && v3.w[0].count == 3 &&
                v3.w[1].nonce == NONCE_B);
    /* B's line is 10 minutes older than the version read: dropped */
    v3.version = 3;
    v3.mtime = 1002 * MIN + IK__ZK_PRUNE_MS;
    ik__zk_counter v4;
    ik__zk_counter_next(&v3, NONCE_A, 4, 1, &v4);
    assert_true(v4.nw == 1 && v4.w[0].count == 4 && v4.since == 3); /* complete from 3 on */

    /* after Curator (no table) the table restarts at the version read */
    ik__zk_counter cur;
    memset(&cur, 0, sizeof cur);
    cur.max_id = 1025;
    cur.version = 9;
    ik__zk_counter_next(&cur, NONCE_A, 5, 1, &v4);
    assert_true(v4.has_table && v4.since == 9 && v4.nw == 1);

    /* a full table drops the oldest line and is complete only from here on */
    ik__zk_counter full;
    memset(&full, 0, sizeof full);
    full.has_table = 1;
    full.version = 50;
    full.mtime = 5 * MIN;
    full.nw = IK__ZK_WRITERS_MAX;
    for (int i = 0; i < IK__ZK_WRITERS_MAX; i++)
        full.w[i] = (ik__zk_writer){1000 + (uint64_t)i, 1, 5 * MIN};
    ik__zk_counter_next(&full, NONCE_A, 6, 1, &v4);
    assert_true(v4.nw == IK__ZK_WRITERS_MAX && v4.since == 50 && v4.w[0].nonce == NONCE_A &&
                v4.w[IK__ZK_WRITERS_MAX - 1].nonce == 1000 + IK__ZK_WRITERS_MAX - 2);
}

/* A writes at version 7 and loses the answer; B writes; what does A read? */
/* The fate the doubt engine's rule gives write j of d as node n shows it, read now,
 * the write made just now by our clock. */
static ik__doubt_fate fate_of(const ik__zk_doubt *d, const ik__zk_counter *n, int j)
{
    ik__doubt_evidence e;
    ik__zk_evidence(d, n, NONCE_A, j, &e);
    ik__doubt x = {
        .wid = d->w[j].count, .delta = d->w[j].delta, .first = d->first, .sent_ns = ik__mono_ns()};
    ik__doubt_verdict v;
    ik__doubt_judge(&x, &e, ik__mono_ns(), 0, &v);
    return v.fate;
}

/* The rule on evidence e of write x, now (what the engine decides after the call). */
static ik__doubt_fate rule(const ik__doubt *x, const ik__doubt_evidence *e)
{
    ik__doubt_verdict v;
    ik__doubt_judge(x, e, ik__mono_ns(), 0, &v);
    return v.fate;
}

static void a_lost_answer_is_settled_by_the_table(void **st)
{
    (void)st;
    ik__zk_counter v7, a8, b8, b9, read;
    memset(&v7, 0, sizeof v7);
    v7.max_id = 500;
    v7.version = 7;
    v7.czxid = 77;
    v7.mtime = 100 * MIN;
    v7.has_table = 1;
    ik__zk_doubt d;
    memset(&d, 0, sizeof d);
    assert_int_equal(add(&d, &v7, 20, 11), 0);
    assert_true(d.version == 7 && d.first == 500 && d.czxid == 77 && d.mtime == 100 * MIN &&
                d.n == 1 && d.w[0].count == 11 && d.w[0].delta == 20);

    /* still at 7: not applied yet, a write at 7 fences it */
    reread(&v7, 7, v7.mtime, 77, &read);
    assert_int_equal(fate_of(&d, &read, 0), IK__DOUBT_OPEN); /* pending */

    /* A's write landed (version 8), then B wrote twice: A's line says count 11 */
    ik__zk_counter_next(&v7, NONCE_A, 11, 20, &a8);
    reread(&a8, 8, 101 * MIN, 77, &a8);
    ik__zk_counter_next(&a8, NONCE_B, 1, 5, &b9);
    reread(&b9, 9, 101 * MIN, 77, &b9);
    ik__zk_counter b10;
    ik__zk_counter_next(&b9, NONCE_B, 2, 5, &b10);
    reread(&b10, 10, 102 * MIN, 77, &read);
    assert_int_equal(fate_of(&d, &read, 0), IK__DOUBT_LANDED);

    /* B won version 8 instead: A's write at 7 can never apply */
    ik__zk_counter_next(&v7, NONCE_B, 1, 5, &b8);
    reread(&b8, 8, 101 * MIN, 77, &b8);
    ik__zk_counter_next(&b8, NONCE_B, 2, 5, &b9);
    reread(&b9, 9, 101 * MIN, 77, &read);
    assert_int_equal(fate_of(&d, &read, 0), IK__DOUBT_NOT_LANDED);

    /* an older line of A's in the table is not that write */
    ik__zk_counter old = v7;
    old.nw = 1;
    old.w[0] = (ik__zk_writer){NONCE_A, 10, 99 * MIN};
    ik__zk_counter_next(&old, NONCE_B, 1, 5, &b8);
    reread(&b8, 8, 101 * MIN, 77, &read);
    assert_int_equal(fate_of(&d, &read, 0), IK__DOUBT_NOT_LANDED);

    /* two writes in doubt at 7 (the second fenced the first): either may be found */
    assert_int_equal(add(&d, &v7, 20, 12), 0);
    ik__zk_counter_next(&v7, NONCE_A, 12, 20, &a8);
    reread(&a8, 8, 101 * MIN, 77, &read);
    assert_int_equal(fate_of(&d, &read, 1), IK__DOUBT_LANDED);
    assert_int_equal(fate_of(&d, &read, 0), IK__DOUBT_NOT_LANDED);
    /* but not a write at another version, nor one of another node at that version */
    assert_int_equal(add(&d, &read, 20, 13), -1);
    ik__zk_counter again = v7;
    again.czxid = 78;
    assert_int_equal(add(&d, &again, 20, 13), -1);
    assert_int_equal(d.n, 2);
}

/* The leader's clock runs an hour ahead while A's write (lost answer) lands at 8, so
 * B, reading 8, finds A's line "an hour old" and prunes it; then the clock steps
 * back and C writes 10 with an mtime a minute after 7's. A's write landed: A must
 * not settle it as never applied (its range would be an unlogged gap). Settlement
 * must not depend on the server's mtime going forward: a pruned line raises since,
 * so A finds UNKNOWN and logs the gap. */
static void a_clock_step_back_cannot_hide_a_landed_write(void **st)
{
    (void)st;
    ik__zk_counter v7, a8, b9, c10, read;
    memset(&v7, 0, sizeof v7);
    v7.max_id = 500;
    v7.version = 7;
    v7.czxid = 77;
    v7.mtime = 100 * MIN;
    v7.has_table = 1;
    ik__zk_doubt d;
    memset(&d, 0, sizeof d);
    assert_int_equal(add(&d, &v7, 20, 11), 0);
    ik__zk_counter_next(&v7, NONCE_A, 11, 20, &a8);
    reread(&a8, 8, 160 * MIN, 77, &a8); /* the leader's clock an hour ahead */
    ik__zk_counter_next(&a8, NONCE_B, 1, 5, &b9);
    reread(&b9, 9, 160 * MIN, 77, &b9);
    ik__zk_counter_next(&b9, UINT64_C(0xc), 1, 5, &c10);
    reread(&c10, 10, 101 * MIN, 77, &read); /* stepped back */
    ik__doubt_fate r = fate_of(&d, &read, 0);
    if (r == IK__DOUBT_NOT_LANDED)
        fail_msg("A's landed write (version 8) settled as NOT_LANDED after a clock step back: "
                 "an unlogged gap of 20 IDs");
    assert_true(r == IK__DOUBT_UNKNOWN || r == IK__DOUBT_LANDED);
}

static void what_cannot_be_told_is_unknown(void **st)
{
    (void)st;
    ik__zk_counter v7, n;
    memset(&v7, 0, sizeof v7);
    v7.max_id = 500;
    v7.version = 7;
    v7.czxid = 77;
    v7.mtime = 100 * MIN;
    v7.has_table = 1;
    ik__zk_doubt d;
    memset(&d, 0, sizeof d);
    add(&d, &v7, 20, 11);

    /* Curator wrote since (8 bytes, no table) */
    memset(&n, 0, sizeof n);
    n.max_id = 9999;
    n.version = 9;
    n.czxid = 77;
    n.mtime = 101 * MIN;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_UNKNOWN);
    /* the table restarted after version 7 (since 8: version 8 may not be listed) */
    n.has_table = 1;
    n.since = 8;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_UNKNOWN);
    n.since = 7;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_NOT_LANDED);
    /* so long after, by ZooKeeper's clock, that our line could have been pruned: the
     * engine's one trust horizon */
    n.mtime = 100 * MIN + IK__DOUBT_TRUST_MS;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_UNKNOWN);
    /* another node of the same name (deleted and made again) */
    n.mtime = 101 * MIN;
    n.czxid = 78;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_UNKNOWN);
    n.czxid = 77;
    n.version = 6;
    assert_int_equal(fate_of(&d, &n, 0), IK__DOUBT_UNKNOWN);
    /* no more than IK__DOUBT_LANE_MAX carried at once, and the call's own */
    for (int i = 1; i <= IK__DOUBT_LANE_MAX; i++)
        assert_int_equal(add(&d, &v7, 20, 12 + (uint64_t)i), 0);
    assert_int_equal(add(&d, &v7, 20, 99), -1);
}

/* What one call reports from a read (ik__zk_call_read) for the doubt engine, and
 * what it does next by the engine's rule: the carried doubts' evidence, and whether
 * the call's own write landed, did not, or cannot be told. */
static ik__doubt_fate judge_now(const ik__doubt *x, const ik__doubt_evidence *e)
{
    return rule(x, e);
}

static void a_read_reports_a_calls_doubts(void **st)
{
    (void)st;
    ik__zk_counter v7, v9, read;
    memset(&v7, 0, sizeof v7);
    v7.max_id = 500;
    v7.version = 7;
    v7.czxid = 77;
    v7.mtime = 100 * MIN;
    v7.has_table = 1;
    ik__doubt carried[2] = {made_at(&v7, 10, 11), made_at(&v7, 20, 12)};
    carried[0].sent_ns = carried[1].sent_ns = ik__mono_ns();
    ik__doubt_evidence ev[2];
    ik__tag_write w;
    memset(&w, 0, sizeof w);
    memset(ev, 0, sizeof ev);
    w.carried = carried;
    w.n_carried = 2;
    w.ev = ev;
    w.judge = judge_now;
    w.own = made_at(&v7, 5, 20);
    w.own.sent_ns = ik__mono_ns();
    ik__zk_call c = {.w = &w, .carried_open = 1};

    /* still at 7: pending, write on (at 7: it fences them) */
    reread(&v7, 7, v7.mtime, 77, &read);
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_GO);
    assert_true(c.carried_open && rule(&carried[0], &ev[0]) == IK__DOUBT_OPEN &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_OPEN);

    /* the second carried write landed: held at its place, the first never will */
    ik__zk_counter_next(&v7, NONCE_A, 12, 20, &read);
    reread(&read, 8, 101 * MIN, 77, &read);
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_GO);
    assert_true(!c.carried_open && rule(&carried[0], &ev[0]) == IK__DOUBT_NOT_LANDED &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_LANDED && ev[1].held);

    /* the call's own write open with them: it landed (the engine hands it out); they
     * did not */
    memset(ev, 0, sizeof ev);
    c = (ik__zk_call){.w = &w, .carried_open = 1, .own_open = 1};
    ik__zk_counter_next(&v7, NONCE_A, 20, 5, &read);
    reread(&read, 8, 101 * MIN, 77, &read);
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_MINE);
    assert_true(!c.own_open && rule(&carried[0], &ev[0]) == IK__DOUBT_NOT_LANDED &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_NOT_LANDED &&
                rule(&w.own, &w.own_ev) == IK__DOUBT_LANDED);

    /* a carried one landed instead: the own write never will, its id is free again */
    memset(ev, 0, sizeof ev);
    c = (ik__zk_call){.w = &w, .carried_open = 1, .own_open = 1};
    ik__zk_counter_next(&v7, NONCE_A, 11, 10, &read);
    reread(&read, 8, 101 * MIN, 77, &read);
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_GO);
    assert_true(!c.own_open && rule(&carried[0], &ev[0]) == IK__DOUBT_LANDED &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_NOT_LANDED && !w.own_ev.read);

    /* the table cannot tell: all of them unknown, the own write too (the call: 503) */
    memset(ev, 0, sizeof ev);
    c = (ik__zk_call){.w = &w, .carried_open = 1, .own_open = 1};
    read.since = 8;
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_LOST);
    assert_true(rule(&carried[0], &ev[0]) == IK__DOUBT_UNKNOWN &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_UNKNOWN &&
                rule(&w.own, &w.own_ev) == IK__DOUBT_UNKNOWN && !c.own_open);

    /* doubts of two versions (cannot happen: ZT2) decide nothing but UNKNOWN */
    memset(&v9, 0, sizeof v9);
    v9 = v7;
    v9.version = 9;
    v9.max_id = 700;
    carried[1] = made_at(&v9, 20, 12);
    carried[1].sent_ns = ik__mono_ns();
    memset(ev, 0, sizeof ev);
    memset(&w.own_ev, 0, sizeof w.own_ev);
    c = (ik__zk_call){.w = &w, .carried_open = 1};
    ik__zk_counter_next(&v9, NONCE_A, 12, 20, &read);
    reread(&read, 10, 101 * MIN, 77, &read);
    assert_int_equal(ik__zk_call_read(&c, &read, NONCE_A), IK__ZK_GO);
    assert_true(rule(&carried[0], &ev[0]) == IK__DOUBT_UNKNOWN &&
                rule(&carried[1], &ev[1]) == IK__DOUBT_UNKNOWN);

    /* an acknowledged write at their version: the one sent again landed, the rest are
     * fenced */
    carried[1] = made_at(&v7, 20, 12);
    carried[1].sent_ns = ik__mono_ns();
    memset(ev, 0, sizeof ev);
    c = (ik__zk_call){.w = &w, .carried_open = 1};
    ik__zk_call_fenced(&c, 1, 7);
    assert_true(!c.carried_open && rule(&carried[0], &ev[0]) == IK__DOUBT_NOT_LANDED &&
                ev[0].fenced && rule(&carried[1], &ev[1]) == IK__DOUBT_LANDED &&
                ev[1].first == 500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encoding_is_curators_then_the_table),
        cmocka_unit_test(a_write_puts_its_line_first_and_drops_stale_ones),
        cmocka_unit_test(a_lost_answer_is_settled_by_the_table),
        cmocka_unit_test(a_clock_step_back_cannot_hide_a_landed_write),
        cmocka_unit_test(what_cannot_be_told_is_unknown),
        cmocka_unit_test(a_read_reports_a_calls_doubts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
