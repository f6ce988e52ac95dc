/* etcd_uri.c: the etcd:// and etcds:// URI syntax, parsed without a server
 * (etcd_uri.h states the form). Pure: the check coord.c gets through the ops table,
 * the parser the open reads, and tests/fuzz/fuzz_etcd_uri.c's target. */
#include "etcd_uri.h"
#include "internal.h"

#include <stdio.h>
#include <string.h>

static int host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-';
}

static int name_char(char c)
{
    return host_char(c) || c == '_' || c == ':';
}

static int path_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '/' || c == '+' || c == '~' || c == '-';
}

/* One endpoint, s..e: HOST[:PORT] or [V6][:PORT], into out as "HOST:PORT". */
static int parse_endpoint(const char *shown, const char *s, const char *e, char *out, size_t len,
                          char *why, size_t why_len)
{
    const char *colon = NULL, *he;
    if (s < e && *s == '[') {
        const char *rb = memchr(s, ']', (size_t)(e - s));
        if (!rb || rb == s + 1)
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6] in %.64s", shown);
        for (const char *c = s + 1; c < rb; c++)
            if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
                  (*c >= 'A' && *c <= 'F') || *c == ':' || *c == '.'))
                return ik__fail(IK_EURI, why, why_len, "bad [IPv6] in %.64s", shown);
        if (rb + 1 < e && rb[1] != ':')
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6]:PORT in %.64s", shown);
        colon = rb + 1 < e ? rb + 1 : NULL;
        he = rb + 1;
    } else {
        colon = memchr(s, ':', (size_t)(e - s));
        he = colon ? colon : e;
        if (he == s)
            return ik__fail(IK_EURI, why, why_len, "an etcd endpoint without a host in %.64s",
                            shown);
        for (const char *c = s; c < he; c++)
            if (!host_char(*c))
                return ik__fail(IK_EURI, why, why_len, "bad host name in %.64s", shown);
    }
    long port = 2379;
    if (colon) {
        const char *p = colon + 1;
        size_t n = (size_t)(e - p);
        if (n == 0 || n > 5)
            return ik__fail(IK_EURI, why, why_len, "port must be 1-65535 in %.64s", shown);
        port = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] < '0' || p[i] > '9')
                return ik__fail(IK_EURI, why, why_len, "port must be 1-65535 in %.64s", shown);
            port = port * 10 + (p[i] - '0');
        }
        if (port < 1 || port > 65535)
            return ik__fail(IK_EURI, why, why_len, "port must be 1-65535 in %.64s", shown);
    }
    int m = snprintf(out, len, "%.*s:%ld", (int)(he - s), s, port);
    if (m < 0 || (size_t)m >= len)
        return ik__fail(IK_EURI, why, why_len, "host name too long in %.64s", shown);
    return IK_OK;
}

static int parse_query(const char *shown, const char *q, ik__etcd_target *t, char *why,
                       size_t why_len)
{
    const char *p = q, *end = q + strlen(q);
    if (p == end) return ik__fail(IK_EURI, why, why_len, "empty query in %.64s", shown);
    while (p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *pe = amp ? amp : end;
        const char *eq = memchr(p, '=', (size_t)(pe - p));
        if (!eq) return ik__fail(IK_EURI, why, why_len, "a query needs KEY=VALUE in %.64s", shown);
        size_t kl = (size_t)(eq - p), vl = (size_t)(pe - eq - 1);
        const char *v = eq + 1;
        char *dst = NULL;
        size_t cap = 0;
        int is_user = 0;
        if (kl == 6 && !memcmp(p, "cacert", 6))
            dst = t->cacert, cap = sizeof t->cacert;
        else if (kl == 4 && !memcmp(p, "cert", 4))
            dst = t->cert, cap = sizeof t->cert;
        else if (kl == 3 && !memcmp(p, "key", 3))
            dst = t->key, cap = sizeof t->key;
        else if (kl == 4 && !memcmp(p, "user", 4))
            dst = t->user, cap = sizeof t->user, is_user = 1;
        else if (kl == 8 && !memcmp(p, "password", 8))
            return ik__fail(IK_EURI, why, why_len,
                            "no password in an etcd URI: give it with --password-file or "
                            "IDKEEPER_PASSWORD");
        else
            return ik__fail(IK_EURI, why, why_len,
                            "unknown query key '%.*s' in %.64s (cacert=, cert=, key=, user=)",
                            (int)(kl > 32 ? 32 : kl), p, shown);
        if (vl == 0 || vl >= cap)
            return ik__fail(IK_EURI, why, why_len, "%.*s must be 1-%zu bytes in %.64s", (int)kl, p,
                            cap - 1, shown);
        for (size_t i = 0; i < vl; i++)
            if (is_user ? !name_char(v[i]) : !path_char(v[i]))
                return ik__fail(IK_EURI, why, why_len, "%.*s: only [%s] in %.64s", (int)kl, p,
                                is_user ? "A-Za-z0-9._:-" : "A-Za-z0-9._/+~-", shown);
        memset(dst, 0, cap); /* the last one wins, whole */
        memcpy(dst, v, vl);
        p = amp ? amp + 1 : end;
        if (amp && p == end)
            return ik__fail(IK_EURI, why, why_len, "empty query item in %.64s", shown);
    }
    if (!t->tls && (t->cacert[0] || t->cert[0] || t->key[0]))
        return ik__fail(IK_EURI, why, why_len, "cacert, cert and key need etcds:// (TLS): %.64s",
                        shown);
    if (!t->cert[0] != !t->key[0])
        return ik__fail(IK_EURI, why, why_len, "a client certificate needs both cert= and key=");
    return IK_OK;
}

