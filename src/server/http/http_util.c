/* http_util.c: HTTP request values: query strings, route patterns and the route
 * table's lookup, content negotiation, tag names in paths, the Date line; see
 * http_util.h. No sockets, no loops, no globals. */
#include "http_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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
    size_t i = 0; /* at most plen */
    const char *pt = pattern;
    while (*pt) {
        if (pt[0] == '{') {
            const char *close = strchr(pt, '}');
            if (!close || np >= IK_MAX_PARAMS) return -1;
            const char *slash = i < plen ? memchr(path + i, '/', plen - i) : NULL;
            size_t end = slash ? (size_t)(slash - path) : plen;
            if (end == i) return -1;
            params[np].p = path + i;
            params[np].n = end - i;
            np++;
            i = end;
            pt = close + 1;
        } else { /* a run of literal bytes, compared at once */
            size_t run = (size_t)(strchrnul(pt, '{') - pt);
            if (run > plen - i || memcmp(path + i, pt, run) != 0) return -1;
            i += run;
            pt += run;
        }
    }
    return i == plen ? np : -1;
}

long ik__query_value(const char *q, size_t qlen, const char *name, char *out, size_t cap,
                     ik__span *raw)
{
    const char *v;
    size_t vl;
    if (cap) out[0] = '\0';
    if (!q || !ik__query_get(q, qlen, name, &v, &vl)) return -1;
    if (raw) {
        raw->p = v;
        raw->n = vl;
    }
    long k = ik__pct_decode(v, vl, out, cap);
    if (k < 0) {
        if (cap) out[0] = '\0';
        return -2;
    }
    return k;
}

int ik__query_uint(const char *q, size_t qlen, const char *name, uint32_t min, uint32_t max,
                   uint32_t *v, ik__span *raw)
{
    char d[16];
    uint32_t got;
    long k = ik__query_value(q, qlen, name, d, sizeof d, raw);
    if (k == -1) return 0;
    if (k < 0 || ik__parse_u32(d, (size_t)k, max, &got) != 0 || got < min) return -1;
    *v = got;
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
    char v[8];
    long vl = ik__query_value(query, qlen, "format", v, sizeof v, NULL);
    if (vl >= 0 && ik__ieq(v, (size_t)vl, "json")) return IK_FMT_JSON;
    if (vl >= 0 && ik__ieq(v, (size_t)vl, "text")) return IK_FMT_TEXT;
    if (vl != -1) return -1;
    if (!accept || !alen) return IK_FMT_JSON;
    long t = ifind(accept, alen, "text/plain");
    if (t < 0) return IK_FMT_JSON;
    long j = ifind(accept, alen, "json");
    return (j < 0 || t < j) ? IK_FMT_TEXT : IK_FMT_JSON;
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
    *n = 1;
    return ik__query_uint(q, qlen, "count", 1, max, n, raw) < 0 ? -1 : 0;
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
