/* httpc.h: a minimal HTTP/1.1 client for `idkeeper next`: GET requests, one after
 * another, over one keep-alive connection; responses parsed by
 * src/server/http/http_framing.c (ik__httpresp_*).
 *
 * What it deliberately does not do: TLS, redirects, proxies, pipelining, request
 * bodies. It reconnects when the server closes the connection between requests,
 * and retries a request once if a reused connection turns out to be dead before
 * any byte of the answer arrived.
 */
#ifndef IK_CLI_HTTPC_H
#define IK_CLI_HTTPC_H

#include <stddef.h>

typedef struct ik_httpc ik_httpc;

typedef struct ik_httpc_resp {
    int status;       /* HTTP status code */
    const char *body; /* the whole body, NUL-terminated; valid until the next
                         request or close */
    size_t body_len;
} ik_httpc_resp;

/* Creates a client for host:port (no connection yet). timeout_ms bounds connect
 * and each wait for the socket. Returns NULL when out of memory. */
ik_httpc *ik__httpc_create(const char *host, int port, int timeout_ms);

/* Frees c and closes its connection. Accepts NULL. */
void ik__httpc_destroy(ik_httpc *c);

/* Sends "Authorization: Bearer TOKEN" with every request of c from now on (NULL or
 * "": none). Returns 0, or -1 if it is too long. */
int ik__httpc_set_token(ik_httpc *c, const char *token);

/* Sends GET path (already URL-encoded) and reads the whole answer, of at most
 * max_body bytes. Returns 0 with *r filled (any status), or -1 with a one-line
 * reason in why (cannot connect, timeout, connection lost, malformed answer,
 * body too large). */
int ik__httpc_get(ik_httpc *c, const char *path, size_t max_body, ik_httpc_resp *r, char *why,
                  size_t why_len);

#endif
