/* http_framing.h: HTTP/1.x request framing without sockets: http_parser plus the
 * daemon's limits, collecting of each request what a handler needs (method, target,
 * Accept, Authorization, body) into one buffer. Also the response side for the
 * clients (the CLI's src/cli/httpc.c, tests/tools/hammer.c): ik__httpresp_*.
 *
 * The seal: http_framing.h and http_framing.c are the only files of the tree (src, tests,
 * bench; tests/tools/structure.sh checks) that name http_parser. Everything else sees
 * methods as IK_HTTP_* numbers, their names through ik__http_method_name, the
 * parser's state through the ik__reqp_* and ik__httpresp_* calls below and its
 * version through ik__http_lib_version, so that a move to another parser (llhttp)
 * touches these two files alone.
 *
 * http_conn.c embeds one ik__reqp per connection and feeds it what the socket reads;
 * tests/fuzz/fuzz_http.c feeds it arbitrary bytes. Nothing here touches a socket, a
 * loop or a global. One ik__reqp is used by one thread at a time.
 *
 * Limits (docs/http.md): request line and headers count against max_header_bytes as
 * the parser delivers them (414 if the URL alone passes it, else 431); bodies only on
 * POST, up to IK_MAX_BODY (413, also for a chunked body on another method); HTTP
 * major version 1 only (505). A refused request stops the parser: ik__reqp_feed
 * reports it and the caller answers with ik__reqp_error_status.
 */
#ifndef IK_HTTP_FRAMING_H
#define IK_HTTP_FRAMING_H

#include "http_util.h"

#include <http_parser.h>

#define IK_MAX_BODY (64 * 1024) /* bodies: only on POST, at most this */

/* The methods the route table names (http_parser's and llhttp's numbers for them;
 * http_framing.c checks). Any other method keeps its parser number in ik__req.method. */
#define IK_HTTP_GET 1u
#define IK_HTTP_POST 3u

/* The name of method ("GET", "PROPFIND"; "<unknown>" for a number the parser does
 * not know). */
const char *ik__http_method_name(unsigned method);

/* One parsed request: spans into the ik__reqp's buffer, valid until the next call
 * of ik__reqp_feed or ik__reqp_free. */
typedef struct ik__req {
    unsigned method;      /* IK_HTTP_*, or another method's parser number */
    int http_minor;       /* 0 or 1 */
    ik__span path, query; /* query without '?' (n == 0: none) */
    ik__span params[IK_MAX_PARAMS];
    int nparams;
    ik__span accept, auth, body; /* n == 0: absent */
} ik__req;

typedef struct ik__reqp ik__reqp;

/* Called for each complete request, from inside ik__reqp_feed. The request's spans
 * are valid during the call. The callback may pause the parser (ik__reqp_pause):
 * feed then returns IK_FEED_PAUSED. */
typedef void (*ik__reqp_cb)(ik__reqp *rp, void *ctx);

/* A value of the request (URL, Accept, Authorization, body): while ik__reqp_feed
 * runs, still in the bytes it was given (view); what a later read goes on with, or
 * a value in pieces, is copied into the ik__reqp's buffer (at off). */
typedef struct ik__reqp_val {
    const char *view; /* non-NULL: the value is view[0..len-1] */
    uint32_t off, len;
} ik__reqp_val;

struct ik__reqp {
    http_parser parser;
    ik__reqp_cb on_request;
    void *ctx;
    uint32_t max_header_bytes;
    uint64_t now;     /* the caller's clock, set before feeding (e.g. loop ms) */
    uint64_t started; /* `now` (at least 1) when the current request began; 0 between
                         requests */
    uint8_t field_open, hname_over;
    uint8_t hname_len;
    uint16_t err_status; /* status a callback refused the request with (0: none) */
    char hname[16];      /* header name's pieces from earlier feeds (over 16: hname_over) */
    const char *hpiece;  /* its piece in the bytes being fed, not copied yet (or NULL) */
    uint32_t hpiece_len;
    uint32_t header_bytes; /* request line + headers so far */
    ik__buf req;           /* values copied (split between reads, or in pieces) */
    ik__reqp_val url, accept, auth, body;
    ik__reqp_val *hval; /* the header value being delivered, if one the daemon reads */
    ik__reqp_val *last; /* the value that took the last piece (may go on next read) */
};

/* Starts rp on storage[0..cap-1] for the request bytes (inline storage; larger
 * requests move to the heap and back). */
void ik__reqp_init(ik__reqp *rp, char *storage, size_t cap, uint32_t max_header_bytes,
                   ik__reqp_cb on_request, void *ctx);
