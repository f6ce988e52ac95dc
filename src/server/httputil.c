/* httputil.c: the daemon's pure helpers (buffers, formatting, parsing); see
 * httputil.h. No sockets, no loops, no globals. */
#include "httputil.h"

#include <limits.h>
#include <openssl/evp.h>

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

size_t ik__vformat(char *out, size_t cap, const char *fmt, va_list ap)
{
    int n = vsnprintf(out, cap, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n >= cap) n = (int)cap - 1;
    return (size_t)n;
}

size_t ik__fmt_u64(char *out, uint64_t v)
{
    /* two digits a division, written from the end: an ID's 19 digits in 10 steps
     * (on every answer's path: the IDs and Content-Length) */
    static const char pairs[201] = "00010203040506070809101112131415161718192021222324"
                                   "25262728293031323334353637383940414243444546474849"
                                   "50515253545556575859606162636465666768697071727374"
                                   "75767778798081828384858687888990919293949596979899";
    char tmp[20];
    size_t i = sizeof tmp;
    while (v >= 100) {
        unsigned d = (unsigned)(v % 100) * 2;
        v /= 100;
        tmp[--i] = pairs[d + 1];
        tmp[--i] = pairs[d];
    }
    if (v >= 10) {
        tmp[--i] = pairs[v * 2 + 1];
        tmp[--i] = pairs[v * 2];
    } else {
        tmp[--i] = (char)('0' + v);
    }
    size_t n = sizeof tmp - i;
    memcpy(out, tmp + i, n);
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

long ik__base64_decode(const char *s, size_t n, char *out, size_t cap)
{
    /* libcrypto's decoder; it writes 3 bytes for every 4 and counts the padding in,
     * so the '=' are taken off its length here. */
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap || n > INT_MAX) return -1;
    int len = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    if (len < 0) return -1;
    if (s[n - 1] == '=') len--;
    if (s[n - 2] == '=') len--;
    return len;
}

int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned char d = (unsigned char)(an != bn);
    for (size_t i = 0; i < an; i++)
        d |= (unsigned char)(a[i] ^ (i < bn ? b[i] : 0));
    return d == 0;
}

/* ---- routes and request values ------------------------------------------------------- */

size_t ik__route_find(const ik__route_key *keys, size_t n, unsigned method, const char *path,
                      size_t plen, ik__span *params, int *np, uint64_t *allow, size_t *first)
{
    *allow = 0;
    *first = n;
    *np = 0;
    for (size_t i = 0; i < n; i++) {
        int k = ik__path_match(keys[i].pattern, path, plen, params);
        if (k < 0) continue;
        if (keys[i].method != method) {
            if (keys[i].method < 64) *allow |= UINT64_C(1) << keys[i].method;
            if (*first == n) *first = i;
            continue;
        }
        *np = k;
        return i;
    }
    return n;
}

int ik__count_param(const char *q, size_t qlen, uint32_t max, uint32_t *n, ik__span *raw)
{
    const char *v;
    size_t vl;
    *n = 1;
    if (!q || !ik__query_get(q, qlen, "count", &v, &vl)) return 0;
    uint32_t got;
    if (ik__parse_u32(v, vl, UINT32_MAX, &got) != 0 || got < 1 || got > max) {
        raw->p = v;
        raw->n = vl;
        return -1;
    }
    *n = got;
    return 0;
}

int ik__hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

long ik__pct_decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (n - i < 3) return -1;
            int hi = ik__hexval(s[i + 1]), lo = ik__hexval(s[i + 2]);
            if (hi < 0 || lo < 0) return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (c == '\0' || o + 1 >= cap) return -1;
        out[o++] = c;
    }
    if (o >= cap) return -1;
    out[o] = '\0';
    return (long)o;
}

