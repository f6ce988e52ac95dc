/* test_errors.c: every answer code of include/idkeeper.h has its name and its text
 * (ik_errname, ik_strerror): the enum's IK_E... values and IK_OK, read from the
 * header itself, and the two answers that are not errors, IK_PENDING and IK_AGAIN
 * (once named "IK_EUNKNOWN", "unknown error"). A code added to the header without its
 * entry in src/lib/errors.c fails here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "idkeeper.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void named(const char *name, int code)
{
    if (strcmp(ik_errname(code), name) != 0)
        fail_msg("ik_errname(%d) is %s, not %s", code, ik_errname(code), name);
    const char *text = ik_strerror(code);
    if (!text || !*text || !strcmp(text, "unknown error"))
        fail_msg("ik_strerror(%s) is '%s'", name, text ? text : "(null)");
}

static void every_code_is_named(void **st)
{
    (void)st;
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *cut = strstr(path, "tests/unit/test_errors.c");
    assert_non_null(cut);
    snprintf(cut, sizeof path - (size_t)(cut - path), "include/idkeeper.h");
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[512];
    int in_enum = 0, codes = 0;
    while (fgets(line, sizeof line, f)) {
        if (strstr(line, "typedef enum ik_error")) in_enum = 1;
        if (in_enum && strstr(line, "} ik_error;")) in_enum = 0;
        char name[64];
        int value;
        /* NOLINTNEXTLINE(cert-err34-c): the header's own lines, checked by the count */
        if (in_enum && sscanf(line, " %63[A-Z_] = %d,", name, &value) == 2 &&
            strcmp(name, "IK_EZK_BASE") != 0) {
            named(name, value);
            codes++;
        }
    }
    fclose(f);
    assert_true(codes >= 20);
    named("IK_PENDING", IK_PENDING);
    named("IK_AGAIN", IK_AGAIN);
    named("IK_EFORKED", IK_EFORKED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(every_code_is_named)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
