/* buf.c: growable buffers, numbers in and out, and the byte helpers every parser
 * of the daemon uses; see buf.h. No sockets, no loops, no globals. */
#include "buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation that cannot fail ------------------------------------------------ */

void ik__oom(size_t n)
{
    fprintf(stderr, "idkeeper: out of memory (%zu bytes); aborting\n", n);
    abort();
}

void *ik__xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) ik__oom(n);
    return p;
}

void *ik__xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) ik__oom(n * size);
    return p;
}

/* ---- buffers -------------------------------------------------------------------- */

void ik__buf_init(ik__buf *b, char *storage, size_t cap)
{
    b->p = storage;
    b->len = 0;
    b->cap = storage ? cap : 0;
    b->inline_p = storage;
    b->inline_cap = b->cap;
}

void ik__buf_reset(ik__buf *b)
{
    if (b->p != b->inline_p) free(b->p);
    b->p = b->inline_p;
    b->cap = b->inline_cap;
    b->len = 0;
}

char *ik__buf_reserve(ik__buf *b, size_t extra)
{
    if (b->cap - b->len >= extra) return b->p + b->len;
    size_t want = b->len + extra;
    if (want < b->len) ik__oom(SIZE_MAX);
    size_t cap = b->cap < 256 ? 256 : b->cap;
    while (cap < want) {
        if (cap > SIZE_MAX / 2) {
            cap = want;
            break;
        }
        cap *= 2;
    }
    char *p;
    if (b->p == b->inline_p) {
        p = malloc(cap);
        if (!p) ik__oom(cap);
        if (b->len) memcpy(p, b->p, b->len);
    } else {
        p = realloc(b->p, cap);
        if (!p) ik__oom(cap);
    }
    b->p = p;
    b->cap = cap;
    return b->p + b->len;
}

void ik__buf_append(ik__buf *b, const void *data, size_t n)
{
    if (!n) return;
    memcpy(ik__buf_reserve(b, n), data, n);
    b->len += n;
}

void ik__buf_puts(ik__buf *b, const char *s)
{
    ik__buf_append(b, s, strlen(s));
}

void ik__buf_printf(ik__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = ik__buf_reserve(b, 128);
    int n = vsnprintf(dst, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= b->cap - b->len) {
        dst = ik__buf_reserve(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(dst, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

size_t ik__vformat(char *out, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(out, cap, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n >= cap) n = (int)cap - 1;
    return (size_t)n;
}

size_t ik__fmt_u64(char *out, uint64_t v)
{
    /* two digits a step, written in place from the end once the length is known, and
     * eight digits at a time in 32-bit arithmetic: an ID's 19 digits in two 64-bit
     * divisions and nine 32-bit steps (on every answer's path: the IDs) */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    static const uint64_t pow10[20] = {1,
                                       10,
                                       100,
                                       1000,
                                       10000,
                                       100000,
                                       1000000,
                                       10000000,
                                       100000000,
                                       1000000000,
                                       10000000000ULL,
                                       100000000000ULL,
                                       1000000000000ULL,
                                       10000000000000ULL,
                                       100000000000000ULL,
                                       1000000000000000ULL,
                                       10000000000000000ULL,
                                       100000000000000000ULL,
                                       1000000000000000000ULL,
                                       10000000000000000000ULL};
    /* digits: from the bit length (1233/4096 ~ log10(2)), one correction */
    unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
    size_t n = (bits * 1233u >> 12) + 1;
    if (n < 20 && v >= pow10[n]) n++;
    if (n > 1 && v < pow10[n - 1]) n--;
    char *d = out + n;
#define PUT_PAIR(x) (d -= 2, memcpy(d, pairs + (x)*2, 2))
    while (v >= 100000000) { /* the low eight digits, as two halves of four */
        uint64_t q = v / 100000000;
        uint32_t r = (uint32_t)(v % 100000000); /* one division with q */
        uint32_t lo = r % 10000, hi = r / 10000;
        v = q;
        PUT_PAIR(lo % 100);
        PUT_PAIR(lo / 100);
        PUT_PAIR(hi % 100);
        PUT_PAIR(hi / 100);
    }
    uint32_t w = (uint32_t)v;
    while (w >= 100) {
        PUT_PAIR(w % 100);
        w /= 100;
    }
    if (w >= 10) {
        PUT_PAIR(w);
    } else {
        *--d = (char)('0' + w);
    }
#undef PUT_PAIR
    return n;
}

void ik__buf_append_u64(ik__buf *b, uint64_t v)
{
    char *dst = ik__buf_reserve(b, 20);
    b->len += ik__fmt_u64(dst, v);
}

void ik__buf_append_i64(ik__buf *b, int64_t v)
{
    if (v < 0) {
        ik__buf_append(b, "-", 1);
        ik__buf_append_u64(b, (uint64_t)0 - (uint64_t)v);
    } else {
        ik__buf_append_u64(b, (uint64_t)v);
    }
}

int ik__parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0')) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max) return -1;
    *out = (uint32_t)v;
    return 0;
}

int ik__ieq(const char *s, size_t n, const char *lit)
{
    if (strlen(lit) != n) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != lit[i]) return 0;
    }
    return 1;
}

int ik__parse_i64(const char *s, size_t n, int64_t *out)
{
    int neg = 0;
    if (n && s[0] == '-') {
        neg = 1;
        s++, n--;
    }
    if (n == 0 || n > 19 || (n > 1 && s[0] == '0')) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) return -1;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}
