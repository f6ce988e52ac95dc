/* fuzz_layout.c: the layout text parser, then check, format and a round trip. */
#include "fuzz.h"
#include "idkeeper.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    ik_layout l, before;
    char why[256];
    ik_layout_default(&l);
    before = l;
    if (ik_layout_parse(&l, text, why, sizeof why) != 0) {
        if (memcmp(&l, &before, sizeof l) != 0) abort(); /* bad input changes nothing */
        if (!why[0]) abort();                            /* and says why */
    } else if (ik_layout_check(&l, INT64_C(1795000000000), why, sizeof why) == 0) {
        char fmt[256];
        ik_layout back;
        ik_layout_format(&l, fmt, sizeof fmt);
        ik_layout_default(&back);
        if (ik_layout_parse(&back, fmt, why, sizeof why) || memcmp(&back, &l, sizeof l)) abort();
        int64_t id;
        ik_id_parts p;
        if (ik_layout_compose(&l, 12345, l.worker_max, 1, &id) == 0 &&
            (ik_layout_decode(&l, id, &p) || p.ticks != 12345 || p.worker != l.worker_max))
            abort();
        (void)ik_layout_end_ms(&l);
    }
    free(text);
    return 0;
}
