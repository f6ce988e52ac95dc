/* fuzz_redis_info.c: reading a field of an INFO answer, as the Redis evidence does
 * (ik__redis_info_field, src/lib/backends/redis/redis_conn.c). The input is a field
 * name, a NUL, then the INFO text. Checks, for every input: the value fits its buffer
 * and holds no line end; a value found is the rest of a line that starts "NAME:"; a
 * field absent reads "". */
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "redis_conn.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 2);
    memcpy(buf, data, size);
    buf[size] = buf[size + 1] = '\0';
    const char *name = buf, *info = buf + strlen(buf) + 1;
    if (info > buf + size) info = buf + size;
    char val[16] = "x";
    ik__redis_info_field(info, name, val, sizeof val);
    size_t n = strlen(val);
    if (n >= sizeof val || strpbrk(val, "\r\n")) abort();
    if (n) { /* a line "NAME:VAL..." in info */
        size_t nl = strlen(name);
        const char *p = info;
        int found = 0;
        for (; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
            if (!strncmp(p, name, nl) && p[nl] == ':' && !strncmp(p + nl + 1, val, n)) found = 1;
        if (!found) abort();
    }
    free(buf);
    return 0;
}
