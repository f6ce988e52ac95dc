/* fuzz_etcd_answer.c: the reader of etcd's v3 JSON gateway answers
 * (src/lib/backends/etcd/etcd_gateway.c, ik__etcd_answer_parse). Checks, for every
 * input: a refusal has a reason and leaves nothing allocated; an accepted answer's
 * key-values each hold their decoded bytes with a NUL after them, and its counts
 * agree with its arrays. */
#include "fuzz.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etcd_gateway.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ik__etcd_answer a;
    char why[256] = "";
    if (ik__etcd_answer_parse((const char *)data, size, &a, why, sizeof why) != 0) {
        if (!why[0] || a.kvs || a.members || a.n_kvs) abort();
        return 0;
    }
    for (size_t i = 0; i < a.n_kvs; i++) {
        if (!a.kvs[i].key || !a.kvs[i].value) abort();
        if (a.kvs[i].key[a.kvs[i].key_len] != '\0') abort();
        if (a.kvs[i].value[a.kvs[i].value_len] != '\0') abort();
    }
    if (a.n_members && !a.members) abort();
    if (a.err_code < 0 || a.err_code > 99) abort();
    ik__etcd_answer_free(&a);
    return 0;
}
