/* etcd_b64.h: base64 for etcd's JSON gateway (etcd_b64.c), under etcd_gateway.c. */
#ifndef IK_ETCD_B64_H
#define IK_ETCD_B64_H

#include <stddef.h>

/* s (n bytes) in padded base64, NUL-terminated; NULL when out of memory. */
char *ik__etcd_b64_encode(const char *s, size_t n);
/* Decodes s (n bytes, padded) into a new buffer with a NUL after its *out_len
 * bytes. NULL if malformed or out of memory. */
char *ik__etcd_b64_decode(const char *s, size_t n, size_t *out_len);

#endif
