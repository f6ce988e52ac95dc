/* resp.c: the RESP command parser and reply writers (resp.h has the rules).
 *
 * The parser's states:
 *
 *   START --'*'--> MB_COUNT --"n\r\n", n >= 1--> BULK_HDR --"$len\r\n"--> BULK_DATA
 *     |  \            | n == 0 or -1: START          ^                        |
 *     |   \           |                              +---- more to come ------+
 *     |    other byte --> INLINE --'\n'--> (split) --> DONE      last one --> DONE
 *     +<------------------------------ next feed <------------------- DONE
 *   any malformed input --> FAILED (final)
 *
 * A whole multibulk command at START (the usual read: one or more commands whole) is
 * read in one pass instead (feed_whole), to the same result; anything it does not
 * take goes through the states above.
 *
 * Invariants: args.len <= max_bytes + argc (the NULs); argc <= max_args; the
 * argument slot arrays hold at least argc entries. Nothing here allocates more than
 * that, whatever the input.
 */
#include "resp.h"

#include "../lib/rules.h" /* ik__hexval */

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { S_START = 0, S_MB_COUNT, S_BULK_HDR, S_BULK_LINE, S_BULK_DATA, S_INLINE, S_DONE };

void ik__respp_init(ik__respp *p, char *storage, size_t cap, uint32_t max_args, uint32_t max_bytes)
{
    memset(p, 0, sizeof *p);
    p->max_args = max_args ? max_args : 1;
    p->max_bytes = max_bytes < 64 ? 64 : max_bytes;
    ik__buf_init(&p->args, storage, cap);
    p->off = p->off_inline;
    p->len = p->len_inline;
    p->cap = IK_RESP_INLINE_ARGS;
}

static void free_slots(ik__respp *p)
{
    if (p->off != p->off_inline) {
        free(p->off);
        free(p->len);
    }
    p->off = p->off_inline;
    p->len = p->len_inline;
    p->cap = IK_RESP_INLINE_ARGS;
}

void ik__respp_free(ik__respp *p)
{
    ik__buf_reset(&p->args);
    free_slots(p);
}

