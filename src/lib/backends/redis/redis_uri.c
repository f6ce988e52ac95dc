/* redis_uri.c: the syntax of redis:// and redis+unix:// URIs, parsed without a
 * server (redis_conn.h states the forms). Pure: the check coord.c gets through
 * the ops table, the parser redis_conn.c opens with, and tests/fuzz/fuzz_redis_uri.c's
 * target. */
#include "internal.h"
#include "redis_conn.h"

#include <stdlib.h>
#include <string.h>

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == ':' || c == '-';
}

/* n decimal digits in s (1-5 of them, no sign) as *v, at most max. 0 or -1. */
static int parse_num(const char *s, size_t n, long max, long *v)
{
    if (n == 0 || n > 5) return -1;
    long x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        x = x * 10 + (s[i] - '0');
    }
    if (x > max) return -1;
    *v = x;
    return 0;
}

/* The query "k=v&k=v" (q, n bytes): db (only where db_ok), prefix, user. */
static int parse_query(const char *uri, const char *q, size_t n, int db_ok, ik__redis_target *t,
                       char *why, size_t why_len)
{
    const char *p = q, *end = q + n;
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        if (!eq) return ik__fail(IK_EURI, why, why_len, "a query needs KEY=VALUE in %.64s", uri);
        size_t kl = (size_t)(eq - p), vl = (size_t)(pe - eq - 1);
        const char *v = eq + 1;
        if (kl == 2 && !memcmp(p, "db", 2) && db_ok) {
            long d;
            if (parse_num(v, vl, 9999, &d))
                return ik__fail(IK_EURI, why, why_len, "db must be 0-9999 in %.64s", uri);
            t->db = (int)d;
        } else if ((kl == 6 && !memcmp(p, "prefix", 6)) || (kl == 4 && !memcmp(p, "user", 4))) {
            int is_prefix = kl == 6;
            if (vl == 0 || vl > IK__REDIS_PREFIX_MAX)
                return ik__fail(IK_EURI, why, why_len, "%s must be 1-%d bytes in %.64s",
                                is_prefix ? "prefix" : "user", IK__REDIS_PREFIX_MAX, uri);
            for (size_t i = 0; i < vl; i++)
                if (!name_char(v[i]) && !(is_prefix && v[i] == '/'))
                    return ik__fail(IK_EURI, why, why_len, "%s: only [A-Za-z0-9._:%s-] in %.64s",
                                    is_prefix ? "prefix" : "user", is_prefix ? "/" : "", uri);
            char *dst = is_prefix ? t->prefix : t->user; /* the last one wins, whole */
            memset(dst, 0, IK__REDIS_PREFIX_MAX + 1);
            memcpy(dst, v, vl);
            dst[vl] = '\0';
        } else {
            return ik__fail(IK_EURI, why, why_len,
                            "unknown query key '%.*s' in %.64s (%s prefix=, user=)", (int)kl, p,
                            uri, db_ok ? "db=," : "");
        }
        p = amp ? amp + 1 : end;
        if (amp && p == end)
            return ik__fail(IK_EURI, why, why_len, "empty query item in %.64s", uri);
    }
    return IK_OK;
}

