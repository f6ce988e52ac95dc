/* test_uuid.c: the UUIDs of lock and election node names (src/lib/uuid.c): their
 * form, their version and variant bits, no repeats, and an error, never a weak
 * UUID, when the kernel gives no randomness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#ifdef IK_HAVE_ZK
#include "backend_zk.h"
#endif

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__linux__) && defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#define HAVE_SECCOMP 1
#endif

/* 8-4-4-4-12 lower-case hex, version 4, variant 10xx. */
static void assert_uuid4(const char *u)
{
    assert_int_equal(strlen(u), 36);
    for (int i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(u[i], '-');
        } else if (!((u[i] >= '0' && u[i] <= '9') || (u[i] >= 'a' && u[i] <= 'f'))) {
            fail_msg("'%s': byte %d is not lower-case hex", u, i);
        }
    }
    assert_int_equal(u[14], '4');
    assert_non_null(strchr("89ab", u[19]));
}

static void format_of_given_bytes(void **state)
{
    unsigned char ones[16], zeros[16] = {0};
    memset(ones, 0xff, sizeof ones);
    char out[IK__UUID_SIZE];
    ik__uuid4_format(zeros, out);
    assert_string_equal(out, "00000000-0000-4000-8000-000000000000");
    ik__uuid4_format(ones, out);
    assert_string_equal(out, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    const unsigned char b[16] = {0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0,
                                 0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6};
    ik__uuid4_format(b, out);
    assert_string_equal(out, "f81d4fae-7dec-41d0-a765-00a0c91e6bf6");
}

static int cmp(const void *a, const void *b)
{
    return memcmp(a, b, IK__UUID_SIZE);
}

/* 100,000 UUIDs, all of the form, none twice; every hex digit of the random
 * positions seen (a constant or clock-made value would not spread so). */
static void distinct(void **state)
{
    enum { N = 100000 };
    char(*u)[IK__UUID_SIZE] = malloc(N * sizeof *u);
    assert_non_null(u);
    int seen[36][16] = {{0}};
    for (int i = 0; i < N; i++) {
        assert_int_equal(ik__uuid4(u[i]), 0);
        assert_uuid4(u[i]);
        for (int k = 0; k < 36; k++) {
            char c = u[i][k];
            if (c != '-') seen[k][c <= '9' ? c - '0' : c - 'a' + 10]++;
        }
    }
    qsort(u, N, sizeof *u, cmp);
    for (int i = 1; i < N; i++)
        if (strcmp(u[i - 1], u[i]) == 0) fail_msg("'%s' twice", u[i]);
    for (int k = 0; k < 36; k++) {
        if (k == 8 || k == 13 || k == 18 || k == 23 || k == 14 || k == 19) continue;
        for (int d = 0; d < 16; d++)
            if (seen[k][d] == 0) fail_msg("position %d never held digit %x", k, d);
    }
    free(u);
}

#ifdef HAVE_SECCOMP
/* In a child: getrandom refused (ENOSYS, as on an old kernel or under a seccomp
 * profile) and openat refused (no /dev/urandom): ik__uuid4 must fail with out "",
 * and so must the zk tag store's writer nonce. */
static int child_without_randomness(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_openat, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EACCES),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return 3;
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return 3;
    char out[IK__UUID_SIZE] = "x";
    int rc = ik__uuid4(out);
    /* an ik_error, as the lock calls that return it promise, not a raw errno */
    if (rc != IK_ESTORE || out[0] != '\0') return 1;
#ifdef IK_HAVE_ZK
    /* The zk tag writers' nonce settles lost answers: no clock-seeded stand-in. */
    ik__zk_tags *t = NULL;
    char why[160] = "";
    if (ik__zk_tags_new(&t, why, sizeof why) != IK_ESTORE || t || !strstr(why, "randomness"))
        return 2;
#endif
    return 0;
}
#endif

static void no_randomness_is_an_error(void **state)
{
#ifdef HAVE_SECCOMP
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(child_without_randomness());
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    if (WEXITSTATUS(st) == 3) skip(); /* no seccomp here */
    assert_int_equal(WEXITSTATUS(st), 0);
#else
    skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(format_of_given_bytes),
        cmocka_unit_test(distinct),
        cmocka_unit_test(no_randomness_is_an_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
