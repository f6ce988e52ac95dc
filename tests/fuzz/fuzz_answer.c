/* fuzz_answer.c: the CLI's JSON, both ways (src/cli/output.c, through jansson).
 *
 * The input is a server's answer as `idkeeper next` reads it: the error body's
 * "error" and "message" and /v1/status's http.max_batch. Then the input, as text,
 * goes through the CLI's JSON writer.
 *
 * Checks: a string read fits its buffer, NUL-terminated, whatever the buffer size;
 * max_batch is -1 or a non-negative number; any bytes written as a JSON string
 * (ik__cli_json_text) print as JSON that reads back to a string. Under ASan/LSan:
 * no crash, no leak.
 */
/* fuzz-sources: src/cli/output.c src/cli/options.c src/cli/store_flags.c */
#include "fuzz.h"
#include "output.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *body = (const char *)data;
    static const size_t sizes[] = {1, 2, 5, 64, 512};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        char out[512];
        memset(out, 'x', sizeof out);
        if (ik__cli_json_get_string(body, size, "message", out, sizes[i]) == 0 &&
            strnlen(out, sizes[i]) >= sizes[i])
            abort();
        (void)ik__cli_json_get_string(body, size, "error", out, sizes[i]);
    }
    if (ik__cli_status_max_batch(body, size) < -1) abort();

    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0'; /* the text up to its first NUL, as a C string */
    char *printed = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&printed, &len);
    if (f) {
        json_t *s = ik__cli_json_text(text);
        if (!s) abort(); /* only out of memory may fail */
        if (ik__cli_json_print(f, s) != 0) abort();
        fclose(f);
        json_error_t err;
        json_t *back = json_loadb(printed, len, JSON_DECODE_ANY, &err);
        if (!json_is_string(back)) abort();
        json_decref(back);
        free(printed);
    }
    free(text);
    return 0;
}
