/* recipe_zk_names.c: which children of a ZooKeeper lock node are contenders, in
 * which order, and whom each one waits for; pure, for recipe_zk.c and unit tests.
 *
 * A contender's name ends in PATTERN followed by the 10-digit sequence ZooKeeper
 * appends to a SEQUENTIAL node ("%010d" of a signed 32-bit counter, so "-" and 10
 * digits once it wraps past 2^31). Curator names them `_c_<uuid>-lock-<seq>`,
 * kazoo `<hex>__lock__<seq>`: both count as mutex contenders, whatever comes
 * before the pattern (kazoo's regex `(?:__lock__|-lock-)(-?\d{10})$`). Order: the
 * sequence as a signed 32-bit integer (SPEC 6). Curator and kazoo compare the
 * digits as strings, which agrees for every sequence below 2^31; past the wrap
 * (a parent that saw 2^31 creates) they disagree among themselves anyway.
 */
#include "recipe.h"

#include <stdlib.h>
#include <string.h>

static const char *const mutex_patterns[] = {"-lock-", "__lock__", NULL};
static const char *const rw_patterns[] = {"__READ__", "__WRIT__", NULL};
static const char *const latch_patterns[] = {"latch-", NULL};

static const char *const *patterns_of(ik__lock_kind kind)
{
    switch (kind) {
    case IK__LOCK_MUTEX:
        return mutex_patterns;
    case IK__LOCK_READ:
    case IK__LOCK_WRITE:
        return rw_patterns;
    case IK__LOCK_LATCH:
        return latch_patterns;
    }
    return mutex_patterns;
}

int ik__contender_parse(ik__lock_kind kind, const char *name, ik__contender *c)
{
    size_t n = strlen(name);
    if (n < 10) return 0;
    const char *digits = name + n - 10;
    int64_t v = 0;
    for (int i = 0; i < 10; i++) {
        if (digits[i] < '0' || digits[i] > '9') return 0;
        v = v * 10 + (digits[i] - '0');
    }
    const char *end = digits; /* where the pattern must end */
    if (end > name && end[-1] == '-') {
        /* "-lock--0000000001"? only if a pattern ends right before the '-' */
        for (const char *const *p = patterns_of(kind); *p; p++) {
            size_t pl = strlen(*p);
            if ((size_t)(end - 1 - name) >= pl && memcmp(end - 1 - pl, *p, pl) == 0) {
                if (-v < INT32_MIN) return 0;
                c->name = name;
                c->seq = (int32_t)-v;
                c->writer = strcmp(*p, "__WRIT__") == 0;
                return 1;
            }
        }
    }
    for (const char *const *p = patterns_of(kind); *p; p++) {
        size_t pl = strlen(*p);
        if ((size_t)(end - name) >= pl && memcmp(end - pl, *p, pl) == 0) {
            if (v > INT32_MAX) return 0;
            c->name = name;
            c->seq = (int32_t)v;
            c->writer = strcmp(*p, "__WRIT__") == 0;
            return 1;
        }
    }
    return 0;
}

static int contender_cmp(const void *a, const void *b)
{
    const ik__contender *x = a, *y = b;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

void ik__contenders_sort(ik__contender *v, size_t n)
{
    if (n > 1) qsort(v, n, sizeof *v, contender_cmp);
}

int ik__contender_blocker(ik__lock_kind kind, const ik__contender *v, size_t n, const char *ours)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (strcmp(v[i].name, ours) == 0) break;
    if (i == n) return -2;
    if (kind != IK__LOCK_READ) return i == 0 ? -1 : (int)(i - 1);
    for (size_t j = i; j-- > 0;)
        if (v[j].writer) return (int)j;
    return -1;
}
