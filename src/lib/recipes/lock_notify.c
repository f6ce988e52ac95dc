/* lock_notify.c: how a lock protocol (recipe_local.c, recipe_zk.c) tells a lock's
 * owner of a state change, and of a proof of its grant. Below both the protocols and
 * the dispatch (recipe.c), so that a protocol never calls up into recipe.c. */
#include "recipe.h"
#include "internal.h"

#include <time.h>

void ik__lock_notify(ik_lock *lk, ik_hold_state state, const char *why)
{
    if (state == IK_HOLD_LOST) __atomic_store_n(&lk->trusted_ns, 0, __ATOMIC_SEQ_CST);
    if (lk->on_change) lk->on_change(lk->ctx, state, why ? why : "");
}

int64_t ik__lock_public_ns(int64_t mono_ns)
{
    if (mono_ns <= 0 || mono_ns == INT64_MAX) return mono_ns;
    /* CLOCK_MONOTONIC first: the offset is then never too small */
    struct timespec m;
    clock_gettime(CLOCK_MONOTONIC, &m);
    int64_t mono = (int64_t)m.tv_sec * 1000000000 + m.tv_nsec;
    int64_t v = mono_ns - (ik__mono_ns() - mono);
    return v > 0 ? v : 1;
}

void ik__lock_proved(ik_lock *lk, int64_t until_ns)
{
    int64_t was = __atomic_load_n(&lk->trusted_ns, __ATOMIC_SEQ_CST);
    if (until_ns <= was) return;
    __atomic_store_n(&lk->trusted_ns, until_ns, __ATOMIC_SEQ_CST);
    if (lk->on_proof) lk->on_proof(lk->ctx, ik__lock_public_ns(until_ns));
}
