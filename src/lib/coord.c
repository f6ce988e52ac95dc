/* coord.c: opens a coordination backend by URI scheme; the one place a backend is
 * chosen (SQLite's os_unix.c/os_win.c pattern). */
#include "backend.h"
#include "internal.h"

#include <stdlib.h>
#include <string.h>

struct ik_coord {
    ik__backend *be;
    ik_coord_options opts; /* strings not kept: only the numbers are read later */
};

static const ik__backend_ops *const backends[] = {
    &ik__backend_local_ops,
#ifdef IK_HAVE_ZK
    &ik__backend_zk_ops,
#endif
};

void ik_coord_options_init(ik_coord_options *o)
{
    memset(o, 0, sizeof *o);
    o->zk_session_timeout_ms = 10000;
}

#ifdef IK_HAVE_ZK
/* zk://HOST:PORT[,HOST:PORT...][/CHROOT]: host is a name, an IPv4 address or
 * [IPv6]; port 1-65535; chroot is /-separated non-empty segments without "." or
 * ".." and without control characters. */
static int check_zk_uri(const char *uri, char *why, size_t why_len)
{
    const char *p = uri + 5;
    const char *slash = strchr(p, '/');
    size_t hosts_len = slash ? (size_t)(slash - p) : strlen(p);
    if (hosts_len == 0) return ik__fail(IK_EURI, why, why_len, "zk URI names no host: %s", uri);
    const char *h = p, *end = p + hosts_len;
    while (h < end) {
        const char *comma = memchr(h, ',', (size_t)(end - h));
        const char *he = comma ? comma : end;
        const char *colon;
        if (*h == '[') {
            const char *rb = memchr(h, ']', (size_t)(he - h));
            if (!rb || rb == h + 1 || rb + 1 >= he || rb[1] != ':')
                return ik__fail(IK_EURI, why, why_len, "bad [IPv6]:PORT in %s", uri);
            colon = rb + 1;
        } else {
            colon = memchr(h, ':', (size_t)(he - h));
            if (!colon || colon == h)
                return ik__fail(IK_EURI, why, why_len, "each zk host needs HOST:PORT in %s", uri);
            for (const char *c = h; c < colon; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '.' || *c == '-'))
                    return ik__fail(IK_EURI, why, why_len, "bad host name in %s", uri);
        }
        size_t plen = (size_t)(he - colon - 1);
        long port = 0;
        if (plen == 0 || plen > 5) return ik__fail(IK_EURI, why, why_len, "bad port in %s", uri);
        for (const char *c = colon + 1; c < he; c++) {
            if (*c < '0' || *c > '9') return ik__fail(IK_EURI, why, why_len, "bad port in %s", uri);
            port = port * 10 + (*c - '0');
        }
        if (port < 1 || port > 65535)
            return ik__fail(IK_EURI, why, why_len, "port out of range in %s", uri);
        h = comma ? comma + 1 : end;
        if (comma && h == end)
            return ik__fail(IK_EURI, why, why_len, "empty host after ',' in %s", uri);
    }
    if (slash) {
        const char *c = slash;
        if (c[1] == '\0') return IK_OK; /* "zk://h:p/" is the root */
        while (*c == '/') {
            const char *seg = c + 1, *se = seg;
            while (*se && *se != '/') {
                if ((unsigned char)*se < 0x20 || *se == 0x7f)
                    return ik__fail(IK_EURI, why, why_len, "control character in zk chroot");
                se++;
            }
            size_t sl = (size_t)(se - seg);
            if (sl == 0 || (sl == 1 && seg[0] == '.') ||
                (sl == 2 && seg[0] == '.' && seg[1] == '.'))
                return ik__fail(IK_EURI, why, why_len, "bad zk chroot path in %s", uri);
            c = se;
        }
    }
    return IK_OK;
}
#endif

int ik_coord_uri_check(const char *uri, char *why, size_t why_len)
{
    if (!uri) return ik__fail(IK_EURI, why, why_len, "no coordination URI");
    if (strncmp(uri, "local:", 6) == 0) {
        if (uri[6] == '\0') return ik__fail(IK_EURI, why, why_len, "local: needs a directory");
        for (const char *c = uri + 6; *c; c++)
            if ((unsigned char)*c < 0x20)
                return ik__fail(IK_EURI, why, why_len, "control character in local: directory");
        return IK_OK;
    }
    if (strncmp(uri, "zk://", 5) == 0) {
#ifndef IK_HAVE_ZK
        return ik__fail(IK_EURI, why, why_len, "this build has no ZooKeeper backend");
#else
        return check_zk_uri(uri, why, why_len);
#endif
    }
    return ik__fail(IK_EURI, why, why_len,
                    "unknown coordination URI '%.64s' (use local:DIR or zk://HOST:PORT[/CHROOT])",
                    uri);
}

int ik_coord_open(const char *uri, const ik_coord_options *o, ik_coord **out, char *why,
                  size_t why_len)
{
    ik_coord_options defaults;
    if (!out) return IK_EINVAL;
    int rc = ik_coord_uri_check(uri, why, why_len);
    if (rc) return rc;
    if (!o) {
        ik_coord_options_init(&defaults);
        o = &defaults;
    }
    const char *scheme_end = strchr(uri, ':');
    size_t slen = (size_t)(scheme_end - uri);
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        if (strlen(backends[i]->scheme) != slen || strncmp(uri, backends[i]->scheme, slen))
            continue;
        ik_coord *c = calloc(1, sizeof *c);
        if (!c) return IK_ENOMEM;
        c->opts = *o;
        c->opts.zk_auth = NULL;
        rc = backends[i]->open(uri, o, &c->be, why, why_len);
        if (rc) {
            free(c);
            return rc;
        }
        *out = c;
        return IK_OK;
    }
    return ik__fail(IK_EURI, why, why_len, "no backend for %s", uri);
}

void ik_coord_close(ik_coord *c)
{
    if (!c) return;
    if (c->be) c->be->ops->close(c->be);
    free(c);
}

const char *ik_coord_uri(const ik_coord *c)
{
    return c->be->ops->uri(c->be);
}

ik__backend *ik__coord_backend(ik_coord *c)
{
    return c->be;
}

const ik_coord_options *ik__coord_options(const ik_coord *c)
{
    return &c->opts;
}

int ik_slots_list(ik_coord *c, const char *app, ik_slot_info **out, size_t *n)
{
    if (!c || !out || !n) return IK_EINVAL;
    if (!app) app = "default";
    if (ik__app_name_check(app, NULL, 0) != 0) return IK_EINVAL;
    return c->be->ops->slots_list(c->be, app, out, n);
}
