/* cmd_elect.c: `idkeeper elect PATH -- CMD [ARG...]`: campaigns at PATH and runs CMD
 * only while this process leads (SPEC 6).
 *
 *   CAMPAIGNING --leading--> RUNNING CMD --CMD exits--> resign, exit with its code
 *   RUNNING --leadership LOST--> STOPPING (SIGTERM, SIGKILL after --grace)
 *        --CMD gone--> CAMPAIGNING again (the library campaigns by itself),
 *                      or exit 125 with --once
 *   RUNNING --IN_DOUBT / restored--> a line on stderr; CMD keeps running
 *   CAMPAIGNING --TERM/INT/HUP/QUIT--> resign, exit 128+sig
 *   RUNNING --TERM/INT/HUP/QUIT--> forwarded to CMD; its exit ends idkeeper
 */
#include "cli.h"
#include "supervise.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void on_change(void *ctx, ik_hold_state s, const char *why)
{
    (void)why;
    ik__sup_note(ctx, s == IK_HOLD_LOST ? 'L' : s == IK_HOLD_IN_DOUBT ? 'D' : 'H');
}

int ik__cmd_elect(const ik_cli_command *cmd, ik_cli_opts *o)
{
    int rc = ik__cli_path_and_cmd(cmd, o);
    if (rc) return rc;
    const char *path = o->args[0];
    char *const *argv = &o->args[o->rest];
    int64_t grace = o->v[IK_OPT_GRACE].n;
    int once = (int)o->v[IK_OPT_ONCE].n;
    char id[300];
    if (o->v[IK_OPT_ID].text) {
        snprintf(id, sizeof id, "%s", o->v[IK_OPT_ID].text);
    } else {
        char host[200] = "";
        if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
        snprintf(id, sizeof id, "%s:%ld", host[0] ? host : "localhost", (long)getpid());
    }

    ik_sup sup;
    if (ik__sup_init(&sup) != 0) {
        ik__cli_fail(cmd, "cannot set up signals: %s", strerror(errno));
        return IK_EXIT_FAIL;
    }
    ik_coord *c = NULL;
    rc = ik__cli_open_coord(cmd, o, &c);
    if (rc) {
        ik__sup_fini(&sup);
        return rc;
    }
    ik_election_options eo;
    ik_election_options_init(&eo);
    eo.on_change = on_change;
    eo.ctx = &sup;
    ik_election *e = NULL;
    int err = ik_election_create(c, path, id, &eo, &e);
    if (err) {
        ik__cli_fail(cmd, "bad election path '%s' or id '%s': %s", path, id, ik_strerror(err));
        ik_coord_close(c);
        ik__sup_fini(&sup);
        return IK_EXIT_USAGE;
    }
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
    ik_sup_event ev;
    ik_hold_info hi;
    for (;;) {
        if (ik__sup_next(&sup, -1, &ev) != 0) {
            ik__cli_fail(cmd, "waiting: %s", strerror(errno));
            ik__sup_stop(&sup, 0);
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
                ik__sup_signal(&sup, ev.sig);
                continue;
            }
            rc = 128 + ev.sig;
            break;
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'L') {
            ik_election_get_info(e, &hi);
            if (running && !stopping) {
                ik__cli_fail(cmd, "lost leadership at %s (%s): stopping %s", path, hi.why, argv[0]);
                stopping = 1;
                ik__sup_stop(&sup, grace);
            } else if (!running && once) {
                ik__cli_fail(cmd, "lost leadership at %s (%s)", path, hi.why);
                rc = IK_EXIT_LOCK_LOST;
                break;
            }
            continue;
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'D') {
            if (running && !stopping) {
                ik_election_get_info(e, &hi);
                fprintf(stderr,
                        "idkeeper: elect: leadership at %s is in doubt (%s); %s keeps "
                        "running and is stopped if leadership is lost\n",
                        path, hi.why, argv[0]);
            }
            continue;
        } else if (ev.kind != IK_SUP_NOTE) {
            continue;
        }
        /* 'H', or CMD gone after a loss: run CMD if we lead and it does not run */
        ik_election_get_info(e, &hi);
        if (hi.state != IK_HOLD_HELD || stopping || quitting) continue;
        if (running) {
            fprintf(stderr, "idkeeper: elect: leading at %s again\n", path);
            continue;
        }
        snprintf(e_fence, sizeof e_fence, "IDKEEPER_FENCE=%" PRId64, hi.fence);
        char why[512];
        rc = ik__sup_spawn(&sup, argv, env, why, sizeof why);
        if (rc) {
            ik__cli_fail(cmd, "%s", why);
            break;
        }
        running = 1;
    }
out:
    ik_election_destroy(e); /* resigns */
    ik_coord_close(c);
    ik__sup_fini(&sup);
    return rc;
}