int ik__redis_uri_parse(const char *uri, ik__redis_target *out, char *why, size_t why_len)
{
    ik__redis_target tmp = {0}, *t = out ? out : &tmp;
    char shown[160]; /* the URI as messages may show it: no password */
    ik__uri_redact(uri, shown, sizeof shown);
    memset(t, 0, sizeof *t);
    t->port = 6379;
    const char *colon_pw = NULL, *at = NULL;
    if (strncmp(uri, "redis://", 8) == 0) at = ik__uri_userinfo(uri, &colon_pw); /* rules.h */
    const char *q = strchr(at ? at : uri, '?'); /* a password may hold '?' */
    size_t main_len = q ? (size_t)(q - uri) : strlen(uri);
    for (const char *c = uri; *c; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f)
            return ik__fail(IK_EURI, why, why_len, "space or control character in a redis URI");
    if (strncmp(uri, "redis+unix://", 13) == 0) {
        const char *p = uri + 13;
        size_t pl = main_len - 13;
        if (pl == 0 || *p != '/')
            return ik__fail(IK_EURI, why, why_len,
                            "redis+unix:// needs an absolute socket path: redis+unix:///PATH, "
                            "not %.64s",
                            shown);
        if (pl >= sizeof t->path)
            return ik__fail(IK_EURI, why, why_len, "socket path over %zu bytes in %.64s",
                            sizeof t->path - 1, shown);
        if (memchr(p, '@', pl)) goto password;
        t->is_unix = 1;
        memcpy(t->path, p, pl);
        t->path[pl] = '\0';
        return q ? parse_query(shown, q + 1, strlen(q + 1), 1, t, why, why_len) : IK_OK;
    }
    if (strncmp(uri, "redis://", 8) != 0)
        return ik__fail(IK_EURI, why, why_len,
                        "a redis URI begins redis:// or redis+unix://: %.64s", shown);
    const char *h = uri + 8, *end = uri + main_len;
    if (at) {
        const char *colon = colon_pw;
        const char *ue = colon ? colon : at;
        if ((size_t)(ue - h) > IK__REDIS_PREFIX_MAX) goto bad_user;
        for (const char *c = h; c < ue; c++)
            if (!name_char(*c)) goto bad_user;
        memcpy(t->user, h, (size_t)(ue - h));
        t->user[ue - h] = '\0';
        if (colon && ik__pct_decode(colon + 1, (size_t)(at - colon - 1), t->password,
                                    sizeof t->password) < 0) /* as psql: "p%40ss" is "p@ss" */
            return ik__fail(IK_EURI, why, why_len,
                            "the password in the redis URI is over %zu bytes, or has a bad "
                            "%%-escape (%%XX, two hex digits; a '/' is written %%2F)",
                            sizeof t->password - 1);
        h = at + 1;
    }
    const char *slash = memchr(h, '/', (size_t)(end - h));
    const char *he = slash ? slash : end;
    const char *colon = NULL;
    if (h < he && *h == '[') {
        const char *rb = memchr(h, ']', (size_t)(he - h));
        if (!rb || rb == h + 1)
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6] in %.64s", shown);
        for (const char *c = h + 1; c < rb; c++)
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
                  (*c >= 'A' && *c <= 'F') || *c == ':' || *c == '.'))
                return ik__fail(IK_EURI, why, why_len, "bad [IPv6] in %.64s", shown);
        if (rb + 1 < he && rb[1] != ':')
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6]:PORT in %.64s", shown);
        colon = rb + 1 < he ? rb + 1 : NULL;
        if ((size_t)(rb - h - 1) >= sizeof t->host)
            return ik__fail(IK_EURI, why, why_len, "host name too long in %.64s", shown);
        memcpy(t->host, h + 1, (size_t)(rb - h - 1));
        t->host[rb - h - 1] = '\0';
    } else {
        colon = memchr(h, ':', (size_t)(he - h));
        const char *ne = colon ? colon : he;
        if (ne == h)
            return ik__fail(IK_EURI, why, why_len, "redis URI names no host: %.64s", shown);
        if ((size_t)(ne - h) >= sizeof t->host)
            return ik__fail(IK_EURI, why, why_len, "host name too long in %.64s", shown);
        for (const char *c = h; c < ne; c++)
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                  (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
                return ik__fail(IK_EURI, why, why_len, "bad host name in %.64s", shown);
        memcpy(t->host, h, (size_t)(ne - h));
        t->host[ne - h] = '\0';
    }
    if (colon) {
        long port;
        if (parse_num(colon + 1, (size_t)(he - colon - 1), 65535, &port) || port < 1)
            return ik__fail(IK_EURI, why, why_len, "port must be 1-65535 in %.64s", shown);
        t->port = (int)port;
    }
    if (slash && slash + 1 < end) {
        long db;
        if (parse_num(slash + 1, (size_t)(end - slash - 1), 9999, &db))
            return ik__fail(IK_EURI, why, why_len,
                            "after the host comes /DB, a database number 0-9999: %.64s", shown);
        t->db = (int)db;
    }
    return q ? parse_query(shown, q + 1, strlen(q + 1), 0, t, why, why_len) : IK_OK;
password:
    return ik__fail(IK_EURI, why, why_len,
                    "no user or password in a redis+unix URI: give the password with "
                    "--password-file or IDKEEPER_PASSWORD, the user with ?user=NAME");
bad_user:
    return ik__fail(IK_EURI, why, why_len,
                    "the user before '@' in a redis URI must be 1-%d bytes of [A-Za-z0-9._:-]",
                    IK__REDIS_PREFIX_MAX);
}

int ik__redis_uri_format(const ik__redis_target *t, char *out, size_t len)
{
    int n;
    if (t->is_unix)
        n = snprintf(out, len, "redis+unix://%s?db=%d", t->path, t->db);
    else if (strchr(t->host, ':'))
        n = snprintf(out, len, "redis://[%s]:%d/%d", t->host, t->port, t->db);
    else
        n = snprintf(out, len, "redis://%s:%d/%d", t->host, t->port, t->db);
    if (n < 0 || (size_t)n >= len) return -1;
    if (t->prefix[0] || t->user[0]) {
        int m =
            snprintf(out + n, len - (size_t)n, "%s%s%s%s%s", t->is_unix ? "&" : "?",
                     t->prefix[0] ? "prefix=" : "", t->prefix,
                     t->prefix[0] && t->user[0] ? "&user=" : (t->user[0] ? "user=" : ""), t->user);
        if (m < 0 || (size_t)m >= len - (size_t)n) return -1;
        n += m;
    }
    return n;
}

int ik__redis_uri_check(const char *uri, char *why, size_t why_len)
{
    ik__redis_target t;
    int rc = ik__redis_uri_parse(uri, &t, why, why_len);
    memset(t.password, 0, sizeof t.password); /* no copy of a password left behind */
    return rc;
}