int ik__tag_param(ik__span seg, char out[IK_TAG_NAME_MAX + 1], char *why, size_t why_len)
{
    char tmp[3 * IK_TAG_NAME_MAX + 1]; /* a longer segment decodes to over 128 bytes */
    long k = seg.n < sizeof tmp ? ik__pct_decode(seg.p, seg.n, tmp, sizeof tmp) : -2;
    out[0] = '\0';
    if (k == -1) {
        snprintf(why, why_len, "bad percent-escape or NUL byte in the tag name");
        return -1;
    }
    if (k < 0 || k > IK_TAG_NAME_MAX) {
        snprintf(why, why_len, "tag name is over %d bytes", IK_TAG_NAME_MAX);
        return -1;
    }
    memcpy(out, tmp, (size_t)k + 1);
    return ik_tag_name_check(out, why, why_len) != 0 ? -1 : 0;
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

/* ---- a flat JSON object ----------------------------------------------------------------- */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* Scans the string whose opening quote is s[*i]; on success *i is past the closing
 * quote and raw holds the contents. Returns 0 or -1. */
static int scan_string(const char *s, size_t n, size_t *i, ik__span *raw)
{
    size_t j = *i + 1, start = j;
    while (j < n) {
        unsigned char c = (unsigned char)s[j];
        if (c == '"') {
            raw->p = s + start;
            raw->n = j - start;
            *i = j + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c != '\\') {
            j++;
            continue;
        }
        if (j + 1 >= n) return -1;
        char e = s[j + 1];
        if (e == 'u') {
            if (j + 5 >= n) return -1;
            for (size_t k = j + 2; k < j + 6; k++)
                if (ik__hexval(s[k]) < 0) return -1;
            j += 6;
        } else if (e && strchr("\"\\/bfnrt", e)) {
            j += 2;
        } else {
            return -1;
        }
    }
    return -1;
}

/* Scans a JSON number at s[*i]. Returns 0 or -1. */
static int scan_number(const char *s, size_t n, size_t *i)
{
    size_t j = *i;
    if (j < n && s[j] == '-') j++;
    if (j >= n) return -1;
    if (s[j] == '0') {
        j++;
    } else if (s[j] >= '1' && s[j] <= '9') {
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
    } else {
        return -1;
    }
    if (j < n && s[j] == '.') {
        j++;
        size_t d = j;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == d) return -1;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        size_t d = j;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == d) return -1;
    }
    *i = j;
    return 0;
}

static int lit(const char *s, size_t n, size_t i, const char *word)
{
    size_t l = strlen(word);
    return n - i >= l && memcmp(s + i, word, l) == 0;
}

#define JSON_FAIL(...) (snprintf(why, why_len, __VA_ARGS__), -1)

int ik__json_flat(const char *s, size_t n, ik__json_field *f, int max, char *why, size_t why_len)
{
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return JSON_FAIL("the body is not a JSON object");
    i = skip_ws(s, n, i + 1);
    int k = 0;
    if (i < n && s[i] == '}') {
        i++;
    } else {
        for (;;) {
            if (i >= n || s[i] != '"')
                return JSON_FAIL("expected a quoted field name at byte %zu", i);
            if (k >= max) return JSON_FAIL("more than %d fields", max);
            ik__json_field *fd = &f[k];
            if (scan_string(s, n, &i, &fd->key) != 0) return JSON_FAIL("bad string at byte %zu", i);
            i = skip_ws(s, n, i);
            if (i >= n || s[i] != ':') return JSON_FAIL("expected ':' at byte %zu", i);
            i = skip_ws(s, n, i + 1);
            if (i >= n) return JSON_FAIL("the body ends inside the object");
            size_t v0 = i;
            if (s[i] == '"') {
                if (scan_string(s, n, &i, &fd->val) != 0)
                    return JSON_FAIL("bad string at byte %zu", v0);
                fd->type = IK_JSON_STRING;
            } else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
                if (scan_number(s, n, &i) != 0) return JSON_FAIL("bad number at byte %zu", v0);
                fd->val = (ik__span){s + v0, i - v0};
                fd->type = IK_JSON_NUMBER;
            } else if (lit(s, n, i, "true")) {
                i += 4;
                fd->val = (ik__span){s + v0, 4};
                fd->type = IK_JSON_TRUE;
            } else if (lit(s, n, i, "false")) {
                i += 5;
                fd->val = (ik__span){s + v0, 5};
                fd->type = IK_JSON_FALSE;
            } else if (lit(s, n, i, "null")) {
                i += 4;
                fd->val = (ik__span){s + v0, 4};
                fd->type = IK_JSON_NULL;
            } else if (s[i] == '{' || s[i] == '[') {
                return JSON_FAIL("nested objects and arrays are not accepted (byte %zu)", v0);
            } else {
                return JSON_FAIL("bad value at byte %zu", v0);
            }
            k++;
            i = skip_ws(s, n, i);
            if (i < n && s[i] == ',') {
                i = skip_ws(s, n, i + 1);
                continue;
            }
            if (i < n && s[i] == '}') {
                i++;
                break;
            }
            return JSON_FAIL("expected ',' or '}' at byte %zu", i);
        }
    }
    i = skip_ws(s, n, i);
    if (i != n) return JSON_FAIL("trailing bytes after the object at byte %zu", i);
    return k;
}

