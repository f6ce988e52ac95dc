/* mysql_uri.c: the syntax of a mysql:// URI (mysql_uri.h). Pure. */
#include "mysql_uri.h"
#include "internal.h"

#include <string.h>

static int is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* Copies [b, e) into dst (cap bytes with the NUL) if every byte passes ok and the
 * length is 1..cap-1: 1, else 0. */
static int take(char *dst, size_t cap, const char *b, const char *e, int (*ok)(char))
{
    size_t n = (size_t)(e - b);
    if (n == 0 || n >= cap) return 0;
    for (const char *c = b; c < e; c++)
        if (!ok(*c)) return 0;
    memcpy(dst, b, n);
    dst[n] = '\0';
    return 1;
}

static int user_char(char c)
{
    return is_alnum(c) || c == '_' || c == '.' || c == '-';
}
static int host_char(char c)
{
    return is_alnum(c) || c == '.' || c == '-';
}
static int ipv6_char(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' ||
           c == '.';
}
static int db_char(char c)
{
    return is_alnum(c) || c == '_' || c == '$' || c == '-';
}

int ik__mysql_uri_parse(const char *uri, ik__mysql_uri *out, char *why, size_t why_len)
{
    static const char form[] = "mysql://USER@HOST[:PORT]/DB";
    memset(out, 0, sizeof *out);
    if (strncmp(uri, "mysql://", 8) != 0)
        return ik__fail(IK_EURI, why, why_len, "a mysql URI begins mysql:// (%s)", form);
    const char *p = uri + 8;
    const char *slash = strchr(p, '/');
    const char *colon_pw, *at = ik__uri_userinfo(uri, &colon_pw); /* rules.h: the one rule */
    if (!at) return ik__fail(IK_EURI, why, why_len, "a mysql URI names its user: %s", form);
    if (colon_pw)
        return ik__fail(IK_EURI, why, why_len,
                        "a mysql URI carries no password: give it with --password-file or "
                        "IDKEEPER_PASSWORD (%s)",
                        form);
    if (!take(out->user, sizeof out->user, p, at, user_char))
        return ik__fail(IK_EURI, why, why_len,
                        "bad user in the mysql URI (1-%d of A-Z a-z 0-9 _ . -)",
                        IK__MYSQL_USER_MAX);
    const char *h = at + 1;
    if (!slash) return ik__fail(IK_EURI, why, why_len, "a mysql URI names its database: %s", form);
    const char *he = slash, *colon;
    if (*h == '[') {
        const char *rb = memchr(h, ']', (size_t)(he - h));
        if (!rb || !take(out->host, sizeof out->host, h + 1, rb, ipv6_char) ||
            !strchr(out->host, ':'))
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6] host in the mysql URI");
        colon = rb + 1;
        if (colon != he && *colon != ':')
            return ik__fail(IK_EURI, why, why_len, "bad [IPv6]:PORT in the mysql URI");
        if (colon == he) colon = NULL;
    } else {
        colon = memchr(h, ':', (size_t)(he - h));
        if (!take(out->host, sizeof out->host, h, colon ? colon : he, host_char))
            return ik__fail(IK_EURI, why, why_len,
                            "bad host in the mysql URI (a name, an IPv4 address or [IPv6])");
    }
    out->port = 3306;
    if (colon) {
        size_t plen = (size_t)(he - colon - 1);
        long port = 0;
        if (plen == 0 || plen > 5)
            return ik__fail(IK_EURI, why, why_len, "bad port in the mysql URI");
        for (const char *c = colon + 1; c < he; c++) {
            if (*c < '0' || *c > '9')
                return ik__fail(IK_EURI, why, why_len, "bad port in the mysql URI");
            port = port * 10 + (*c - '0');
        }
        if (port < 1 || port > 65535)
            return ik__fail(IK_EURI, why, why_len, "port out of range in the mysql URI");
        out->port = (unsigned)port;
    }
    const char *d = slash + 1;
    if (!take(out->db, sizeof out->db, d, d + strlen(d), db_char))
        return ik__fail(IK_EURI, why, why_len,
                        "bad database in the mysql URI (1-%d of A-Z a-z 0-9 _ $ -; no options)",
                        IK__MYSQL_DB_MAX);
    return IK_OK;
}

int ik__mysql_uri_check(const char *uri, char *why, size_t why_len)
{
    ik__mysql_uri u;
    return ik__mysql_uri_parse(uri, &u, why, why_len);
}

void ik__mysql_uri_format(const ik__mysql_uri *u, char *buf, size_t len)
{
    int v6 = strchr(u->host, ':') != NULL;
    snprintf(buf, len, "mysql://%s@%s%s%s:%u/%s", u->user, v6 ? "[" : "", u->host, v6 ? "]" : "",
             u->port, u->db);
}
