/* test_hold_mt.c: the hold rule's public face (include/idkeeper.h: ik_lock_trusted_until,
 * ik_election_trusted_until, on_proof, keep_on_loss, ik_election_rejoin) on local:,
 * where a grant cannot lapse while the process lives: trusted for ever while held, 0
 * otherwise, no proof callback, and no rejoin without a lost grant. The rule itself,
 * on stores whose grants lapse, is tests/conformance/hold_lost.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <stdlib.h>
#include <string.h>

typedef struct fx {
    char dir[64];
    char uri[80];
    ik_coord *c;
} fx;

static int setup(void **st)
{
    fx *f = calloc(1, sizeof *f);
    local_dir_make(f->dir, f->uri, "ik-hold");
    assert_int_equal(ik_coord_open(f->uri, NULL, &f->c, NULL, 0), 0);
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

static int proofs;

static void on_proof(void *ctx, int64_t until)
{
    (void)ctx;
    (void)until;
    __atomic_add_fetch(&proofs, 1, __ATOMIC_SEQ_CST);
}

static void local_lock_is_trusted_while_held(void **st)
{
    fx *f = *st;
    ik_lock_options o;
    ik_lock_options_init(&o);
    o.on_proof = on_proof;
    ik_lock *lk;
    assert_int_equal(ik_lock_create(f->c, "/t", &o, &lk), 0);
    assert_int_equal(ik_lock_trusted_until(lk), 0); /* idle */
    assert_int_equal(ik_lock_acquire(lk, 0, NULL), 0);
    assert_true(ik_lock_trusted_until(lk) == INT64_MAX);
    assert_int_equal(ik_lock_release(lk), 0);
    assert_int_equal(ik_lock_trusted_until(lk), 0);
    assert_int_equal(__atomic_load_n(&proofs, __ATOMIC_SEQ_CST), 0);
    assert_int_equal(ik_lock_trusted_until(NULL), 0);
    ik_lock_destroy(lk);
}

static void local_election_is_trusted_while_leading(void **st)
{
    fx *f = *st;
    ik_election_options o;
    ik_election_options_init(&o);
    o.on_proof = on_proof;
    o.keep_on_loss = 1;
    ik_election *e;
    assert_int_equal(ik_election_create(f->c, "/e", "me", &o, &e), 0);
    assert_int_equal(ik_election_trusted_until(e), 0);
    assert_int_equal(ik_election_rejoin(e), IK_EINVAL); /* not campaigning */
    assert_int_equal(ik_election_campaign(e), 0);
    assert_int_equal(ik_election_await(e, 5000), 0);
    assert_true(ik_election_trusted_until(e) == INT64_MAX);
    assert_int_equal(ik_election_rejoin(e), IK_EINVAL); /* leading: nothing lost */
    assert_int_equal(ik_election_resign(e), 0);
    assert_int_equal(ik_election_trusted_until(e), 0);
    assert_int_equal(ik_election_rejoin(NULL), IK_EINVAL);
    assert_int_equal(ik_election_trusted_until(NULL), 0);
    ik_election_destroy(e);
    assert_int_equal(__atomic_load_n(&proofs, __ATOMIC_SEQ_CST), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(local_lock_is_trusted_while_held, setup, teardown),
        cmocka_unit_test_setup_teardown(local_election_is_trusted_while_leading, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