static unsigned hex4(const char *p)
{
    return (unsigned)ik__hexval(p[0]) << 12 | (unsigned)ik__hexval(p[1]) << 8 |
           (unsigned)ik__hexval(p[2]) << 4 | (unsigned)ik__hexval(p[3]);
}

long ik__json_unescape(ik__span raw, char *out, size_t cap)
{
    size_t o = 0;
    const char *s = raw.p;
    size_t n = raw.n;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c != '\\') {
            if (o + 1 >= cap) return -1;
            out[o++] = c;
            i++;
            continue;
        }
        if (i + 1 >= n) return -1;
        char e = s[i + 1];
        unsigned cp;
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *q = e ? strchr(from, e) : NULL;
            if (!q || o + 1 >= cap) return -1;
            out[o++] = to[q - from];
            i += 2;
            continue;
        }
        if (i + 6 > n) return -1;
        cp = hex4(s + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate needs its low half */
            if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u') return -1;
            unsigned lo = hex4(s + i + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return -1;
        }
        if (cp == 0) return -1;
        char u[4];
        size_t l;
        if (cp < 0x80) {
            u[0] = (char)cp, l = 1;
        } else if (cp < 0x800) {
            u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), l = 2;
        } else if (cp < 0x10000) {
            u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (char)(0x80 | (cp & 0x3F)), l = 3;
        } else {
            u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), l = 4;
        }
        if (o + l >= cap) return -1;
        memcpy(out + o, u, l);
        o += l;
    }
    if (o >= cap) return -1;
    out[o] = '\0';
    return (long)o;
}

/* A whole number from a JSON number or a decimal string. Returns 0, 1 if null, or
 * -1. */
static int json_int(const ik__json_field *f, int64_t *v)
{
    if (f->type == IK_JSON_NULL) return 1;
    if (f->type != IK_JSON_NUMBER && f->type != IK_JSON_STRING) return -1;
    return ik__parse_i64(f->val.p, f->val.n, v);
}

/* Copies at most 40 bytes of s for a message, control bytes as '?'. */
static const char *shown(ik__span s, char *buf, size_t len)
{
    size_t k = s.n < len - 1 ? s.n : len - 1;
    for (size_t i = 0; i < k; i++)
        buf[i] = (unsigned char)s.p[i] < 0x20 ? '?' : s.p[i];
    buf[k] = '\0';
    return buf;
}

#define BODY_FAIL(c, ...) (*code = (c), snprintf(why, why_len, __VA_ARGS__), -1)

