/* lock_notify.c: how a lock protocol (recipe_local.c, recipe_zk.c) tells a lock's
 * owner of a state change. Below both the protocols and the dispatch (recipe.c),
 * so that a protocol never calls up into recipe.c. */
#include "recipe.h"

void ik__lock_notify(ik_lock *lk, ik_hold_state state, const char *why)
{
    if (lk->on_change) lk->on_change(lk->ctx, state, why ? why : "");
}
