/* recipe_zk_names.c: which children of a ZooKeeper lock node are contenders, in
 * which order, and whom each one waits for; pure, for recipe_zk.c and unit tests.
 *
 * A contender's name ends in PATTERN followed by the sequence ZooKeeper appends to a
 * SEQUENTIAL node: Java's "%010d" of the parent's signed 32-bit child counter, so 10
 * digits ("0000000042"), a minus and 9 digits from -999999999 to -1 ("-000000005"),
 * a minus and 10 digits below ("-2147483648"). Curator names them
 * `_c_<uuid>-lock-<seq>`, kazoo `<hex>__lock__<seq>`: both count as mutex
 * contenders, whatever comes before the pattern.
 *
 * Order (docs/guarantees.md promise 20, docs/recipes.md "The end of the sequence"): creation order.
 * Below the counter's end the sequence gives it. From 2147483647 on it does not: a server whose
 * counter wraps goes on at -2147483648, and ZooKeeper 3.8 keeps naming every new child 2147483647
 * (-2147483648 when creates are pipelined). So once any contender's sequence is 2147483647 or
 * negative, the caller fetches each one's creation zxid (czxid) and contenders are ordered by it:
 * ik__contenders_need_czxid says when. Both orders agree with creation order wherever each is used,
 * so two contenders that chose differently still agree on who is ahead.
 *
 * Not done: Curator and kazoo compare the text after the pattern as strings, which
 * agrees with us only below the counter's end; nothing here can make them agree past
 * it (docs/recipes.md).
 */
#include "recipe_zk_names.h"

#include <stdio.h>
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
    case IK__LOCK_SEMQ: /* a mutex: Curator's and kazoo's queues are their mutexes */
    case IK__LOCK_SEMA: /* not a contender: a lease node is never ordered */
        return mutex_patterns;
    }
    return mutex_patterns;
}

/* 1 if s (len characters) is exactly what Java's "%010d" prints for some 32-bit int,
 * stored in *v; else 0. */
static int zk_seq(const char *s, size_t len, int32_t *v)
{
    if (len != 10 && len != 11) return 0;
    int neg = s[0] == '-';
    size_t i = neg ? 1 : 0;
    if (len == 11 && !neg) return 0;
    int64_t x = 0;
    for (; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        x = x * 10 + (s[i] - '0');
    }
    if (neg) x = -x;
    if (x < INT32_MIN || x > INT32_MAX) return 0;
    char back[16];
    snprintf(back, sizeof back, "%010d", (int)x);
    if (strlen(back) != len || memcmp(back, s, len) != 0) return 0; /* "-0000000005", "-0" */
    *v = (int32_t)x;
    return 1;
}

int ik__contender_parse(ik__lock_kind kind, const char *name, ik__contender *c)
{
    size_t n = strlen(name);
    /* 10 or 11 characters of sequence: at most one of them is preceded by a pattern
     * (11 starts with '-', and no pattern ends in both '-' and the character before) */
    for (size_t len = 10; len <= 11; len++) {
        int32_t seq;
        if (n < len || !zk_seq(name + n - len, len, &seq)) continue;
        const char *end = name + n - len; /* where the pattern must end */
        for (const char *const *p = patterns_of(kind); *p; p++) {
            size_t pl = strlen(*p);
            if ((size_t)(end - name) >= pl && memcmp(end - pl, *p, pl) == 0) {
                c->name = name;
                c->seq = seq;
                c->writer = strcmp(*p, "__WRIT__") == 0;
                c->czxid = 0;
                return 1;
            }
        }
    }
    return 0;
}

int ik__contenders_need_czxid(const ik__contender *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i].seq == INT32_MAX || v[i].seq < 0) return 1;
    return 0;
}

static int by_seq(const void *a, const void *b)
{
    const ik__contender *x = a, *y = b;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int by_czxid(const void *a, const void *b)
{
    const ik__contender *x = a, *y = b;
    if (x->czxid != y->czxid) return x->czxid < y->czxid ? -1 : 1;
    return strcmp(x->name, y->name);
}

void ik__contenders_sort(ik__contender *v, size_t n, int use_czxid)
{
    if (n > 1) qsort(v, n, sizeof *v, use_czxid ? by_czxid : by_seq);
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

int ik__zk_node_name(ik__lock_kind kind, ik_semaphore_layout layout, const char *uuid, char *name,
                     size_t name_len, char *prefix, size_t prefix_len)
{
    static const char *const parts[] = {
        [IK__LOCK_MUTEX] = "lock-",  [IK__LOCK_READ] = "__READ__", [IK__LOCK_WRITE] = "__WRIT__",
        [IK__LOCK_LATCH] = "latch-", [IK__LOCK_SEMQ] = "lock-",    [IK__LOCK_SEMA] = "lease-",
    };
    int kazoo = layout == IK_SEMAPHORE_KAZOO && (kind == IK__LOCK_SEMQ || kind == IK__LOCK_SEMA);
    int p, n;
    if (kazoo) {
        char hex[33];
        size_t k = 0;
        for (const char *c = uuid; *c && k < 32; c++)
            if (*c != '-') hex[k++] = *c;
        hex[k] = '\0';
        /* kazoo/recipe/lock.py (2.8.0): Lock's prefix, uuid4().hex + "__lock__" (127);
         * Semaphore's lease, path + "/" + uuid4().hex (539) */
        const char *tail = kind == IK__LOCK_SEMQ ? "__lock__" : "";
        p = snprintf(prefix, prefix_len, "%s%s", hex, tail);
        n = snprintf(name, name_len, "%s%s", hex, tail);
    } else {
        /* Curator's withProtection(): "_c_" + UUID + "-" before the node's name */
        p = snprintf(prefix, prefix_len, "_c_%s-", uuid);
        n = snprintf(name, name_len, "_c_%s-%s", uuid, parts[kind]);
    }
    return p < 0 || n < 0 || (size_t)p >= prefix_len || (size_t)n >= name_len ? -1 : 0;
}
