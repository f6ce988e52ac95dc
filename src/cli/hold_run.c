/* hold_run.c: the start, the grace and the one supervise loop that `idkeeper lock`,
 * `elect` and `semaphore` share (see hold_run.h).
 *
 *   RUNNING --CMD exits (its tree gone)--> EXITED
 *   RUNNING --note 'L', or the guardian's lapse--> STOPPING (SIGTERM, SIGKILL after
 *        the grace: the guardian keeps the time; "lost NOUN" said once, whichever
 *        came first) --tree gone--> LOST
 *   RUNNING --note 'D' / 'H'--> a line on stderr; CMD keeps running
 *   RUNNING, STOPPING --TERM/INT/HUP/QUIT--> passed on to CMD's group; the rest of
 *        its tree has until the grace to end
 *   RUNNING, STOPPING --the wait fails--> SIGKILL to the tree, wait for it: FAILED
 *
 * Every edge out of the loop passes through the guardian's exit, so nothing of CMD's
 * tree runs when the caller gives the grant back.
 */
#include "hold_run.h"

#include "../lib/rules.h" /* the store options' rows: which one sets a grant's term */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

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
    if (ik__sup_init(sup, cmd->name) != 0) {
        ik__cli_fail(cmd, "cannot set up signals: %s", strerror(errno));
        return IK_EXIT_FAIL;
    }
    if (ik__sup_contain(sup, (ik_contain)o->v[IK_OPT_CONTAIN].n) != 0) {
        ik__sup_fini(sup);
        return IK_EXIT_USAGE;
    }
    *c = NULL;
    /* a store down or frozen as we start is waited out as a waiting lock or elect
     * waits: within lock's --timeout, or for as long as it takes (docs/recipes.md) */
    rc = ik__cli_open_coord_waiting(cmd, o, o->v[IK_OPT_TIMEOUT].text ? o->v[IK_OPT_TIMEOUT].n : -1,
                                    c);
    if (rc == 0) rc = ik__cli_locks_offered(cmd, *c);
    if (rc) ik__sup_fini(sup);
    return rc;
}

int64_t ik__cli_grace(const ik_cli_opts *o, int64_t term_ms, int64_t *max)
{
    int given = o->v[IK_OPT_GRACE].text != NULL;
    int64_t g = o->v[IK_OPT_GRACE].n;
    if (term_ms <= 0) { /* local: never lost; the grace serves the stops only */
        *max = -1;
        return given ? g : IK_CLI_LOCAL_GRACE_MS;
    }
    *max = term_ms / IK_CLI_GRACE_MAX_DIV;
    return given ? g : term_ms / IK_CLI_GRACE_DEFAULT_DIV;
}

/* The option that sets a grant's term on c's store, and what the term is called
 * there: the backend's store option "session-timeout" (--zk-session-timeout) where it
 * has one, else the lease TTL every other store takes (--lease-ttl). */
static void term_option(ik_coord *c, char *flag, size_t len, const char **what)
{
    const char *uri = ik_coord_uri(c);
    for (size_t i = 0; ik__coord_store_option(i); i++) {
        const ik__store_option *r = ik__coord_store_option(i);
        if (strcmp(r->name, "session-timeout") == 0 && ik__coord_store_option_of(uri, r)) {
            snprintf(flag, len, "--%s-%s", r->family, r->name);
            *what = "session timeout";
            return;
        }
    }
    snprintf(flag, len, "--lease-ttl");
    *what = "lease TTL";
}

int ik__cli_grace_check(const ik_cli_command *cmd, const ik_cli_opts *o, ik_coord *c,
                        int64_t term_ms)
{
    int64_t max, g = ik__cli_grace(o, term_ms, &max);
    if (max < 0 || g <= max) return 0;
    char flag[64];
    const char *what;
    term_option(c, flag, sizeof flag, &what);
    ik__cli_fail(cmd,
                 "--grace %" PRId64 " ms could let CMD outlive the grant: with a %s of %" PRId64
                 " ms a loss may be told only %" PRId64
                 " ms before another process can hold it, so the grace is at most %" PRId64
                 " ms (a quarter of it, leaving a margin); raise %s for a longer one",
                 g, what, term_ms, term_ms / 3, max, flag);
    return IK_EXIT_USAGE;
}