static int fail(ik__respp *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(ik__respp *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    p->failed = 1;
    return IK_RESPP_ERROR;
}

/* Room for one more argument slot; -1 past max_args. Aborts on ENOMEM (the daemon
 * may; the size is bounded by max_args). */
static int slot_room(ik__respp *p)
{
    if (p->argc >= p->max_args) return -1;
    if (p->argc < p->cap) return 0;
    uint32_t cap = p->cap * 2;
    if (cap > p->max_args) cap = p->max_args;
    uint32_t *o = ik__xmalloc(cap * sizeof *o), *l = ik__xmalloc(cap * sizeof *l);
    memcpy(o, p->off, p->argc * sizeof *o);
    memcpy(l, p->len, p->argc * sizeof *l);
    if (p->off != p->off_inline) {
        free(p->off);
        free(p->len);
    }
    p->off = o;
    p->len = l;
    p->cap = cap;
    return 0;
}

/* Back to START for the next command, returning large storage. */
static void next_command(ik__respp *p)
{
    p->state = S_START;
    p->argc = p->want = 0;
    p->line_len = 0;
    p->bulk_left = 0;
    if (p->args.p != p->args.inline_p && p->args.cap > 16 * 1024) {
        ik__buf_reset(&p->args);
    } else {
        p->args.len = 0;
    }
    if (p->cap > 64) free_slots(p);
}

/* Strict decimal (optional '-', digits, at most 18 of them); 0 or -1. */
static int line_int(const char *s, size_t n, int64_t *out)
{
    int neg = 0;
    if (n && s[0] == '-') neg = 1, s++, n--;
    if (n == 0 || n > 18) return -1;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = neg ? -v : v;
    return 0;
}

/* Reads a header line into p->line up to its "\r\n". Returns 1 when complete (the
 * line without CRLF in p->line[0..line_len-1]), 0 when more is needed, or
 * IK_RESPP_ERROR. *i advances over what it consumed. */
static int read_line(ik__respp *p, const char *d, size_t n, size_t *i, const char *what)
{
    while (*i < n) {
        char ch = d[(*i)++];
        if (ch == '\n') {
            if (p->line_len == 0 || p->line[p->line_len - 1] != '\r')
                return fail(p, "Protocol error: %s line must end in CRLF", what);
            p->line_len--;
            return 1;
        }
        if (p->line_len >= sizeof p->line - 1)
            return fail(p, "Protocol error: too big %s string", what);
        p->line[p->line_len++] = ch;
    }
    return 0;
}

/* Appends one argument slot for args[off..off+len-1] (the NUL follows). */
static int add_arg(ik__respp *p, uint32_t off, uint32_t len)
{
    if (slot_room(p) != 0)
        return fail(p, "Protocol error: more than %u arguments in one command", p->max_args);
    p->off[p->argc] = off;
    p->len[p->argc] = len;
    p->argc++;
    return 0;
}

/* Splits the inline line in args[0..args.len-1] in place into arguments, as Redis's
 * sdssplitargs does. Returns 0 or IK_RESPP_ERROR. */
static int split_inline(ik__respp *p)
{
    size_t n = p->args.len, r = 0, w = 0;
    ik__buf_reserve(&p->args, 1); /* the last NUL may land at n */
    char *s = p->args.p;
    for (;;) {
        while (r < n && isspace((unsigned char)s[r]))
            r++;
        if (r >= n) break;
        size_t start = w;
        if (s[r] == '"' || s[r] == '\'') {
            char q = s[r++]; /* "..." takes C escapes and \xHH; '...' only \' */
            for (;;) {
                if (r >= n) return fail(p, "Protocol error: unbalanced quotes in request");
                char c = s[r];
                if (c == q) {
                    r++;
                    if (r < n && !isspace((unsigned char)s[r]))
                        return fail(p, "Protocol error: unbalanced quotes in request");
                    break;
                }
                if (q == '"' && c == '\\' && r + 3 < n && s[r + 1] == 'x' &&
                    ik__hexval(s[r + 2]) >= 0 && ik__hexval(s[r + 3]) >= 0) {
                    s[w++] = (char)(ik__hexval(s[r + 2]) * 16 + ik__hexval(s[r + 3]));
                    r += 4;
                } else if (q == '"' && c == '\\' && r + 1 < n) {
                    char e = s[r + 1];
                    s[w++] = e == 'n'   ? '\n'
                             : e == 'r' ? '\r'
                             : e == 't' ? '\t'
                             : e == 'b' ? '\b'
                             : e == 'a' ? '\a'
                                        : e;
                    r += 2;
                } else if (c == '\\' && r + 1 < n && s[r + 1] == '\'') { /* '...' */
                    s[w++] = '\'';
                    r += 2;
                } else {
                    s[w++] = c;
                    r++;
                }
            }
        } else {
            while (r < n && !isspace((unsigned char)s[r]))
                s[w++] = s[r++];
        }
        size_t len = w - start;
        if (r < n) r++; /* the blank after it: the NUL may take its place */
        s[w++] = 0;     /* w < r here, or w == n at the very end (reserved) */
        if (add_arg(p, (uint32_t)start, (uint32_t)len) != 0) return IK_RESPP_ERROR;
    }
    p->args.len = w;
    return 0;
}

/* A number of 1 to 9 digits and its CRLF at d[*i..n-1]: its value, *i past the LF;
 * or -1 (anything else, or cut off: the state machine then reads it). */
static int64_t whole_num(const char *d, size_t n, size_t *i)
{
    size_t k = *i, end = n - k > 9 ? k + 9 : n;
    uint32_t v = 0;
    while (k < end && (unsigned)(d[k] - '0') <= 9)
        v = v * 10 + (uint32_t)(d[k++] - '0');
    if (k == *i || n - k < 2 || d[k] != '\r' || d[k + 1] != '\n') return -1;
    *i = k + 2;
    return v;
}

/* The common case at S_START: a whole multibulk command in d[0..n-1], every header a
 * plain number, every argument within the limits. Reads it in one pass, as the state
 * machine would (the same arguments, the same storage, the same bytes used):
 * IK_RESPP_CMD. Anything else (cut off, malformed, an empty or inline command, a
 * limit reached): IK_RESPP_MORE with nothing taken, and the state machine reads it
 * byte by byte (and words its errors). tests/fuzz/fuzz_resp.c checks that both read
 * every input alike (the stream whole, and cut into small reads). */
static int feed_whole(ik__respp *p, const char *d, size_t n, size_t *used)
{
    size_t i = 1;
    int64_t want = whole_num(d, n, &i);
    if (want < 1 || want > p->max_args) return IK_RESPP_MORE;
    while (p->argc < (uint32_t)want) {
        if (i >= n || d[i] != '$') goto back;
        i++;
        int64_t v = whole_num(d, n, &i);
        if (v < 0 || (uint64_t)v > p->max_bytes - (p->args.len - p->argc) ||
            n - i < (size_t)v + 2 || d[i + v] != '\r' || d[i + v + 1] != '\n' ||
            (p->argc >= p->cap && slot_room(p) != 0))
            goto back;
        char *dst = p->args.cap - p->args.len > (size_t)v
                        ? p->args.p + p->args.len
                        : ik__buf_reserve(&p->args, (size_t)v + 1);
        memcpy(dst, d + i, (size_t)v);
        dst[v] = 0;
        p->off[p->argc] = (uint32_t)p->args.len;
        p->len[p->argc] = (uint32_t)v;
        p->argc++;
        p->args.len += (size_t)v + 1;
        i += (size_t)v + 2;
    }
    p->want = (uint32_t)want;
    p->state = S_DONE;
    *used = i;
    return IK_RESPP_CMD;
back:
    p->args.len = 0;
    p->argc = 0;
    return IK_RESPP_MORE;
}

int ik__respp_feed(ik__respp *p, const char *d, size_t n, size_t *used)
{
    size_t i = 0;
    int r;
    *used = 0;
    if (p->failed) return IK_RESPP_ERROR;
    if (p->state == S_DONE) next_command(p);
    if (p->state == S_START && n && d[0] == '*' && feed_whole(p, d, n, used) == IK_RESPP_CMD)
        return IK_RESPP_CMD;
    while (i < n) {
        switch (p->state) {
        case S_START:
            if (d[i] == '*') {
                i++;
                p->state = S_MB_COUNT;
                p->line_len = 0;
            } else {
                p->state = S_INLINE;
            }
            break;
        case S_MB_COUNT: {
            if ((r = read_line(p, d, n, &i, "mbulk count")) != 1) goto out_r;
            int64_t v;
            if (line_int(p->line, p->line_len, &v) != 0 || v < -1 || v > p->max_args) {
                r = fail(p, "Protocol error: invalid multibulk length");
                goto out_r;
            }
            if (v <= 0) { /* an empty command: skipped */
                next_command(p);
                break;
            }
            p->want = (uint32_t)v;
            p->state = S_BULK_HDR;
            break;
        }
        case S_BULK_HDR:
            if (d[i] != '$') {
                char c = d[i];
                r = fail(p, "Protocol error: expected '$', got '%c'",
                         isprint((unsigned char)c) ? c : '?');
                goto out_r;
            }
            i++;
            p->line_len = 0;
            p->state = S_BULK_LINE;
            break;
        case S_BULK_LINE: {
            if ((r = read_line(p, d, n, &i, "bulk count")) != 1) goto out_r;
            int64_t v;
            size_t used_bytes = p->args.len - p->argc; /* without the NULs */
            if (line_int(p->line, p->line_len, &v) != 0 || v < 0 ||
                (uint64_t)v > p->max_bytes - used_bytes) {
                r = fail(p, "Protocol error: invalid bulk length");
                goto out_r;
            }
            if (add_arg(p, (uint32_t)p->args.len, (uint32_t)v) != 0) {
                r = IK_RESPP_ERROR;
                goto out_r;
            }
            ik__buf_reserve(&p->args, (size_t)v + 1);
            p->bulk_left = v + 2;
            p->state = S_BULK_DATA;
            break;
        }
        case S_BULK_DATA:
            if (p->bulk_left > 2) {
                size_t take = n - i;
                if ((int64_t)take > p->bulk_left - 2) take = (size_t)(p->bulk_left - 2);
                ik__buf_append(&p->args, d + i, take);
                i += take;
                p->bulk_left -= (int64_t)take;
                break;
            }
            if (d[i] != (p->bulk_left == 2 ? '\r' : '\n')) {
                r = fail(p, "Protocol error: a bulk string must end in CRLF");
                goto out_r;
            }
            i++;
            if (--p->bulk_left > 0) break;
            p->args.p[p->args.len++] = 0; /* reserved with the bulk */
            if (p->argc < p->want) {
                p->state = S_BULK_HDR;
                break;
            }
            p->state = S_DONE;
            *used = i;
            return IK_RESPP_CMD;
        case S_INLINE: {
            const char *nl = memchr(d + i, '\n', n - i);
            size_t take = nl ? (size_t)(nl - (d + i)) : n - i;
            if (p->args.len + take > p->max_bytes) {
                r = fail(p, "Protocol error: too big inline request");
                goto out_r;
            }
            ik__buf_append(&p->args, d + i, take);
            i += take;
            if (!nl) break;
            i++; /* the '\n' */
            if (p->args.len && p->args.p[p->args.len - 1] == '\r') p->args.len--;
            if (split_inline(p) != 0) {
                r = IK_RESPP_ERROR;
                goto out_r;
            }
            if (p->argc == 0) { /* an empty line: skipped */
                next_command(p);
                break;
            }
            p->state = S_DONE;
            *used = i;
            return IK_RESPP_CMD;
        }
        default: /* S_DONE cannot be seen here */
            next_command(p);
            break;
        }
    }
    *used = i;
    return IK_RESPP_MORE;
out_r:
    *used = i;
    return r == IK_RESPP_ERROR ? r : IK_RESPP_MORE;
}

int ik__respp_busy(const ik__respp *p)
{
    return p->state != S_START && p->state != S_DONE && !p->failed;
}

_Static_assert(S_DONE == IK__RESPP_DONE, "resp.h's ik__respp_arg reads the state");

/* ---- replies --------------------------------------------------------------------------- */

/* Appends a type byte, s[0..n-1] and CRLF. */
static void put_line(ik__buf *b, char type, const char *s, size_t n)
{
    char *d = ik__buf_reserve(b, n + 3);
    d[0] = type;
    /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): a RESP frame, not a C string */
    memcpy(d + 1, s, n);
    d[n + 1] = '\r';
    d[n + 2] = '\n';
    b->len += n + 3;
}

