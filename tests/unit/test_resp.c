/* test_resp.c: the RESP parser and reply writers (src/server/resp/resp.c), which touch no
 * socket: multibulk and inline commands cut into reads anywhere, Redis's inline
 * quoting, empty commands, every protocol error and limit, and the RESP2/RESP3
 * reply shapes. resp.c and http_util.c are compiled in directly. */
#include "buf.c"
#include "resp.c"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* Parses s whole, one byte at a time and in 3-byte reads; each way must give the
 * same commands, joined as "a|b;c;" (arguments by '|', commands by ';'), and then
 * "ERR:<message>" after an error. */
static char *parse_cut(const char *s, size_t n, size_t cut, uint32_t max_args, uint32_t max_bytes)
{
    ik__respp p;
    ik__respp_init(&p, NULL, 0, max_args, max_bytes);
    ik__buf out;
    ik__buf_init(&out, NULL, 0);
    size_t off = 0;
    while (off < n) {
        size_t end = cut && off + cut < n ? off + cut : n, at = off;
        int r = IK_RESPP_MORE;
        while (at < end) {
            size_t used;
            r = ik__respp_feed(&p, s + at, end - at, &used);
            at += used;
            if (r != IK_RESPP_CMD) break;
            const char *a;
            size_t al;
            uint32_t argc = ik__respp_arg(&p, 0, &a, &al);
            for (uint32_t i = 0; i < argc; i++) {
                ik__respp_arg(&p, i, &a, &al);
                if (i) ik__buf_puts(&out, "|");
                ik__buf_append(&out, a, al);
            }
            ik__buf_puts(&out, ";");
        }
        if (r == IK_RESPP_ERROR) {
            ik__buf_printf(&out, "ERR:%s", p.err);
            break;
        }
        off = end;
    }
    ik__buf_append(&out, "", 1);
    ik__respp_free(&p);
    char *res = strdup(out.p);
    ik__buf_reset(&out);
    return res;
}

static void expect(const char *in, const char *want)
{
    size_t n = strlen(in);
    size_t cuts[] = {0, 1, 3};
    for (size_t i = 0; i < 3; i++) {
        char *got = parse_cut(in, n, cuts[i], 256, 8192);
        if (strcmp(got, want) != 0)
            fail_msg("input %s (cut %zu): got '%s', want '%s'", in, cuts[i], got, want);
        free(got);
    }
}

static void test_multibulk(void **state)
{
    expect("*2\r\n$4\r\nINCR\r\n$5\r\norder\r\n", "INCR|order;");
    expect("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPING\r\n", "PING;PING;");
    expect("*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", "ECHO|;");
    expect("*0\r\n*-1\r\n*1\r\n$4\r\nPING\r\n", "PING;"); /* skipped, as Redis */
    expect("*1\r\n$4\r\nPI", "");                         /* incomplete */
}

static void test_inline(void **state)
{
    expect("PING\r\n", "PING;");
    expect("PING\n", "PING;");
    expect("  INCR   order  \r\n\r\n\n", "INCR|order;");
    expect("ECHO \"a b\" 'c d'\r\n", "ECHO|a b|c d;");
    expect("ECHO \"\\x41\\n\\\"\"\r\n", "ECHO|A\n\";");
    expect("ECHO 'it\\'s'\r\n", "ECHO|it's;");
    expect("ECHO \"\"\r\n", "ECHO|;");
    expect("ECHO \"a\r\n", "ERR:Protocol error: unbalanced quotes in request");
    expect("ECHO \"a\"b\r\n", "ERR:Protocol error: unbalanced quotes in request");
}

static void test_errors(void **state)
{
    expect("*1\r\n$1099511627776\r\n", "ERR:Protocol error: invalid bulk length");
    expect("*1\r\n$-1\r\n", "ERR:Protocol error: invalid bulk length");
    expect("*-5\r\n", "ERR:Protocol error: invalid multibulk length");
    expect("*257\r\n", "ERR:Protocol error: invalid multibulk length");
    expect("*x\r\n", "ERR:Protocol error: invalid multibulk length");
    expect("*1\n", "ERR:Protocol error: mbulk count line must end in CRLF");
    expect("*1\r\n:4\r\n", "ERR:Protocol error: expected '$', got ':'");
    expect("*1\r\n$4\r\nPINGxx", "ERR:Protocol error: a bulk string must end in CRLF");
    expect("*1234567890123456789012345678901234567890123456789\r\n",
           "ERR:Protocol error: too big mbulk count string");
    expect("PING\r\n*-2\r\nPING\r\n", "PING;ERR:Protocol error: invalid multibulk length");
}

