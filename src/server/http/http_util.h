/* http_util.h: HTTP request values: query strings, route patterns and the lookup of
 * a route table, content negotiation, tag names in paths, the Date line. Buffers,
 * numbers and spans are buf.h's; JSON is json.h's; the token's checks are token.h's.
 *
 * Nothing here touches a socket, a loop or a global: every function works on the
 * memory it is given, so unit tests (tests/unit/test_http_util.c) and fuzzers call
 * them directly. Safe from any thread on distinct objects.
 */
#ifndef IK_HTTP_UTIL_H
#define IK_HTTP_UTIL_H

#include "../../lib/rules.h" /* ik__fmt_iso8601, ik__parse_listen: shared with lib and CLI */
#include "buf.h"
#include "idkeeper.h"

#include <stddef.h>
#include <stdint.h>

/* Formats an RFC 7231 date line "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" for Unix
 * seconds into out (at least 48 bytes, NUL-terminated); returns the length. */
size_t ik__fmt_http_date(char *out, int64_t unix_s);

/* ---- parsing -------------------------------------------------------------------- */

/* Finds the first parameter named name in a query string ("a=1&b=2", without the
 * '?'). Returns 1 and sets *val and *vlen (the raw, undecoded value; "" for "a" or
 * "a="), or 0 if absent. */
int ik__query_get(const char *q, size_t qlen, const char *name, const char **val, size_t *vlen);

/* Every query parameter is read through these two (docs/http.md, "Query
 * parameters"): one decoder, one number rule. */

/* The value of query parameter name, percent-decoded (ik__pct_decode: "%31" is "1";
 * '+' stays '+') into out (cap bytes, NUL-terminated). Returns its length (>= 0), -1
 * if the parameter is absent, or -2 if its value does not decode (a bad escape, a
 * NUL byte, more than cap - 1 bytes decoded). *raw (if not NULL) is set to the value
 * as sent whenever it is present. */
long ik__query_value(const char *q, size_t qlen, const char *name, char *out, size_t cap,
                     ik__span *raw);

/* Query parameter name as a whole number from min to max: its decoded value is
 * plain decimal digits, no sign, no leading zero ("0" alone is zero). Returns 0 if
 * absent (*v untouched), 1 with *v set, or -1 if present and not such a number, with
 * *raw the value as sent. */
int ik__query_uint(const char *q, size_t qlen, const char *name, uint32_t min, uint32_t max,
                   uint32_t *v, ik__span *raw);

#define IK_MAX_PARAMS 4

/* Matches a path ("/v1/decode/123") against a pattern ("/v1/decode/{id}"). Literal
 * segments must be equal; a "{name}" segment matches one non-empty segment (no '/')
 * and is stored, in order, in params (at most IK_MAX_PARAMS). Returns the number
 * of parameters (>= 0) on a match, -1 otherwise. */
int ik__path_match(const char *pattern, const char *path, size_t plen, ik__span *params);

/* The key of one row of a route table: an HTTP method (IK_HTTP_* of http_framing.h) and a
 * path pattern (see ik__path_match). */
typedef struct ik__route_key {
    unsigned method;
    const char *pattern;
} ik__route_key;

/* Finds the row of keys[0..n-1] whose pattern matches path[0..plen-1] and whose
 * method is method: returns its index, with params and *np (the parameter count)
 * filled. Else returns n, with *allow the set (1 << m) of the methods of rows whose
 * pattern matches (0 if none does) and *first the first such row (n if none).
 * Methods above 63 never match. */
size_t ik__route_find(const ik__route_key *keys, size_t n, unsigned method, const char *path,
                      size_t plen, ik__span *params, int *np, uint64_t *allow, size_t *first);

/* Reads count= from a query string into *n: 1 when absent, else a whole number from
 * 1 to max (ik__query_uint). Returns 0, or -1 with *raw set to the value given. */
int ik__count_param(const char *q, size_t qlen, uint32_t max, uint32_t *n, ik__span *raw);

/* A tag name from a path segment: percent-decoded, then ik_tag_name_check (1 to 128
 * bytes of [A-Za-z0-9._:-]). Returns 0, or -1 with a reason in why. */
int ik__tag_param(ik__span seg, char out[IK_TAG_NAME_MAX + 1], char *why, size_t why_len);

/* Response formats of the ID routes. */
enum { IK_FMT_JSON = 0, IK_FMT_TEXT = 1, IK_FMT_JSON_NUM = 2 /* JSON, IDs as numbers */ };

/* Chooses the format: the query's format=json|text (decoded) wins, else text if the Accept
 * header names text/plain before any JSON type, else JSON. Returns IK_FMT_* or -1
 * for an unknown format= value. */
int ik__negotiate(const char *query, size_t qlen, const char *accept, size_t alen);

#endif