/* Frees heap storage. */
void ik__reqp_free(ik__reqp *rp);

/* Outcome of ik__reqp_feed. */
enum {
    IK_FEED_OK = 0,     /* everything consumed (a request may be incomplete) */
    IK_FEED_PAUSED = 1, /* a callback paused the parser: *used tells how far it got */
    IK_FEED_ERROR = 2,  /* malformed or refused: answer ik__reqp_error_status, close */
    IK_FEED_UPGRADE = 3 /* an Upgrade request was answered; the rest is not HTTP */
};

/* Parses data[0..len-1], calling on_request for each complete request. Sets *used
 * to the bytes consumed and returns an IK_FEED_* value. */
int ik__reqp_feed(ik__reqp *rp, const char *data, size_t len, size_t *used);
/* Pauses the parser after the request now delivered (from on_request). */
void ik__reqp_pause(ik__reqp *rp);
/* Resumes a paused parser. */
void ik__reqp_resume(ik__reqp *rp);
/* During on_request: 1 if the connection may stay open after this request (HTTP/1.1
 * without "Connection: close", or HTTP/1.0 with keep-alive; never after an Upgrade
 * request). */
int ik__reqp_keep_alive(const ik__reqp *rp);
/* During on_request: the request's method (IK_HTTP_* or the parser's number). */
unsigned ik__reqp_method(const ik__reqp *rp);

/* After IK_FEED_ERROR: the status to answer (400, 413, 414, 431 or 505), the error
 * code and a message (into msg). */
int ik__reqp_error(const ik__reqp *rp, const char **code, char *msg, size_t msg_len);

/* Fills rq with the complete request now in rp (during on_request). Returns 0, or
 * -1 if the target has no usable path ("*", an authority). */
int ik__reqp_view(const ik__reqp *rp, ik__req *rq);
/* During on_request: the request target as received (rq's path and query lie in it). */
ik__span ik__reqp_url(const ik__reqp *rp);

/* Splits a request target into path and query (origin form, or absolute form
 * through http_parser's URL parser). Returns 0, or -1 if it has no path. */
int ik__split_target(const char *url, size_t n, int is_connect, ik__span *path, ik__span *query);

/* ---- responses (clients) ---------------------------------------------------------- */

typedef struct ik__httpresp ik__httpresp;

/* What an ik__httpresp reports, from inside ik__httpresp_feed; each may be NULL.
 * ctx is the one given to ik__httpresp_init. */
typedef struct ik__httpresp_cbs {
    /* A response starts. */
    void (*on_begin)(void *ctx);
    /* Body bytes at[0..n-1] (valid during the call; chunked framing removed).
     * Non-zero refuses the response: feed returns IK_FEED_ERROR. */
    int (*on_body)(void *ctx, const char *at, size_t n);
    /* The whole response is in; ik__httpresp_status and ik__httpresp_keep_alive
     * tell about it. May call ik__httpresp_pause to stop after this response. */
    void (*on_complete)(ik__httpresp *hr, void *ctx);
} ik__httpresp_cbs;

struct ik__httpresp {
    http_parser parser;
    const ik__httpresp_cbs *cbs;
    void *ctx;
};

/* Starts hr on a fresh stream of responses (call again for a new connection). cbs
 * must outlive hr. Allocates nothing. */
void ik__httpresp_init(ik__httpresp *hr, const ik__httpresp_cbs *cbs, void *ctx);
/* Parses data[0..len-1] of the stream; len 0 tells that the peer closed it (ends a
 * response framed by the close). Sets *used to the bytes consumed and returns
 * IK_FEED_OK (all consumed), IK_FEED_PAUSED (on_complete paused: *used tells how far
 * it got) or IK_FEED_ERROR (malformed, or on_body refused: ik__httpresp_error). */
int ik__httpresp_feed(ik__httpresp *hr, const char *data, size_t len, size_t *used);
/* From on_complete: stop after this response (feed returns IK_FEED_PAUSED). */
void ik__httpresp_pause(ik__httpresp *hr);
/* The status code of the response being read (0 before its status line). */
int ik__httpresp_status(const ik__httpresp *hr);
/* In on_complete: 1 if the connection may carry another request. */
int ik__httpresp_keep_alive(const ik__httpresp *hr);
/* After IK_FEED_ERROR: a short description of what was wrong (static text). */
const char *ik__httpresp_error(const ik__httpresp *hr);

/* The HTTP parser library and the version it reports at run time, as one line of
 * `idkeeper version` ("NAME X.Y.Z"), into out (cap bytes, truncated, NUL-terminated). */
void ik__http_lib_version(char *out, size_t cap);

#endif
