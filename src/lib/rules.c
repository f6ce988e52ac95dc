/* rules.c: ISO 8601 time text, app names, recipe paths and listen addresses, the rules
 * the library, the daemon and the CLI share (contracts in rules.h). */
#include "rules.h"

#include "idkeeper.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- ISO 8601 ------------------------------------------------------------------ */

/* a / b rounded towards minus infinity (b > 0) */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

size_t ik__fmt_iso8601(char *out, int64_t unix_ms)
{
    /* quotient and remainder, not unix_ms - secs * 1000: near INT64_MIN the product
     * overflows */
    int64_t secs = unix_ms / 1000;
    int ms = (int)(unix_ms % 1000);
    if (ms < 0) {
        ms += 1000;
        secs--;
    }
    int64_t days = floor_div(secs, 86400);
    int sod = (int)(secs - days * 86400);
    /* days since 1970-01-01 to a civil date (H. Hinnant, "chrono-compatible low-level
     * date algorithms"): eras of 400 years starting on March 1st, year 0. */
    int64_t z = days + 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;                                      /* 0..146096 */
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* 0..399 */
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* 0..365 */
    int64_t mp = (5 * doy + 2) / 153;                                    /* 0..11, March 0 */
    int day = (int)(doy - (153 * mp + 2) / 5 + 1);
    int month = (int)(mp < 10 ? mp + 3 : mp - 9);
    int64_t year = yoe + era * 400 + (month <= 2);

    char y[16];
    if (year >= 0 && year <= 9999)
        snprintf(y, sizeof y, "%04lld", (long long)year);
    else
        snprintf(y, sizeof y, "%c%06lld", year < 0 ? '-' : '+',
                 (long long)(year < 0 ? -year : year));
    int n = snprintf(out, IK__ISO8601_SIZE, "%s-%02d-%02dT%02d:%02d:%02d.%03dZ", y, month, day,
                     sod / 3600, sod / 60 % 60, sod % 60, ms);
    return n < 0 ? 0 : (size_t)n;
}

/* ---- app names ------------------------------------------------------------------ */

int ik__app_name_check(const char *app, char *why, size_t why_len)
{
    size_t n = 0;
    int ok = app != NULL;
    for (; ok && app[n]; n++) {
        char c = app[n];
        ok = n < IK__APP_NAME_MAX &&
             ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == ':' || c == '-');
    }
    if (ok && n > 0 && strcmp(app, ".") != 0 && strcmp(app, "..") != 0) return IK_OK;
    if (why && why_len > 0) snprintf(why, why_len, "app name must be " IK__APP_NAME_RULE);
    return IK_EINVAL;
}

/* ---- listen addresses ------------------------------------------------------------ */

