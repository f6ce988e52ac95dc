/* store_options.c: a backend's own options (rules.h, "store options"): the check of
 * a value by its row, the resolution coord.c makes before a backend's open (the URI's
 * query, ik_coord_options.store_options, the deprecated fields, the defaults, into one
 * list), and the lookups a backend's open makes in that list. Below every backend and
 * above none: coord.c and the backends call it, it calls neither.
 *
 * Invariants:
 *   SO1  A backend sees only values its rows accept: every value, wherever it came
 *        from, passes ik__store_option_check before it enters the list.
 *   SO2  No message here holds a value of a secret row (IK__STORE_USERPASS): errors
 *        name the option and the rule, never the text; the list is wiped before it
 *        is freed.
 *   SO3  The URI the backend gets is the caller's without the table's query items,
 *        so its canonical URI (ops->uri, shown in logs and status answers) never
 *        holds one. */
#include "backend.h"
#include "internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int ik__store_option_check(const ik__store_option *op, const char *text, char *why, size_t why_len)
{
    size_t len = strlen(text);
    switch (op->shape) {
    case IK__STORE_INT: {
        int64_t v = 0;
        int ok = len > 0 && len <= 19;
        for (size_t i = 0; ok && i < len; i++) {
            int d = text[i] - '0';
            ok = d >= 0 && d <= 9 && v <= (INT64_MAX - d) / 10;
            v = v * 10 + d;
        }
        if (!ok) {
            ik__fail(IK_EINVAL, why, why_len, "'%.32s' is not a number (decimal digits)", text);
            return -1;
        }
        if (v < op->min || v > op->max) {
            ik__fail(IK_EINVAL, why, why_len, "%s is out of range %" PRId64 "..%" PRId64, text,
                     op->min, op->max);
            return -1;
        }
        return 0;
    }
    case IK__STORE_USERPASS: {
        const char *colon = strchr(text, ':');
        int ctl = 0;
        for (size_t i = 0; i < len; i++)
            ctl |= (unsigned char)text[i] < ' ' || text[i] == 0x7f;
        if (!colon || colon == text || ctl) {
            ik__fail(IK_EINVAL, why, why_len,
                     "must be USER:PASSWORD (a user, then ':'), "
                     "without control characters");
            return -1;
        }
        return 0;
    }
    }
    ik__fail(IK_EINVAL, why, why_len, "an option of unknown shape");
    return -1;
}

/* ---- the resolution --------------------------------------------------------- */

/* The value of each row while resolving: from the URI, from the list, in order. */
typedef struct found {
    char *uri_val;        /* malloc'd, percent-decoded */
    const char *list_val; /* inside the caller's list */
} found;

static size_t table_len(const ik__store_option *t)
{
    size_t n = 0;
    while (t && t[n].name)
        n++;
    return n;
}

/* The row named name[0..len) in t, or -1. */
static long row_of(const ik__store_option *t, const char *name, size_t len)
{
    for (size_t i = 0; t && t[i].name; i++)
        if (strlen(t[i].name) == len && !memcmp(t[i].name, name, len)) return (long)i;
    return -1;
}

/* 1 if name[0..len) is one of keys ("db, prefix, user"; "*": any). */
static int own_key(const char *keys, const char *name, size_t len)
{
    if (!keys) return 0;
    if (!strcmp(keys, "*")) return 1;
    for (const char *k = keys; *k;) {
        size_t kl = strcspn(k, ", ");
        if (kl == len && !memcmp(k, name, len)) return 1;
        k += kl;
        k += strspn(k, ", ");
    }
    return 0;
}

/* "the zk backend has no option 'x' (its options: a, b)" into why (with the URI's
 * own keys where uri_keys); returns err. */
