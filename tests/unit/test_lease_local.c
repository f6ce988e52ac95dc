/* test_lease_local.c: the slot lease on the local backend: real files and real
 * flock in a fresh directory. Distinct slots, refusal naming the holders,
 * stickiness by identity, the time guard for a record in the future, and the
 * record written at release. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct fx {
    char dir[64];
    char uri[80];
    ik_coord *c;
    ik_layout l;
} fx;

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    local_dir_make(f->dir, f->uri, "ik-lease");
    char why[256];
    assert_int_equal(ik_coord_open(f->uri, NULL, &f->c, why, sizeof why), 0);
    ik_layout_default(&f->l);
    f->l.worker_min = 0;
    f->l.worker_max = 1;
    *st = f;
    return 0;
}

static int teardown(void **st)
{
    fx *f = *st;
    ik_coord_close(f->c);
    local_dir_remove(f->dir);
    free(f);
    return 0;
}

static int start(fx *f, const char *identity, ik_snowflake **g, ik_slot_lease **l, char *why)
{
    assert_int_equal(ik_snowflake_create(&f->l, 5, NULL, g), 0);
    ik_lease_options o;
    ik_lease_options_init(&o);
    o.identity = identity;
    o.choice = IK_SLOT_LOWEST;
    return ik_slot_lease_start(f->c, *g, &o, l, why, 256);
}

/* Waits until the generator issues (past any time guard), at most 3 s. */
static int64_t first_id(ik_snowflake *g)
{
    int64_t id = 0;
    for (int i = 0; i < 300; i++) {
        int rc = ik_snowflake_next(g, &id);
        if (rc == 0) return id;
        assert_int_equal(rc, IK_ETIMEGUARD);
        usleep(10000);
    }
    fail_msg("no ID within 3 s");
    return 0;
}

static void distinct_slots_then_refusal_names_holders(void **st)
{
    fx *f = *st;
    ik_snowflake *g1, *g2, *g3;
    ik_slot_lease *l1, *l2, *l3;
    char why[256];
    assert_int_equal(start(f, "alpha:1", &g1, &l1, why), 0);
    assert_int_equal(start(f, "beta:2", &g2, &l2, why), 0);
    ik_lease_info i1, i2;
    ik_slot_lease_get_info(l1, &i1);
    ik_slot_lease_get_info(l2, &i2);
    assert_int_equal(i1.state, IK_LEASE_HELD);
    assert_true(i1.worker != i2.worker);
    assert_int_equal(start(f, "gamma:3", &g3, &l3, why), IK_ENOSLOT);
    if (!strstr(why, "0-1") || !strstr(why, "alpha:1") || !strstr(why, "beta:2"))
        fail_msg("refusal does not name the range and holders: %s", why);
    ik_snowflake_destroy(g3);

    /* the listing agrees */
    ik_slot_info *v;
    size_t n;
    assert_int_equal(ik_slots_list(f->c, "default", &v, &n), 0);
    assert_int_equal(n, 2);
    assert_true(v[0].held && v[1].held);
    ik_free(v);

    int64_t a = first_id(g1), b = first_id(g2);
    ik_id_parts pa, pb;
    ik_layout_decode(&f->l, a, &pa);
    ik_layout_decode(&f->l, b, &pb);
    assert_int_equal(pa.worker, (uint32_t)i1.worker);
    assert_int_equal(pb.worker, (uint32_t)i2.worker);

    assert_int_equal(ik_slot_lease_release(l1), 0);
    assert_int_equal(ik_slot_lease_release(l2), 0);
    ik_snowflake_destroy(g1);
    ik_snowflake_destroy(g2);
}

static void same_identity_gets_its_slot_back(void **st)
{
    fx *f = *st;
    ik_snowflake *g, *h;
    ik_slot_lease *l, *m;
    char why[256];
    /* take slot 0 with another identity first, so "lowest" alone would not give 1 */
    assert_int_equal(start(f, "other", &h, &m, why), 0);
    assert_int_equal(start(f, "sticky", &g, &l, why), 0);
    ik_lease_info i;
    ik_slot_lease_get_info(l, &i);
    assert_int_equal(i.worker, 1);
    int64_t before = first_id(g);
    assert_int_equal(ik_slot_lease_release(l), 0);
    ik_snowflake_destroy(g);
    assert_int_equal(ik_slot_lease_release(m), 0); /* now slot 0 is free and lowest */
    ik_snowflake_destroy(h);

    assert_int_equal(start(f, "sticky", &g, &l, why), 0);
    ik_slot_lease_get_info(l, &i);
    assert_int_equal(i.worker, 1);
    assert_true(first_id(g) > before); /* the record kept at release is respected */
    assert_int_equal(ik_slot_lease_release(l), 0);
    ik_snowflake_destroy(g);
}

static void future_record_holds_the_new_holder_back(void **st)
{
    fx *f = *st;
    /* a slot file whose record lies 1.5 s in the future (a holder whose clock ran
     * ahead) */
    char path[160];
    snprintf(path, sizeof path, "%s/default/slots", f->dir);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
    assert_int_equal(system(cmd), 0);
    int64_t record = wall_ms() + 1500;
    snprintf(path, sizeof path, "%s/default/slots/0000.slot", f->dir);
    FILE *fp = fopen(path, "w");
    char buf[512];
    memset(buf, '\n', sizeof buf);
    int n =
        snprintf(buf, sizeof buf,
                 "idkeeper-slot 1\nrecord_ms=%lld\nholder=ahead\npid=1\nhost=h\nsince_ms=0\nend\n",
                 (long long)record);
    buf[n] = '\n';
    fwrite(buf, 1, sizeof buf, fp);
    fclose(fp);
    f->l.worker_max = 0; /* only slot 0 */

    ik_snowflake *g;
    ik_slot_lease *l;
    char why[256];
    assert_int_equal(start(f, "new", &g, &l, why), 0);
    int64_t id;
    assert_int_equal(ik_snowflake_next(g, &id), IK_ETIMEGUARD);
    id = first_id(g);
    assert_true(wall_ms() > record);
    ik_id_parts p;
    ik_layout_decode(&f->l, id, &p);
    assert_true(p.time_ms > record);
    assert_int_equal(ik_slot_lease_release(l), 0);
    ik_snowflake_destroy(g);
}

static void corrupt_record_is_never_taken(void **st)
{
    fx *f = *st;
    char cmd[256];
    snprintf(cmd, sizeof cmd,
             "mkdir -p %s/default/slots && echo garbage > %s/default/slots/0000.slot", f->dir,
             f->dir);
    assert_int_equal(system(cmd), 0);
    f->l.worker_max = 0;
    ik_snowflake *g;
    ik_slot_lease *l;
    char why[256];
    assert_int_equal(start(f, "x", &g, &l, why), IK_ENOSLOT);
    assert_non_null(strstr(why, "unreadable"));
    ik_snowflake_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(distinct_slots_then_refusal_names_holders, setup, teardown),
        cmocka_unit_test_setup_teardown(same_identity_gets_its_slot_back, setup, teardown),
        cmocka_unit_test_setup_teardown(future_record_holds_the_new_holder_back, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupt_record_is_never_taken, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
