/* cmd_lock.c: `idkeeper lock PATH -- CMD [ARG...]`: runs CMD while holding the lock
 * at PATH (docs/guarantees.md promise 22), and stops it if the lock is lost.
 *
 *   WAITING --granted--> GRANTED --the lock says HELD--> RUNNING
 *   GRANTED --the lock says IN_DOUBT--> wait for HELD again (or LOST)
 *   GRANTED --the lock says LOST--> release, exit 125 (CMD never ran)
 *   RUNNING --CMD exits--> its tree gone (SIGKILL to what is left after the grace),
 *        release, exit with CMD's code (supervise.h: the guardian)
 *   WAITING --timeout--> exit 124          WAITING, GRANTED --TERM/INT/HUP--> exit 128+sig
 *   RUNNING --lock LOST--> STOPPING (SIGTERM, SIGKILL after the grace) --> exit 125
 *   RUNNING --lock IN_DOUBT / restored--> a line on stderr; CMD keeps running
 *   RUNNING --TERM/INT/HUP/QUIT--> forwarded to CMD's process group; SIGKILL to
 *        CMD's tree if it has not ended within the grace
 *
 * The acquire runs on a thread of its own so that the main thread keeps serving
 * signals while it waits; a signal cancels the wait (ik_lock_cancel). A notice of
 * the lock (in doubt, lost) may come before the acquire's own 'A' (the process may
 * pause right after the grant): in GRANTED the lock's state, which the notices
 * follow, decides whether CMD starts.
 *
 * The grace (ik__cli_grace): on zk:// SIGKILL must land before the session can
 * expire and the lock pass on. LOST comes 2/3 of the session timeout T after the
 * last proof of the session at the latest, the next holder can hold from T on: the
 * default grace is T/6 and a --grace above T/4 is refused (docs/recipes.md). */
#include "cli.h"
#include "supervise.h"

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

static void *acquire_thread(void *arg)
{
    lock_run *r = arg;
    r->rc = ik_lock_acquire(r->lk, r->timeout_ms, &r->fence);
    ik__sup_note(&r->sup, 'A');
    return NULL;
}

/* Checks "PATH -- CMD [ARG...]". 0 or IK_EXIT_USAGE. */
int ik__cli_path_and_cmd(const ik_cli_command *cmd, const ik_cli_opts *o)
{
    if (o->nargs == 0) {
        ik__cli_fail(cmd, "no PATH given (usage: idkeeper %s)", cmd->usage);
        return IK_EXIT_USAGE;
    }
    if (o->rest < 0 || o->rest == o->nargs) {
        ik__cli_fail(cmd, "no command given after '--' (usage: idkeeper %s)", cmd->usage);
        return IK_EXIT_USAGE;
    }
    if (o->rest != 1) {
        ik__cli_fail(cmd, "%s before '--' (usage: idkeeper %s)",
                     o->rest == 0 ? "no PATH" : "more than one PATH", cmd->usage);
        return IK_EXIT_USAGE;
    }
    return 0;
}

int ik__cli_hold_begin(const ik_cli_command *cmd, const ik_cli_opts *o, ik_sup *sup, ik_coord **c)
{
    int rc = ik__cli_path_and_cmd(cmd, o);
    if (rc) return rc;
    if (ik__sup_init(sup) != 0) {
        ik__cli_fail(cmd, "cannot set up signals: %s", strerror(errno));
        return IK_EXIT_FAIL;
    }
    sup->who = cmd->name;
    *c = NULL;
    /* a store down or frozen as we start is waited out as a waiting lock or elect
     * waits: within lock's --timeout, or for as long as it takes (docs/recipes.md) */
    rc = ik__cli_open_coord_waiting(cmd, o, o->v[IK_OPT_TIMEOUT].text ? o->v[IK_OPT_TIMEOUT].n : -1,
                                    c);
    if (rc == 0) rc = ik__cli_locks_offered(cmd, *c);
    if (rc) ik__sup_fini(sup);
    return rc;
}

int64_t ik__cli_grace(const ik_cli_opts *o, int64_t session_ms, int64_t *max)
{
    int given = o->v[IK_OPT_GRACE].text != NULL;
    int64_t g = o->v[IK_OPT_GRACE].n;
    if (session_ms <= 0) { /* local: never lost; the grace serves the stops only */
        *max = -1;
        return given ? g : IK_CLI_LOCAL_GRACE_MS;
    }
    *max = session_ms / 4;
    return given ? g : session_ms / 6;
}

int ik__cli_grace_check(const ik_cli_command *cmd, const ik_cli_opts *o, int64_t session_ms)
{
    int64_t max, g = ik__cli_grace(o, session_ms, &max);
    if (max < 0 || g <= max) return 0;
    ik__cli_fail(cmd,
                 "--grace %" PRId64 " ms could let CMD outlive the grant: with a ZooKeeper "
                 "session timeout of %" PRId64 " ms a loss may be told only %" PRId64
                 " ms before another process can hold it, so the grace is at most %" PRId64
                 " ms (a quarter of the timeout, leaving a margin); raise "
                 "--zk-session-timeout for a longer one",
                 g, session_ms, session_ms / 3, max);
    return IK_EXIT_USAGE;
}

int64_t ik__cli_grace_now(const ik_cli_opts *o, int64_t session_ms)
{
    int64_t max, g = ik__cli_grace(o, session_ms, &max);
    return max >= 0 && g > max ? max : g;
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
    rc = ik__cli_grace_check(cmd, o, hi.session_timeout_ms);
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
    char why[512];
    rc = ik__sup_spawn(&r.sup, argv, env, grace, why, sizeof why);
    if (rc) {
        ik__cli_fail(cmd, "%s", why);
        ik_lock_release(r.lk);
        goto out;
    }
    int lost = 0;
    for (;;) {
        if (ik__sup_next(&r.sup, -1, &ev) != 0) {
            ik__cli_fail(cmd, "waiting for %s: %s", argv[0], strerror(errno));
            ik__sup_stop(&r.sup, 0);
            int code; /* CMD's tree gone before the release */
            while (ik__sup_wait_gone(&r.sup, &code) < 0 && errno == EINTR) {
            }
            rc = IK_EXIT_FAIL;
            break;
        }
        if (ev.kind == IK_SUP_EXITED) {
            rc = lost ? IK_EXIT_LOCK_LOST : ev.code;
            break;
        }
        if (ev.kind == IK_SUP_SIGNAL) {
            ik__sup_signal(&r.sup, ev.sig);
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'L' && !lost) {
            ik_lock_get_info(r.lk, &hi);
            ik__cli_fail(cmd, "lost the lock at %s (%s): stopping %s", path, hi.why, argv[0]);
            lost = 1;
            ik__sup_stop(&r.sup, grace);
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'D' && !lost) {
            ik_lock_get_info(r.lk, &hi);
            fprintf(stderr,
                    "idkeeper: lock: the lock at %s is in doubt (%s); %s keeps running "
                    "and is stopped if the lock is lost\n",
                    path, hi.why, argv[0]);
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'H' && !lost) {
            fprintf(stderr, "idkeeper: lock: the lock at %s is held again\n", path);
        }
    }
    err = ik_lock_release(r.lk);
    if (err && err != IK_ELOST)
        fprintf(stderr, "idkeeper: lock: releasing the lock at %s: %s\n", path, ik_strerror(err));
out:
    ik_lock_destroy(r.lk);
    ik_coord_close(c);
    ik__sup_fini(&r.sup);
    return rc;
}
