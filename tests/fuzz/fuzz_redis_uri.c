/* fuzz_redis_uri.c: the redis:// and redis+unix:// URI parser (src/lib/backends/redis/redis_uri.c).
 * Checks, for every input: a refusal has a reason; an accepted URI's canonical form
 * parses back to the same target and is the same with or without the URI's
 * password (it never holds it). */
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redis_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    memcpy(uri, data, size);
    uri[size] = '\0';
    char why[256] = "";
    static ik__redis_target t, t2;
    if (ik__redis_uri_parse(uri, &t, why, sizeof why) != 0) {
        if (!why[0]) abort();
        free(uri);
        return 0;
    }
    char canon[600], bare[600];
    if (ik__redis_uri_format(&t, canon, sizeof canon) < 0) abort();
    /* the password never reaches the canonical form: without it, the same text */
    memset(t.password, 0, sizeof t.password);
    if (ik__redis_uri_format(&t, bare, sizeof bare) < 0 || strcmp(canon, bare) != 0) abort();
    if (ik__redis_uri_parse(canon, &t2, why, sizeof why) != 0) abort();
    if (memcmp(&t, &t2, sizeof t) != 0) abort();
    free(uri);
    return 0;
}
