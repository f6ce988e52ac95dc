/* cmd_elect.c: `idkeeper elect PATH -- CMD [ARG...]`: campaigns at PATH and runs CMD
 * only while this process leads (docs/guarantees.md promise 22).
 *
 *   CAMPAIGNING --leading (a HELD note, and the election's own state HELD)-->
 *        RUNNING (ik__cli_run_held, hold_run.c)
 *   RUNNING --CMD's tree gone (CMD ended by itself, or on a signal passed on)-->
 *        resign, exit with CMD's code
 *   RUNNING --lost, or its trust lapsed: CMD stopped, its tree gone--> rejoin
 *        (gives the lost grant back and campaigns again) --> CAMPAIGNING,
 *        or with --once: resign, exit 125
 *   CAMPAIGNING --IN_DOUBT / LOST of a grant not yet led--> a line on stderr (the
 *        library tells a grant lost right after it came so, not as leading); LOST:
 *        rejoin, or with --once exit 125
 *   CAMPAIGNING --TERM/INT/HUP/QUIT--> resign, exit 128+sig
 *
 * The one order (hold_run.h): the election runs with keep_on_loss, so a lost grant
 * stays ours (its node, ticket or session lock) until CMD's tree is gone and we
 * rejoin; another candidate cannot lead while a process of our CMD runs.
 */
#include "cli.h"
#include "hold_run.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct elect_run {
    ik_sup sup;
    ik_election *e;
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

/* On the election's lock's hold monitor: the guardian gets each new end of the trust
 * window. */
static void on_proof(void *ctx, int64_t until_ns)
{
    elect_run *r = ctx;
    ik__sup_deadline(&r->sup, until_ns);
}

static void grant_info(void *h, ik_hold_info *out)
{
    elect_run *r = h;
    ik_election_get_info(r->e, out);
    why_of(r, out->why, sizeof out->why);
}

static int64_t grant_until(void *h)
{
    elect_run *r = h;
    return ik_election_trusted_until(r->e);
}

/* A lost grant given back (keep_on_loss), and the campaign on: 0, or the exit code
 * with the reason printed. The election may not have called the grant lost (the
 * guardian stopped CMD at the end of the trust window, and a late proof came): it
 * is given back all the same, by resigning, and the campaign starts anew, so that
 * CMD starts again only on a leadership won after its tree was gone. */
static int rejoin(const ik_cli_command *cmd, elect_run *r, const char *path)
{
    int err = ik_election_rejoin(r->e);
    if (err == IK_EINVAL && ik_election_state(r->e) != IK_HOLD_WAITING) {
        ik_election_resign(r->e);
        err = ik_election_campaign(r->e);
    } else if (err == IK_EINVAL) {
        err = 0; /* campaigning already */
    }
    if (err) {
        ik__cli_fail(cmd, "cannot campaign again at %s: %s", path, ik_strerror(err));
        return IK_EXIT_FAIL;
    }
    return 0;
}