int64_t ik__cli_grace_now(const ik_cli_opts *o, int64_t term_ms)
{
    int64_t max, g = ik__cli_grace(o, term_ms, &max);
    return max >= 0 && g > max ? max : g;
}

/* The guardian's lapse, said by idkeeper too: the guardian says it at once (idkeeper
 * may be the one frozen), and idkeeper's own line is the one every loss has, "lost
 * NOUN", whichever of the two acted first (docs/recipes.md, "If idkeeper is frozen"). */
static void say_lapsed(const ik_cli_command *cmd, const ik_cli_grant *g, const char *argv0)
{
    ik__cli_fail(cmd,
                 "lost %s (no proof that it still stands came within its safe window): the "
                 "guardian stops %s",
                 g->noun, argv0);
}

ik_cli_end ik__cli_run_held(const ik_cli_command *cmd, ik_sup *sup, const ik_cli_grant *g,
                            char *const argv[], const char *const env[], int64_t grace_ms,
                            int *code, int *sig)
{
    *sig = 0;
    char why[512];
    /* INT64_MAX where a grant cannot lapse (local:); 0 (lost meanwhile): the guardian
     * stops CMD at once */
    int64_t deadline = g->trusted_until(g->h);
    int rc = ik__sup_spawn(sup, argv, env, grace_ms, deadline, g->noun, why, sizeof why);
    if (rc) {
        ik__cli_fail(cmd, "%s", why);
        *code = rc;
        return IK_CLI_END_FAILED;
    }
    /* a proof between the read above and the lifeline's opening reached nobody */
    ik__sup_deadline(sup, g->trusted_until(g->h));
    int lost = 0;
    ik_hold_info hi;
    ik_sup_event ev;
    for (;;) {
        if (ik__sup_next(sup, -1, &ev) != 0) {
            ik__cli_fail(cmd, "waiting for %s: %s", argv[0], strerror(errno));
            ik__sup_stop(sup, 0);
            int c; /* CMD's tree gone before the grant is given back */
            while (ik__sup_wait_gone(sup, &c) < 0 && errno == EINTR) {
            }
            *code = IK_EXIT_FAIL;
            return IK_CLI_END_FAILED;
        }
        if (ev.kind == IK_SUP_EXITED) { /* a lapse may come with the exit (S2) */
            *code = ev.code;
            if (sup->lapsed && !lost) say_lapsed(cmd, g, argv[0]);
            return lost || sup->lapsed ? IK_CLI_END_LOST : IK_CLI_END_EXITED;
        }
        if (ev.kind == IK_SUP_SIGNAL) {
            if (!*sig) *sig = ev.sig;
            ik__sup_signal(sup, ev.sig);
        } else if (ev.kind == IK_SUP_LAPSED) {
            if (!lost) say_lapsed(cmd, g, argv[0]);
            lost = 1; /* the guardian stops CMD with the grace */
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'L' && !lost) {
            g->info(g->h, &hi);
            ik__cli_fail(cmd, "lost %s (%s): stopping %s", g->noun, hi.why, argv[0]);
            lost = 1;
            ik__sup_stop(sup, grace_ms);
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'D' && !lost) {
            g->info(g->h, &hi);
            fprintf(stderr,
                    "idkeeper: %s: %s is in doubt (%s); %s keeps running and is stopped if it "
                    "is lost\n",
                    cmd->name, g->noun, hi.why, argv[0]);
        } else if (ev.kind == IK_SUP_NOTE && ev.note == 'H' && !lost) {
            fprintf(stderr, "idkeeper: %s: %s is held again\n", cmd->name, g->noun);
        }
    }
}
