/* http_query.h: a request's query string, read once (ik__query_read): one pass
 * over its bytes into one small struct, which is all a route reads of the query
 * (docs/http.md, "Query parameters"). The Accept header joins it there: the
 * answer's format is the query's format= or else Accept's.
 *
 * The rules, the same for every parameter:
 * - the first occurrence of a name counts; unknown names are ignored; a name is
 *   compared as sent (not decoded);
 * - a value is percent-decoded ("%31" is "1"; '+' stays '+'); a broken escape, an
 *   escaped NUL or a value longer than its field makes it bad;
 * - a number is plain decimal digits after decoding: no sign, no leading zero ("0"
 *   alone is zero), no space, at most 2^32 - 1; its range is the route's;
 * - format is json or text and ids is string or number, in any case.
 * A bad parameter is the route's 400, which quotes its value as sent (raw).
 *
 * Pure: no socket, no loop, no global; safe from any thread on distinct objects
 * (tests/unit/test_http_util.c, tests/fuzz/fuzz_http.c).
 */
#ifndef IK_HTTP_QUERY_H
#define IK_HTTP_QUERY_H

#include "buf.h"

#include <stddef.h>
#include <stdint.h>

/* The parameters the routes read, by index. */
enum { IK_Q_COUNT, IK_Q_SECONDS, IK_Q_FORMAT, IK_Q_IDS, IK_Q_DECODE, IK_Q_N };
#define IK_Q_BIT(i) (1u << (i))

/* Response formats of the ID routes. */
enum { IK_FMT_JSON = 0, IK_FMT_TEXT = 1, IK_FMT_JSON_NUM = 2 /* JSON, IDs as numbers */ };

typedef struct ik__query {
    unsigned has;         /* IK_Q_BIT(i): parameter i is present */
    unsigned bad;         /* IK_Q_BIT(i): present, and breaks its rule (above) */
    ik__span raw[IK_Q_N]; /* each present parameter's value as sent */
    uint32_t count;       /* count=, when present and not bad */
    uint32_t seconds;     /* seconds=, likewise */
    int fmt;              /* IK_FMT_JSON or IK_FMT_TEXT: format= when present and not
                             bad, else text if Accept names text/plain before any JSON
                             type, else JSON */
    int ids_number;       /* ids=number (JSON's IDs as numbers) */
    char decode[24];      /* decode=, decoded; a value that does not decode: as sent,
                             cut to 23 bytes; "" when absent */
} ik__query;

/* Reads the query q[0..qlen-1] (without the '?'; NULL or empty: none) and the Accept
 * header's value (NULL or empty: none) into *out, in one pass over q. Never fails:
 * what breaks a rule is marked bad. */
void ik__query_read(const char *q, size_t qlen, const char *accept, size_t alen, ik__query *out);

#endif
