/* buf.h: the bytes under both front doors: allocation that aborts on ENOMEM,
 * growable buffers, spans, numbers in and out, and case-insensitive compare.
 *
 * The RESP parser and writers (resp.c), the HTTP helpers (http_util.c) and the JSON
 * code (json.c) are all above this file; it needs none of them. Nothing here touches
 * a socket, a loop or a global. Safe from any thread on distinct objects.
 */
#ifndef IK_BUF_H
#define IK_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* ---- allocation that cannot fail ------------------------------------------------
 * The daemon (not the library, which answers IK_ENOMEM) aborts when memory runs out:
 * every size it allocates is bounded by a configured limit, so a failure means the
 * host is out of memory and no answer could be trusted. One message, one place. */

/* Prints "idkeeper: out of memory (N bytes); aborting" on stderr and aborts. */
void ik__oom(size_t n) __attribute__((noreturn));
/* malloc and calloc that call ik__oom instead of returning NULL. */
void *ik__xmalloc(size_t n);
void *ik__xcalloc(size_t n, size_t size);

/* ---- growable byte buffer ------------------------------------------------------
 * A buffer starts on caller-provided storage (often inline in a struct) and moves
 * to the heap only when it must grow. Allocation failure aborts the process
 * (ik__oom): every size that reaches a buffer is bounded by a configured limit.
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

/* vsnprintf into out[0..cap-1] (cap >= 1), cut to fit: returns the length written
 * (0 on an encoding error), always NUL-terminated. The one formatter of the error
 * messages of both front doors (ik__reply_error, ik__resp_error). */
size_t ik__vformat(char *out, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* Writes v in decimal into out (at least 20 bytes); returns the length, no NUL. */
size_t ik__fmt_u64(char *out, uint64_t v);

/* A span of bytes inside a request. */
typedef struct ik__span {
    const char *p;
    size_t n;
} ik__span;

/* ---- numbers and words in ----------------------------------------------------- */

/* Strict decimal of 1 to 10 digits, no sign, no spaces, no leading zero ("0" alone
 * is zero; as ik__parse_i64), value <= max. Returns 0 and sets *out, or -1. */
int ik__parse_u32(const char *s, size_t n, uint32_t max, uint32_t *out);

/* Strict decimal int64: optional '-', digits without leading zeros (except "0"),
 * no overflow. Returns 0 or -1. */
int ik__parse_i64(const char *s, size_t n, int64_t *out);

/* Case-insensitive equality of s[0..n-1] and the NUL-terminated lower-case lit. */
int ik__ieq(const char *s, size_t n, const char *lit);

#endif
