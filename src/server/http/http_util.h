/* http_util.h: HTTP request values: route patterns and the lookup of a route table,
 * tag names in paths, the Date line. A request's query is http_query.h's; buffers,
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

/* A tag name from a path segment: percent-decoded, then ik_tag_name_check (1 to 128
 * bytes of [A-Za-z0-9._:-]). Returns 0, or -1 with a reason in why. */
int ik__tag_param(ik__span seg, char out[IK_TAG_NAME_MAX + 1], char *why, size_t why_len);

#endif
