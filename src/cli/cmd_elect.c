/* cmd_elect.c: `idkeeper elect PATH -- CMD [ARG...]`: campaigns at PATH and runs CMD
 * only while this process leads (docs/guarantees.md promise 22).
 *
 *   CAMPAIGNING --leading--> RUNNING CMD --CMD exits--> its tree gone (SIGKILL to
 *        what is left after the grace), resign, exit with its code
 *   RUNNING --leadership LOST--> STOPPING (SIGTERM, SIGKILL after the grace)
 *        --CMD gone--> CAMPAIGNING again (the library campaigns by itself),
 *                      or exit 125 with --once
 *   RUNNING --IN_DOUBT / restored--> a line on stderr; CMD keeps running
 *   CAMPAIGNING --IN_DOUBT / LOST of a grant not yet led--> a line on stderr (the
 *        library tells a grant lost right after it came so, not as leading);
 *        LOST with --once: exit 125
 *   CAMPAIGNING --TERM/INT/HUP/QUIT--> resign, exit 128+sig
 *   RUNNING --TERM/INT/HUP/QUIT--> forwarded to CMD; its exit ends idkeeper (SIGKILL
 *        to CMD's tree if it has not ended within the grace)
 *
 * CMD starts only on a HELD note while ik_election_get_info (which checks the
 * lock's session, not only the notes delivered) says HELD. The grace: as for
 * `idkeeper lock` (ik__cli_grace in cmd_lock.c).
 */
#include "cli.h"
#include "supervise.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct elect_run {
    ik_sup sup;
    pthread_mutex_t mu;
    char why[160]; /* under mu: the reason of the latest IN_DOUBT or LOST notice */
} elect_run;

/* On the election's thread: keeps the reason (the election has moved on by the
 * time the main thread reads the note) and notes the change. */
static void on_change(void *ctx, ik_hold_state s, const char *why)
{
    elect_run *r = ctx;
    if (s == IK_HOLD_LOST || s == IK_HOLD_IN_DOUBT) {
        pthread_mutex_lock(&r->mu);
        snprintf(r->why, sizeof r->why, "%s", why);
        pthread_mutex_unlock(&r->mu);
    }
    ik__sup_note(&r->sup, s == IK_HOLD_LOST ? 'L' : s == IK_HOLD_IN_DOUBT ? 'D' : 'H');
}

/* The reason of the latest IN_DOUBT or LOST notice, into out. */
static void why_of(elect_run *r, char *out, size_t len)
{
    pthread_mutex_lock(&r->mu);
    snprintf(out, len, "%s", r->why);
    pthread_mutex_unlock(&r->mu);
}

