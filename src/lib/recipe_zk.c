/* recipe_zk.c: locks and elections on ZooKeeper (placeholder until the protocol
 * lands: every call is refused as unsupported). */
#include "recipe.h"

#ifdef IK_HAVE_ZK
static int zk_lock_init(ik_lock *lk)
{
    (void)lk;
    return IK_EURI;
}
static void zk_lock_fini(ik_lock *lk)
{
    (void)lk;
}
static int zk_acquire(ik_lock *lk, int64_t t, int64_t *f)
{
    (void)lk;
    (void)t;
    (void)f;
    return IK_EURI;
}
static int zk_release(ik_lock *lk)
{
    (void)lk;
    return IK_EINVAL;
}
static void zk_cancel(ik_lock *lk, int on)
{
    (void)lk;
    (void)on;
}
static void zk_info(ik_lock *lk, ik_hold_info *o)
{
    (void)lk;
    (void)o;
}
static int zk_leader(ik__backend *be, const char *p, char **id)
{
    (void)be;
    (void)p;
    (void)id;
    return IK_EURI;
}
const ik__recipe_ops ik__recipe_zk_ops = {
    "zk",       sizeof(ik_lock), zk_lock_init, zk_lock_fini, zk_acquire,
    zk_release, zk_cancel,       zk_info,      zk_leader,
};
#endif
