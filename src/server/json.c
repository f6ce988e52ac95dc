/* json.c: JSON out (a string, escaped) and in (one flat object, the body of POST
 * /v1/tags); see json.h. No sockets, no loops, no globals. */
#include "json.h"

#include "../lib/rules.h" /* ik__hexval */

#include <stdio.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s[0..n-1] (n >= 1, s[0] >= 0x80), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    unsigned cp = c & (0x3Fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

void ik__buf_append_json_str(ik__buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    ik__buf_append(b, "\"", 1);
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        while (run < n && u[run] >= 0x20 && u[run] < 0x80 && u[run] != '"' && u[run] != '\\')
            run++;
        ik__buf_append(b, s + i, run - i);
        i = run;
        if (i >= n) break;
        unsigned c = u[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            ik__buf_append(b, e, 2);
            i++;
        } else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            if (c == '\n') {
                ik__buf_append(b, "\\n", 2);
            } else if (c == '\t') {
                ik__buf_append(b, "\\t", 2);
            } else if (c == '\r') {
                ik__buf_append(b, "\\r", 2);
            } else {
                ik__buf_append(b, e, 6);
            }
            i++;
        } else {
            size_t l = utf8_len(u + i, n - i);
            if (l) {
                ik__buf_append(b, s + i, l);
                i += l;
            } else {
                ik__buf_append(b, "\xEF\xBF\xBD", 3);
                i++;
            }
        }
    }
    ik__buf_append(b, "\"", 1);
}

/* ---- a flat JSON object ----------------------------------------------------------------- */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* Scans the string whose opening quote is s[*i]; on success *i is past the closing
 * quote and raw holds the contents. Returns 0 or -1. */
static int scan_string(const char *s, size_t n, size_t *i, ik__span *raw)
{
    size_t j = *i + 1, start = j;
    while (j < n) {
        unsigned char c = (unsigned char)s[j];
        if (c == '"') {
            raw->p = s + start;
            raw->n = j - start;
            *i = j + 1;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c != '\\') {
            j++;
            continue;
        }
        if (j + 1 >= n) return -1;
        char e = s[j + 1];
        if (e == 'u') {
            if (j + 5 >= n) return -1;
            for (size_t k = j + 2; k < j + 6; k++)
                if (ik__hexval(s[k]) < 0) return -1;
            j += 6;
        } else if (e && strchr("\"\\/bfnrt", e)) {
            j += 2;
        } else {
            return -1;
        }
    }
    return -1;
}

/* Scans a JSON number at s[*i]. Returns 0 or -1. */
static int scan_number(const char *s, size_t n, size_t *i)
{
    size_t j = *i;
    if (j < n && s[j] == '-') j++;
    if (j >= n) return -1;
    if (s[j] == '0') {
        j++;
    } else if (s[j] >= '1' && s[j] <= '9') {
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
    } else {
        return -1;
    }
    if (j < n && s[j] == '.') {
        j++;
        size_t d = j;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == d) return -1;
    }
    if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        j++;
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        size_t d = j;
        while (j < n && s[j] >= '0' && s[j] <= '9')
            j++;
        if (j == d) return -1;
    }
    *i = j;
    return 0;
}

static int lit(const char *s, size_t n, size_t i, const char *word)
{
    size_t l = strlen(word);
    return n - i >= l && memcmp(s + i, word, l) == 0;
}

#define JSON_FAIL(...) (snprintf(why, why_len, __VA_ARGS__), -1)

