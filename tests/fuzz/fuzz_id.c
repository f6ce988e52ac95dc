/* fuzz_id.c: the strict decimal ID parser and decode (as `idkeeper decode` and
 * GET /v1/decode/{id} use them). */
#include "fuzz.h"
#include "idkeeper.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int64_t id;
    if (ik_parse_id((const char *)data, size, &id) == 0) {
        /* accepted: it must print back to exactly the input */
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%" PRId64, id);
        if ((size_t)n != size || memcmp(buf, data, size)) abort();
        ik_layout l;
        ik_layout_default(&l);
        ik_id_parts p;
        if (ik_layout_decode(&l, id, &p)) abort();
        int64_t back;
        if (ik_layout_compose(&l, p.ticks, p.worker, p.sequence, &back) || back != id) abort();
    }
    return 0;
}
