/* token.h: what checking the daemon's token needs (docs/http.md, "Authorization"):
 * the standard base64 of HTTP Basic and a compare whose time does not depend on the
 * bytes. Pure; safe from any thread.
 */
#ifndef IK_TOKEN_H
#define IK_TOKEN_H

#include <stddef.h>

/* Constant-time equality of two byte strings (the time depends only on the
 * lengths). */
int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn);

/* Decodes the standard base64 text s[0..n-1] (padding required, no whitespace) into
 * out. Returns the decoded length, or -1 if s is not base64 or does not fit in cap. */
long ik__base64_decode(const char *s, size_t n, char *out, size_t cap);

#endif
