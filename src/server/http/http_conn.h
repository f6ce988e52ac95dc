/* http_conn.h: HTTP/1.1 on the connection core (http_conn.c), as loop.c wires it. */
#ifndef IK_HTTP_CONN_H
#define IK_HTTP_CONN_H

#include "conn.h"
#include "worker.h"

/* HTTP/1.1 (http_conn.c). */
extern const ik__proto ik__http_proto;
/* Refreshes the loop's cached "Date:" line (http_conn.c). Loop thread. */
void ik__http_refresh_date(ik__worker *w);

#endif
