/* http_query.c: a request's query, read once (http_query.h has the rules): one pass
 * over the query's bytes finds each parameter the routes know, by its first
 * occurrence, and judges its value as it goes; the Accept header decides the format
 * when the query does not. */
#include "http_query.h"

#include "../../lib/rules.h" /* ik__pct_decode: the tree's one percent-decoder */

#include <string.h>

/* The names the routes read, at their IK_Q_* index, and the room each one's decoded
 * value has (a longer value is bad). */
static const struct {
    const char *name;
    size_t len, room;
} known[IK_Q_N] = {
    [IK_Q_COUNT] = {"count", 5, 16},   [IK_Q_SECONDS] = {"seconds", 7, 16},
    [IK_Q_FORMAT] = {"format", 6, 8},  [IK_Q_IDS] = {"ids", 3, 8},
    [IK_Q_DECODE] = {"decode", 6, 24},
};

/* The index of the parameter named key[0..n-1], or IK_Q_N. */
static int param_of(const char *key, size_t n)
{
    for (int i = 0; i < IK_Q_N; i++)
        if (known[i].len == n && memcmp(key, known[i].name, n) == 0) return i;
    return IK_Q_N;
}

/* Judges parameter i's value v (as sent) into out. */
static void judge(ik__query *out, int i, ik__span v)
{
    char d[24];
    long k = ik__pct_decode(v.p, v.n, d, known[i].room);
    int ok = k >= 0;
    switch (i) {
    case IK_Q_COUNT:
        ok = ok && ik__parse_u32(d, (size_t)k, UINT32_MAX, &out->count) == 0;
        break;
    case IK_Q_SECONDS:
        ok = ok && ik__parse_u32(d, (size_t)k, UINT32_MAX, &out->seconds) == 0;
        break;
    case IK_Q_FORMAT:
        if (ok && ik__ieq(d, (size_t)k, "json"))
            out->fmt = IK_FMT_JSON;
        else if (ok && ik__ieq(d, (size_t)k, "text"))
            out->fmt = IK_FMT_TEXT;
        else
            ok = 0;
        break;
    case IK_Q_IDS:
        if (ok && ik__ieq(d, (size_t)k, "number"))
            out->ids_number = 1;
        else if (!(ok && ik__ieq(d, (size_t)k, "string")))
            ok = 0;
        break;
    default: /* IK_Q_DECODE: shown as sent, cut, when it does not decode */
        if (ok) {
            memcpy(out->decode, d, (size_t)k + 1);
        } else {
            size_t n = v.n < sizeof out->decode - 1 ? v.n : sizeof out->decode - 1;
            memcpy(out->decode, v.p, n);
            out->decode[n] = '\0';
        }
        break;
    }
    if (!ok) out->bad |= IK_Q_BIT(i);
}

/* Index of the first case-insensitive occurrence of lit (lower case) in s, or -1. */
static long ifind(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    for (size_t i = 0; i + l <= n; i++)
        if (ik__ieq(s + i, l, lit)) return (long)i;
    return -1;
}

/* The format an Accept header asks for: text if it names text/plain before any JSON
 * type, else JSON. */
static int accept_fmt(const char *accept, size_t alen)
{
    if (!accept || !alen) return IK_FMT_JSON;
    long t = ifind(accept, alen, "text/plain");
    if (t < 0) return IK_FMT_JSON;
    long j = ifind(accept, alen, "json");
    return (j < 0 || t < j) ? IK_FMT_TEXT : IK_FMT_JSON;
}

void ik__query_read(const char *q, size_t qlen, const char *accept, size_t alen, ik__query *out)
{
    out->has = out->bad = 0;
    out->ids_number = 0;
    out->decode[0] = '\0';
    /* "a=1&b&c=": each item up to '&', its name up to its first '=' ("b": an empty
     * value) */
    for (size_t i = 0; q && i <= qlen;) {
        size_t end = i, eq;
        while (end < qlen && q[end] != '&')
            end++;
        for (eq = i; eq < end && q[eq] != '='; eq++) {
        }
        int k = param_of(q + i, eq - i);
        if (k < IK_Q_N && !(out->has & IK_Q_BIT(k))) {
            out->has |= IK_Q_BIT(k);
            out->raw[k].p = eq < end ? q + eq + 1 : q + end;
            out->raw[k].n = eq < end ? end - eq - 1 : 0;
            judge(out, k, out->raw[k]);
        }
        i = end + 1;
    }
    if ((out->has & ~out->bad & IK_Q_BIT(IK_Q_FORMAT)) == 0) out->fmt = accept_fmt(accept, alen);
}
