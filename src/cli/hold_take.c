/* hold_take.c: what `idkeeper lock` and `idkeeper semaphore` share: wait for a
 * grant (a lock, a lease) on a thread of its own, then run CMD under it through the
 * one supervise loop (hold_run.c), and give the grant back once CMD's tree is gone
 * (see hold_run.h's ik__cli_take_and_run).
 *
 *   WAITING --granted--> GRANTED --the grant says HELD--> RUNNING
 *   GRANTED --the grant says IN_DOUBT--> wait for HELD again (or LOST)
 *   GRANTED --the grant says LOST--> release, exit 125 (CMD never ran)
 *   RUNNING (ik__cli_run_held) --CMD's tree gone--> release, exit with CMD's code;
 *        --lost, or its trust lapsed: CMD stopped, its tree gone--> release, exit 125
 *   WAITING --timeout--> exit 124          WAITING, GRANTED --TERM/INT/HUP--> exit 128+sig
 *
 * The acquire runs on a thread of its own so that the main thread keeps serving
 * signals while it waits; a signal cancels the wait. A notice of the grant (in
 * doubt, lost) may come before the acquire's own 'A' (the process may pause right
 * after the grant): in GRANTED the grant's state, which the notices follow, decides
 * whether CMD starts.
 */
#include "hold_run.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

void ik__cli_take_on_change(void *ctx, ik_hold_state s, const char *why)
{
    (void)why;
    ik__sup_note(ctx, s == IK_HOLD_LOST ? 'L' : s == IK_HOLD_IN_DOUBT ? 'D' : 'H');
}

void ik__cli_take_on_proof(void *ctx, int64_t until_ns)
{
    ik__sup_deadline(ctx, until_ns);
}

typedef struct take_run {
    const ik_cli_taker *t;
    ik_sup *sup;
    int64_t timeout_ms;
    int rc; /* of the acquire */
    int64_t fence;
} take_run;

static void *acquire_thread(void *arg)
{
    take_run *r = arg;
    r->rc = r->t->acquire(r->t->h, r->timeout_ms, &r->fence);
    ik__sup_note(r->sup, 'A');
    return NULL;
}

/* WAITING: the acquire's answer, a signal cancelling it. The exit code, or 0 once
 * granted (r->rc 0). */
static int wait_granted(const ik_cli_command *cmd, take_run *r, ik_coord *c, int64_t open_ms)
{
    const ik_cli_taker *t = r->t;
    pthread_t th;
    if (pthread_create(&th, NULL, acquire_thread, r) != 0) {
        ik__cli_fail(cmd, "cannot start a thread");
        return IK_EXIT_FAIL;
    }
    int sig = 0;
    ik_sup_event ev;
    for (;;) {
        if (ik__sup_next(r->sup, -1, &ev) != 0) break;
        if (ev.kind == IK_SUP_NOTE && ev.note == 'A') break;
        if (ev.kind == IK_SUP_SIGNAL && !sig) {
            sig = ev.sig;
            t->cancel(t->h);
        }
    }
    pthread_join(th, NULL);
    if (r->rc == 0 && sig) { /* granted as the signal came: do not start CMD */
        t->release(t->h);
        r->rc = IK_ECLOSED;
    }
    if (r->rc == 0) return 0;
    if (r->rc == IK_ETIMEDOUT || r->rc == IK_EBUSY) {
        if (open_ms < 1000)
            ik__cli_fail(cmd, "timed out after %" PRId64 " ms waiting for %s", r->timeout_ms,
                         t->noun);
        else
            ik__cli_fail(cmd,
                         "timed out after %" PRId64 " ms waiting for %s "
                         "(--timeout counts from the moment the store was open and "
                         "checked, which took %" PRId64 " ms before it)",
                         r->timeout_ms, t->noun, open_ms);
        return IK_EXIT_LOCK_TIMEOUT;
    }
    if (r->rc == IK_ECLOSED) return 128 + sig;
    ik_hold_info hi; /* in the store's words where it gave some */
    t->info(t->h, &hi);
    if (r->rc == IK_ECONFLICT) {
        ik__cli_fail(cmd, "%s", hi.why);
        return IK_EXIT_USAGE;
    }
    char why[700];
    ik__cli_fail(cmd, "cannot take %s on %s: %s", t->noun, ik_coord_uri(c),
                 hi.why[0] ? hi.why : ik__cli_store_why(c, r->rc, why, sizeof why));
    return IK_EXIT_FAIL;
}