static void test_limits(void **state)
{
    /* argument bytes: 64 in all per command */
    char *got = parse_cut("*2\r\n$40\r\n0123456789012345678901234567890123456789\r\n$30\r\n", 57, 0,
                          256, 64);
    assert_string_equal(got, "ERR:Protocol error: invalid bulk length");
    free(got);
    char line[200];
    memset(line, 'a', 100);
    memcpy(line + 100, "\r\n", 3);
    got = parse_cut(line, 102, 7, 256, 64);
    assert_string_equal(got, "ERR:Protocol error: too big inline request");
    free(got);
    got = parse_cut("a b c d\r\n", 9, 0, 3, 64);
    assert_string_equal(got, "ERR:Protocol error: more than 3 arguments in one command");
    free(got);
    /* after an error the parser stays failed */
    ik__respp p;
    ik__respp_init(&p, NULL, 0, 4, 64);
    size_t used;
    assert_int_equal(ik__respp_feed(&p, "*-3\r\n", 5, &used), IK_RESPP_ERROR);
    assert_int_equal(ik__respp_feed(&p, "PING\r\n", 6, &used), IK_RESPP_ERROR);
    ik__respp_free(&p);
    /* many arguments move to the heap and back */
    ik__buf big;
    ik__buf_init(&big, NULL, 0);
    ik__buf_puts(&big, "*200\r\n");
    for (int i = 0; i < 200; i++)
        ik__buf_puts(&big, "$1\r\nx\r\n");
    ik__buf_puts(&big, "PING\r\n");
    ik__buf_append(&big, "", 1);
    got = parse_cut(big.p, big.len - 1, 5, 256, 8192);
    assert_int_equal(strlen(got), 200 * 2 - 1 + 1 + 5);
    assert_string_equal(got + strlen(got) - 5, "PING;");
    free(got);
    ik__buf_reset(&big);
}

/* A whole command is read in one pass (resp.c, feed_whole); each case below is also
 * read one byte and three bytes at a time (expect), by the state machine: the same
 * commands and errors either way. */
static void test_whole(void **state)
{
    expect("*02\r\n$04\r\nINCR\r\n$3\r\nseg\r\n", "INCR|seg;"); /* leading zeros */
    expect("*1\r\n$0000000004\r\nPING\r\n", "PING;");           /* 10 digits */
    expect("*1\r\n$3\r\na\r\n\r\n", "a\r\n;");                  /* CRLF inside */
    expect("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nPI", "PING;");      /* then a part */
    expect("*2\r\n$4\r\nINCR\r\n$3\r\nseg\r", "");              /* no last LF */
    expect("*9\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n$1\r\ne\r\n$1\r\nf\r\n$1\r\ng\r\n"
           "$1\r\nh\r\n$1\r\ni\r\n",
           "a|b|c|d|e|f|g|h|i;"); /* past the inline argument slots */
    expect("*1\r\n$4\r\nPINGx\r\n", "ERR:Protocol error: a bulk string must end in CRLF");
    expect("*1\r\n$4\r\nPING\rx\r\n", "ERR:Protocol error: a bulk string must end in CRLF");
    expect("*1\r\n$4\r\nPI\rG\r\n*1\r\n$1\r\nx\r\n", "PI\rG;x;");
    /* the argument-bytes limit, exactly at it and one past it */
    char cmd[200];
    char a32[33];
    memset(a32, 'a', 32);
    a32[32] = 0;
    for (size_t cut = 0; cut < 4; cut++) {
        int n = snprintf(cmd, sizeof cmd, "*2\r\n$32\r\n%s\r\n$32\r\n%s\r\n", a32, a32);
        char *got = parse_cut(cmd, (size_t)n, cut, 256, 64);
        assert_int_equal(strlen(got), 32 + 1 + 32 + 1);
        free(got);
        n = snprintf(cmd, sizeof cmd, "*2\r\n$32\r\n%s\r\n$33\r\n%sb\r\n", a32, a32);
        got = parse_cut(cmd, (size_t)n, cut, 256, 64);
        assert_string_equal(got, "ERR:Protocol error: invalid bulk length");
        free(got);
        /* the argument-count limit */
        got = parse_cut("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n", 25, cut, 2, 64);
        assert_string_equal(got, "ERR:Protocol error: invalid multibulk length");
        free(got);
    }
}

static void test_replies(void **state)
{
    ik__buf b;
    ik__buf_init(&b, NULL, 0);
    ik__resp_simple(&b, "OK");
    ik__resp_int(&b, -42);
    ik__resp_int(&b, INT64_MAX);
    ik__resp_bulk(&b, "a\r\nb", 4);
    ik__resp_null(&b, 2);
    ik__resp_null(&b, 3);
    ik__resp_array(&b, 2);
    ik__resp_map(&b, 2, 2);
    ik__resp_map(&b, 2, 3);
    ik__resp_error(&b, "ERR bad\r\nthing %d", 7);
    ik__buf_append(&b, "", 1);
    assert_string_equal(
        b.p, "+OK\r\n:-42\r\n:9223372036854775807\r\n$4\r\na\r\nb\r\n$-1\r\n_\r\n*2\r\n*4\r\n%2\r\n"
             "-ERR bad  thing 7\r\n");
    ik__buf_reset(&b);
    char q[140];
    ik__resp_quote(q, "a\nb", 3);
    assert_string_equal(q, "'a b'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_multibulk), cmocka_unit_test(test_inline),
        cmocka_unit_test(test_errors),    cmocka_unit_test(test_limits),
        cmocka_unit_test(test_replies),   cmocka_unit_test(test_whole),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
