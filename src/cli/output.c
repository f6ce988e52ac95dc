/* output.c: option values into library types, and results into text and JSON. */
#include "output.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

char *ik__cli_iso_ms(int64_t ms, char *buf, size_t len)
{
    int64_t secs = ms / 1000, frac = ms % 1000;
    if (frac < 0) {
        frac += 1000;
        secs -= 1;
    }
    time_t t = (time_t)secs;
    struct tm tm;
    if (!gmtime_r(&t, &tm) || tm.tm_year + 1900 > 9999 || tm.tm_year + 1900 < 0) {
        snprintf(buf, len, "@%" PRId64 "ms", ms);
        return buf;
    }
    snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
    return buf;
}

void ik__cli_json_string(FILE *f, const char *s)
{
    putc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"':
            fputs("\\\"", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\r':
            fputs("\\r", f);
            break;
        case '\t':
            fputs("\\t", f);
            break;
        default:
            if (*p < 0x20 || *p == 0x7f)
                fprintf(f, "\\u%04x", *p);
            else
                putc(*p, f);
        }
    }
    putc('"', f);
}

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static int hex_digit(char h)
{
    return h >= '0' && h <= '9'   ? h - '0'
           : h >= 'a' && h <= 'f' ? h - 'a' + 10
           : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                  : -1;
}

int ik__cli_json_get_string(const char *json, size_t len, const char *key, char *out,
                            size_t out_len)
{
    const char *p = json, *end = json + len;
    size_t kn = strlen(key);
    if (out_len == 0) return -1;
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || (size_t)(end - q) < kn + 2) return -1;
        p = q + 1;
        if (memcmp(p, key, kn) != 0 || p[kn] != '"') continue;
        const char *v = skip_ws(p + kn + 1, end);
        if (v >= end || *v != ':') continue;
        v = skip_ws(v + 1, end);
        if (v >= end || *v != '"') continue;
        size_t o = 0;
        for (v++; v < end && *v != '"'; v++) {
            char c = *v;
            if (c == '\\' && v + 1 < end) {
                c = *++v;
                switch (c) {
                case 'n':
                    c = '\n';
                    break;
                case 't':
                    c = '\t';
                    break;
                case 'r':
                    c = '\r';
                    break;
                case 'b':
                case 'f':
                    c = ' ';
                    break;
                case 'u': {
                    unsigned cp = 0;
                    int ok = end - v > 4;
                    for (int i = 1; ok && i <= 4; i++) {
                        int d = hex_digit(v[i]);
                        ok = d >= 0;
                        cp = cp * 16 + (unsigned)d;
                    }
                    if (ok) v += 4;
                    c = ok && cp >= 0x20 && cp < 0x7f ? (char)cp : '?';
                    break;
                }
                default:
                    break; /* \" \\ \/ */
                }
            }
            if (o + 1 < out_len) out[o++] = c;
        }
        out[o] = 0;
        return 0;
    }
    return -1;
}

int ik__cli_json_get_u64(const char *json, size_t len, const char *key, uint64_t *out)
{
    const char *p = json, *end = json + len;
    size_t kn = strlen(key);
    while (p < end) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q || (size_t)(end - q) < kn + 2) return -1;
        p = q + 1;
        if (memcmp(p, key, kn) != 0 || p[kn] != '"') continue;
        const char *v = skip_ws(p + kn + 1, end);
        if (v >= end || *v != ':') continue;
        v = skip_ws(v + 1, end);
        if (v >= end || *v < '0' || *v > '9') continue;
        uint64_t n = 0;
        for (; v < end && *v >= '0' && *v <= '9'; v++) {
            if (n > (UINT64_MAX - (uint64_t)(*v - '0')) / 10) return -1;
            n = n * 10 + (uint64_t)(*v - '0');
        }
        *out = n;
        return 0;
    }
    return -1;
}

int64_t ik__cli_status_max_batch(const char *body, size_t len)
{
    uint64_t m;
    if (ik__cli_json_get_u64(body, len, "max_batch", &m) != 0 || m > INT64_MAX) return -1;
    return (int64_t)m;
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
