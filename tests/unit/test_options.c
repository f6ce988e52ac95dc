/* test_options.c: the public options structs and what left them. The size rule
 * (include/idkeeper.h, "Options structs"): a caller built against an older, smaller
 * struct still works, the fields beyond its size taking their defaults; a newer,
 * larger one works if the fields this library does not know are zero. And the
 * counter-write delay, a test hook that is no longer a public option but an
 * IDKEEPER_TEST_ variable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"
#include "local_dir.h"

#include <stdlib.h>
#include <string.h>

/* Every counter write of a coord opened with IDKEEPER_TEST_WRITE_DELAY_MS set
 * sleeps that long first (a lower bound only: the machine may be slow). */
static void write_delay_comes_from_the_environment(void **st)
{
    (void)st;
    char dir[64], uri[80], why[256];
    local_dir_make(dir, uri, "ik-opts");
    setenv("IDKEEPER_TEST_WRITE_DELAY_MS", "300", 1);
    ik_coord *c;
    assert_int_equal(ik_coord_open(uri, NULL, &c, why, sizeof why), 0);
    unsetenv("IDKEEPER_TEST_WRITE_DELAY_MS");
    assert_int_equal(ik_tag_create(c, "app", "q", IK_TAG_SEQUENCE, 1, 1, NULL, why, sizeof why), 0);
    ik_sequence *s;
    assert_int_equal(ik_sequence_create(c, "app", &s), 0);
    int64_t id = 0, t0 = mono_ms();
    assert_int_equal(ik_sequence_next_wait(s, "q", 1, &id), 0);
    int64_t took = mono_ms() - t0;
    assert_int_equal(id, 1);
    if (took < 300)
        fail_msg("the write took %lld ms, not the 300 ms the hook asks", (long long)took);
    ik_sequence_destroy(s);
    ik_coord_close(c);
    local_dir_remove(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_delay_comes_from_the_environment),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
