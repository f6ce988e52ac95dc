/* layout.c: the snowflake bit layout: compose, decode, check, parse, format.
 *
 * An ID is 0...0 | time | worker | sequence: the three fields take 63 bits or fewer
 * (fewer for a JavaScript-safe layout such as the js53 preset), the bits above them
 * are zero, so an ID is always a positive int64. time counts unit_ms units since
 * epoch_ms. Everything here is pure: no clock reads, no allocation, no global state.
 */
#include "internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEN_YEARS_MS (INT64_C(3652) * 86400 * 1000 + INT64_C(6) * 3600 * 1000)

void ik_layout_default(ik_layout *l)
{
    if (!l) return;
    l->epoch_ms = IK_DEFAULT_EPOCH_MS;
    l->unit_ms = 1;
    l->time_bits = 41;
    l->worker_bits = 10;
    l->seq_bits = 12;
    l->worker_min = 0;
    l->worker_max = (1u << 10) - 1;
    l->seq_random_bound = 0;
}

int64_t ik_layout_end_ms(const ik_layout *l)
{
    if (!l) return IK_EINVAL;
    if (l->time_bits >= 63) return INT64_MAX;
    uint64_t span = UINT64_C(1) << l->time_bits;
    if (l->unit_ms <= 0 || span > (uint64_t)(INT64_MAX - l->epoch_ms) / (uint64_t)l->unit_ms)
        return INT64_MAX;
    return l->epoch_ms + (int64_t)span * l->unit_ms;
}

int64_t ik_layout_ticks_at(const ik_layout *l, int64_t wall_ms)
{
    if (!l) return IK_EINVAL;
    int64_t rel = wall_ms - l->epoch_ms;
    if (rel >= 0) return rel / l->unit_ms;
    return -((-rel + l->unit_ms - 1) / l->unit_ms);
}

int ik_layout_check(const ik_layout *l, int64_t now_ms, char *why, size_t why_len)
{
    if (!l) return ik__fail(IK_EINVAL, why, why_len, "no layout given");
    if (l->unit_ms != 1 && l->unit_ms != 10 && l->unit_ms != 1000)
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "time unit must be 1ms, 10ms or 1s, not %" PRId64 "ms", l->unit_ms);
    if (l->time_bits + l->worker_bits + l->seq_bits > 63)
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "time, worker and sequence bits must sum to 63 or fewer, not %u+%u+%u=%u",
                        l->time_bits, l->worker_bits, l->seq_bits,
                        l->time_bits + l->worker_bits + l->seq_bits);
    if (l->seq_bits < 1 || l->seq_bits > 30)
        return ik__fail(IK_ELAYOUT, why, why_len, "sequence bits must be 1 to 30, not %u",
                        l->seq_bits);
    if (l->worker_bits > 20)
        return ik__fail(IK_ELAYOUT, why, why_len, "worker bits must be 0 to 20, not %u",
                        l->worker_bits);
    if (l->time_bits < 20)
        return ik__fail(IK_ELAYOUT, why, why_len, "time bits must be at least 20, not %u",
                        l->time_bits);
    uint32_t wmax = (1u << l->worker_bits) - 1;
    if (l->worker_min > l->worker_max || l->worker_max > wmax)
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "worker range %" PRIu32 "-%" PRIu32
                        " does not fit %u worker bits (0-%" PRIu32 ")",
                        l->worker_min, l->worker_max, l->worker_bits, wmax);
    if (l->seq_random_bound > (1u << (l->seq_bits - 1)))
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "random sequence start bound %" PRIu32
                        " is above half the sequence range (%u)",
                        l->seq_random_bound, 1u << (l->seq_bits - 1));
    if (l->epoch_ms < 0 || l->epoch_ms > now_ms)
        return ik__fail(IK_ELAYOUT, why, why_len, "epoch %" PRId64 " must lie between 1970 and now",
                        l->epoch_ms);
    int64_t end = ik_layout_end_ms(l);
    if (end == INT64_MAX)
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "%u time bits of %" PRId64 "ms reach past what Unix milliseconds can "
                        "hold; use fewer time bits",
                        l->time_bits, l->unit_ms);
    if (end - now_ms < TEN_YEARS_MS) {
        char date[IK__ISO8601_SIZE];
        ik__fmt_iso8601(date, end);
        return ik__fail(IK_ELAYOUT, why, why_len,
                        "%u time bits of %" PRId64 "ms from the epoch run out on %s, "
                        "less than 10 years from now",
                        l->time_bits, l->unit_ms, date);
    }
    return IK_OK;
}

