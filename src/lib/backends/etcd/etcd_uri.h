/* etcd_uri.h: the etcd:// and etcds:// URI syntax (etcd_uri.c; pure, no I/O):
 *
 *   etcd://HOST[:PORT][,HOST[:PORT]...][/PREFIX][?KEY=VALUE[&...]]
 *   etcds://...   the same over TLS
 *
 * HOST: a name, an IPv4 address or [IPv6]; PORT 1-65535 (2379 if omitted); at most
 * IK__ETCD_ENDPOINTS_MAX endpoints, tried in turn (failover). PREFIX: 1-200 bytes of
 * [A-Za-z0-9._:/-] (no empty segment), before every key of idkeeper's, without its
 * leading '/'. The query's keys: cacert, cert, key (PEM files for TLS; paths of
 * [A-Za-z0-9._/+~-]) and user (an etcd user, 1-100 bytes of [A-Za-z0-9._:-]). No
 * password ever: it comes from ik_coord_options.password (--password-file,
 * IDKEEPER_PASSWORD), and no URI shows it (docs/etcd.md).
 */
#ifndef IK_ETCD_URI_H
#define IK_ETCD_URI_H

#include "etcd_gateway.h"

#include <stddef.h>

#define IK__ETCD_PREFIX_MAX 200

typedef struct ik__etcd_target {
    int tls;
    char endpoints[IK__ETCD_ENDPOINTS_MAX][270]; /* "HOST:PORT", "[v6]:PORT" */
    int n;
    char prefix[IK__ETCD_PREFIX_MAX + 1]; /* "" or "a/b" */
    char cacert[256], cert[256], key[256];
    char user[101];
} ik__etcd_target;

/* Parses uri into *t (NULL: a check only). 0, or IK_EURI with a one-line reason
 * (the URI quoted cut to 64 bytes). */
int ik__etcd_uri_parse(const char *uri, ik__etcd_target *t, char *why, size_t why_len);
/* The canonical URI of t: its length, or -1 if it does not fit. */
int ik__etcd_uri_format(const ik__etcd_target *t, char *out, size_t len);
/* The seam's uri_check. */
int ik__etcd_uri_check(const char *uri, char *why, size_t why_len);

#endif
