/* http_reply.h: an HTTP answer before it is written (ik__http_reply), the JSON error body
 * every route and the connection layer answer with, extra header lines, and the
 * serialized response (status line, headers, body).
 *
 * Below the routes, the status page and the HTTP connection (http_conn.c): they all
 * write answers this way; nothing here touches a socket or a loop. Safe from any
 * thread on distinct objects.
 */
#ifndef IK_HTTP_REPLY_H
#define IK_HTTP_REPLY_H

#include "buf.h"

struct ik__pend;

typedef struct ik__http_reply {
    int status;
    const char *ctype; /* static string */
    ik__buf *body;     /* the loop's scratch; handlers append */
    char extra[512];   /* extra header lines, each ending in \r\n */
    size_t extra_len;
    struct ik__pend *pend; /* non-NULL: the answer comes later (pend.h) */
} ik__http_reply;

/* Writes a JSON error {"error":code,"message":...} into rs with status (a 503 also
 * says "Retry-After: 1"). */
void ik__reply_error(ik__http_reply *rs, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Adds a header line ("Name: value") to rs; one that does not fit is dropped whole. */
void ik__reply_header(ik__http_reply *rs, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the serialized response rs to dst, with date (a "Date: ...\r\n" line).
 * keep: the connection stays open (else "Connection: close"); http10: the client
 * spoke HTTP/1.0 (keep-alive must then be said). */
void ik__reply_serialize(ik__buf *dst, const ik__http_reply *rs, const char *date, size_t date_len,
                         int keep, int http10);

#endif
