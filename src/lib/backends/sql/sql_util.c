/* sql_util.c: what the SQL drivers and the generic SQL backend share, below both:
 * result cells and the SQL URI rule (sql_driver.h). Pure: no I/O. */
#include "internal.h"
#include "sql_driver.h"

#include <stdlib.h>
#include <string.h>

void ik__sql_res_clear(ik__sql_res *r)
{
    if (!r) return;
    if (r->cell)
        for (size_t i = 0; i < r->nrows * r->ncols; i++)
            free(r->cell[i]);
    free(r->cell);
    memset(r, 0, sizeof *r);
}

const char *ik__sql_cell(const ik__sql_res *r, size_t row, size_t col)
{
    if (!r || !r->cell || row >= r->nrows || col >= r->ncols) return "";
    const char *s = r->cell[row * r->ncols + col];
    return s ? s : "";
}

int64_t ik__sql_int(const ik__sql_res *r, size_t row, size_t col)
{
    const char *s = ik__sql_cell(r, row, col);
    char *end;
    long long v = strtoll(s, &end, 10);
    return *s && (*end == '\0' || *end == '.') ? (int64_t)v : 0;
}

int ik__sql_bool(const ik__sql_res *r, size_t row, size_t col)
{
    const char *s = ik__sql_cell(r, row, col);
    return strcmp(s, "1") == 0 || strcmp(s, "t") == 0 || strcmp(s, "true") == 0;
}

static int host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_';
}

/* 1 if the n bytes at s percent-decode (ik__pct_decode). */
static int decodes(const char *s, size_t n)
{
    char *tmp = malloc(n + 1);
    int ok = tmp && ik__pct_decode(s, n, tmp, n + 1) >= 0;
    if (tmp) memset(tmp, 0, n + 1);
    free(tmp);
    return ok;
}

/* The password of [s, s + n), percent-decoded (ik__pct_decode), or NULL. */
static char *decoded(const char *s, size_t n)
{
    char *out = malloc(n + 1);
    if (out && ik__pct_decode(s, n, out, n + 1) < 0) {
        memset(out, 0, n + 1);
        free(out);
        out = NULL;
    }
    return out;
}