/* GRANTED: CMD starts only while the grant says HELD. 0 (HELD, *hi its info), or the
 * exit code with the grant given back. */
static int wait_held(const ik_cli_command *cmd, take_run *r, const char *argv0, ik_hold_info *hi)
{
    const ik_cli_taker *t = r->t;
    int told_doubt = 0;
    ik_sup_event ev;
    for (;;) {
        t->info(t->h, hi);
        if (hi->state == IK_HOLD_HELD) return 0;
        if (hi->state != IK_HOLD_IN_DOUBT) {
            ik__cli_fail(cmd, "lost %s (%s) before %s started; it did not run", t->noun, hi->why,
                         argv0);
            t->release(t->h);
            return IK_EXIT_LOCK_LOST;
        }
        if (!told_doubt) {
            fprintf(stderr,
                    "idkeeper: %s: %s is in doubt (%s); %s starts once the same session "
                    "answers again, and not at all if it is lost\n",
                    cmd->name, t->noun, hi->why, argv0);
            told_doubt = 1;
        }
        /* a note (held again, lost) or a signal; or look again: a doubt that ends
         * before the monitor has seen it sends no note */
        if (ik__sup_next(r->sup, 100, &ev) != 0) {
            ik__cli_fail(cmd, "waiting: %s", strerror(errno));
            t->release(t->h);
            return IK_EXIT_FAIL;
        }
        if (ev.kind == IK_SUP_SIGNAL) {
            t->release(t->h);
            return 128 + ev.sig;
        }
    }
}

int ik__cli_take_and_run(const ik_cli_command *cmd, const ik_cli_opts *o, ik_sup *sup, ik_coord *c,
                         int64_t open_ms, const ik_cli_taker *t)
{
    const char *path = o->args[0];
    char *const *argv = &o->args[o->rest];
    take_run r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.sup = sup;
    r.timeout_ms = o->v[IK_OPT_TIMEOUT].text ? o->v[IK_OPT_TIMEOUT].n : -1;
    ik_hold_info hi;
    t->info(t->h, &hi);
    int rc = ik__cli_grace_check(cmd, o, c, hi.session_timeout_ms);
    if (rc == 0) rc = wait_granted(cmd, &r, c, open_ms);
    if (rc == 0) rc = wait_held(cmd, &r, argv[0], &hi);
    if (rc) return rc;
    int64_t grace = ik__cli_grace_now(o, hi.session_timeout_ms);

    /* RUNNING */
    char e_path[512 + 64], e_fence[64], e_node[sizeof hi.node + 64];
    snprintf(e_path, sizeof e_path, "%s_PATH=%s%s", t->env_prefix, path[0] == '/' ? "" : "/", path);
    snprintf(e_fence, sizeof e_fence, "IDKEEPER_FENCE=%" PRId64, r.fence);
    snprintf(e_node, sizeof e_node, "%s_NODE=%s", t->env_prefix, hi.node);
    const char *env[] = {e_path, e_fence, e_node, t->env_extra, NULL};
    ik_cli_grant g = {t->noun, t->h, t->info, t->trusted_until};
    int code, passed;
    ik_cli_end end = ik__cli_run_held(cmd, sup, &g, argv, env, grace, &code, &passed);
    rc = end == IK_CLI_END_LOST ? IK_EXIT_LOCK_LOST : code;
    /* CMD's tree is gone: now the release (one order, hold_run.h) */
    int err = t->release(t->h);
    if (err && err != IK_ELOST)
        fprintf(stderr, "idkeeper: %s: giving back %s: %s\n", cmd->name, t->noun, ik_strerror(err));
    return rc;
}
