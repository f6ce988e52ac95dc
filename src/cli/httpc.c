/* httpc.c: a minimal keep-alive HTTP/1.1 GET client over a plain socket, with the
 * daemon's response parser (src/server/http/http_framing.h, ik__httpresp_*) reading the
 * answers (see httpc.h for what it does not do). */
#include "httpc.h"
#include "options.h"
#include "http_framing.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#define IK_HTTPC_RECV 65536

struct ik_httpc {
    char host[256];
    int port;
    int timeout_ms;
    int fd; /* -1: not connected */
    ik__httpresp resp;
    /* the answer being read */
    char *body;
    size_t body_len, body_cap, max_body;
    int done, keep_alive, too_large;
    char auth[600]; /* "Authorization: Bearer ...\r\n" or "" */
    char rbuf[IK_HTTPC_RECV];
};

static int on_body(void *ctx, const char *at, size_t n)
{
    ik_httpc *c = ctx;
    if (c->body_len + n > c->max_body) {
        c->too_large = 1;
        return 1;
    }
    if (c->body_len + n + 1 > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 65536;
        while (cap < c->body_len + n + 1)
            cap *= 2;
        char *nb = realloc(c->body, cap);
        if (!nb) {
            c->too_large = 1;
            return 1;
        }
        c->body = nb;
        c->body_cap = cap;
    }
    memcpy(c->body + c->body_len, at, n);
    c->body_len += n;
    return 0;
}

static void on_complete(ik__httpresp *hr, void *ctx)
{
    ik_httpc *c = ctx;
    c->done = 1;
    c->keep_alive = ik__httpresp_keep_alive(hr);
    ik__httpresp_pause(hr);
}

static const ik__httpresp_cbs resp_cbs = {.on_body = on_body, .on_complete = on_complete};

ik_httpc *ik__httpc_create(const char *host, int port, int timeout_ms)
{
    ik_httpc *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    snprintf(c->host, sizeof c->host, "%s", host);
    c->port = port;
    c->timeout_ms = timeout_ms;
    c->fd = -1;
    return c;
}

static void disconnect(ik_httpc *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

void ik__httpc_destroy(ik_httpc *c)
{
    if (!c) return;
    disconnect(c);
    free(c->body);
    free(c);
}

/* Connects to one address within the timeout; returns the fd or -1 (errno set). */
static int connect_one(const struct addrinfo *ai, int timeout_ms)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) return -1;
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) goto fail;
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int rc;
        do
            rc = poll(&pfd, 1, timeout_ms);
        while (rc < 0 && errno == EINTR);
        if (rc == 0) {
            errno = ETIMEDOUT;
            goto fail;
        }
        int err = 0;
        socklen_t el = sizeof err;
        if (rc < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0) goto fail;
        if (err) {
            errno = err;
            goto fail;
        }
    }
    fcntl(fd, F_SETFL, fl);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return fd;
fail : {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}
}

static int do_connect(ik_httpc *c, char *why, size_t why_len)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    int rc = getaddrinfo(c->host, port, &hints, &res);
    if (rc != 0) {
        ik__cli_why(why, why_len, "cannot resolve %s: %s", c->host, gai_strerror(rc));
        return -1;
    }
    int err = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        c->fd = connect_one(ai, c->timeout_ms);
        if (c->fd >= 0) break;
        err = errno;
    }
    freeaddrinfo(res);
    if (c->fd < 0) {
        ik__cli_why(why, why_len, "cannot connect to %s:%d: %s (is idkeeper serve running?)",
                    c->host, c->port, strerror(err));
        return -1;
    }
    return 0;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One attempt: send the request and read the answer. Returns 0, -1 (failed), or
 * 1 (the connection was dead before any byte of the answer: worth a retry). */
