/* options_size.c: the size rule of the public options structs (include/idkeeper.h,
 * "Options structs"): how the library reads a caller's struct that may be older
 * (smaller) or newer (larger) than its own. Pure. */
#include "internal.h"

#include <string.h>

/* Larger than any options struct will grow: a size above it is garbage. */
#define OPTIONS_SIZE_MAX 4096

int ik__options_copy(void *full, size_t full_size, const void *given, const char *what, char *why,
                     size_t why_len)
{
    size_t size;
    memcpy(&size, given, sizeof size);
    if (size < sizeof size || size > OPTIONS_SIZE_MAX)
        return ik__fail(IK_EINVAL, why, why_len,
                        "%s: size %zu is not a struct's size (call %s_init first)", what, size,
                        what);
    if (size > full_size) {
        const unsigned char *tail = (const unsigned char *)given + full_size;
        for (size_t i = 0; i < size - full_size; i++)
            if (tail[i])
                return ik__fail(IK_EINVAL, why, why_len,
                                "%s: a field this library (%s) does not know is set", what,
                                IK_VERSION_STRING);
        size = full_size;
    }
    memcpy((char *)full + sizeof size, (const char *)given + sizeof size, size - sizeof size);
    return IK_OK;
}
