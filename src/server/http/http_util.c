/* http_util.c: HTTP request values: route patterns and the route table's lookup,
 * tag names in paths, the Date line; see http_util.h. No sockets, no loops, no
 * globals. */
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
