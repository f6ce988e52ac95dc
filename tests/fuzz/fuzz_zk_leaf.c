/* fuzz_zk_leaf.c: a Meituan Leaf fleet's node names and node data, as read from
 * ZooKeeper (src/lib/backends/zk/backend_zk_leaf.c). The first byte picks the
 * parser. Checks, for every input: an accepted name is IP:PORT-NNNNNNNNNN and prints
 * back to itself; accepted data has a timestamp, and Leaf's data written for what it
 * held (when that is an identity) reads back to the same fields. */
#include "fuzz.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_zk.h"

static void check_name(const char *s)
{
    char ident[300], back[400];
    uint32_t seq;
    if (ik__zk_leaf_parse_name(s, ident, sizeof ident, &seq) != 0) return;
    if (!strchr(ident, ':') || strchr(ident, '-') || strchr(ident, '/')) abort();
    snprintf(back, sizeof back, "%s-%010" PRIu32, ident, seq);
    if (strcmp(back, s) != 0) abort();
}

static void check_data(const char *d, size_t n)
{
    ik__zk_leaf_data a, b;
    if (ik__zk_leaf_parse_data(d, (int)n, &a) != 0) return;
    if (a.timestamp_ms < 0) abort();
    char id[100], buf[256];
    snprintf(id, sizeof id, "%s:%s", a.ip, a.port);
    if (ik__zk_leaf_identity_check(id, NULL, 0) != 0) return;
    int len = ik__zk_leaf_format(buf, sizeof buf, id, a.timestamp_ms);
    if (len < 0) abort();
    if (ik__zk_leaf_parse_data(buf, len, &b) != 0) abort();
    if (b.timestamp_ms != a.timestamp_ms || strcmp(a.ip, b.ip) || strcmp(a.port, b.port)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096) return 0;
    char *s = malloc(size);
    memcpy(s, data + 1, size - 1);
    s[size - 1] = '\0';
    if (data[0] & 1)
        check_data(s, size - 1);
    else if (!memchr(s, 0, size - 1))
        check_name(s);
    free(s);
    return 0;
}
