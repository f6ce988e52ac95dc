/* cmd_lock.c: `idkeeper lock PATH -- CMD [ARG...]`: runs CMD while holding the lock
 * at PATH (docs/guarantees.md promise 22), and stops it if the lock is lost. The
 * states, the wait and the run are hold_take.c's, which `semaphore` shares: a lock
 * here, a lease there.
 *
 * The grace (ik__cli_grace, hold_run.h): SIGKILL must land before the store can hand
 * the lock on. LOST comes, and the guardian stops CMD by itself, 2/3 of the term T
 * after the last proof's send; the next holder can hold from T on: the default grace
 * is T/6 and a --grace above T/4 is refused (docs/recipes.md). */
#include "cli.h"
#include "hold_run.h"

#include <stdio.h>
#include <string.h>

static int lock_acquire(void *h, int64_t timeout_ms, int64_t *fence)
{
    return ik_lock_acquire(h, timeout_ms, fence);
}

static int lock_release(void *h)
{
    return ik_lock_release(h);
}

static void lock_cancel(void *h)
{
    ik_lock_cancel(h);
}

static void lock_info(void *h, ik_hold_info *out)
{
    ik_lock_get_info(h, out);
}

static int64_t lock_until(void *h)
{
    return ik_lock_trusted_until(h);
}

int ik__cmd_lock(const ik_cli_command *cmd, ik_cli_opts *o)
{
    ik_sup sup;
    memset(&sup, 0, sizeof sup);
    ik_coord *c;
    int64_t t0 = ik__sup_mono_ms();
    int rc = ik__cli_hold_begin(cmd, o, &sup, &c);
    if (rc) return rc;
    int64_t open_ms = ik__sup_mono_ms() - t0; /* not counted by --timeout (docs/cli.md) */
    const char *path = o->args[0];
    ik_lock_options lo;
    ik_lock_options_init(&lo);
    lo.on_change = ik__cli_take_on_change;
    lo.on_proof = ik__cli_take_on_proof;
    lo.ctx = &sup;
    ik_lock *lk = NULL;
    int err = ik_lock_create(c, path, &lo, &lk);
    if (err) {
        ik__cli_fail(cmd,
                     "bad lock path '%s': %s (segments of printable bytes, no '.' or '..', "
                     "at most 400 bytes)",
                     path, ik_strerror(err));
        rc = IK_EXIT_USAGE;
    } else {
        char noun[600];
        snprintf(noun, sizeof noun, "the lock at %s", path);
        ik_cli_taker t = {noun,         "IDKEEPER_LOCK", NULL,      lk,        lock_acquire,
                          lock_release, lock_cancel,     lock_info, lock_until};
        rc = ik__cli_take_and_run(cmd, o, &sup, c, open_ms, &t);
    }
    ik_lock_destroy(lk);
    ik_coord_close(c);
    ik__sup_fini(&sup);
    return rc;
}