static int attempt(ik_httpc *c, const char *req, size_t req_len, char *why, size_t why_len)
{
    if (send_all(c->fd, req, req_len) != 0) {
        int e = errno;
        disconnect(c);
        ik__cli_why(why, why_len, "cannot send to %s:%d: %s", c->host, c->port, strerror(e));
        return 1;
    }
    ik__httpresp_init(&c->resp, &resp_cbs, c);
    c->body_len = 0;
    c->done = c->keep_alive = c->too_large = 0;
    size_t got = 0;
    while (!c->done) {
        ssize_t n = recv(c->fd, c->rbuf, sizeof c->rbuf, 0);
        if (n < 0) {
            int e = errno;
            if (e == EINTR) continue;
            disconnect(c);
            if (e == EAGAIN || e == EWOULDBLOCK) {
                ik__cli_why(why, why_len, "no answer from %s:%d within %d ms", c->host, c->port,
                            c->timeout_ms);
                return -1;
            }
            ik__cli_why(why, why_len, "connection to %s:%d failed: %s", c->host, c->port,
                        strerror(e));
            return got ? -1 : 1;
        }
        size_t parsed;
        int fed = ik__httpresp_feed(&c->resp, c->rbuf, (size_t)n, &parsed);
        if (n == 0 && !c->done) {
            disconnect(c);
            ik__cli_why(why, why_len, "%s:%d closed the connection %s", c->host, c->port,
                        got ? "in the middle of an answer" : "without answering");
            return got ? -1 : 1;
        }
        got += (size_t)n;
        if (c->done) {
            if (parsed < (size_t)n)
                c->keep_alive = 0; /* bytes nobody asked for: do not trust the stream */
            break;
        }
        if (fed == IK_FEED_ERROR) {
            disconnect(c);
            if (c->too_large)
                ik__cli_why(why, why_len, "answer from %s:%d larger than %zu bytes", c->host,
                            c->port, c->max_body);
            else
                ik__cli_why(why, why_len, "malformed HTTP answer from %s:%d: %s", c->host, c->port,
                            ik__httpresp_error(&c->resp));
            return -1;
        }
    }
    if (!c->keep_alive) disconnect(c);
    return 0;
}

int ik__httpc_set_token(ik_httpc *c, const char *token)
{
    if (!token || !*token) {
        c->auth[0] = 0;
        return 0;
    }
    int n = snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s\r\n", token);
    if (n < 0 || (size_t)n >= sizeof c->auth) {
        c->auth[0] = 0;
        return -1;
    }
    return 0;
}

int ik__httpc_get(ik_httpc *c, const char *path, size_t max_body, ik_httpc_resp *r, char *why,
                  size_t why_len)
{
    char req[2048];
    int req_len = snprintf(req, sizeof req,
                           "GET %s HTTP/1.1\r\nHost: %s%s%s:%d\r\nAccept: text/plain\r\n"
                           "User-Agent: idkeeper-cli\r\n%s\r\n",
                           path, strchr(c->host, ':') ? "[" : "", c->host,
                           strchr(c->host, ':') ? "]" : "", c->port, c->auth);
    if (req_len < 0 || (size_t)req_len >= sizeof req) {
        ik__cli_why(why, why_len, "request path too long");
        return -1;
    }
    c->max_body = max_body;
    for (int i = 0; i < 2; i++) {
        int fresh = c->fd < 0;
        if (fresh && do_connect(c, why, why_len) != 0) return -1;
        int rc = attempt(c, req, (size_t)req_len, why, why_len);
        if (rc == 0) {
            if (!c->body) {
                c->body = malloc(1);
                if (!c->body) {
                    ik__cli_why(why, why_len, "out of memory");
                    return -1;
                }
            }
            c->body[c->body_len] = 0;
            r->status = ik__httpresp_status(&c->resp);
            r->body = c->body;
            r->body_len = c->body_len;
            return 0;
        }
        if (rc < 0 || fresh) return -1;
        /* a reused connection the server had closed: once more on a new one */
    }
    return -1;
}
