/* fuzz_etcd_uri.c: the etcd:// and etcds:// URI parser (src/lib/backends/etcd/etcd_uri.c).
 * Checks, for every input: a refusal has a reason; an accepted URI's canonical form
 * parses back to the same target (the same endpoints, TLS and prefix), and formats
 * to the same text again. */
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_uri.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    memcpy(uri, data, size);
    uri[size] = '\0';
    char why[256] = "";
    static ik__etcd_target t, t2;
    if (ik__etcd_uri_parse(uri, &t, why, sizeof why) != 0) {
        if (!why[0]) abort();
        free(uri);
        return 0;
    }
    static char canon[8192], again[8192];
    if (ik__etcd_uri_format(&t, canon, sizeof canon) < 0) abort();
    if (ik__etcd_uri_parse(canon, &t2, why, sizeof why) != 0) abort();
    if (t.n != t2.n || t.tls != t2.tls || strcmp(t.prefix, t2.prefix) != 0) abort();
    if (ik__etcd_uri_format(&t2, again, sizeof again) < 0 || strcmp(canon, again) != 0) abort();
    free(uri);
    return 0;
}