int ik__tag_body_parse(const char *s, size_t n, ik__tag_body *out, const char **code, char *why,
                       size_t why_len)
{
    ik__json_field f[8];
    int k = ik__json_flat(s, n, f, 8, why, why_len);
    if (k < 0) {
        *code = "bad_json";
        return -1;
    }
    enum { F_TAG, F_KIND, F_START, F_STEP, F_DESC, F_N };
    static const char *const names[F_N] = {"tag", "kind", "start", "step", "description"};
    const ik__json_field *by[F_N] = {NULL};
    char key[16], q[41];
    for (int i = 0; i < k; i++) {
        int which = -1;
        if (ik__json_unescape(f[i].key, key, sizeof key) >= 0)
            for (int j = 0; j < F_N; j++)
                if (!strcmp(key, names[j])) which = j;
        if (which < 0)
            return BODY_FAIL("bad_json",
                             "unknown field \"%s\" (tag, kind, start, step, description)",
                             shown(f[i].key, q, sizeof q));
        if (by[which]) return BODY_FAIL("bad_json", "field \"%s\" given twice", names[which]);
        by[which] = &f[i];
    }
    memset(out, 0, sizeof *out);

    const ik__json_field *t = by[F_TAG];
    char name[4 * IK_TAG_NAME_MAX + 1];
    if (!t || t->type != IK_JSON_STRING)
        return BODY_FAIL("bad_tag",
                         "the body needs \"tag\": a name of 1 to %d bytes of "
                         "letters, digits and . _ : -",
                         IK_TAG_NAME_MAX);
    if (ik__json_unescape(t->val, name, sizeof name) < 0)
        return BODY_FAIL("bad_tag", "tag name is over %d bytes or holds a NUL", IK_TAG_NAME_MAX);
    if (ik_tag_name_check(name, why, why_len) != 0) {
        *code = "bad_tag";
        return -1;
    }
    memcpy(out->tag, name, strlen(name) + 1);

    const ik__json_field *kd = by[F_KIND];
    if (!kd || kd->type != IK_JSON_STRING ||
        !(ik__ieq(kd->val.p, kd->val.n, "segment") || ik__ieq(kd->val.p, kd->val.n, "sequence")))
        return BODY_FAIL("bad_kind", "\"kind\" must be \"segment\" or \"sequence\"");
    out->kind = ik__ieq(kd->val.p, kd->val.n, "segment") ? IK_TAG_SEGMENT : IK_TAG_SEQUENCE;

    out->start = 1;
    if (by[F_START]) {
        int r = json_int(by[F_START], &out->start);
        if (r < 0 || out->start < 0)
            return BODY_FAIL("bad_start",
                             "\"start\" must be a whole number from 0 to 9223372036854775807; "
                             "got %s",
                             shown(by[F_START]->val, q, sizeof q));
        if (r == 1) out->start = 1;
    }

    out->step = out->kind == IK_TAG_SEGMENT ? 1000 : 1;
    if (by[F_STEP]) {
        int64_t st = 0;
        int r = json_int(by[F_STEP], &st);
        if (r < 0 || (r == 0 && (st < 1 || st > 1000000)))
            return BODY_FAIL("bad_step",
                             "\"step\" must be a whole number from 1 to 1000000; got %s",
                             shown(by[F_STEP]->val, q, sizeof q));
        if (r == 0) {
            if (out->kind == IK_TAG_SEQUENCE && st != 1)
                return BODY_FAIL("bad_step",
                                 "a sequence tag takes no step (its IDs are contiguous); got %s",
                                 shown(by[F_STEP]->val, q, sizeof q));
            out->step = st;
        }
    }

    const ik__json_field *d = by[F_DESC];
    if (d && d->type != IK_JSON_NULL) {
        if (d->type != IK_JSON_STRING)
            return BODY_FAIL("bad_description", "\"description\" must be a string");
        if (ik__json_unescape(d->val, out->description, sizeof out->description) < 0)
            return BODY_FAIL("bad_description", "\"description\" is over %zu bytes or holds a NUL",
                             sizeof out->description - 1);
    }
    return 0;
}