static int no_such(int err, const char *scheme, const ik__store_option *t, const char *uri_keys,
                   const char *name, size_t len, char *why, size_t why_len)
{
    char names[256] = "";
    size_t used = 0;
    for (size_t i = 0; t && t[i].name && used < sizeof names; i++)
        used +=
            (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", t[i].name);
    int n = (int)(len > 64 ? 64 : len);
    if (!t || !t->name)
        return ik__fail(err, why, why_len, "the %s backend takes no store options ('%.*s')", scheme,
                        n, name);
    if (uri_keys)
        return ik__fail(err, why, why_len,
                        "the %s backend has no option '%.*s' (its options: %s; its URI's own "
                        "keys: %s)",
                        scheme, n, name, names, uri_keys);
    return ik__fail(err, why, why_len, "the %s backend has no option '%.*s' (its options: %s)",
                    scheme, n, name, names);
}

static void wipe_free(char *s)
{
    if (!s) return;
    memset(s, 0, strlen(s));
    free(s);
}

void ik__store_uri_free(char *uri)
{
    wipe_free(uri);
}

void ik__store_options_free(char **list)
{
    for (size_t i = 0; list && list[i]; i++)
        wipe_free(list[i]);
    free(list);
}

/* Takes the table's items out of uri's query into f[]; the rest of the query (the
 * URI's own keys, uri_keys) stays in *uri_out (NULL: uri as it is). */
static int split_query(const ik__store_option *t, const char *uri_keys, const char *scheme,
                       const char *uri, found *f, char **uri_out, char *why, size_t why_len)
{
    const char *colon, *at = ik__uri_userinfo(uri, &colon);
    const char *q = strchr(at ? at : uri, '?'); /* a password may hold '?' */
    *uri_out = NULL;
    if (!q) return IK_OK;
    size_t ulen = strlen(uri);
    char *out = calloc(1, ulen + 1); /* zeroed: wipe_free's strlen stays inside */
    if (!out) return IK_ENOMEM;
    size_t o = (size_t)(q - uri);
    memcpy(out, uri, o);
    int first = 1;
    for (const char *p = q + 1; *p;) {
        size_t n = strcspn(p, "&");
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n;
        long r = eq ? row_of(t, p, kl) : -1;
        if (r < 0 && !own_key(uri_keys, p, kl)) {
            int rc = eq ? no_such(IK_EURI, scheme, t, uri_keys, p, kl, why, why_len)
                        : ik__fail(IK_EURI, why, why_len,
                                   "a %s URI's query holds NAME=VALUE items, not '%.*s'", scheme,
                                   (int)(n > 64 ? 64 : n), p);
            wipe_free(out);
            return rc;
        }
        if (r < 0) { /* the backend's own query key: it judges it */
            out[o++] = first ? '?' : '&';
            memcpy(out + o, p, n);
            o += n;
            first = 0;
        } else {
            const ik__store_option *op = &t[r];
            char *v = calloc(1, n + 1), vwhy[200] = "";
            if (!v) {
                wipe_free(out);
                return IK_ENOMEM;
            }
            int bad = f[r].uri_val != NULL;
            if (bad)
                ik__fail(IK_EURI, why, why_len, "the %s URI gives %s twice", scheme, op->name);
            else if (ik__pct_decode(eq + 1, (size_t)(p + n - eq - 1), v, n + 1) < 0)
                bad = ik__fail(IK_EURI, why, why_len,
                               "%s in the %s URI: a bad %%-escape (%%XX, two hex digits)", op->name,
                               scheme);
            else if (ik__store_option_check(op, v, vwhy, sizeof vwhy) != 0)
                bad =
                    ik__fail(IK_EURI, why, why_len, "%s in the %s URI: %s", op->name, scheme, vwhy);
            if (bad) {
                wipe_free(v);
                wipe_free(out);
                return IK_EURI;
            }
            f[r].uri_val = v;
        }
        p += n;
        if (*p == '&') p++;
    }
    out[o] = '\0';
    *uri_out = out;
    return IK_OK;
}

/* The deprecated field of row op in o, as text into buf, or NULL where it is unset
 * (0 or NULL: what a program that never set it holds). */
static const char *legacy_value(const ik__store_option *op, const ik_coord_options *o, char *buf,
                                size_t len)
{
    if (!op->legacy || !o) return NULL;
    const char *field = (const char *)o + op->legacy;
    if (op->shape == IK__STORE_INT) {
        int v;
        memcpy(&v, field, sizeof v);
        if (!v) return NULL;
        snprintf(buf, len, "%d", v);
        return buf;
    }
    const char *s;
    memcpy(&s, field, sizeof s);
    return s && *s ? s : NULL;
}

int ik__store_options_resolve(const ik__store_option *t, const char *uri_keys, const char *scheme,
                              const char *uri, const ik_coord_options *o, char **uri_out,
                              char ***list_out, char *why, size_t why_len)
{
    size_t n = table_len(t);
    found *f = calloc(n + 1, sizeof *f);
    char **list = NULL;
    if (!f) return IK_ENOMEM;
    *uri_out = NULL;
    if (list_out) *list_out = NULL;
    int rc = IK_OK;
    if (n) rc = split_query(t, uri_keys, scheme, uri, f, uri_out, why, why_len);
    for (const char *const *e = o ? o->store_options : NULL; !rc && e && *e; e++) {
        const char *eq = strchr(*e, '=');
        long r = eq ? row_of(t, *e, (size_t)(eq - *e)) : -1;
        char vwhy[200] = "";
        if (!eq)
            rc = ik__fail(IK_EINVAL, why, why_len, "a store option is NAME=VALUE, not '%.64s'", *e);
        else if (r < 0)
            rc = no_such(IK_EINVAL, scheme, t, NULL, *e, (size_t)(eq - *e), why, why_len);
        else if (f[r].list_val)
            rc = ik__fail(IK_EINVAL, why, why_len, "the store option %s is given twice", t[r].name);
        else if (ik__store_option_check(&t[r], eq + 1, vwhy, sizeof vwhy) != 0)
            rc = ik__fail(IK_EINVAL, why, why_len, "store option %s: %s", t[r].name, vwhy);
        else if (f[r].uri_val && strcmp(f[r].uri_val, eq + 1) != 0)
            rc = ik__fail(IK_EINVAL, why, why_len,
                          "the store option %s is given in the URI and in the options, with "
                          "two values",
                          t[r].name);
        else
            f[r].list_val = eq + 1;
    }
    if (!rc && list_out && !(list = calloc(n + 1, sizeof *list))) rc = IK_ENOMEM;
    for (size_t i = 0, k = 0; !rc && list && i < n; i++) {
        char buf[32], vwhy[200] = "";
        const char *v = f[i].list_val ? f[i].list_val : f[i].uri_val;
        if (!v && (v = legacy_value(&t[i], o, buf, sizeof buf)) &&
            ik__store_option_check(&t[i], v, vwhy, sizeof vwhy) != 0)
            rc = ik__fail(IK_EINVAL, why, why_len, "store option %s (its old field): %s", t[i].name,
                          vwhy);
        if (!v) v = t[i].def;
        if (rc || !v) continue;
        size_t len = strlen(t[i].name) + strlen(v) + 2;
        if (!(list[k] = malloc(len))) {
            rc = IK_ENOMEM;
            break;
        }
        snprintf(list[k++], len, "%s=%s", t[i].name, v);
    }
    for (size_t i = 0; i < n; i++)
        wipe_free(f[i].uri_val);
    free(f);
    if (rc) {
        ik__store_options_free(list);
        wipe_free(*uri_out);
        *uri_out = NULL;
        return rc;
    }
    if (list_out) *list_out = list;
    return IK_OK;
}

/* ---- the backend's lookups -------------------------------------------------- */

const char *ik__store_opt(const ik_coord_options *o, const char *name)
{
    size_t len = strlen(name);
    for (const char *const *e = o ? o->store_options : NULL; e && *e; e++)
        if (!strncmp(*e, name, len) && (*e)[len] == '=') return *e + len + 1;
    return NULL;
}

int64_t ik__store_opt_int(const ik_coord_options *o, const char *name, int64_t none)
{
    const char *v = ik__store_opt(o, name);
    return v ? strtoll(v, NULL, 10) : none;
}
