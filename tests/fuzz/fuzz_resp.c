/* fuzz_resp.c: the RESP command parser (resp.c) as the daemon's RESP connections
 * use it: RESP2 multibulk and inline commands, pipelined, cut into reads anywhere,
 * with the daemon's limits; and the reply writers on what it parsed.
 *
 * Input: byte 0 picks how the stream is cut into reads (1 to 63 bytes each, or all
 * at once for 0), byte 1 the argument-bytes limit (64 + 32 * b) and byte 2 the
 * argument-count limit (1 + b % 64); the rest is what a client sends on one
 * connection.
 *
 * Checks (abort on violation): every command has 1..max_args arguments of at most
 * max_bytes bytes in all, each NUL-terminated; the commands and the error (if any)
 * do not depend on how the stream was cut (a second parser reads it whole); after
 * an error the parser stays failed; replies written from the arguments are
 * well-formed RESP. Cross-protocol input: a stream whose first line is an HTTP
 * POST request line or that holds a Host: header line read inline is recognized
 * (ik__resp_cross_protocol) at that line, and, as in the daemon, nothing after it
 * is taken as a command (the digest stops there, whatever the cut). Pipelined
 * input that is never read (the corpus's long runs of ID commands) is parsed
 * command by command, each within the limits. Under ASan/UBSan: no crash, no leak.
 */
/* fuzz-sources: src/server/resp/resp.c src/server/buf.c */
#include "fuzz.h"
#include "resp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok)
{
    if (!ok) abort();
}

/* A digest of one command (its arguments, length-prefixed) appended to out. */
static void digest(const ik__respp *p, ik__buf *out, uint32_t max_args, uint32_t max_bytes)
{
    const char *a;
    size_t n, total = 0;
    uint32_t argc = ik__respp_arg(p, 0, &a, &n);
    check(argc >= 1 && argc <= max_args);
    ik__buf_append(out, &argc, sizeof argc);
    for (uint32_t i = 0; i < argc; i++) {
        check(ik__respp_arg(p, i, &a, &n) == argc);
        check(a[n] == 0);
        total += n;
        ik__buf_append(out, &n, sizeof n);
        ik__buf_append(out, a, n);
    }
    check(total <= max_bytes);
    /* the writers on what was read: well-formed, quoted errors stay on one line */
    ik__buf r;
    ik__buf_init(&r, NULL, 0);
    ik__respp_arg(p, 0, &a, &n);
    ik__resp_bulk(&r, a, n);
    char q[140];
    ik__resp_quote(q, a, n);
    check(strlen(q) <= 130 && !strchr(q, '\n') && !strchr(q, '\r'));
    ik__resp_error(&r, "ERR unknown command %s", q);
    ik__resp_map(&r, 1, 3);
    ik__resp_array(&r, argc);
    ik__resp_null(&r, 2);
    check(r.len > 0 && r.p[r.len - 1] == '\n' && r.p[r.len - 2] == '\r');
    check(memchr(r.p, '-', r.len) != NULL);
    ik__buf_reset(&r);
}

/* 1 if data[0..size-1] begins with an inline line whose first word is POST (a
 * browser's form sent to this port): the parser must read it as a command that
 * ik__resp_cross_protocol recognizes, unless the line breaks the limits. */
static int starts_as_post(const char *data, size_t size)
{
    return size >= 5 && memcmp(data, "POST ", 5) == 0 && memchr(data, '\n', size) != NULL;
}

/* Parses data[0..size-1] cut into reads of `cut` bytes (0: whole) into a digest of
 * every command up to the first cross-protocol one (the daemon closes there), then
 * the error if any. Sets *cross to the index of that command (-1: none). */
static void parse_all(const char *data, size_t size, size_t cut, uint32_t max_args,
                      uint32_t max_bytes, ik__buf *out, long *cross)
{
    long ncmd = 0;
    *cross = -1;
    ik__respp p;
    char inline_store[64];
    ik__respp_init(&p, inline_store, sizeof inline_store, max_args, max_bytes);
    size_t off = 0;
    int failed = 0;
    while (off < size && !failed) {
        size_t end = cut && off + cut < size ? off + cut : size;
        size_t at = off;
        while (at < end) {
            size_t used;
            int r = ik__respp_feed(&p, data + at, end - at, &used);
            check(used <= end - at);
            at += used;
            if (r == IK_RESPP_ERROR) {
                failed = 1;
                ik__buf_puts(out, "ERROR:");
                ik__buf_puts(out, p.err);
                size_t u2;
                check(ik__respp_feed(&p, "PING\r\n", 6, &u2) == IK_RESPP_ERROR);
                break;
            }
            if (r == IK_RESPP_MORE) {
                check(at == end);
                break;
            }
            digest(&p, out, max_args, max_bytes);
            const char *a;
            size_t n;
            ik__respp_arg(&p, 0, &a, &n);
            if (ik__resp_cross_protocol(a, n)) { /* closed here: nothing more runs */
                *cross = ncmd;
                ik__buf_puts(out, "CROSS");
                failed = 1;
                break;
            }
            ncmd++;
        }
        off = end;
    }
    ik__respp_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    size_t cut = data[0] % 64;
    uint32_t max_bytes = 64 + 32u * data[1];
    uint32_t max_args = 1 + data[2] % 64;
    const char *s = (const char *)data + 3;
    size = size - 3;
    ik__buf a, b;
    ik__buf_init(&a, NULL, 0);
    ik__buf_init(&b, NULL, 0);
    long ca, cb;
    parse_all(s, size, cut, max_args, max_bytes, &a, &ca);
    parse_all(s, size, 0, max_args, max_bytes, &b, &cb);
    check(a.len == b.len && (a.len == 0 || memcmp(a.p, b.p, a.len) == 0));
    check(ca == cb);
    /* a POST line read inline is the first command and is recognized, unless the
     * parser refused the stream first (a line over the limits) */
    if (starts_as_post(s, size) && ca != 0) check(a.len >= 6 && memcmp(a.p, "ERROR:", 6) == 0);
    ik__buf_reset(&a);
    ik__buf_reset(&b);
    return 0;
}