int ik__cmd_elect(const ik_cli_command *cmd, ik_cli_opts *o)
{
    elect_run r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    ik_coord *c;
    int rc = ik__cli_hold_begin(cmd, o, &r.sup, &c);
    if (rc) return rc;
    const char *path = o->args[0];
    char *const *argv = &o->args[o->rest];
    int64_t grace = 0;
    int once = (int)o->v[IK_OPT_ONCE].n;
    char id[300];
    if (o->v[IK_OPT_ID].text) {
        snprintf(id, sizeof id, "%s", o->v[IK_OPT_ID].text);
    } else {
        char host[200] = "";
        if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        snprintf(id, sizeof id, "%s:%ld", host[0] ? host : "localhost", (long)getpid());
    }

    ik_election_options eo;
    ik_election_options_init(&eo);
    eo.on_change = on_change;
    eo.ctx = &r;
    ik_election *e = NULL;
    int err = ik_election_create(c, path, id, &eo, &e);
    if (err) {
        ik__cli_fail(cmd, "bad election path '%s' or id '%s': %s", path, id, ik_strerror(err));
        ik_coord_close(c);
        ik__sup_fini(&r.sup);
        return IK_EXIT_USAGE;
    }
    ik_hold_info hi;
    ik_election_get_info(e, &hi);
    rc = ik__cli_grace_check(cmd, o, hi.session_timeout_ms);
    if (rc) goto out;
    err = ik_election_campaign(e);
    if (err) {
        ik__cli_fail(cmd, "cannot campaign at %s: %s", path, ik_strerror(err));
        rc = IK_EXIT_FAIL;
        goto out;
    }

    char e_path[512 + 32], e_id[sizeof id + 32], e_fence[64];
    snprintf(e_path, sizeof e_path, "IDKEEPER_ELECT_PATH=%s%s", path[0] == '/' ? "" : "/", path);
    snprintf(e_id, sizeof e_id, "IDKEEPER_ELECT_ID=%s", id);
    const char *env[] = {e_path, e_id, e_fence, NULL};
    int running = 0, stopping = 0, quitting = 0;
    int recheck = 0; /* leading by the notes, in doubt by the lock's own check */
    ik_sup_event ev;
    for (;;) {
        /* a doubt that ends before the lock's monitor has seen it sends no note:
         * while one holds CMD back, look again now and then */
        if (ik__sup_next(&r.sup, recheck ? 100 : -1, &ev) != 0) {
            ik__cli_fail(cmd, "waiting: %s", strerror(errno));
            ik__sup_stop(&r.sup, 0);
            int code; /* CMD's tree gone before the release */
            while (ik__sup_wait_gone(&r.sup, &code) < 0 && errno == EINTR) {
            }
            rc = IK_EXIT_FAIL;
            break;
        }
        if (ev.kind == IK_SUP_EXITED) {
            running = 0;
            if (!stopping || quitting) { /* CMD ended by itself, or on our signal */
                rc = ev.code;
                break;
            }
            stopping = 0;
            if (once) {
                rc = IK_EXIT_LOCK_LOST;
                break;
            }
            fprintf(stderr, "idkeeper: elect: %s stopped; campaigning again at %s\n", argv[0],
                    path);
        } else if (ev.kind == IK_SUP_SIGNAL) {
            if (running) {
                quitting = 1;
                ik__sup_signal(&r.sup, ev.sig);
                continue;
            }
            rc = 128 + ev.sig;
            break;
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'L') {
            char lw[160];
            why_of(&r, lw, sizeof lw);
            if (running && !stopping) {
                ik__cli_fail(cmd, "lost leadership at %s (%s): stopping %s", path, lw, argv[0]);
                stopping = 1;
                ik__sup_stop(&r.sup, grace);
            } else if (!running && once) {
                ik__cli_fail(cmd, "lost leadership at %s (%s) before %s started", path, lw,
                             argv[0]);
                rc = IK_EXIT_LOCK_LOST;
                break;
            } else if (!running) {
                fprintf(stderr,
                        "idkeeper: elect: lost leadership at %s (%s) before %s started; "
                        "campaigning again\n",
                        path, lw, argv[0]);
            }
            continue;
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'D') {
            char lw[160];
            why_of(&r, lw, sizeof lw);
            if (running && !stopping) {
                fprintf(stderr,
                        "idkeeper: elect: leadership at %s is in doubt (%s); %s keeps "
                        "running and is stopped if leadership is lost\n",
                        path, lw, argv[0]);
            } else if (!running) {
                fprintf(stderr,
                        "idkeeper: elect: leadership at %s is in doubt (%s); %s starts once "
                        "the same session answers again\n",
                        path, lw, argv[0]);
            }
            continue;
        } else if (ev.kind != IK_SUP_NOTE && ev.kind != IK_SUP_TIMEOUT) {
            continue;
        }
        /* 'H', a recheck, or CMD gone after a loss: run CMD if we lead and it does
         * not run */
        ik_election_get_info(e, &hi);
        recheck = hi.state == IK_HOLD_IN_DOUBT && !running && !stopping && !quitting;
        if (hi.state != IK_HOLD_HELD || stopping || quitting) continue;
        if (running) {
            fprintf(stderr, "idkeeper: elect: leading at %s again\n", path);
            continue;
        }
        snprintf(e_fence, sizeof e_fence, "IDKEEPER_FENCE=%" PRId64, hi.fence);
        grace = ik__cli_grace_now(o, hi.session_timeout_ms);
        char why[512];
        rc = ik__sup_spawn(&r.sup, argv, env, grace, why, sizeof why);
        if (rc) {
            ik__cli_fail(cmd, "%s", why);
            break;
        }
        running = 1;
    }
out:
    ik_election_destroy(e); /* resigns */
    ik_coord_close(c);
    ik__sup_fini(&r.sup);
    pthread_mutex_destroy(&r.mu);
    return rc;
}