void ik__resp_simple(ik__buf *b, const char *s)
{
    put_line(b, '+', s, strlen(s));
}

void ik__resp_error(ik__buf *b, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    size_t n = ik__vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (size_t i = 0; i < n; i++)
        if (msg[i] == '\r' || msg[i] == '\n') msg[i] = ' ';
    put_line(b, '-', msg, n);
}

/* Appends a type byte, v in decimal and CRLF. */
static void put_num(ik__buf *b, char type, int64_t v)
{
    char *d = ik__buf_reserve(b, 24);
    size_t k = 0;
    d[k++] = type;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    if (v < 0) d[k++] = '-';
    k += ik__fmt_u64(d + k, u);
    d[k++] = '\r';
    d[k++] = '\n';
    b->len += k;
}

void ik__resp_int(ik__buf *b, int64_t v)
{
    put_num(b, ':', v);
}

void ik__resp_bulk(ik__buf *b, const char *s, size_t n)
{
    put_num(b, '$', (int64_t)n);
    char *d = ik__buf_reserve(b, n + 2);
    if (n) memcpy(d, s, n);
    d[n] = '\r';
    d[n + 1] = '\n';
    b->len += n + 2;
}

void ik__resp_bulk_str(ik__buf *b, const char *s)
{
    ik__resp_bulk(b, s, strlen(s));
}

void ik__resp_null(ik__buf *b, int proto)
{
    ik__buf_append(b, proto == 3 ? "_\r\n" : "$-1\r\n", proto == 3 ? 3 : 5);
}

void ik__resp_array(ik__buf *b, size_t n)
{
    put_num(b, '*', (int64_t)n);
}

void ik__resp_map(ik__buf *b, size_t n, int proto)
{
    if (proto == 3) {
        put_num(b, '%', (int64_t)n);
    } else {
        put_num(b, '*', (int64_t)(2 * n));
    }
}

void ik__resp_quote(char *out, const char *s, size_t n)
{
    size_t k = 0;
    if (n > 128) n = 128;
    out[k++] = '\'';
    for (size_t i = 0; i < n; i++)
        out[k++] = s[i] == '\r' || s[i] == '\n' || s[i] == 0 ? ' ' : s[i];
    out[k++] = '\'';
    out[k] = 0;
}

int ik__resp_cross_protocol(const char *name, size_t n)
{
    return ik__ieq(name, n, "post") || ik__ieq(name, n, "host:");
}
