/* hold_run.h: what `idkeeper lock`, `elect` and `semaphore` share: their start, the
 * grace, and the one loop that runs CMD under a grant (docs/recipes.md, "The
 * commands" and "One order").
 *
 * The one order, for every one of them and every store: CMD's whole tree ends, then the
 * grant is given back. ik__cli_run_held returns only once the guardian has exited,
 * which it does only once nothing of CMD's tree is left (guardian.h, G3); the
 * caller releases, resigns or rejoins after it, never before.
 */
#ifndef IK_CLI_HOLD_RUN_H
#define IK_CLI_HOLD_RUN_H

#include "cli.h"
#include "idkeeper.h"
#include "supervise.h"

#include <stdint.h>

/* The grace on a grant that can lapse, as fractions of its term T (the session
 * timeout or lease TTL the store granted): T/IK_CLI_GRACE_DEFAULT_DIV by default,
 * T/IK_CLI_GRACE_MAX_DIV at most. The monitor says LOST, and the guardian stops CMD
 * by itself, at the end of the trust window, 2/3 T after the last proof's send
 * (src/lib/backend.h, ik__proof_window_ms); SIGKILL follows a grace later, at most
 * 2/3 T + T/4 = 11/12 T: T/12 before the store can hand the grant on. The model
 * tests/model/hold.pml checks this arithmetic with these numbers, which
 * tests/model/check.sh reads here and in backend.h. */
#define IK_CLI_GRACE_DEFAULT_DIV 6
#define IK_CLI_GRACE_MAX_DIV 4

/* The default grace on local:, where a grant is never lost: the time CMD's tree has
 * to end after a signal passed on, or after CMD itself exited. */
#define IK_CLI_LOCAL_GRACE_MS 2000

/* Checks "PATH -- CMD [ARG...]": 0 or IK_EXIT_USAGE, with the reason printed. */
int ik__cli_path_and_cmd(const ik_cli_command *cmd, const ik_cli_opts *o);

/* The start both share: "PATH -- CMD" checked, the signals taken and CMD's container
 * chosen (ik__sup_init, ik__sup_contain: before any thread), the coord opened and its
 * locks offered. 0 with *c open and sup set up, or the exit code with the reason
 * printed and nothing left to undo. */
int ik__cli_hold_begin(const ik_cli_command *cmd, const ik_cli_opts *o, ik_sup *sup, ik_coord **c);

/* The grace between SIGTERM and SIGKILL when a grant of term term_ms
 * (ik_hold_info.session_timeout_ms; 0 on local:, where a grant is never lost) is lost
 * or its trust lapses, and the time CMD's tree has to end after a signal passed on or
 * after CMD exited: --grace if given, else T/IK_CLI_GRACE_DEFAULT_DIV
 * (IK_CLI_LOCAL_GRACE_MS on local:). *max: the longest grace that still kills CMD
 * before anyone else can hold the grant (T/IK_CLI_GRACE_MAX_DIV), -1 on local:. */
int64_t ik__cli_grace(const ik_cli_opts *o, int64_t term_ms, int64_t *max);
/* 0, or IK_EXIT_USAGE with the reason printed if --grace is above that longest; the
 * reason names the option that sets the term on c's store (--zk-session-timeout on
 * zk://, --lease-ttl elsewhere). */
int ik__cli_grace_check(const ik_cli_command *cmd, const ik_cli_opts *o, ik_coord *c,
                        int64_t term_ms);
/* The grace to use for a grant of term term_ms: ik__cli_grace, cut to the longest if
 * a new grant's term is shorter than the one checked at start. */
int64_t ik__cli_grace_now(const ik_cli_opts *o, int64_t term_ms);

/* A grant (a lock, a leadership), as the loop sees it. */
typedef struct ik_cli_grant {
    const char *noun; /* "the lock at /x", "leadership at /x": for stderr */
    void *h;
    void (*info)(void *h, ik_hold_info *out);
    int64_t (*trusted_until)(void *h); /* ik_lock_trusted_until, ik_election_... */
} ik_cli_grant;

typedef enum ik_cli_end {
    IK_CLI_END_EXITED = 0, /* CMD ended by itself, or on a signal passed on: *code */
    IK_CLI_END_LOST = 1,   /* the grant was lost, or its trust lapsed: CMD was stopped */
    IK_CLI_END_FAILED = 2, /* CMD could not start (*code 126 or 127, the reason printed),
                              or the wait failed (*code 1) */
} ik_cli_end;

/* Runs argv (with NAME=VALUE strings env[] added) under g, which is HELD now, and
 * returns only once CMD's whole tree is gone. While CMD runs: a note 'L' (lost) or
 * the guardian's lapse stops CMD with grace_ms and ends in IK_CLI_END_LOST; notes 'D'
 * (in doubt) and 'H' (held again) are said on stderr; a signal idkeeper gets is passed
 * on to CMD (*sig: the first one, 0 if none). The guardian gets the grant's deadline
 * at the start and with each proof (the caller's on_proof calls ik__sup_deadline). */
ik_cli_end ik__cli_run_held(const ik_cli_command *cmd, ik_sup *sup, const ik_cli_grant *g,
                            char *const argv[], const char *const env[], int64_t grace_ms,
                            int *code, int *sig);

/* hold_take.c: a grant that is waited for, then run under: the library's calls on
 * h for `lock` (an ik_lock) and `semaphore` (an ik_semaphore). */
typedef struct ik_cli_taker {
    const char *noun;       /* "the lock at /x", "a lease of the semaphore at /x" */
    const char *env_prefix; /* "IDKEEPER_LOCK": CMD gets PREFIX_PATH and PREFIX_NODE */
    const char *env_extra;  /* one more NAME=VALUE for CMD, or NULL */
    void *h;
    int (*acquire)(void *h, int64_t timeout_ms, int64_t *fence);
    int (*release)(void *h);
    void (*cancel)(void *h);
    void (*info)(void *h, ik_hold_info *out);
    int64_t (*trusted_until)(void *h);
} ik_cli_taker;

/* The grant's callbacks, ctx the ik_sup: on_change notes 'L', 'D' or 'H' for the
 * loop, on_proof hands the guardian each new end of the trust window. */
void ik__cli_take_on_change(void *ctx, ik_hold_state s, const char *why);
void ik__cli_take_on_proof(void *ctx, int64_t until_ns);

/* `lock` and `semaphore` after their start (ik__cli_hold_begin, the handle made with
 * the callbacks above): the grace checked, t's grant waited for (--timeout: exit 124;
 * a signal: 128+N; IK_ECONFLICT: 2; a store's failure: 1, in its words), CMD run under
 * it once it says HELD (with PREFIX_PATH, IDKEEPER_FENCE and PREFIX_NODE), and the
 * grant given back once CMD's tree is gone. open_ms: how long the open took (not
 * counted by --timeout, said if it was long). The exit code. */
int ik__cli_take_and_run(const ik_cli_command *cmd, const ik_cli_opts *o, ik_sup *sup, ik_coord *c,
                         int64_t open_ms, const ik_cli_taker *t);

#endif
