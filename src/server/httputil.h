/* httputil.h: the daemon's pure helpers: growable buffers, number and JSON
 * formatting, query strings, route patterns, listen addresses, content negotiation.
 *
 * Nothing here touches a socket, a loop or a global: every function works on the
 * memory it is given, so unit tests (tests/unit/test_http_util.c) and fuzzers call
 * them directly. Safe from any thread on distinct objects.
 */
#ifndef IK_HTTPUTIL_H
#define IK_HTTPUTIL_H

#include "../lib/rules.h" /* ik__fmt_iso8601, ik__parse_listen: shared with lib and CLI */
#include "idkeeper.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable byte buffer ------------------------------------------------------
 * A buffer starts on caller-provided storage (often inline in a struct) and moves
 * to the heap only when it must grow. Allocation failure aborts the process (the
 * daemon may abort on ENOMEM; docs/architecture.md, "Errors"): every size that reaches a buffer is
 * bounded by a configured limit.
 */
typedef struct ik__buf {
    char *p; /* the bytes; not NUL-terminated unless a writer says so */
    size_t len, cap;
    char *inline_p; /* the initial storage (not freed), or NULL */
    size_t inline_cap;
} ik__buf;

/* Starts b on storage[0..cap-1] (storage may be NULL with cap 0: heap only). */
void ik__buf_init(ik__buf *b, char *storage, size_t cap);
/* Frees heap storage and returns b to its initial storage, empty. */
void ik__buf_reset(ik__buf *b);
/* Ensures room for extra more bytes; returns a pointer to b->p + b->len. */
char *ik__buf_reserve(ik__buf *b, size_t extra);
void ik__buf_append(ik__buf *b, const void *data, size_t n);
void ik__buf_puts(ik__buf *b, const char *s);
void ik__buf_printf(ik__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ik__buf_append_u64(ik__buf *b, uint64_t v);
void ik__buf_append_i64(ik__buf *b, int64_t v);
/* Appends s[0..n-1] as a JSON string, quotes included; bytes below 0x20, '"' and
 * '\\' are escaped, bytes >= 0x80 that are not valid UTF-8 become U+FFFD. */
void ik__buf_append_json_str(ik__buf *b, const char *s, size_t n);

/* vsnprintf into out[0..cap-1] (cap >= 1), cut to fit: returns the length written
 * (0 on an encoding error), always NUL-terminated. The one formatter of the error
 * messages of both front doors (ik__reply_error, ik__resp_error). */
size_t ik__vformat(char *out, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Writes v in decimal into out (at least 20 bytes); returns the length, no NUL. */
size_t ik__fmt_u64(char *out, uint64_t v);

/* Formats an RFC 7231 date line "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" for Unix
 * seconds into out (at least 48 bytes, NUL-terminated); returns the length. */
size_t ik__fmt_http_date(char *out, int64_t unix_s);

/* ---- parsing -------------------------------------------------------------------- */

/* Strict decimal of 1 to 10 digits, no sign, no spaces, value <= max. Returns 0 and
 * sets *out, or -1. Leading zeros are accepted ("007"). */
int ik__parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out);

/* Finds the first parameter named name in a query string ("a=1&b=2", without the
 * '?'). Returns 1 and sets *val and *vlen (the raw, undecoded value; "" for "a" or
 * "a="), or 0 if absent. */
int ik__query_get(const char *q, size_t qlen, const char *name, const char **val, size_t *vlen);

/* A span of bytes inside a request. */
typedef struct ik__span {
    const char *p;
    size_t n;
} ik__span;

#define IK_MAX_PARAMS 4

/* Matches a path ("/v1/decode/123") against a pattern ("/v1/decode/{id}"). Literal
 * segments must be equal; a "{name}" segment matches one non-empty segment (no '/')
 * and is stored, in order, in params (at most IK_MAX_PARAMS). Returns the number
 * of parameters (>= 0) on a match, -1 otherwise. */
int ik__path_match(const char *pattern, const char *path, size_t plen, ik__span *params);

/* The key of one row of a route table: an HTTP method (IK_HTTP_* of reqparse.h) and a
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
 * 1 to max (strict decimal). Returns 0, or -1 with *raw set to the value given. */
int ik__count_param(const char *q, size_t qlen, uint32_t max, uint32_t *n, ik__span *raw);

/* Percent-decodes s[0..n-1] into out (cap bytes, NUL-terminated). Returns the
 * length, or -1 for a malformed escape, a NUL byte, or a result that does not fit. */
long ik__pct_decode(const char *s, size_t n, char *out, size_t cap);

/* A tag name from a path segment: percent-decoded, then ik_tag_name_check (1 to 128
 * bytes of [A-Za-z0-9._:-]). Returns 0, or -1 with a reason in why. */
int ik__tag_param(ik__span seg, char out[IK_TAG_NAME_MAX + 1], char *why, size_t why_len);

/* Strict decimal int64: optional '-', digits without leading zeros (except "0"),
 * no overflow. Returns 0 or -1. */
int ik__parse_i64(const char *s, size_t n, int64_t *out);

/* ---- a flat JSON object ---------------------------------------------------------
 * Just enough JSON for request bodies: one object whose values are strings, numbers,
 * true, false or null (no nesting), with optional whitespace around. */
enum { IK_JSON_STRING = 1, IK_JSON_NUMBER, IK_JSON_TRUE, IK_JSON_FALSE, IK_JSON_NULL };

typedef struct ik__json_field {
    ik__span key; /* raw contents between the quotes, escapes not yet decoded */
    ik__span val; /* a string's raw contents, or the literal's text */
    int type;     /* IK_JSON_* */
} ik__json_field;

/* Parses s[0..n-1] into at most max fields. Returns the number of fields, or -1 with
 * a reason in why (syntax, nesting, more than max fields). */
int ik__json_flat(const char *s, size_t n, ik__json_field *f, int max, char *why, size_t why_len);

/* Decodes a JSON string's raw contents into out (cap bytes, NUL-terminated, UTF-8).
 * Returns the length, or -1 if it does not fit or holds \u0000 or a lone
 * surrogate. */
long ik__json_unescape(ik__span raw, char *out, size_t cap);

/* The body of POST /v1/tags: {"tag","kind","start","step","description"}. */
typedef struct ik__tag_body {
    char tag[IK_TAG_NAME_MAX + 1];
    ik_tag_kind kind;
    int64_t start; /* default 1 (as `idkeeper tags add`) */
    int64_t step;  /* default 1000 for segment, 1 for sequence */
    char description[256];
} ik__tag_body;

/* Parses and checks a POST /v1/tags body (the same rules as ik_tag_create, plus:
 * no unknown or repeated field, step 0 refused for either kind). Returns 0, or -1
 * with *code (bad_json, bad_tag, bad_kind, bad_start, bad_step, bad_description)
 * and a reason in why. */
int ik__tag_body_parse(const char *s, size_t n, ik__tag_body *out, const char **code, char *why,
                       size_t why_len);

/* Response formats of the ID routes. */
enum { IK_FMT_JSON = 0, IK_FMT_TEXT = 1, IK_FMT_JSON_NUM = 2 /* JSON, IDs as numbers */ };

/* Chooses the format: the query's format=json|text wins, else text if the Accept
 * header names text/plain before any JSON type, else JSON. Returns IK_FMT_* or -1
 * for an unknown format= value. */
int ik__negotiate(const char *query, size_t qlen, const char *accept, size_t alen);

/* The value of the hex digit c (0-9, a-f, A-F), or -1. */
int ik__hexval(int c);

/* Case-insensitive equality of s[0..n-1] and the NUL-terminated lower-case lit. */
int ik__ieq(const char *s, size_t n, const char *lit);

/* Constant-time equality of two byte strings (the time depends only on the
 * lengths). */
int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn);

/* Decodes the standard base64 text s[0..n-1] (padding required, no whitespace) into
 * out. Returns the decoded length, or -1 if s is not base64 or does not fit in cap. */
long ik__base64_decode(const char *s, size_t n, char *out, size_t cap);

#endif