int ik__etcd_uri_parse(const char *uri, ik__etcd_target *out, char *why, size_t why_len)
{
    static __thread ik__etcd_target tmp;
    ik__etcd_target *t = out ? out : &tmp;
    memset(t, 0, sizeof *t);
    const char *shown = uri;
    for (const char *c = uri; *c; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return ik__fail(IK_EURI, why, why_len, "space or control character in an etcd URI");
    const char *h;
    if (strncmp(uri, "etcd://", 7) == 0) {
        h = uri + 7;
    } else if (strncmp(uri, "etcds://", 8) == 0) {
        h = uri + 8;
        t->tls = 1;
    } else {
        return ik__fail(IK_EURI, why, why_len, "an etcd URI begins etcd:// or etcds://: %.64s",
                        shown);
    }
    if (strchr(h, '@'))
        return ik__fail(IK_EURI, why, why_len,
                        "no user@ in an etcd URI: the user is ?user=NAME, the password comes "
                        "from --password-file or IDKEEPER_PASSWORD");
    const char *q = strchr(h, '?');
    const char *end = q ? q : h + strlen(h);
    const char *slash = memchr(h, '/', (size_t)(end - h));
    const char *hosts_end = slash ? slash : end;
    if (hosts_end == h)
        return ik__fail(IK_EURI, why, why_len, "etcd URI names no host: %.64s", shown);
    for (const char *s = h; s < hosts_end;) {
        const char *comma = memchr(s, ',', (size_t)(hosts_end - s));
        const char *e = comma ? comma : hosts_end;
        if (t->n == IK__ETCD_ENDPOINTS_MAX)
            return ik__fail(IK_EURI, why, why_len, "at most %d etcd endpoints in %.64s",
                            IK__ETCD_ENDPOINTS_MAX, shown);
        int rc = parse_endpoint(shown, s, e, t->endpoints[t->n], sizeof t->endpoints[t->n], why,
                                why_len);
        if (rc) return rc;
        t->n++;
        if (comma && comma + 1 == hosts_end)
            return ik__fail(IK_EURI, why, why_len, "an empty endpoint in %.64s", shown);
        s = comma ? comma + 1 : hosts_end;
    }
    if (slash && slash + 1 < end) {
        const char *p = slash + 1;
        size_t pl = (size_t)(end - p);
        if (pl > IK__ETCD_PREFIX_MAX)
            return ik__fail(IK_EURI, why, why_len, "the key prefix is over %d bytes in %.64s",
                            IK__ETCD_PREFIX_MAX, shown);
        for (size_t i = 0; i < pl; i++)
            if (!(name_char(p[i]) || p[i] == '/') ||
                (p[i] == '/' && (i + 1 == pl || p[i + 1] == '/')))
                return ik__fail(IK_EURI, why, why_len,
                                "the key prefix after the hosts is [A-Za-z0-9._:-] segments "
                                "joined by '/': %.64s",
                                shown);
        memcpy(t->prefix, p, pl);
    }
    return q ? parse_query(shown, q + 1, t, why, why_len) : IK_OK;
}

int ik__etcd_uri_format(const ik__etcd_target *t, char *out, size_t len)
{
    size_t n = 0;
    int m = snprintf(out, len, "%s://", t->tls ? "etcds" : "etcd");
    if (m < 0 || (size_t)m >= len) return -1;
    n = (size_t)m;
    for (int i = 0; i < t->n; i++) {
        m = snprintf(out + n, len - n, "%s%s", i ? "," : "", t->endpoints[i]);
        if (m < 0 || (size_t)m >= len - n) return -1;
        n += (size_t)m;
    }
    if (t->prefix[0]) {
        m = snprintf(out + n, len - n, "/%s", t->prefix);
        if (m < 0 || (size_t)m >= len - n) return -1;
        n += (size_t)m;
    }
    const char *names[] = {"cacert", "cert", "key", "user"};
    const char *vals[] = {t->cacert, t->cert, t->key, t->user};
    int first = 1;
    for (int i = 0; i < 4; i++) {
        if (!vals[i][0]) continue;
        m = snprintf(out + n, len - n, "%s%s=%s", first ? "?" : "&", names[i], vals[i]);
        if (m < 0 || (size_t)m >= len - n) return -1;
        n += (size_t)m;
        first = 0;
    }
    return (int)n;
}

int ik__etcd_uri_check(const char *uri, char *why, size_t why_len)
{
    return ik__etcd_uri_parse(uri, NULL, why, why_len);
}