int ik__sql_uri_check(const char *uri, const char *scheme, char *why, size_t why_len)
{
    size_t sl = strlen(scheme);
    if (strncmp(uri, scheme, sl) != 0 || strncmp(uri + sl, "://", 3) != 0)
        return ik__fail(IK_EURI, why, why_len, "a %s URI begins %s://", scheme, scheme);
    const char *auth = uri + sl + 3;
    const char *slash = strchr(auth, '/');
    const char *pw_colon, *at = ik__uri_userinfo(uri, &pw_colon); /* rules.h: the one rule */
    const char *h = at ? at + 1 : auth;
    const char *q = strchr(h, '?'); /* a password may hold '?' */
    if (!slash || (q && q < slash))
        return ik__fail(IK_EURI, why, why_len, "%s URI names no database (%s://USER@HOST/DB)",
                        scheme, scheme);
    if (at) {
        const char *ue = pw_colon ? pw_colon : at;
        if (ue == auth) return ik__fail(IK_EURI, why, why_len, "%s URI has an empty user", scheme);
        for (const char *c = auth; c < ue; c++)
            if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '/' || *c == '?')
                return ik__fail(IK_EURI, why, why_len, "bad user name in %s URI", scheme);
        if (!decodes(auth, (size_t)(ue - auth)) ||
            (pw_colon && !decodes(pw_colon + 1, (size_t)(at - pw_colon - 1))))
            return ik__fail(IK_EURI, why, why_len,
                            "bad %%-escape in the user or password of a %s URI (%%XX, two hex "
                            "digits; a '/' in a password is written %%2F)",
                            scheme);
    }
    if (h == slash) return ik__fail(IK_EURI, why, why_len, "%s URI names no host", scheme);
    while (h < slash) {
        const char *comma = memchr(h, ',', (size_t)(slash - h));
        const char *he = comma ? comma : slash;
        const char *port = NULL;
        if (*h == '[') {
            const char *rb = memchr(h, ']', (size_t)(he - h));
            if (!rb || rb == h + 1) return ik__fail(IK_EURI, why, why_len, "bad [IPv6] host");
            for (const char *c = h + 1; c < rb; c++)
                if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') ||
                      (*c >= 'A' && *c <= 'F') || *c == ':' || *c == '.'))
                    return ik__fail(IK_EURI, why, why_len, "bad [IPv6] host");
            if (rb + 1 < he && rb[1] != ':')
                return ik__fail(IK_EURI, why, why_len, "bad [IPv6]:PORT");
            port = rb + 1 < he ? rb + 2 : NULL;
        } else {
            const char *colon = memchr(h, ':', (size_t)(he - h));
            const char *ne = colon ? colon : he;
            if (ne == h) return ik__fail(IK_EURI, why, why_len, "%s URI has an empty host", scheme);
            for (const char *c = h; c < ne; c++)
                if (!host_char(*c)) return ik__fail(IK_EURI, why, why_len, "bad host name");
            port = colon ? colon + 1 : NULL;
        }
        if (port) {
            long p = 0;
            if (port == he || he - port > 5) return ik__fail(IK_EURI, why, why_len, "bad port");
            for (const char *c = port; c < he; c++) {
                if (*c < '0' || *c > '9') return ik__fail(IK_EURI, why, why_len, "bad port");
                p = p * 10 + (*c - '0');
            }
            if (p < 1 || p > 65535) return ik__fail(IK_EURI, why, why_len, "port out of range");
        }
        h = comma ? comma + 1 : slash;
        if (comma && h == slash) return ik__fail(IK_EURI, why, why_len, "empty host after ','");
    }
    const char *db = slash + 1, *de = q ? q : db + strlen(db);
    if (de == db) return ik__fail(IK_EURI, why, why_len, "%s URI names no database", scheme);
    for (const char *c = db; c < de; c++)
        if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '/')
            return ik__fail(IK_EURI, why, why_len, "bad database name in %s URI", scheme);
    if (q) {
        const char *item = q + 1;
        for (;;) {
            const char *amp = strchr(item, '&');
            const char *ie = amp ? amp : item + strlen(item);
            const char *eq = memchr(item, '=', (size_t)(ie - item));
            if (!eq || eq == item)
                return ik__fail(IK_EURI, why, why_len, "bad query item in %s URI (KEY=VALUE)",
                                scheme);
            for (const char *c = item; c < ie; c++)
                if ((unsigned char)*c <= 0x20 || *c == 0x7f || *c == '#')
                    return ik__fail(IK_EURI, why, why_len, "bad character in %s URI's query",
                                    scheme);
            if (!amp) break;
            item = amp + 1;
        }
    }
    return IK_OK;
}

char *ik__sql_uri_redact(const char *uri, char **password)
{
    if (password) *password = NULL;
    size_t n = strlen(uri);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    const char *auth = strstr(uri, "://");
    auth = auth ? auth + 3 : uri;
    const char *slash = strchr(auth, '/');
    if (!slash) slash = uri + n;
    const char *colon, *at = ik__uri_userinfo(uri, &colon); /* rules.h: the one rule */
    size_t o = 0;
    if (colon) {
        memcpy(out, uri, (size_t)(colon - uri));
        o = (size_t)(colon - uri);
        if (password) *password = decoded(colon + 1, (size_t)(at - colon - 1)); /* as psql */
        memcpy(out + o, at, (size_t)(slash - at));
        o += (size_t)(slash - at);
    } else {
        memcpy(out, uri, (size_t)(slash - uri));
        o = (size_t)(slash - uri);
    }
    /* the path and query, without its password items */
    const char *p = slash;
    const char *q = strchr(p, '?');
    size_t pl = q ? (size_t)(q - p) : strlen(p);
    memcpy(out + o, p, pl);
    o += pl;
    if (q) {
        const char *item = q + 1;
        int first = 1;
        for (;;) {
            const char *amp = strchr(item, '&');
            size_t il = amp ? (size_t)(amp - item) : strlen(item);
            const char *v = ik__uri_query_password(item, il); /* its key decoded */
            if (v) {
                if (password && !*password) *password = decoded(v, il - (size_t)(v - item));
            } else if (il > 0) {
                out[o++] = first ? '?' : '&';
                memcpy(out + o, item, il);
                o += il;
                first = 0;
            }
            if (!amp) break;
            item = amp + 1;
        }
    }
    out[o] = '\0';
    return out;
}
