/* fuzz_uri.c: the coordination URI syntax check (local:DIR, zk://..., redis://...,
 * postgresql://..., mysql://...). */
#include "fuzz.h"
#include "idkeeper.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *uri = malloc(size + 1);
    memcpy(uri, data, size);
    uri[size] = '\0';
    char why[256] = "";
    if (ik_coord_uri_check(uri, why, sizeof why) != 0 && !why[0]) abort();
    free(uri);
    return 0;
}
