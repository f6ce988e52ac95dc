/* zk_uri.c: the syntax of a zk:// URI, checked without a server: the check that
 * the ZooKeeper backend's ops table gives coord.c (ik_coord_uri_check) and that its
 * own parser applies before it splits the URI. Pure. Built only with the ZooKeeper
 * backend (CMake's IK_WITH_ZK). */
#include "backend.h"
#include "internal.h"
#include "zk_session.h"

#include <string.h>

/* zk://HOST:PORT[,HOST:PORT...][/CHROOT]: host is a name, an IPv4 address or
 * [IPv6]; port 1-65535; chroot is /-separated non-empty segments without "." or
 * ".." and without control characters. */
int ik__zk_uri_check(const char *uri, char *why, size_t why_len)
{
    if (strncmp(uri, "zk://", 5) != 0)
        return ik__fail(IK_EURI, why, why_len, "a zk URI begins zk://: %.64s", uri);
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
