/* token.c: what checking a token needs: standard base64 (HTTP Basic) and a
 * constant-time compare; see token.h. */
#include "token.h"

#include <limits.h>
#include <openssl/evp.h>

long ik__base64_decode(const char *s, size_t n, char *out, size_t cap)
{
    /* libcrypto's decoder; it writes 3 bytes for every 4 and counts the padding in,
     * so the '=' are taken off its length here. */
    if (n == 0 || n % 4 != 0 || n / 4 * 3 > cap || n > INT_MAX) return -1;
    int len = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)s, (int)n);
    if (len < 0) return -1;
    if (s[n - 1] == '=') len--;
    if (s[n - 2] == '=') len--;
    return len;
}

int ik__ct_equal(const char *a, size_t an, const char *b, size_t bn)
{
    unsigned char d = (unsigned char)(an != bn);
    for (size_t i = 0; i < an; i++)
        d |= (unsigned char)(a[i] ^ (i < bn ? b[i] : 0));
    return d == 0;
}
