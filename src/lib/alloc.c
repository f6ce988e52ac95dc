/* alloc.c: the library's allocation helpers: ik__grow, the one growth step of a
 * growable array in the tree (rules.h: the library, the daemon and the CLI use it),
 * and ik_free, which frees what the API returned. */
#include "internal.h"

#include <stdlib.h>

int ik__grow(void **v, size_t *cap, size_t n, size_t elem, size_t first)
{
    if (n < *cap) return IK_OK;
    size_t nc = *cap ? *cap * 2 : first;
    void *nv = realloc(*v, nc * elem);
    if (!nv) return IK_ENOMEM;
    *v = nv;
    *cap = nc;
    return IK_OK;
}

void ik_free(void *p)
{
    free(p);
}