static int bad(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int bad(char *why, size_t why_len, const char *fmt, ...)
{
    if (why && why_len > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int ik__parse_listen(const char *addr, char *host, size_t host_len, int *port, char *why,
                     size_t why_len)
{
    const char *h, *colon;
    size_t hl;
    if (!addr || !*addr) return bad(why, why_len, "empty listen address (want ADDR:PORT)");
    if (addr[0] == '[') {
        const char *rb = strchr(addr, ']');
        if (!rb || rb[1] != ':') return bad(why, why_len, "'%s' is not [V6]:PORT", addr);
        h = addr + 1;
        hl = (size_t)(rb - h);
        colon = rb + 1;
        if (hl == 0) return bad(why, why_len, "'%s': empty IPv6 address in brackets", addr);
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return bad(why, why_len, "'%s' is not ADDR:PORT (:PORT for every address)", addr);
        h = addr;
        hl = (size_t)(colon - addr);
        if (memchr(h, ':', hl))
            return bad(why, why_len, "'%s': an IPv6 address needs brackets, e.g. [::1]:8080", addr);
    }
    if (hl + 1 > host_len) return bad(why, why_len, "'%s': host name too long", addr);
    const char *ps = colon + 1;
    size_t pl = strlen(ps);
    unsigned p = 0;
    int ok = pl > 0 && pl <= 5;
    for (size_t i = 0; ok && i < pl; i++) {
        ok = ps[i] >= '0' && ps[i] <= '9';
        p = p * 10 + (unsigned)(ps[i] - '0');
    }
    if (!ok || p > 65535)
        return bad(why, why_len, "'%s': port must be a number 0..65535 (0: any free port)", addr);
    memcpy(host, h, hl);
    host[hl] = 0;
    *port = (int)p;
    return 0;
}

/* ---- recipe paths --------------------------------------------------------------- */

/* The path rule: 0, or -1 with why said. */
static int path_check(const char *path, char *out, size_t out_len, char *why, size_t why_len)
{
    if (!path || !*path) return bad(why, why_len, "empty lock path");
    size_t n = strlen(path);
    size_t need = n + (path[0] != '/') + 1;
    if (need - 1 > IK__RECIPE_PATH_MAX || need > out_len)
        return bad(why, why_len, "lock path longer than %d bytes", IK__RECIPE_PATH_MAX);
    const char *p = path[0] == '/' ? path + 1 : path;
    if (!*p) return bad(why, why_len, "lock path '/' names no lock");
    for (const char *seg = p;;) {
        const char *se = strchr(seg, '/');
        size_t sl = se ? (size_t)(se - seg) : strlen(seg);
        if (sl == 0) return bad(why, why_len, "empty segment in lock path '%.64s'", path);
        if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
            return bad(why, why_len, "'.' or '..' in lock path '%.64s'", path);
        for (size_t i = 0; i < sl; i++)
            if ((unsigned char)seg[i] < 0x20 || seg[i] == 0x7f)
                return bad(why, why_len, "control character in lock path");
        if (!se) break;
        seg = se + 1;
    }
    /* ZooKeeper's own subtree, refused on every backend so that a path valid on one
     * backend is valid on all (a lock moves from local: to zk:// unchanged) */
    if (strcmp(p, "zookeeper") == 0 || strncmp(p, "zookeeper/", 10) == 0)
        return bad(why, why_len, "/zookeeper is ZooKeeper's own subtree");
    snprintf(out, out_len, "/%s", p);
    return IK_OK;
}

int ik__recipe_path(const char *path, char *out, size_t out_len, char *why, size_t why_len)
{
    return path_check(path, out, out_len, why, why_len) ? IK_EINVAL : IK_OK;
}

/* ---- URIs that may carry a password ------------------------------------------------ */

/* Appends n bytes of s to out at *used, keeping room for the NUL. */
static void put(char *out, size_t out_len, size_t *used, const char *s, size_t n)
{
    size_t room = out_len - 1 - *used;
    if (n > room) n = room;
    memcpy(out + *used, s, n);
    *used += n;
}

const char *ik__uri_userinfo(const char *uri, const char **colon)
{
    if (colon) *colon = NULL;
    const char *auth = uri ? strstr(uri, "://") : NULL;
    if (!auth) return NULL;
    auth += 3;
    size_t an = strcspn(auth, "/"); /* the authority ends at the path */
    const char *at = NULL;
    for (size_t i = 0; i < an; i++)
        if (auth[i] == '@') at = auth + i; /* the last: a password may hold one */
    if (at && colon) *colon = memchr(auth, ':', (size_t)(at - auth));
    return at;
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

const char *ik__uri_query_password(const char *item, size_t len)
{
    const char *eq = memchr(item, '=', len);
    if (!eq) return NULL;
    size_t kl = (size_t)(eq - item);
    char key[32];
    if (kl >= sizeof key) return NULL; /* "password", each byte escaped, is 24 */
    if (ik__pct_decode(item, kl, key, sizeof key) < 0) return memchr(item, '%', kl) ? eq + 1 : NULL;
    /* "auth": a store option of the shape USER:PASSWORD (zk://'s), given in a query */
    return strcasecmp(key, "password") == 0 || strcasecmp(key, "auth") == 0 ? eq + 1 : NULL;
}

char *ik__uri_redact(const char *uri, char *out, size_t out_len)
{
    if (!out || !out_len) return out;
    size_t used = 0;
    if (!uri) uri = "";
    const char *s = uri;
    const char *auth = strstr(uri, "://");
    if (auth) {
        auth += 3;
        const char *colon, *at = ik__uri_userinfo(uri, &colon);
        if (colon) {
            put(out, out_len, &used, uri, (size_t)(colon + 1 - uri));
            put(out, out_len, &used, "***", 3);
            s = at;
        } else if (!at) { /* an '@' past a '/' before the query: a password with a '/' */
            size_t pn = strcspn(auth, "?");
            const char *late = NULL;
            for (size_t i = 0; i < pn; i++)
                if (auth[i] == '@') late = auth + i;
            if (late) {
                put(out, out_len, &used, uri, (size_t)(auth - uri));
                put(out, out_len, &used, "***", 3);
                s = late;
            }
        }
    }
    /* the query: every password=VALUE */
    const char *q = strchr(s, '?');
    if (q) {
        q++;
        put(out, out_len, &used, s, (size_t)(q - s));
        while (*q) {
            size_t pn = strcspn(q, "&#");
            const char *v = ik__uri_query_password(q, pn);
            if (v) pn = strcspn(q, "&"); /* a password may hold '#': hidden to its end */
            if (v) {
                put(out, out_len, &used, q, (size_t)(v - q));
                put(out, out_len, &used, "***", 3);
            } else {
                put(out, out_len, &used, q, pn);
            }
            q += pn;
            if (*q == '&') {
                put(out, out_len, &used, "&", 1);
                q++;
            } else if (*q) {
                put(out, out_len, &used, q, strlen(q)); /* the fragment */
                break;
            }
        }
    } else {
        put(out, out_len, &used, s, strlen(s));
    }
    out[used] = 0;
    return out;
}