int ik_layout_compose(const ik_layout *l, uint64_t ticks, uint32_t worker, uint32_t sequence,
                      int64_t *id)
{
    if (!l || !id) return IK_EINVAL;
    if (l->time_bits >= 64 || ticks >> l->time_bits || (uint64_t)worker >> l->worker_bits ||
        (uint64_t)sequence >> l->seq_bits)
        return IK_ERANGE;
    *id = (int64_t)((ticks << (l->worker_bits + l->seq_bits)) | ((uint64_t)worker << l->seq_bits) |
                    sequence);
    return IK_OK;
}

int ik_layout_decode(const ik_layout *l, int64_t id, ik_id_parts *out)
{
    if (!l || !out) return IK_EINVAL;
    if (id < 0) return IK_ERANGE;
    uint64_t u = (uint64_t)id;
    unsigned low = l->worker_bits + l->seq_bits;
    if (low >= 64) return IK_ERANGE;
    unsigned total = low + l->time_bits;
    if (total < 63 && u >> total) return IK_ERANGE; /* bits above the layout's fields */
    out->id = id;
    out->ticks = u >> low;
    out->worker = (uint32_t)((u >> l->seq_bits) & ((UINT64_C(1) << l->worker_bits) - 1));
    out->sequence = (uint32_t)(u & ((UINT64_C(1) << l->seq_bits) - 1));
    /* saturate: a layout that passed ik_layout_check never gets here, but decode
     * accepts any layout */
    if (l->unit_ms <= 0 || out->ticks > (uint64_t)(INT64_MAX - l->epoch_ms) / (uint64_t)l->unit_ms)
        out->time_ms = INT64_MAX;
    else
        out->time_ms = l->epoch_ms + (int64_t)out->ticks * l->unit_ms;
    return IK_OK;
}

int ik_parse_id(const char *text, size_t len, int64_t *out)
{
    if (!text || !out || len == 0 || len > 19) return IK_EINVAL;
    if (len > 1 && text[0] == '0') return IK_EINVAL;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] < '0' || text[i] > '9') return IK_EINVAL;
        v = v * 10 + (uint64_t)(text[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX) return IK_EINVAL;
    *out = (int64_t)v;
    return IK_OK;
}

/* Parses an unsigned decimal of 1 to 19 digits spanning [s, s+n) (leading zeros
 * allowed: 19 digits cannot overflow 64 bits). */
static int parse_u64(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    if (n == 0 || n > 19) return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return 0;
}

/* "YYYY-MM-DD" (UTC midnight) or Unix ms. */
static int parse_epoch(const char *s, size_t n, int64_t *out)
{
    uint64_t v, y, m, d;
    if (parse_u64(s, n, &v) == 0) {
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
        return 0;
    }
    if (n != 10 || s[4] != '-' || s[7] != '-' || parse_u64(s, 4, &y) || parse_u64(s + 5, 2, &m) ||
        parse_u64(s + 8, 2, &d))
        return -1;
    if (y < 1970 || m < 1 || m > 12 || d < 1 || d > 31) return -1;
    struct tm tm = {.tm_year = (int)y - 1900, .tm_mon = (int)m - 1, .tm_mday = (int)d};
    time_t t = timegm(&tm);
    if (t == (time_t)-1 || tm.tm_mday != (int)d) return -1; /* 2023-02-30 normalises away */
    *out = (int64_t)t * 1000;
    return 0;
}

/* The named layouts a layout text may start with (docs/snowflake.md, "Presets"). */
static const struct {
    const char *name;
    ik_layout l;
} presets[] = {
    {"default", {IK_DEFAULT_EPOCH_MS, 1, 41, 10, 12, 0, 1023, 0}},
    /* Below 2^53, so a JavaScript number holds every ID: 37 bits of 10 ms from
     * 2024-01-01 last 43.5 years (to 2067-07), 32 workers, 204,800 IDs/s each. */
    {"js53", {IK_JS53_EPOCH_MS, 10, 37, 5, 11, 0, 31, 0}},
};

