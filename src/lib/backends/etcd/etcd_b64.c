/* etcd_b64.c: base64 as etcd's JSON gateway writes keys and values (standard
 * alphabet, padded), for etcd_gateway.c. Pure; tests/fuzz/fuzz_etcd_answer.c reaches
 * the decoder through the answers it reads. */
#include "etcd_b64.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *ik__etcd_b64_encode(const char *s, size_t n)
{
    char *o = malloc((n + 2) / 3 * 4 + 1), *p = o;
    if (!o) return NULL;
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)u[i] << 16;
        if (i + 1 < n) v |= (uint32_t)u[i + 1] << 8;
        if (i + 2 < n) v |= u[i + 2];
        *p++ = B64[(v >> 18) & 63];
        *p++ = B64[(v >> 12) & 63];
        *p++ = i + 1 < n ? B64[(v >> 6) & 63] : '=';
        *p++ = i + 2 < n ? B64[v & 63] : '=';
    }
    *p = '\0';
    return o;
}

static int b64_val(char c)
{
    const char *p = c ? strchr(B64, c) : NULL;
    return p ? (int)(p - B64) : -1;
}

char *ik__etcd_b64_decode(const char *s, size_t n, size_t *out_len)
{
    if (n % 4) return NULL;
    char *o = malloc(n / 4 * 3 + 1);
    if (!o) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                v[j] = 0;
                pad++;
            } else if (pad || (v[j] = b64_val(s[i + j])) < 0) {
                free(o);
                return NULL;
            }
        }
        uint32_t x =
            (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        o[k++] = (char)(x >> 16);
        if (pad < 2) o[k++] = (char)(x >> 8);
        if (pad < 1) o[k++] = (char)x;
    }
    o[k] = '\0';
    *out_len = k;
    return o;
}
