/* output.c: option values into library types, and results into text and JSON. */
#include "output.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON, through jansson ------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0 if there is none:
 * no overlong forms, no surrogates, nothing above U+10FFFF (RFC 3629). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0], cp, min;
    size_t len;
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    return cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : len;
}

json_t *ik__cli_json_text(const char *s)
{
    json_t *v = json_string(s);
    if (v) return v;
    /* not UTF-8 (or out of memory): each byte that starts no valid sequence becomes
     * U+FFFD, as the daemon writes such text */
    size_t n = strlen(s), o = 0;
    char *fixed = malloc(n * 3 + 1);
    if (!fixed) return NULL;
    for (size_t i = 0; i < n;) {
        size_t l = utf8_seq((const unsigned char *)s + i, n - i);
        if (l) {
            memcpy(fixed + o, s + i, l);
            o += l;
            i += l;
        } else {
            /* NOLINTNEXTLINE(bugprone-not-null-terminated-result): bytes, with a length */
            memcpy(fixed + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    v = json_stringn(fixed, o);
    free(fixed);
    return v;
}

json_t *ik__cli_json_time(int64_t ms)
{
    char iso[IK__ISO8601_SIZE];
    ik__fmt_iso8601(iso, ms);
    return json_string(iso);
}

int ik__cli_json_print(FILE *f, json_t *v)
{
    if (!v) return -1;
    int rc = json_dumpf(v, f, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(v);
    if (rc != 0 || putc('\n', f) == EOF) return -1;
    return 0;
}

/* The body as a JSON object, or NULL if it is not one. */
static json_t *load_object(const char *body, size_t len)
{
    json_error_t err;
    json_t *v = json_loadb(body, len, 0, &err);
    if (v && !json_is_object(v)) {
        json_decref(v);
        v = NULL;
    }
    return v;
}

int ik__cli_json_get_string(const char *json, size_t len, const char *key, char *out,
                            size_t out_len)
{
    if (out_len == 0) return -1;
    json_t *root = load_object(json, len);
    json_t *v = root ? json_object_get(root, key) : NULL;
    if (!json_is_string(v)) {
        json_decref(root);
        return -1;
    }
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= out_len) { /* cut at a character boundary */
        n = out_len - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(out, s, n);
    out[n] = 0;
    json_decref(root);
    return 0;
}

int64_t ik__cli_status_max_batch(const char *body, size_t len)
{
    json_t *root = load_object(body, len);
    json_t *m = json_object_get(json_object_get(root, "http"), "max_batch");
    int64_t r = json_is_integer(m) && json_integer_value(m) >= 0 ? json_integer_value(m) : -1;
    json_decref(root);
    return r;
}

int ik__cli_layout_from_opts(const ik_cli_opts *o, ik_layout *l, char *why, size_t why_len)
{
    ik_layout n;
    ik_layout_default(&n);
    char where[300], reason[256] = "", buf[256];
    const ik_cli_value *v = &o->v[IK_OPT_LAYOUT];
    if (v->text && ik_layout_parse(&n, v->text, reason, sizeof reason) != 0) {
        snprintf(why, why_len, "%s: %s", ik__cli_source_name(o, IK_OPT_LAYOUT, where, sizeof where),
                 reason);
        return -1;
    }
    v = &o->v[IK_OPT_EPOCH];
    if (v->text) {
        snprintf(buf, sizeof buf, "epoch=%s", v->text);
        if (ik_layout_parse(&n, buf, reason, sizeof reason) != 0) {
            snprintf(why, why_len, "%s: %s",
                     ik__cli_source_name(o, IK_OPT_EPOCH, where, sizeof where), reason);
            return -1;
        }
    }
    v = &o->v[IK_OPT_WORKER_RANGE];
    if (v->text) {
        n.worker_min = (uint32_t)v->n;
        n.worker_max = (uint32_t)v->n2;
    }
    *l = n;
    return 0;
}

const char *ik__cli_layout_sources(const ik_cli_opts *o, char *buf, size_t len)
{
    static const ik_cli_opt_id parts[] = {IK_OPT_LAYOUT, IK_OPT_EPOCH, IK_OPT_WORKER_RANGE};
    size_t n = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        const ik_cli_value *v = &o->v[parts[i]];
        if (!v->text || v->src == IK_SRC_DEFAULT || n >= len) continue;
        const char *sep = n ? ", " : "";
        if (v->src == IK_SRC_ARGV)
            n += (size_t)snprintf(buf + n, len - n, "%s--%s", sep, ik__cli_options[parts[i]].name);
        else if (v->src == IK_SRC_ENV)
            n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, ik__cli_options[parts[i]].env);
        else
            n += (size_t)snprintf(buf + n, len - n, "%s%s:%d", sep,
                                  o->config_path ? o->config_path : "config", v->line);
    }
    if (n == 0) snprintf(buf, len, "the default layout");
    return buf;
}

void ik__cli_hazard_table(FILE *f, const ik_hazard *rows, size_t n)
{
    int wc = (int)strlen("CHECK"), wv = (int)strlen("VALUE"), wd = (int)strlen("VERDICT");
    for (size_t i = 0; i < n; i++) {
        int c = (int)strlen(rows[i].check), v = (int)strlen(rows[i].value);
        int d = (int)strlen(ik_verdict_name(rows[i].verdict));
        wc = c > wc ? c : wc;
        wv = v > wv ? v : wv;
        wd = d > wd ? d : wd;
    }
    fprintf(f, "%-*s  %-*s  %-*s  %s\n", wc, "CHECK", wv, "VALUE", wd, "VERDICT", "WHAT TO CHANGE");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%-*s  %-*s  %-*s  %s\n", wc, rows[i].check, wv, rows[i].value, wd,
                ik_verdict_name(rows[i].verdict), rows[i].fix[0] ? rows[i].fix : "-");
}

json_t *ik__cli_hazard_json(const char *uri, const ik_hazard *rows, size_t n)
{
    json_t *checks = json_array();
    int ok = 1;
    for (size_t i = 0; checks && i < n; i++) {
        ok &= rows[i].verdict == IK_VERDICT_OK;
        json_t *one =
            json_pack("{s:o,s:o,s:s,s:o}", "check", ik__cli_json_text(rows[i].check), "value",
                      ik__cli_json_text(rows[i].value), "verdict", ik_verdict_name(rows[i].verdict),
                      "fix", ik__cli_json_text(rows[i].fix));
        if (json_array_append_new(checks, one) != 0) {
            json_decref(checks);
            checks = NULL;
        }
    }
    return json_pack("{s:o,s:b,s:o}", "coord", ik__cli_json_text(uri), "ok", ok, "checks", checks);
}
