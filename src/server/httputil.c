/* httputil.c: the daemon's pure helpers (buffers, formatting, parsing); see
 * httputil.h. No sockets, no loops, no globals. */
#include "httputil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- buffers -------------------------------------------------------------------- */

static void oom(size_t n)
{
    fprintf(stderr, "idkeeper: out of memory (%zu bytes); aborting\n", n);
    abort();
}

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
    if (want < b->len) oom(SIZE_MAX);
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
        if (!p) oom(cap);
        if (b->len) memcpy(p, b->p, b->len);
    } else {
        p = realloc(b->p, cap);
        if (!p) oom(cap);
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

size_t ik__fmt_u64(char *out, uint64_t v)
{
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
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

/* Length of the valid UTF-8 sequence at s[0..n-1] (n >= 1, s[0] >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    unsigned cp = c & (0x3Fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void ik__buf_append_json_str(ik__buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    ik__buf_append(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\')
            run++;
        ik__buf_append(b, s + i, run - i);
        i = run;
        if (i >= n) break;
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            ik__buf_append(b, e, 2);
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (c == '\n') {
                ik__buf_append(b, "\\n", 2);
            } else if (c == '\t') {
                ik__buf_append(b, "\\t", 2);
            } else if (c == '\r') {
                ik__buf_append(b, "\\r", 2);
            } else {
                ik__buf_append(b, e, 6);
            }
            i++;
        } else {
            size_t l = utf8_len(u + i, n - i);
            if (l) {
                ik__buf_append(b, s + i, l);
                i += l;
            } else {
                ik__buf_append(b, "\xEF\xBF\xBD", 3);
                i++;
            }
        }
    }
    ik__buf_append(b, "\"", 1);
}

size_t ik__fmt_iso8601(char *out, int64_t unix_ms)
{
    int64_t s = unix_ms / 1000, ms = unix_ms % 1000;
    if (ms < 0) {
        ms += 1000;
        s -= 1;
    }
    time_t t = (time_t)s;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        out[0] = 0;
        return 0;
    }
    int n = snprintf(out, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)ms);
    return n < 0 ? 0 : (size_t)n < 32 ? (size_t)n : 31;
}

size_t ik__fmt_http_date(char *out, int64_t unix_s)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char mons[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t t = (time_t)unix_s;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        out[0] = 0;
        return 0;
    }
    int n =
        snprintf(out, 48, "Date: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n", days[tm.tm_wday],
                 tm.tm_mday, mons[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return n < 0 ? 0 : (size_t)n < 48 ? (size_t)n : 47;
}

/* ---- parsing -------------------------------------------------------------------- */

int ik__parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out)
{
    if (n == 0 || n > 10) return -1;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > max) return -1;
    *out = (uint32_t)v;
    return 0;
}

int ik__query_get(const char *q, size_t qlen, const char *name, const char **val, size_t *vlen)
{
    size_t nl = strlen(name);
    size_t i = 0;
    while (i <= qlen && q) {
        size_t end = i;
        while (end < qlen && q[end] != '&')
            end++;
        size_t eq = i;
        while (eq < end && q[eq] != '=')
            eq++;
        if (eq - i == nl && memcmp(q + i, name, nl) == 0) {
            if (eq < end) {
                *val = q + eq + 1;
                *vlen = end - eq - 1;
            } else {
                *val = q + end;
                *vlen = 0;
            }
            return 1;
        }
        i = end + 1;
    }
    return 0;
}

int ik__path_match(const char *pattern, const char *path, size_t plen, ik__span *params)
{
    int np = 0;
    size_t i = 0;
    const char *pt = pattern;
    while (*pt) {
        if (pt[0] == '{') {
            const char *close = strchr(pt, '}');
            if (!close || np >= IK_MAX_PARAMS) return -1;
            size_t start = i;
            while (i < plen && path[i] != '/')
                i++;
            if (i == start) return -1;
            params[np].p = path + start;
            params[np].n = i - start;
            np++;
            pt = close + 1;
        } else {
            if (i >= plen || path[i] != *pt) return -1;
            i++;
            pt++;
        }
    }
    return i == plen ? np : -1;
}

int ik__parse_listen(const char *addr, char *host, size_t host_len, int *port, char *why,
                     size_t why_len)
{
    const char *colon;
    size_t hl;
    const char *h;
    if (!addr || !*addr) {
        snprintf(why, why_len, "empty listen address (want HOST:PORT)");
        return -1;
    }
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':') {
            snprintf(why, why_len, "bad listen address '%s' (want [V6]:PORT)", addr);
            return -1;
        }
        h = addr + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
        if (hl == 0) {
            snprintf(why, why_len, "bad listen address '%s': empty IPv6 host", addr);
            return -1;
        }
    } else {
        colon = strrchr(addr, ':');
        if (!colon) {
            snprintf(why, why_len, "bad listen address '%s' (want HOST:PORT)", addr);
            return -1;
        }
        h = addr;
        hl = (size_t)(colon - addr);
        if (memchr(h, ':', hl)) {
            snprintf(why, why_len, "bad listen address '%s': put an IPv6 host in brackets", addr);
            return -1;
        }
    }
    if (hl + 1 > host_len) {
        snprintf(why, why_len, "listen host too long in '%s'", addr);
        return -1;
    }
    const char *ps = colon + 1;
    uint32_t p;
    if (ik__parse_u32(ps, strlen(ps), 65535, &p) != 0) {
        snprintf(why, why_len, "bad port in listen address '%s' (want 0..65535)", addr);
        return -1;
    }
    memcpy(host, h, hl);
    host[hl] = 0;
    *port = (int)p;
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

/* Index of the first case-insensitive occurrence of lit (lower case) in s, or -1. */
static long ifind(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    for (size_t i = 0; i + l <= n; i++)
        if (ik__ieq(s + i, l, lit)) return (long)i;
    return -1;
}

int ik__negotiate(const char *query, size_t qlen, const char *accept, size_t alen)
{
    const char *v;
    size_t vl;
    if (query && ik__query_get(query, qlen, "format", &v, &vl)) {
        if (ik__ieq(v, vl, "json")) return IK_FMT_JSON;
        if (ik__ieq(v, vl, "text")) return IK_FMT_TEXT;
        return -1;
    }
    if (!accept || !alen) return IK_FMT_JSON;
    long t = ifind(accept, alen, "text/plain");
    if (t < 0) return IK_FMT_JSON;
    long j = ifind(accept, alen, "json");
    return (j < 0 || t < j) ? IK_FMT_TEXT : IK_FMT_JSON;
}

int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned char d = (unsigned char)(an != bn);
    for (size_t i = 0; i < an; i++)
        d |= (unsigned char)(a[i] ^ (i < bn ? b[i] : 0));
    return d == 0;
}
