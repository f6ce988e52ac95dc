/* cmd_lock.c: `idkeeper lock PATH -- CMD [ARG...]`: runs CMD while holding the lock
 * at PATH (docs/guarantees.md promise 22), and stops it if the lock is lost.
 *
 *   WAITING --granted--> GRANTED --the lock says HELD--> RUNNING
 *   GRANTED --the lock says IN_DOUBT--> wait for HELD again (or LOST)
 *   GRANTED --the lock says LOST--> release, exit 125 (CMD never ran)
 *   RUNNING (ik__cli_run_held, hold_run.c) --CMD's tree gone--> release, exit with
 *        CMD's code;   --lost, or its trust lapsed: CMD stopped, its tree gone-->
 *        release, exit 125
 *   WAITING --timeout--> exit 124          WAITING, GRANTED --TERM/INT/HUP--> exit 128+sig
 *
 * The acquire runs on a thread of its own so that the main thread keeps serving
 * signals while it waits; a signal cancels the wait (ik_lock_cancel). A notice of
 * the lock (in doubt, lost) may come before the acquire's own 'A' (the process may
 * pause right after the grant): in GRANTED the lock's state, which the notices
 * follow, decides whether CMD starts.
 *
 * The grace (ik__cli_grace, hold_run.h): SIGKILL must land before the store can hand
 * the lock on. LOST comes, and the guardian stops CMD by itself, 2/3 of the term T
 * after the last proof's send; the next holder can hold from T on: the default grace
 * is T/6 and a --grace above T/4 is refused (docs/recipes.md). */
#include "cli.h"
#include "hold_run.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef struct lock_run {
    ik_sup sup;
    ik_lock *lk;
    int64_t timeout_ms;
    int rc; /* of the acquire */
    int64_t fence;
} lock_run;

static void on_change(void *ctx, ik_hold_state s, const char *why)
{
    (void)why;
    lock_run *r = ctx;
    ik__sup_note(&r->sup, s == IK_HOLD_LOST ? 'L' : s == IK_HOLD_IN_DOUBT ? 'D' : 'H');
}

/* On the hold monitor's thread: the guardian gets each new end of the trust window. */
static void on_proof(void *ctx, int64_t until_ns)
{
    lock_run *r = ctx;
    ik__sup_deadline(&r->sup, until_ns);
}

static void *acquire_thread(void *arg)
{
    lock_run *r = arg;
    r->rc = ik_lock_acquire(r->lk, r->timeout_ms, &r->fence);
    ik__sup_note(&r->sup, 'A');
    return NULL;
}

static void grant_info(void *h, ik_hold_info *out)
{
    ik_lock_get_info(h, out);
}

static int64_t grant_until(void *h)
{
    return ik_lock_trusted_until(h);
}