int ik__json_flat(const char *s, size_t n, ik__json_field *f, int max, char *why, size_t why_len)
{
    size_t i = skip_ws(s, n, 0);
    if (i >= n || s[i] != '{') return JSON_FAIL("the body is not a JSON object");
    i = skip_ws(s, n, i + 1);
    int k = 0;
    if (i < n && s[i] == '}') {
        i++;
    } else {
        for (;;) {
            if (i >= n || s[i] != '"')
                return JSON_FAIL("expected a quoted field name at byte %zu", i);
            if (k >= max) return JSON_FAIL("more than %d fields", max);
            ik__json_field *fd = &f[k];
            if (scan_string(s, n, &i, &fd->key) != 0) return JSON_FAIL("bad string at byte %zu", i);
            i = skip_ws(s, n, i);
            if (i >= n || s[i] != ':') return JSON_FAIL("expected ':' at byte %zu", i);
            i = skip_ws(s, n, i + 1);
            if (i >= n) return JSON_FAIL("the body ends inside the object");
            size_t v0 = i;
            if (s[i] == '"') {
                if (scan_string(s, n, &i, &fd->val) != 0)
                    return JSON_FAIL("bad string at byte %zu", v0);
                fd->type = IK_JSON_STRING;
            } else if (s[i] == '-' || (s[i] >= '0' && s[i] <= '9')) {
                if (scan_number(s, n, &i) != 0) return JSON_FAIL("bad number at byte %zu", v0);
                fd->val = (ik__span){s + v0, i - v0};
                fd->type = IK_JSON_NUMBER;
            } else if (lit(s, n, i, "true")) {
                i += 4;
                fd->val = (ik__span){s + v0, 4};
                fd->type = IK_JSON_TRUE;
            } else if (lit(s, n, i, "false")) {
                i += 5;
                fd->val = (ik__span){s + v0, 5};
                fd->type = IK_JSON_FALSE;
            } else if (lit(s, n, i, "null")) {
                i += 4;
                fd->val = (ik__span){s + v0, 4};
                fd->type = IK_JSON_NULL;
            } else if (s[i] == '{' || s[i] == '[') {
                return JSON_FAIL("nested objects and arrays are not accepted (byte %zu)", v0);
            } else {
                return JSON_FAIL("bad value at byte %zu", v0);
            }
            k++;
            i = skip_ws(s, n, i);
            if (i < n && s[i] == ',') {
                i = skip_ws(s, n, i + 1);
                continue;
            }
            if (i < n && s[i] == '}') {
                i++;
                break;
            }
            return JSON_FAIL("expected ',' or '}' at byte %zu", i);
        }
    }
    i = skip_ws(s, n, i);
    if (i != n) return JSON_FAIL("trailing bytes after the object at byte %zu", i);
    return k;
}

static unsigned hex4(const char *p)
{
    return (unsigned)ik__hexval(p[0]) << 12 | (unsigned)ik__hexval(p[1]) << 8 |
           (unsigned)ik__hexval(p[2]) << 4 | (unsigned)ik__hexval(p[3]);
}

long ik__json_unescape(ik__span raw, char *out, size_t cap)
{
    size_t o = 0;
    const char *s = raw.p;
    size_t n = raw.n;
    for (size_t i = 0; i < n;) {
        char c = s[i];
        if (c != '\\') {
            if (o + 1 >= cap) return -1;
            out[o++] = c;
            i++;
            continue;
        }
        if (i + 1 >= n) return -1;
        char e = s[i + 1];
        unsigned cp;
        if (e != 'u') {
            static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
            const char *q = e ? strchr(from, e) : NULL;
            if (!q || o + 1 >= cap) return -1;
            out[o++] = to[q - from];
            i += 2;
            continue;
        }
        if (i + 6 > n) return -1;
        cp = hex4(s + i + 2);
        i += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate needs its low half */
            if (i + 6 > n || s[i] != '\\' || s[i + 1] != 'u') return -1;
            unsigned lo = hex4(s + i + 2);
            if (lo < 0xDC00 || lo > 0xDFFF) return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return -1;
        }
        if (cp == 0) return -1;
        char u[4];
        size_t l;
        if (cp < 0x80) {
            u[0] = (char)cp, l = 1;
        } else if (cp < 0x800) {
            u[0] = (char)(0xC0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3F)), l = 2;
        } else if (cp < 0x10000) {
            u[0] = (char)(0xE0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (char)(0x80 | (cp & 0x3F)), l = 3;
        } else {
            u[0] = (char)(0xF0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), l = 4;
        }
        if (o + l >= cap) return -1;
        memcpy(out + o, u, l);
        o += l;
    }
    if (o >= cap) return -1;
    out[o] = '\0';
    return (long)o;
}

/* A whole number from a JSON number or a decimal string. Returns 0, 1 if null, or
 * -1. */
static int json_int(const ik__json_field *f, int64_t *v)
{
    if (f->type == IK_JSON_NULL) return 1;
    if (f->type != IK_JSON_NUMBER && f->type != IK_JSON_STRING) return -1;
    return ik__parse_i64(f->val.p, f->val.n, v);
}

/* Copies at most 40 bytes of s for a message, control bytes as '?'. */
static const char *shown(ik__span s, char *buf, size_t len)
{
    size_t k = s.n < len - 1 ? s.n : len - 1;
    for (size_t i = 0; i < k; i++)
        buf[i] = (unsigned char)s.p[i] < 0x20 ? '?' : s.p[i];
    buf[k] = '\0';
    return buf;
}

