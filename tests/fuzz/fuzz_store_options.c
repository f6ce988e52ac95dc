/* fuzz_store_options.c: a backend's store options (src/lib/store_options.c): the
 * URI's query taken apart by a backend's table, and the "NAME=VALUE" list of
 * ik_coord_options.store_options beside it, for every table of the registry.
 *
 * The input: the URI's tail on its first line (put after each table's
 * "SCHEME://h:1/a?"), then one list entry a line.
 *
 * Checks: 0 gives a list whose every entry is "NAME=VALUE" with NAME a row of the
 * table and VALUE one its check takes, and a URI without any of the table's keys in
 * its query; an error comes with a one-line reason that never holds the text of the
 * input's auth value (SO2). Under ASan/LSan: no crash, no leak. */
#include "backend.h"
#include "fuzz.h"
#include "internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* 1 if the query of uri holds a key that is a row of t. */
static int holds_a_row(const ik__store_option *t, const char *uri)
{
    const char *q = strchr(uri, '?');
    for (const char *p = q ? q + 1 : NULL; p && *p;) {
        size_t n = strcspn(p, "&"), k = strcspn(p, "=&");
        for (size_t r = 0; k < n && t[r].name; r++)
            if (strlen(t[r].name) == k && !memcmp(t[r].name, p, k)) return 1;
        p += n + (p[n] == '&');
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096 || memchr(data, 0, size)) return 0;
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    const char *list[16] = {NULL};
    size_t n = 0;
    char *tail = text, *nl = strchr(text, '\n');
    if (nl) *nl = '\0';
    for (char *p = nl ? nl + 1 : NULL; p && n < 15; n++) {
        list[n] = p;
        char *e = strchr(p, '\n');
        if (e) *e = '\0';
        p = e ? e + 1 : NULL;
    }
    ik_coord_options o;
    ik_coord_options_init(&o);
    o.store_options = list;
    size_t nb;
    const ik__backend_ops *const *b = ik__coord_backends(&nb);
    for (size_t i = 0; i < nb; i++) {
        const ik__store_option *t = b[i]->options;
        char uri[4200], why[256] = "", *out = NULL, **got = NULL;
        snprintf(uri, sizeof uri, "%s://h:1/a?%s", b[i]->scheme, tail);
        int rc = ik__store_options_resolve(t, b[i]->uri_keys, b[i]->scheme, uri, &o, &out, &got,
                                           why, sizeof why);
        if (rc) {
            if (!why[0] || strchr(why, '\n') || got || out) abort();
            const char *secret = strstr(uri, "auth=");
            size_t sl = secret ? strcspn(secret + 5, "&") : 0;
            if (sl >= 6) { /* a value long enough not to be in any message by chance */
                char s[64];
                snprintf(s, sizeof s, "%.*s", (int)(sl < 63 ? sl : 63), secret + 5);
                if (strstr(why, s)) abort();
            }
        } else {
            for (size_t k = 0; got && got[k]; k++) {
                const char *eq = strchr(got[k], '=');
                long r = -1;
                for (size_t x = 0; eq && t && t[x].name; x++)
                    if (strlen(t[x].name) == (size_t)(eq - got[k]) &&
                        !memcmp(t[x].name, got[k], (size_t)(eq - got[k])))
                        r = (long)x;
                if (r < 0 || ik__store_option_check(&t[r], eq + 1, NULL, 0) != 0) abort();
            }
            if (t && holds_a_row(t, out ? out : uri)) abort();
        }
        ik__store_uri_free(out);
        ik__store_options_free(got);
    }
    free(text);
    return 0;
}