int ik_layout_parse(ik_layout *l, const char *text, char *why, size_t why_len)
{
    if (!l || !text) return ik__fail(IK_ELAYOUT, why, why_len, "no layout given");
    ik_layout n = *l;
    int saw_bits = 0, saw_workers = 0;
    const char *p = text;
    if (!*p) return ik__fail(IK_ELAYOUT, why, why_len, "empty layout");
    /* A preset name first ("js53" or "js53,workers=0-7"): its values, then the items. */
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
        size_t nl = strlen(presets[i].name);
        if (strncmp(p, presets[i].name, nl) == 0 && (p[nl] == 0 || p[nl] == ',')) {
            n = presets[i].l;
            p += nl;
            if (*p == ',' && !*++p)
                return ik__fail(IK_ELAYOUT, why, why_len, "layout ends with a comma");
            break;
        }
    }
    while (*p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (!eq)
            return ik__fail(IK_ELAYOUT, why, why_len, "layout item '%.*s' is not key=value",
                            (int)(len > 40 ? 40 : len), p);
        size_t klen = (size_t)(eq - p);
        const char *v = eq + 1;
        size_t vlen = len - klen - 1;
#define KEY(k) (klen == sizeof(k) - 1 && memcmp(p, k, klen) == 0)
        if (KEY("bits")) {
            const char *s1 = memchr(v, '/', vlen);
            const char *s2 = s1 ? memchr(s1 + 1, '/', vlen - (size_t)(s1 + 1 - v)) : NULL;
            uint64_t t, w, q;
            if (!s1 || !s2 || parse_u64(v, (size_t)(s1 - v), &t) ||
                parse_u64(s1 + 1, (size_t)(s2 - s1 - 1), &w) ||
                parse_u64(s2 + 1, vlen - (size_t)(s2 + 1 - v), &q) || t > 63 || w > 63 || q > 63)
                return ik__fail(IK_ELAYOUT, why, why_len,
                                "bits must be TIME/WORKER/SEQUENCE, e.g. bits=41/10/12");
            n.time_bits = (unsigned)t;
            n.worker_bits = (unsigned)w;
            n.seq_bits = (unsigned)q;
            saw_bits = 1;
        } else if (KEY("epoch")) {
            if (parse_epoch(v, vlen, &n.epoch_ms))
                return ik__fail(IK_ELAYOUT, why, why_len,
                                "epoch must be Unix milliseconds or YYYY-MM-DD");
        } else if (KEY("unit")) {
            if (vlen == 3 && memcmp(v, "1ms", 3) == 0)
                n.unit_ms = 1;
            else if (vlen == 4 && memcmp(v, "10ms", 4) == 0)
                n.unit_ms = 10;
            else if ((vlen == 2 && memcmp(v, "1s", 2) == 0) ||
                     (vlen == 6 && memcmp(v, "1000ms", 6) == 0))
                n.unit_ms = 1000;
            else
                return ik__fail(IK_ELAYOUT, why, why_len, "unit must be 1ms, 10ms or 1s");
        } else if (KEY("workers")) {
            const char *dash = memchr(v, '-', vlen);
            uint64_t a, b;
            if (!dash || parse_u64(v, (size_t)(dash - v), &a) ||
                parse_u64(dash + 1, vlen - (size_t)(dash + 1 - v), &b) || a > UINT32_MAX ||
                b > UINT32_MAX)
                return ik__fail(IK_ELAYOUT, why, why_len, "workers must be A-B, e.g. workers=0-31");
            n.worker_min = (uint32_t)a;
            n.worker_max = (uint32_t)b;
            saw_workers = 1;
        } else if (KEY("seq-start")) {
            uint64_t b;
            if (vlen == 1 && v[0] == '0')
                n.seq_random_bound = 0;
            else if (vlen > 7 && memcmp(v, "random:", 7) == 0 && !parse_u64(v + 7, vlen - 7, &b) &&
                     b >= 1 && b <= UINT32_MAX)
                n.seq_random_bound = (uint32_t)b;
            else
                return ik__fail(IK_ELAYOUT, why, why_len,
                                "seq-start must be 0 or random:BOUND, e.g. random:100");
        } else {
            return ik__fail(IK_ELAYOUT, why, why_len,
                            "unknown layout key '%.*s' (known: bits, epoch, unit, workers, "
                            "seq-start; presets: default, js53)",
                            (int)(klen > 32 ? 32 : klen), p);
        }
#undef KEY
        p += len;
        if (*p == ',') {
            p++;
            if (!*p) return ik__fail(IK_ELAYOUT, why, why_len, "layout ends with a comma");
        }
    }
    if (saw_bits && !saw_workers) {
        n.worker_min = 0;
        n.worker_max = n.worker_bits >= 32 ? UINT32_MAX : (uint32_t)((1ull << n.worker_bits) - 1);
    }
    *l = n;
    return IK_OK;
}

int ik_layout_format(const ik_layout *l, char *buf, size_t len)
{
    if (!l || (!buf && len)) return IK_EINVAL;
    const char *unit = l->unit_ms == 1000 ? "1s" : l->unit_ms == 10 ? "10ms" : "1ms";
    char seq[32];
    if (l->seq_random_bound)
        snprintf(seq, sizeof seq, "random:%" PRIu32, l->seq_random_bound);
    else
        snprintf(seq, sizeof seq, "0");
    return snprintf(buf, len,
                    "bits=%u/%u/%u,epoch=%" PRId64 ",unit=%s,workers=%" PRIu32 "-%" PRIu32
                    ",seq-start=%s",
                    l->time_bits, l->worker_bits, l->seq_bits, l->epoch_ms, unit, l->worker_min,
                    l->worker_max, seq);
}