int ik__cmd_lock(const ik_cli_command *cmd, ik_cli_opts *o)
{
    lock_run r;
    memset(&r, 0, sizeof r);
    ik_coord *c;
    int64_t t0 = ik__sup_mono_ms();
    int rc = ik__cli_hold_begin(cmd, o, &r.sup, &c);
    if (rc) return rc;
    int64_t open_ms = ik__sup_mono_ms() - t0; /* not counted by --timeout (docs/cli.md) */
    const char *path = o->args[0];
    char *const *argv = &o->args[o->rest];
    r.timeout_ms = o->v[IK_OPT_TIMEOUT].text ? o->v[IK_OPT_TIMEOUT].n : -1;
    ik_lock_options lo;
    ik_lock_options_init(&lo);
    lo.on_change = on_change;
    lo.on_proof = on_proof;
    lo.ctx = &r;
    int err = ik_lock_create(c, path, &lo, &r.lk);
    if (err) {
        ik__cli_fail(cmd,
                     "bad lock path '%s': %s (segments of printable bytes, no '.' or '..', "
                     "at most 400 bytes)",
                     path, ik_strerror(err));
        ik_coord_close(c);
        ik__sup_fini(&r.sup);
        return IK_EXIT_USAGE;
    }
    ik_hold_info hi;
    ik_lock_get_info(r.lk, &hi);
    rc = ik__cli_grace_check(cmd, o, c, hi.session_timeout_ms);
    if (rc) goto out;

    pthread_t t;
    if (pthread_create(&t, NULL, acquire_thread, &r) != 0) {
        ik__cli_fail(cmd, "cannot start a thread");
        rc = IK_EXIT_FAIL;
        goto out;
    }
    /* WAITING */
    int sig = 0;
    ik_sup_event ev;
    for (;;) {
        if (ik__sup_next(&r.sup, -1, &ev) != 0) break;
        if (ev.kind == IK_SUP_NOTE && ev.note == 'A') break;
        if (ev.kind == IK_SUP_SIGNAL && !sig) {
            sig = ev.sig;
            ik_lock_cancel(r.lk);
        }
    }
    pthread_join(t, NULL);
    if (r.rc == 0 && sig) { /* granted as the signal came: do not start CMD */
        ik_lock_release(r.lk);
        r.rc = IK_ECLOSED;
    }
    if (r.rc != 0) {
        if (r.rc == IK_ETIMEDOUT || r.rc == IK_EBUSY) {
            if (open_ms < 1000)
                ik__cli_fail(cmd, "timed out after %" PRId64 " ms waiting for the lock at %s",
                             r.timeout_ms, path);
            else
                ik__cli_fail(cmd,
                             "timed out after %" PRId64 " ms waiting for the lock at %s "
                             "(--timeout counts from the moment the store was open and "
                             "checked, which took %" PRId64 " ms before it)",
                             r.timeout_ms, path, open_ms);
            rc = IK_EXIT_LOCK_TIMEOUT;
        } else if (r.rc == IK_ECLOSED) {
            rc = 128 + sig;
        } else { /* in the store's words where it gave some: the lock's, or the coord's */
            char why[700];
            ik_lock_get_info(r.lk, &hi);
            ik__cli_fail(cmd, "cannot take the lock at %s on %s: %s", path, ik_coord_uri(c),
                         hi.why[0] ? hi.why : ik__cli_store_why(c, r.rc, why, sizeof why));
            rc = IK_EXIT_FAIL;
        }
        goto out;
    }

    /* GRANTED: CMD starts only while the lock says HELD */
    int told_doubt = 0;
    for (;;) {
        ik_lock_get_info(r.lk, &hi);
        if (hi.state == IK_HOLD_HELD) break;
        if (hi.state != IK_HOLD_IN_DOUBT) {
            ik__cli_fail(cmd, "lost the lock at %s (%s) before %s started; it did not run", path,
                         hi.why, argv[0]);
            ik_lock_release(r.lk);
            rc = IK_EXIT_LOCK_LOST;
            goto out;
        }
        if (!told_doubt) {
            fprintf(stderr,
                    "idkeeper: lock: the lock at %s is in doubt (%s); %s starts once the "
                    "same session answers again, and not at all if the lock is lost\n",
                    path, hi.why, argv[0]);
            told_doubt = 1;
        }
        /* a note (held again, lost) or a signal; or look again: a doubt that ends
         * before the lock's monitor has seen it sends no note */
        if (ik__sup_next(&r.sup, 100, &ev) != 0) {
            ik__cli_fail(cmd, "waiting: %s", strerror(errno));
            ik_lock_release(r.lk);
            rc = IK_EXIT_FAIL;
            goto out;
        }
        if (ev.kind == IK_SUP_SIGNAL) {
            ik_lock_release(r.lk);
            rc = 128 + ev.sig;
            goto out;
        }
    }
    int64_t grace = ik__cli_grace_now(o, hi.session_timeout_ms);

    /* RUNNING */
    char e_path[512 + 32], e_fence[64], e_node[sizeof hi.node + 32];
    snprintf(e_path, sizeof e_path, "IDKEEPER_LOCK_PATH=%s%s", path[0] == '/' ? "" : "/", path);
    snprintf(e_fence, sizeof e_fence, "IDKEEPER_FENCE=%" PRId64, r.fence);
    snprintf(e_node, sizeof e_node, "IDKEEPER_LOCK_NODE=%s", hi.node);
    const char *env[] = {e_path, e_fence, e_node, NULL};
    char noun[600];
    snprintf(noun, sizeof noun, "the lock at %s", path);
    ik_cli_grant g = {noun, r.lk, grant_info, grant_until};
    int code, passed;
    ik_cli_end end = ik__cli_run_held(cmd, &r.sup, &g, argv, env, grace, &code, &passed);
    rc = end == IK_CLI_END_LOST ? IK_EXIT_LOCK_LOST : code;
    /* CMD's tree is gone: now the release (one order, hold_run.h) */
    err = ik_lock_release(r.lk);
    if (err && err != IK_ELOST)
        fprintf(stderr, "idkeeper: lock: releasing the lock at %s: %s\n", path, ik_strerror(err));
out:
    ik_lock_destroy(r.lk);
    ik_coord_close(c);
    ik__sup_fini(&r.sup);
    return rc;
}
