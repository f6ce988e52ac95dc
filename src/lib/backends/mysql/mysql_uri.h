/* mysql_uri.h: the mysql:// URI (mysql://USER@HOST[:PORT]/DB), parsed without a
 * server. Pure: the check the mysql backend's ops table gives coord.c
 * (ik_coord_uri_check) and the parse its driver applies before it connects. Built
 * only with the MySQL driver (CMake's IK_WITH_MYSQL). */
#ifndef IK_MYSQL_URI_H
#define IK_MYSQL_URI_H

#include <stddef.h>

#define IK__MYSQL_USER_MAX 80 /* MariaDB's limit on a user name (MySQL's is 32) */
#define IK__MYSQL_HOST_MAX 255
#define IK__MYSQL_DB_MAX 64 /* both servers' limit on a database name */

typedef struct ik__mysql_uri {
    char user[IK__MYSQL_USER_MAX + 1];
    char host[IK__MYSQL_HOST_MAX + 1]; /* a name or an IPv4 address; an IPv6 address
                                          without its brackets */
    unsigned port;                     /* 1-65535; 3306 when the URI names none */
    char db[IK__MYSQL_DB_MAX + 1];
} ik__mysql_uri;

/* Parses uri into *out: 0, or IK_EURI with a one-line reason in why. The reason
 * never repeats the URI's user part (which a user may have given a password in):
 * a URI with "USER:PASSWORD@" is refused, saying where passwords go.
 *   USER  1-80 of [A-Za-z0-9_.-]
 *   HOST  a name or IPv4 address (1-255 of [A-Za-z0-9.-]) or [IPv6]; "localhost"
 *         means the server's Unix socket, as the mysql client takes it
 *   PORT  1-65535 (default 3306)
 *   DB    1-64 of [A-Za-z0-9_$-] (given to the connector, never put in a statement) */
int ik__mysql_uri_parse(const char *uri, ik__mysql_uri *out, char *why, size_t why_len);

/* ik__mysql_uri_parse's verdict alone (ik__backend_ops.uri_check). */
int ik__mysql_uri_check(const char *uri, char *why, size_t why_len);

/* The canonical form "mysql://USER@HOST:PORT/DB" ([HOST] for IPv6) into buf. */
void ik__mysql_uri_format(const ik__mysql_uri *u, char *buf, size_t len);

#endif
