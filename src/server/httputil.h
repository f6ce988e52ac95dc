/* httputil.h: the daemon's pure helpers: growable buffers, number and JSON
 * formatting, query strings, route patterns, listen addresses, content negotiation.
 *
 * Nothing here touches a socket, a loop or a global: every function works on the
 * memory it is given, so unit tests (tests/unit/test_http_util.c) and fuzzers call
 * them directly. Safe from any thread on distinct objects.
 */
#ifndef IK_HTTPUTIL_H
#define IK_HTTPUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growable byte buffer ------------------------------------------------------
 * A buffer starts on caller-provided storage (often inline in a struct) and moves
 * to the heap only when it must grow. Allocation failure aborts the process (the
 * daemon may abort on ENOMEM; see STYLE.md): every size that reaches a buffer is
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

/* Writes v in decimal into out (at least 20 bytes); returns the length, no NUL. */
size_t ik__fmt_u64(char *out, uint64_t v);

/* Formats Unix ms as ISO 8601 UTC with milliseconds, "2026-11-22T02:45:48.123Z",
 * into out (at least 32 bytes, NUL-terminated); returns the length. */
size_t ik__fmt_iso8601(char *out, int64_t unix_ms);

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

/* Splits a listen address "HOST:PORT", "[V6]:PORT" or ":PORT" (any address) into
 * host (without brackets; "" for any) and port (0..65535). Returns 0, or -1 with a
 * reason in why. */
int ik__parse_listen(const char *addr, char *host, size_t host_len, int *port, char *why,
                     size_t why_len);

/* Response formats of the ID routes. */
enum { IK_FMT_JSON = 0, IK_FMT_TEXT = 1 };

/* Chooses the format: the query's format=json|text wins, else text if the Accept
 * header names text/plain before any JSON type, else JSON. Returns IK_FMT_* or -1
 * for an unknown format= value. */
int ik__negotiate(const char *query, size_t qlen, const char *accept, size_t alen);

/* Case-insensitive equality of s[0..n-1] and the NUL-terminated lower-case lit. */
int ik__ieq(const char *s, size_t n, const char *lit);

/* Constant-time equality of two byte strings (the time depends only on the
 * lengths). */
int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn);

#endif
