/* test_null_args.c: every public function given NULL for each pointer argument
 * (idkeeper.h, "NULL arguments"): IK_EINVAL, or what the header documents for that
 * argument, and never a crash.
 *
 * Each case names the function and the argument it passes NULL for, and records
 * them as it runs; the last test reads include/idkeeper.h, finds every IK_EXTERN
 * function and each of its pointer arguments (a `*`, or one of the callback
 * typedefs), and fails for any the cases did not cover, so a function added to the
 * header without its cases here fails the suite. Functions without a pointer
 * argument are called once, for coverage.
 *
 * The handles NULL is tried beside are real: a local: coord in a fresh directory,
 * a generator holding a slot, a segment and a sequence allocator with their tags,
 * a lock, a read-write lock and an election on their own paths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what the cases covered -------------------------------------------------------- */

#define MAX_COVERED 512
static struct {
    const char *fn, *arg;
} covered[MAX_COVERED];
static size_t ncovered;

static void cover(const char *fn, const char *arg)
{
    assert_true(ncovered < MAX_COVERED);
    covered[ncovered].fn = fn;
    covered[ncovered].arg = arg;
    ncovered++;
}

/* RC(fn, arg, call, want): the call, with NULL for arg, returns want. */
#define RC(fn, arg, call, want)                                                                    \
    do {                                                                                           \
        cover(#fn, arg);                                                                           \
        long long got_ = (long long)(call);                                                        \
        if (got_ != (long long)(want))                                                             \
            fail_msg("%s(%s = NULL): %lld (%s), not %lld (%s)", #fn, arg, got_,                    \
                     ik_errname((int)got_), (long long)(want), ik_errname((int)(want)));           \
    } while (0)
/* VOID(fn, arg, call): the call, with NULL for arg, returns (and does nothing). */
#define VOID(fn, arg, call)                                                                        \
    do {                                                                                           \
        cover(#fn, arg);                                                                           \
        call;                                                                                      \
    } while (0)
/* PTR(fn, arg, call, want): the call, with NULL for arg, returns the pointer want. */
#define PTR(fn, arg, call, want)                                                                   \
    do {                                                                                           \
        cover(#fn, arg);                                                                           \
        if ((const void *)(call) != (const void *)(want)) fail_msg("%s(%s = NULL)", #fn, arg);     \
    } while (0)
/* ONCE(fn, call): a function without pointer arguments, called once. */
#define ONCE(fn, call)                                                                             \
    do {                                                                                           \
        cover(#fn, "");                                                                            \
        (void)(call);                                                                              \
    } while (0)

/* ---- the handles --------------------------------------------------------------------- */

typedef struct fx {
    char dir[64], uri[80];
    ik_coord *c;
    ik_layout lay;
    ik_snowflake *g;
    ik_slot_lease *l;
    ik_segment *seg;
    ik_sequence *seq;
    ik_lock *lk;
    ik_rwlock *rw;
    ik_election *e;
} fx;

static fx F;

static void noop_ids(void *ctx, int status, const int64_t *ids, size_t n)
{
    (void)ctx, (void)status, (void)ids, (void)n;
}

static int setup(void **st)
{
    (void)st;
    char why[256] = "";
    local_dir_make(F.dir, F.uri, "ik-null");
    assert_int_equal(ik_coord_open(F.uri, NULL, &F.c, why, sizeof why), 0);
    ik_layout_default(&F.lay);
    assert_int_equal(ik_snowflake_create(&F.lay, 5, NULL, &F.g), 0);
    ik_lease_options o;
    ik_lease_options_init(&o);
    o.identity = "null-args";
    assert_int_equal(ik_slot_lease_start(F.c, F.g, &o, &F.l, why, sizeof why), 0);
    assert_int_equal(
        ik_tag_create(F.c, "default", "seg", IK_TAG_SEGMENT, 1, 100, NULL, why, sizeof why), 0);
    assert_int_equal(
        ik_tag_create(F.c, "default", "seq", IK_TAG_SEQUENCE, 1, 1, NULL, why, sizeof why), 0);
    assert_int_equal(ik_segment_create(F.c, "default", NULL, &F.seg), 0);
    assert_int_equal(ik_sequence_create(F.c, "default", &F.seq), 0);
    assert_int_equal(ik_lock_create(F.c, "/null/lock", NULL, &F.lk), 0);
    assert_int_equal(ik_rwlock_create(F.c, "/null/rw", NULL, &F.rw), 0);
    assert_int_equal(ik_election_create(F.c, "/null/elect", "me", NULL, &F.e), 0);
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    ik_election_destroy(F.e);
    ik_rwlock_destroy(F.rw);
    ik_lock_destroy(F.lk);
    ik_sequence_destroy(F.seq);
    ik_segment_destroy(F.seg);
    ik_slot_lease_release(F.l);
    ik_snowflake_destroy(F.g);
    ik_coord_close(F.c);
    local_dir_remove(F.dir);
    return 0;
}

/* ---- the cases, by section of the header ------------------------------------------- */

static void errors_and_misc(void **st)
{
    (void)st;
    ONCE(ik_strerror, ik_strerror(IK_EINVAL));
    ONCE(ik_errname, ik_errname(IK_EINVAL));
    VOID(ik_free, "p", ik_free(NULL));
    ONCE(ik_version, ik_version());
    VOID(ik_set_log, "fn", ik_set_log(NULL, NULL)); /* the default sink */
    VOID(ik_set_log, "ctx", ik_set_log(NULL, NULL));
    ONCE(ik_clock_system, ik_clock_system());
    ONCE(ik_verdict_name, ik_verdict_name(IK_VERDICT_OK));
    ONCE(ik_lease_state_name, ik_lease_state_name(IK_LEASE_HELD));
    ONCE(ik_tag_kind_name, ik_tag_kind_name(IK_TAG_SEGMENT));
    ONCE(ik_hold_state_name, ik_hold_state_name(IK_HOLD_HELD));
    VOID(ik_set_gap_hook, "fn", ik_set_gap_hook(NULL, NULL)); /* no hook */
    VOID(ik_set_gap_hook, "ctx", ik_set_gap_hook(NULL, NULL));
}

static void layout(void **st)
{
    (void)st;
    ik_layout l;
    ik_layout_default(&l);
    char buf[128], why[128];
    int64_t id;
    ik_id_parts parts;
    VOID(ik_layout_default, "l", ik_layout_default(NULL));
    RC(ik_layout_check, "l", ik_layout_check(NULL, 1700000000000, why, sizeof why), IK_EINVAL);
    RC(ik_layout_check, "why", ik_layout_check(&l, 1700000000000, NULL, 64), IK_OK);
    RC(ik_layout_parse, "l", ik_layout_parse(NULL, "default", why, sizeof why), IK_ELAYOUT);
    RC(ik_layout_parse, "text", ik_layout_parse(&l, NULL, why, sizeof why), IK_ELAYOUT);
    RC(ik_layout_parse, "why", ik_layout_parse(&l, "bits=41/10/12", NULL, 64), IK_OK);
    RC(ik_layout_format, "l", ik_layout_format(NULL, buf, sizeof buf), IK_EINVAL);
    /* like snprintf: no buffer, no length, the length it needs */
    RC(ik_layout_format, "buf", ik_layout_format(&l, NULL, 0) > 0, 1);
    RC(ik_layout_end_ms, "l", ik_layout_end_ms(NULL), IK_EINVAL);
    RC(ik_layout_ticks_at, "l", ik_layout_ticks_at(NULL, 1700000000000), IK_EINVAL);
    RC(ik_layout_compose, "l", ik_layout_compose(NULL, 1, 1, 1, &id), IK_EINVAL);
    RC(ik_layout_compose, "id", ik_layout_compose(&l, 1, 1, 1, NULL), IK_EINVAL);
    RC(ik_layout_decode, "l", ik_layout_decode(NULL, 1, &parts), IK_EINVAL);
    RC(ik_layout_decode, "out", ik_layout_decode(&l, 1, NULL), IK_EINVAL);
    RC(ik_parse_id, "text", ik_parse_id(NULL, 1, &id), IK_EINVAL);
    RC(ik_parse_id, "out", ik_parse_id("1", 1, NULL), IK_EINVAL);
}

static void snowflake(void **st)
{
    (void)st;
    ik_snowflake *g = NULL;
    int64_t id, ids[2];
    ik_snowflake_try t = {0, 0, 0};
    ik_snowflake_info info;
    RC(ik_snowflake_create, "layout", ik_snowflake_create(NULL, 5, NULL, &g), IK_EINVAL);
    RC(ik_snowflake_create, "clock", ik_snowflake_create(&F.lay, 5, NULL, &g), IK_OK);
    ik_snowflake_destroy(g);
    RC(ik_snowflake_create, "out", ik_snowflake_create(&F.lay, 5, NULL, NULL), IK_EINVAL);
    VOID(ik_snowflake_destroy, "g", ik_snowflake_destroy(NULL));
    RC(ik_snowflake_next, "g", ik_snowflake_next(NULL, &id), IK_EINVAL);
    RC(ik_snowflake_next, "id", ik_snowflake_next(F.g, NULL), IK_EINVAL);
    RC(ik_snowflake_next_n, "g", ik_snowflake_next_n(NULL, 2, ids), IK_EINVAL);
    RC(ik_snowflake_next_n, "ids", ik_snowflake_next_n(F.g, 2, NULL), IK_EINVAL);
    RC(ik_snowflake_try_next_n, "g", ik_snowflake_try_next_n(NULL, 2, ids, &t), IK_EINVAL);
    RC(ik_snowflake_try_next_n, "ids", ik_snowflake_try_next_n(F.g, 2, NULL, &t), IK_EINVAL);
    RC(ik_snowflake_try_next_n, "st", ik_snowflake_try_next_n(F.g, 2, ids, NULL), IK_EINVAL);
    RC(ik_snowflake_grant, "g", ik_snowflake_grant(NULL, 0, 0, IK_NO_CEILING, IK_FOREVER),
       IK_EINVAL);
    RC(ik_snowflake_extend, "g", ik_snowflake_extend(NULL, IK_NO_CEILING, IK_FOREVER), IK_EINVAL);
    VOID(ik_snowflake_revoke, "g", ik_snowflake_revoke(NULL));
    VOID(ik_snowflake_get_info, "g", ik_snowflake_get_info(NULL, &info));
    assert_int_equal(info.granted, 0);
    VOID(ik_snowflake_get_info, "out", ik_snowflake_get_info(F.g, NULL));
    PTR(ik_snowflake_layout, "g", ik_snowflake_layout(NULL), NULL);
}

static void coord(void **st)
{
    (void)st;
    ik_coord *c = NULL;
    char why[256], *text = NULL;
    ik_hazard *rows = NULL;
    size_t n = 0;
    ik_coord_options o;
    ik_coord_options_init(&o);
    VOID(ik_coord_options_init, "o", ik_coord_options_init(NULL));
    RC(ik_coord_open, "uri", ik_coord_open(NULL, &o, &c, why, sizeof why), IK_EURI);
    RC(ik_coord_open, "o", ik_coord_open(F.uri, NULL, &c, why, sizeof why), IK_OK);
    ik_coord_close(c);
    RC(ik_coord_open, "out", ik_coord_open(F.uri, &o, NULL, why, sizeof why), IK_EINVAL);
    RC(ik_coord_open, "why", ik_coord_open("nope:x", &o, &c, NULL, 64), IK_EURI);
    VOID(ik_coord_close, "c", ik_coord_close(NULL));
    RC(ik_coord_stop_within, "c", ik_coord_stop_within(NULL, 1000), IK_EINVAL);
    VOID(ik_coord_settle, "c", ik_coord_settle(NULL));
    PTR(ik_coord_uri, "c", ik_coord_uri(NULL), NULL);
    RC(ik_coord_uri_check, "uri", ik_coord_uri_check(NULL, why, sizeof why), IK_EURI);
    RC(ik_coord_uri_check, "why", ik_coord_uri_check("nope:x", NULL, 64), IK_EURI);
    RC(ik_coord_schema, "uri", ik_coord_schema(NULL, &text, why, sizeof why), IK_EURI);
    RC(ik_coord_schema, "out", ik_coord_schema(F.uri, NULL, why, sizeof why), IK_EINVAL);
    RC(ik_coord_schema, "why", ik_coord_schema(F.uri, &text, NULL, 64), IK_ENOTFOUND);
    RC(ik_coord_check, "c", ik_coord_check(NULL, &rows, &n, why, sizeof why), IK_EINVAL);
    RC(ik_coord_check, "out", ik_coord_check(F.c, NULL, &n, why, sizeof why), IK_EINVAL);
    RC(ik_coord_check, "n", ik_coord_check(F.c, &rows, NULL, why, sizeof why), IK_EINVAL);
    RC(ik_coord_check, "why", ik_coord_check(F.c, &rows, &n, NULL, 64), IK_OK);
    ik_free(rows);
    RC(ik_coord_hazards, "c", ik_coord_hazards(NULL, &rows, &n, why, sizeof why), IK_EINVAL);
    RC(ik_coord_hazards, "out", ik_coord_hazards(F.c, NULL, &n, why, sizeof why), IK_OK);
    RC(ik_coord_hazards, "n", ik_coord_hazards(F.c, &rows, NULL, why, sizeof why), IK_OK);
    RC(ik_coord_hazards, "why", ik_coord_hazards(F.c, NULL, NULL, NULL, 64), IK_OK);
    RC(ik_coord_locks_check, "c", ik_coord_locks_check(NULL, why, sizeof why), IK_EINVAL);
    RC(ik_coord_locks_check, "why", ik_coord_locks_check(F.c, NULL, 64), IK_OK);
    RC(ik_coord_last_error, "c", ik_coord_last_error(NULL, why, sizeof why), IK_EINVAL);
    /* here why is what the call is for: its out-parameter */
    RC(ik_coord_last_error, "why", ik_coord_last_error(F.c, NULL, 64), IK_EINVAL);
}

static void lease(void **st)
{
    (void)st;
    ik_slot_lease *l = NULL;
    char why[256];
    ik_lease_options o;
    ik_lease_options_init(&o);
    o.identity = "other";
    ik_lease_info info;
    ik_slot_info *slots = NULL;
    size_t n = 0;
    VOID(ik_lease_options_init, "o", ik_lease_options_init(NULL));
    RC(ik_slot_lease_start, "c", ik_slot_lease_start(NULL, F.g, &o, &l, why, sizeof why),
       IK_EINVAL);
    RC(ik_slot_lease_start, "g", ik_slot_lease_start(F.c, NULL, &o, &l, why, sizeof why),
       IK_EINVAL);
    /* no options: no identity, which is required */
    RC(ik_slot_lease_start, "o", ik_slot_lease_start(F.c, F.g, NULL, &l, why, sizeof why),
       IK_EINVAL);
    RC(ik_slot_lease_start, "out", ik_slot_lease_start(F.c, F.g, &o, NULL, why, sizeof why),
       IK_EINVAL);
    o.identity = NULL; /* refused before anything is taken */
    RC(ik_slot_lease_start, "why", ik_slot_lease_start(F.c, F.g, &o, &l, NULL, 64), IK_EINVAL);
    o.identity = "other";
    RC(ik_slot_lease_begin, "c", ik_slot_lease_begin(NULL, F.g, &o, &l, why, sizeof why),
       IK_EINVAL);
    RC(ik_slot_lease_begin, "g", ik_slot_lease_begin(F.c, NULL, &o, &l, why, sizeof why),
       IK_EINVAL);
    RC(ik_slot_lease_begin, "o", ik_slot_lease_begin(F.c, F.g, NULL, &l, why, sizeof why),
       IK_EINVAL);
    RC(ik_slot_lease_begin, "out", ik_slot_lease_begin(F.c, F.g, &o, NULL, why, sizeof why),
       IK_EINVAL);
    o.identity = NULL;
    RC(ik_slot_lease_begin, "why", ik_slot_lease_begin(F.c, F.g, &o, &l, NULL, 64), IK_EINVAL);
    RC(ik_slot_lease_wait_held, "l", ik_slot_lease_wait_held(NULL, 0, why, sizeof why), IK_EINVAL);
    RC(ik_slot_lease_wait_held, "why", ik_slot_lease_wait_held(F.l, 0, NULL, 64), IK_OK);
    VOID(ik_slot_lease_get_info, "l", ik_slot_lease_get_info(NULL, &info));
    assert_int_equal(info.worker, -1);
    VOID(ik_slot_lease_get_info, "out", ik_slot_lease_get_info(F.l, NULL));
    RC(ik_slot_lease_release, "l", ik_slot_lease_release(NULL), IK_OK); /* accepts NULL */
    RC(ik_slots_list, "c", ik_slots_list(NULL, "default", &slots, &n), IK_EINVAL);
    RC(ik_slots_list, "app", ik_slots_list(F.c, NULL, &slots, &n), IK_OK); /* "default" */
    ik_free(slots);
    RC(ik_slots_list, "out", ik_slots_list(F.c, "default", NULL, &n), IK_EINVAL);
    RC(ik_slots_list, "n", ik_slots_list(F.c, "default", &slots, NULL), IK_EINVAL);
}

static void tags(void **st)
{
    (void)st;
    char why[256];
    ik_tag_kind k;
    ik_tag_info ti, *tv = NULL;
    size_t n = 0;
    RC(ik_tag_name_check, "name", ik_tag_name_check(NULL, why, sizeof why), IK_EINVAL);
    RC(ik_tag_name_check, "why", ik_tag_name_check("ok", NULL, 64), IK_OK);
    RC(ik_tag_kind_parse, "text", ik_tag_kind_parse(NULL, &k), IK_EINVAL);
    RC(ik_tag_kind_parse, "out", ik_tag_kind_parse("segment", NULL), IK_EINVAL);
    RC(ik_tag_create, "c",
       ik_tag_create(NULL, "default", "t1", IK_TAG_SEGMENT, 0, 1, NULL, why, sizeof why),
       IK_EINVAL);
    RC(ik_tag_create, "app", /* "default" */
       ik_tag_create(F.c, NULL, "t2", IK_TAG_SEGMENT, 0, 1, "d", why, sizeof why), IK_OK);
    RC(ik_tag_create, "name",
       ik_tag_create(F.c, "default", NULL, IK_TAG_SEGMENT, 0, 1, NULL, why, sizeof why), IK_EINVAL);
    RC(ik_tag_create, "description",
       ik_tag_create(F.c, "default", "t3", IK_TAG_SEGMENT, 0, 1, NULL, why, sizeof why), IK_OK);
    RC(ik_tag_create, "why",
       ik_tag_create(F.c, "default", "t4", IK_TAG_SEGMENT, 0, 1, NULL, NULL, 64), IK_OK);
    RC(ik_tag_get, "c", ik_tag_get(NULL, "default", "t2", &ti), IK_EINVAL);
    RC(ik_tag_get, "app", ik_tag_get(F.c, NULL, "t2", &ti), IK_OK);
    RC(ik_tag_get, "name", ik_tag_get(F.c, "default", NULL, &ti), IK_EINVAL);
    RC(ik_tag_get, "out", ik_tag_get(F.c, "default", "t2", NULL), IK_EINVAL);
    RC(ik_tag_read, "c", ik_tag_read(NULL, "default", "t2", &ti, why, sizeof why), IK_EINVAL);
    RC(ik_tag_read, "app", ik_tag_read(F.c, NULL, "t2", &ti, why, sizeof why), IK_OK);
    RC(ik_tag_read, "name", ik_tag_read(F.c, "default", NULL, &ti, why, sizeof why), IK_EINVAL);
    RC(ik_tag_read, "out", ik_tag_read(F.c, "default", "t2", NULL, why, sizeof why), IK_EINVAL);
    RC(ik_tag_read, "why", ik_tag_read(F.c, "default", "t2", &ti, NULL, 64), IK_OK);
    RC(ik_tag_last_error, "c", ik_tag_last_error(NULL, "default", "t2", why, sizeof why),
       IK_EINVAL);
    RC(ik_tag_last_error, "app", ik_tag_last_error(F.c, NULL, "t2", why, sizeof why), 0);
    RC(ik_tag_last_error, "name", ik_tag_last_error(F.c, "default", NULL, why, sizeof why),
       IK_EINVAL);
    RC(ik_tag_last_error, "why", ik_tag_last_error(F.c, "default", "t2", NULL, 64), IK_EINVAL);
    RC(ik_tags_list, "c", ik_tags_list(NULL, "default", &tv, &n), IK_EINVAL);
    RC(ik_tags_list, "app", ik_tags_list(F.c, NULL, &tv, &n), IK_OK);
    ik_free(tv);
    RC(ik_tags_list, "out", ik_tags_list(F.c, "default", NULL, &n), IK_EINVAL);
    RC(ik_tags_list, "n", ik_tags_list(F.c, "default", &tv, NULL), IK_EINVAL);
}

static void counters(void **st)
{
    (void)st;
    ik_segment *s = NULL;
    ik_sequence *q = NULL;
    ik_segment_options so;
    ik_segment_options_init(&so);
    ik_segment_tag_status *sv = NULL;
    size_t n = 0;
    int64_t ids[2];
    VOID(ik_segment_options_init, "o", ik_segment_options_init(NULL));
    RC(ik_segment_create, "c", ik_segment_create(NULL, "default", &so, &s), IK_EINVAL);
    RC(ik_segment_create, "app", ik_segment_create(F.c, NULL, &so, &s), IK_OK);
    ik_segment_destroy(s);
    RC(ik_segment_create, "o", ik_segment_create(F.c, "default", NULL, &s), IK_OK);
    ik_segment_destroy(s);
    RC(ik_segment_create, "out", ik_segment_create(F.c, "default", &so, NULL), IK_EINVAL);
    VOID(ik_segment_destroy, "s", ik_segment_destroy(NULL));
    RC(ik_segment_next, "s", ik_segment_next(NULL, "seg", 1, ids, noop_ids, NULL), IK_EINVAL);
    RC(ik_segment_next, "tag", ik_segment_next(F.seg, NULL, 1, ids, noop_ids, NULL), IK_EINVAL);
    RC(ik_segment_next, "ids", ik_segment_next(F.seg, "seg", 1, NULL, noop_ids, NULL), IK_EINVAL);
    RC(ik_segment_next, "cb", ik_segment_next(F.seg, "seg", 1, ids, NULL, NULL), IK_EINVAL);
    assert_int_equal(ik_segment_next_wait(F.seg, "seg", 1, ids), 0); /* blocks loaded */
    RC(ik_segment_next, "ctx", ik_segment_next(F.seg, "seg", 1, ids, noop_ids, NULL), IK_OK);
    RC(ik_segment_next_wait, "s", ik_segment_next_wait(NULL, "seg", 1, ids), IK_EINVAL);
    RC(ik_segment_next_wait, "tag", ik_segment_next_wait(F.seg, NULL, 1, ids), IK_EINVAL);
    RC(ik_segment_next_wait, "ids", ik_segment_next_wait(F.seg, "seg", 1, NULL), IK_EINVAL);
    RC(ik_segment_status, "s", ik_segment_status(NULL, &sv, &n), IK_EINVAL);
    RC(ik_segment_status, "out", ik_segment_status(F.seg, NULL, &n), IK_EINVAL);
    RC(ik_segment_status, "n", ik_segment_status(F.seg, &sv, NULL), IK_EINVAL);

    RC(ik_sequence_create, "c", ik_sequence_create(NULL, "default", &q), IK_EINVAL);
    RC(ik_sequence_create, "app", ik_sequence_create(F.c, NULL, &q), IK_OK);
    ik_sequence_destroy(q);
    RC(ik_sequence_create, "out", ik_sequence_create(F.c, "default", NULL), IK_EINVAL);
    VOID(ik_sequence_destroy, "s", ik_sequence_destroy(NULL));
    RC(ik_sequence_next, "s", ik_sequence_next(NULL, "seq", 1, noop_ids, NULL), IK_EINVAL);
    RC(ik_sequence_next, "tag", ik_sequence_next(F.seq, NULL, 1, noop_ids, NULL), IK_EINVAL);
    RC(ik_sequence_next, "cb", ik_sequence_next(F.seq, "seq", 1, NULL, NULL), IK_EINVAL);
    RC(ik_sequence_next, "ctx", ik_sequence_next(F.seq, "seq", 1, noop_ids, NULL), IK_PENDING);
    RC(ik_sequence_cancel, "s", ik_sequence_cancel(NULL, "seq", noop_ids, NULL), IK_EINVAL);
    RC(ik_sequence_cancel, "tag", ik_sequence_cancel(F.seq, NULL, noop_ids, NULL), IK_EINVAL);
    RC(ik_sequence_cancel, "cb", ik_sequence_cancel(F.seq, "seq", NULL, NULL), IK_EINVAL);
    /* ctx NULL names a request like any other ctx: the one queued above, or gone */
    cover("ik_sequence_cancel", "ctx");
    int rc = ik_sequence_cancel(F.seq, "seq", noop_ids, NULL);
    assert_true(rc == IK_OK || rc == IK_ENOTFOUND);
    RC(ik_sequence_next_wait, "s", ik_sequence_next_wait(NULL, "seq", 1, ids), IK_EINVAL);
    RC(ik_sequence_next_wait, "tag", ik_sequence_next_wait(F.seq, NULL, 1, ids), IK_EINVAL);
    RC(ik_sequence_next_wait, "ids", ik_sequence_next_wait(F.seq, "seq", 1, NULL), IK_EINVAL);
}

static void recipes(void **st)
{
    (void)st;
    ik_lock *lk = NULL;
    ik_rwlock *rw = NULL;
    ik_election *e = NULL;
    ik_lock_options lo;
    ik_lock_options_init(&lo);
    ik_election_options eo;
    ik_election_options_init(&eo);
    ik_hold_info hi;
    int64_t fence;
    char *id = NULL;
    VOID(ik_lock_options_init, "o", ik_lock_options_init(NULL));
    RC(ik_lock_create, "c", ik_lock_create(NULL, "/x", &lo, &lk), IK_EINVAL);
    RC(ik_lock_create, "path", ik_lock_create(F.c, NULL, &lo, &lk), IK_EINVAL);
    RC(ik_lock_create, "o", ik_lock_create(F.c, "/x", NULL, &lk), IK_OK);
    ik_lock_destroy(lk);
    RC(ik_lock_create, "out", ik_lock_create(F.c, "/x", &lo, NULL), IK_EINVAL);
    VOID(ik_lock_destroy, "lk", ik_lock_destroy(NULL));
    RC(ik_lock_acquire, "lk", ik_lock_acquire(NULL, 0, &fence), IK_EINVAL);
    RC(ik_lock_acquire, "fence", ik_lock_acquire(F.lk, 0, NULL), IK_OK);
    RC(ik_lock_release, "lk", ik_lock_release(NULL), IK_EINVAL);
    assert_int_equal(ik_lock_release(F.lk), IK_OK);
    VOID(ik_lock_cancel, "lk", ik_lock_cancel(NULL));
    RC(ik_lock_state, "lk", ik_lock_state(NULL), IK_HOLD_IDLE);
    VOID(ik_lock_get_info, "lk", ik_lock_get_info(NULL, &hi));
    assert_int_equal(hi.state, IK_HOLD_IDLE);
    VOID(ik_lock_get_info, "out", ik_lock_get_info(F.lk, NULL));
    RC(ik_lock_trusted_until, "lk", ik_lock_trusted_until(NULL), IK_EINVAL);
    RC(ik_rwlock_create, "c", ik_rwlock_create(NULL, "/y", &lo, &rw), IK_EINVAL);
    RC(ik_rwlock_create, "path", ik_rwlock_create(F.c, NULL, &lo, &rw), IK_EINVAL);
    RC(ik_rwlock_create, "o", ik_rwlock_create(F.c, "/y", NULL, &rw), IK_OK);
    ik_rwlock_destroy(rw);
    RC(ik_rwlock_create, "out", ik_rwlock_create(F.c, "/y", &lo, NULL), IK_EINVAL);
    VOID(ik_rwlock_destroy, "rw", ik_rwlock_destroy(NULL));
    PTR(ik_rwlock_read, "rw", ik_rwlock_read(NULL), NULL);
    PTR(ik_rwlock_write, "rw", ik_rwlock_write(NULL), NULL);
    VOID(ik_election_options_init, "o", ik_election_options_init(NULL));
    RC(ik_election_create, "c", ik_election_create(NULL, "/z", "me", &eo, &e), IK_EINVAL);
    RC(ik_election_create, "path", ik_election_create(F.c, NULL, "me", &eo, &e), IK_EINVAL);
    RC(ik_election_create, "id", ik_election_create(F.c, "/z", NULL, &eo, &e), IK_EINVAL);
    RC(ik_election_create, "o", ik_election_create(F.c, "/z", "me", NULL, &e), IK_OK);
    ik_election_destroy(e);
    RC(ik_election_create, "out", ik_election_create(F.c, "/z", "me", &eo, NULL), IK_EINVAL);
    VOID(ik_election_destroy, "e", ik_election_destroy(NULL));
    RC(ik_election_campaign, "e", ik_election_campaign(NULL), IK_EINVAL);
    RC(ik_election_await, "e", ik_election_await(NULL, 0), IK_EINVAL);
    RC(ik_election_resign, "e", ik_election_resign(NULL), IK_EINVAL);
    RC(ik_election_state, "e", ik_election_state(NULL), IK_HOLD_IDLE);
    VOID(ik_election_get_info, "e", ik_election_get_info(NULL, &hi));
    VOID(ik_election_get_info, "out", ik_election_get_info(F.e, NULL));
    RC(ik_election_rejoin, "e", ik_election_rejoin(NULL), IK_EINVAL);
    RC(ik_election_trusted_until, "e", ik_election_trusted_until(NULL), IK_EINVAL);
    RC(ik_election_leader, "c", ik_election_leader(NULL, "/null/elect", &id), IK_EINVAL);
    RC(ik_election_leader, "path", ik_election_leader(F.c, NULL, &id), IK_EINVAL);
    RC(ik_election_leader, "id", ik_election_leader(F.c, "/null/elect", NULL), IK_EINVAL);

    /* semaphores: o is required (it carries the max) */
    ik_semaphore_options so;
    ik_semaphore_options_init(&so);
    so.max = 2;
    ik_semaphore *s = NULL, *s2 = NULL;
    ik_semaphore_holder *h = NULL;
    int64_t max = 0;
    size_t n = 0;
    assert_int_equal(ik_semaphore_create(F.c, "/null/sema", &so, &s2), 0);
    VOID(ik_semaphore_options_init, "o", ik_semaphore_options_init(NULL));
    RC(ik_semaphore_create, "c", ik_semaphore_create(NULL, "/s", &so, &s), IK_EINVAL);
    RC(ik_semaphore_create, "path", ik_semaphore_create(F.c, NULL, &so, &s), IK_EINVAL);
    RC(ik_semaphore_create, "o", ik_semaphore_create(F.c, "/s", NULL, &s), IK_EINVAL);
    RC(ik_semaphore_create, "out", ik_semaphore_create(F.c, "/s", &so, NULL), IK_EINVAL);
    assert_null(s);
    VOID(ik_semaphore_destroy, "s", ik_semaphore_destroy(NULL));
    RC(ik_semaphore_acquire, "s", ik_semaphore_acquire(NULL, 0, &fence), IK_EINVAL);
    RC(ik_semaphore_acquire, "fence", ik_semaphore_acquire(s2, 0, NULL), IK_OK);
    RC(ik_semaphore_release, "s", ik_semaphore_release(NULL), IK_EINVAL);
    assert_int_equal(ik_semaphore_release(s2), IK_OK);
    VOID(ik_semaphore_cancel, "s", ik_semaphore_cancel(NULL));
    RC(ik_semaphore_state, "s", ik_semaphore_state(NULL), IK_HOLD_IDLE);
    VOID(ik_semaphore_get_info, "s", ik_semaphore_get_info(NULL, &hi));
    assert_int_equal(hi.state, IK_HOLD_IDLE);
    VOID(ik_semaphore_get_info, "out", ik_semaphore_get_info(s2, NULL));
    RC(ik_semaphore_trusted_until, "s", ik_semaphore_trusted_until(NULL), IK_EINVAL);
    RC(ik_semaphore_holders, "c",
       ik_semaphore_holders(NULL, "/null/sema", IK_SEMAPHORE_CURATOR, &max, &h, &n), IK_EINVAL);
    RC(ik_semaphore_holders, "path",
       ik_semaphore_holders(F.c, NULL, IK_SEMAPHORE_CURATOR, &max, &h, &n), IK_EINVAL);
    RC(ik_semaphore_holders, "max",
       ik_semaphore_holders(F.c, "/null/sema", IK_SEMAPHORE_CURATOR, NULL, &h, &n), IK_EINVAL);
    RC(ik_semaphore_holders, "out",
       ik_semaphore_holders(F.c, "/null/sema", IK_SEMAPHORE_CURATOR, &max, NULL, &n), IK_EINVAL);
    RC(ik_semaphore_holders, "n",
       ik_semaphore_holders(F.c, "/null/sema", IK_SEMAPHORE_CURATOR, &max, &h, NULL), IK_EINVAL);
    ik_semaphore_destroy(s2);
}

/* ---- the header: every IK_EXTERN function and pointer argument covered --------------- */

/* Copies the last identifier of text[0..n) into out (a parameter's name). */
static void last_ident(const char *text, size_t n, char *out, size_t len)
{
    size_t end = n;
    while (end > 0 && !(isalnum((unsigned char)text[end - 1]) || text[end - 1] == '_'))
        end--;
    size_t start = end;
    while (start > 0 && (isalnum((unsigned char)text[start - 1]) || text[start - 1] == '_'))
        start--;
    snprintf(out, len, "%.*s", (int)(end - start), text + start);
}

static int is_covered(const char *fn, const char *arg)
{
    for (size_t i = 0; i < ncovered; i++)
        if (!strcmp(covered[i].fn, fn) && (!arg || !strcmp(covered[i].arg, arg))) return 1;
    return 0;
}

static void header_covered(void **st)
{
    (void)st;
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *cut = strstr(path, "tests/unit/test_null_args.c");
    assert_non_null(cut);
    snprintf(cut, sizeof path - (size_t)(cut - path), "include/idkeeper.h");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char h[200000];
    size_t len = fread(h, 1, sizeof h - 1, f);
    fclose(f);
    h[len] = '\0';
    static const char *const fn_types[] = {"ik_log_fn ", "ik_gap_fn ", "ik_ids_cb ", "ik_hold_cb "};
    int functions = 0, args = 0, missing = 0;
    for (char *p = strstr(h, "\nIK_EXTERN "); p; p = strstr(p + 1, "\nIK_EXTERN ")) {
        char *open = strchr(p, '('), *semi = strchr(p, ';');
        assert_true(open && semi && open < semi);
        char fn[128];
        last_ident(p, (size_t)(open - p), fn, sizeof fn);
        functions++;
        if (!is_covered(fn, NULL)) {
            print_error("%s: no case\n", fn);
            missing++;
            continue;
        }
        /* the arguments: split at the commas of the outer parentheses */
        char *close = semi;
        while (close > open && *close != ')')
            close--;
        assert_true(close > open);
        for (char *a = open + 1; a < close;) {
            char *comma = memchr(a, ',', (size_t)(close - a));
            char *end = comma ? comma : close;
            int ptr = memchr(a, '*', (size_t)(end - a)) != NULL;
            for (size_t t = 0; t < sizeof fn_types / sizeof fn_types[0]; t++) {
                char *hit = strstr(a, fn_types[t]);
                ptr |= hit && hit < end;
            }
            if (ptr) {
                char arg[64];
                last_ident(a, (size_t)(end - a), arg, sizeof arg);
                args++;
                if (!is_covered(fn, arg)) {
                    print_error("%s: no case for %s = NULL\n", fn, arg);
                    missing++;
                }
            }
            a = end + 1;
        }
    }
    print_message("%d functions, %d pointer arguments in the header\n", functions, args);
    assert_true(functions > 80);
    assert_int_equal(missing, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors_and_misc), cmocka_unit_test(layout),
        cmocka_unit_test(snowflake),       cmocka_unit_test(coord),
        cmocka_unit_test(lease),           cmocka_unit_test(tags),
        cmocka_unit_test(counters),        cmocka_unit_test(recipes),
        cmocka_unit_test(header_covered),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
