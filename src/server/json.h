/* json.h: JSON out (one string, escaped) and in (one flat object: the body of
 * POST /v1/tags). The daemon's answers write the rest of their JSON by hand into an
 * ik__buf; the CLI uses jansson. Nothing here touches a socket, a loop or a global.
 */
#ifndef IK_JSON_H
#define IK_JSON_H

#include "buf.h"
#include "idkeeper.h"

/* Appends s[0..n-1] as a JSON string, quotes included; bytes below 0x20, '"' and
 * '\\' are escaped, bytes >= 0x80 that are not valid UTF-8 become U+FFFD. */
void ik__buf_append_json_str(ik__buf *b, const char *s, size_t n);

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

#endif