#define BODY_FAIL(c, ...) (*code = (c), snprintf(why, why_len, __VA_ARGS__), -1)

int ik__tag_body_parse(const char *s, size_t n, ik__tag_body *out, const char **code, char *why,
                       size_t why_len)
{
    ik__json_field f[8];
    int k = ik__json_flat(s, n, f, 8, why, why_len);
    if (k < 0) {
        *code = "bad_json";
        return -1;
    }
    enum { F_TAG, F_KIND, F_START, F_STEP, F_DESC, F_N };
    static const char *const names[F_N] = {"tag", "kind", "start", "step", "description"};
    const ik__json_field *by[F_N] = {NULL};
    char key[16], q[41];
    for (int i = 0; i < k; i++) {
        int which = -1;
        if (ik__json_unescape(f[i].key, key, sizeof key) >= 0)
            for (int j = 0; j < F_N; j++)
                if (!strcmp(key, names[j])) which = j;
        if (which < 0)
            return BODY_FAIL("bad_json",
                             "unknown field \"%s\" (tag, kind, start, step, description)",
                             shown(f[i].key, q, sizeof q));
        if (by[which]) return BODY_FAIL("bad_json", "field \"%s\" given twice", names[which]);
        by[which] = &f[i];
    }
    memset(out, 0, sizeof *out);

    const ik__json_field *t = by[F_TAG];
    char name[4 * IK_TAG_NAME_MAX + 1];
    if (!t || t->type != IK_JSON_STRING)
        return BODY_FAIL("bad_tag",
                         "the body needs \"tag\": a name of 1 to %d bytes of "
                         "letters, digits and . _ : -",
                         IK_TAG_NAME_MAX);
    if (ik__json_unescape(t->val, name, sizeof name) < 0)
        return BODY_FAIL("bad_tag", "tag name is over %d bytes or holds a NUL", IK_TAG_NAME_MAX);
    if (ik_tag_name_check(name, why, why_len) != 0) {
        *code = "bad_tag";
        return -1;
    }
    memcpy(out->tag, name, strlen(name) + 1);

    const ik__json_field *kd = by[F_KIND];
    if (!kd || kd->type != IK_JSON_STRING ||
        !(ik__ieq(kd->val.p, kd->val.n, "segment") || ik__ieq(kd->val.p, kd->val.n, "sequence")))
        return BODY_FAIL("bad_kind", "\"kind\" must be \"segment\" or \"sequence\"");
    out->kind = ik__ieq(kd->val.p, kd->val.n, "segment") ? IK_TAG_SEGMENT : IK_TAG_SEQUENCE;

    out->start = 1;
    if (by[F_START]) {
        int r = json_int(by[F_START], &out->start);
        if (r < 0 || out->start < 0)
            return BODY_FAIL("bad_start",
                             "\"start\" must be a whole number from 0 to 9223372036854775807; "
                             "got %s",
                             shown(by[F_START]->val, q, sizeof q));
        if (r == 1) out->start = 1;
    }

    out->step = out->kind == IK_TAG_SEGMENT ? 1000 : 1;
    if (by[F_STEP]) {
        int64_t st = 0;
        int r = json_int(by[F_STEP], &st);
        if (r < 0 || (r == 0 && (st < 1 || st > 1000000)))
            return BODY_FAIL("bad_step",
                             "\"step\" must be a whole number from 1 to 1000000; got %s",
                             shown(by[F_STEP]->val, q, sizeof q));
        if (r == 0) {
            if (out->kind == IK_TAG_SEQUENCE && st != 1)
                return BODY_FAIL("bad_step",
                                 "a sequence tag takes no step (its IDs are contiguous); got %s",
                                 shown(by[F_STEP]->val, q, sizeof q));
            out->step = st;
        }
    }

    const ik__json_field *d = by[F_DESC];
    if (d && d->type != IK_JSON_NULL) {
        if (d->type != IK_JSON_STRING)
            return BODY_FAIL("bad_description", "\"description\" must be a string");
        if (ik__json_unescape(d->val, out->description, sizeof out->description) < 0)
            return BODY_FAIL("bad_description", "\"description\" is over %zu bytes or holds a NUL",
                             sizeof out->description - 1);
    }
    return 0;
}