int ik__cmd_elect(const ik_cli_command *cmd, ik_cli_opts *o)
{
    elect_run r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    ik_coord *c;
    int rc = ik__cli_hold_begin(cmd, o, &r.sup, &c);
    if (rc) {
        pthread_mutex_destroy(&r.mu);
        return rc;
    }
    const char *path = o->args[0];
    char *const *argv = &o->args[o->rest];
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
    eo.on_proof = on_proof;
    eo.keep_on_loss = 1;
    eo.ctx = &r;
    int err = ik_election_create(c, path, id, &eo, &r.e);
    if (err) {
        ik__cli_fail(cmd, "bad election path '%s' or id '%s': %s", path, id, ik_strerror(err));
        ik_coord_close(c);
        ik__sup_fini(&r.sup);
        pthread_mutex_destroy(&r.mu);
        return IK_EXIT_USAGE;
    }
    ik_hold_info hi;
    ik_election_get_info(r.e, &hi);
    rc = ik__cli_grace_check(cmd, o, c, hi.session_timeout_ms);
    if (rc) goto out;
    err = ik_election_campaign(r.e);
    if (err) {
        ik__cli_fail(cmd, "cannot campaign at %s: %s", path, ik_strerror(err));
        rc = IK_EXIT_FAIL;
        goto out;
    }

    char e_path[512 + 32], e_id[sizeof id + 32], e_fence[64], noun[600];
    snprintf(e_path, sizeof e_path, "IDKEEPER_ELECT_PATH=%s%s", path[0] == '/' ? "" : "/", path);
    snprintf(e_id, sizeof e_id, "IDKEEPER_ELECT_ID=%s", id);
    snprintf(noun, sizeof noun, "leadership at %s", path);
    const char *env[] = {e_path, e_id, e_fence, NULL};
    ik_cli_grant g = {noun, &r, grant_info, grant_until};
    int recheck = 0; /* leading by the notes, in doubt by the lock's own check */
    ik_sup_event ev;
    for (;;) {
        /* CAMPAIGNING. A doubt that ends before the lock's monitor has seen it sends no
         * note: while one holds CMD back, look again now and then */
        if (ik__sup_next(&r.sup, recheck ? 100 : -1, &ev) != 0) {
            ik__cli_fail(cmd, "waiting: %s", strerror(errno));
            rc = IK_EXIT_FAIL;
            break;
        }
        if (ev.kind == IK_SUP_SIGNAL) {
            rc = 128 + ev.sig;
            break;
        }
        if (ev.kind == IK_SUP_NOTE && ev.note == 'L') {
            char lw[160];
            why_of(&r, lw, sizeof lw);
            if (once) {
                ik__cli_fail(cmd, "lost leadership at %s (%s) before %s started", path, lw,
                             argv[0]);
                rc = IK_EXIT_LOCK_LOST;
                break;
            }
            fprintf(stderr,
                    "idkeeper: elect: lost leadership at %s (%s) before %s started; "
                    "campaigning again\n",
                    path, lw, argv[0]);
            if ((rc = rejoin(cmd, &r, path))) break;
            continue;
        }
        if (ev.kind == IK_SUP_NOTE && ev.note == 'D') {
            char lw[160];
            why_of(&r, lw, sizeof lw);
            fprintf(stderr,
                    "idkeeper: elect: leadership at %s is in doubt (%s); %s starts once "
                    "the same session answers again\n",
                    path, lw, argv[0]);
            continue;
        }
        if (ev.kind != IK_SUP_NOTE && ev.kind != IK_SUP_TIMEOUT) continue;
        /* 'H' or a recheck: run CMD if we lead */
        ik_election_get_info(r.e, &hi);
        recheck = hi.state == IK_HOLD_IN_DOUBT;
        if (hi.state != IK_HOLD_HELD) continue;
        snprintf(e_fence, sizeof e_fence, "IDKEEPER_FENCE=%" PRId64, hi.fence);
        int64_t grace = ik__cli_grace_now(o, hi.session_timeout_ms);
        int code, sig;
        ik_cli_end end = ik__cli_run_held(cmd, &r.sup, &g, argv, env, grace, &code, &sig);
        /* CMD's tree is gone: now the grant may be given back (one order) */
        if (end == IK_CLI_END_FAILED) {
            rc = code;
            break;
        }
        if (end == IK_CLI_END_EXITED) { /* CMD ended by itself, or on our signal */
            rc = code;
            break;
        }
        if (once) {
            rc = IK_EXIT_LOCK_LOST;
            break;
        }
        fprintf(stderr, "idkeeper: elect: %s stopped; campaigning again at %s\n", argv[0], path);
        recheck = 0;
        if ((rc = rejoin(cmd, &r, path))) break;
    }
out:
    ik_election_destroy(r.e); /* resigns: CMD's tree is gone on every way here */
    ik_coord_close(c);
    ik__sup_fini(&r.sup);
    pthread_mutex_destroy(&r.mu);
    return rc;
}
