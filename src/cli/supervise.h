/* supervise.h: runs the CMD of `idkeeper lock` and `idkeeper elect` under a grant,
 * through the guardian (guardian.h), as one event loop.
 *
 * CMD runs in its own process group (like timeout(1)), so that stopping it stops
 * a whole pipeline; if fd 0 is the controlling terminal and idkeeper runs in the
 * foreground, CMD's group takes the terminal while it runs. Signals that idkeeper
 * receives (TERM, INT, HUP, QUIT) are handed to the caller, who passes them on to
 * CMD's group (ik__sup_signal); SIGCHLD too. Library threads tell the caller of
 * state changes with ik__sup_note() (one byte through a pipe), and the hold
 * monitor's thread sends the guardian each new end of the grant's trust window
 * (ik__sup_deadline). Everything arrives through one call, ik__sup_next(), so a
 * command is one event loop.
 *
 * CMD's tree (docs/recipes.md, "CMD's process tree"): the guardian, idkeeper's child,
 * starts CMD in the container chosen at start (ik__sup_contain: a PID namespace, a
 * cgroup, or the guardian alone), ends the whole tree when asked, when the deadline
 * passes, and when idkeeper is gone (kill -9 included), and exits only once nothing
 * of the tree is left: idkeeper reports CMD's exit (IK_SUP_EXITED) only then, so a
 * grant given back after it never leaves a process of CMD's behind.
 *
 * Stopping CMD: SIGTERM to its group, SIGKILL to the tree after the grace if it has
 * not ended. After CMD itself exits, or a signal is passed on to it, the rest of
 * the tree has until the grace to end, then gets SIGKILL. The guardian keeps these
 * times.
 *
 * Threads: ik__sup_init and ik__sup_contain must run before any other thread exists
 * (they block the signals for every thread created afterwards, and fork); ik__sup_note
 * and ik__sup_deadline are safe from any thread; everything else belongs to the
 * thread that called ik__sup_init.
 */
#ifndef IK_CLI_SUPERVISE_H
#define IK_CLI_SUPERVISE_H

#include "cli.h"
#include "guardian.h"
#include "idkeeper.h"

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit codes of lock and elect when CMD did not decide the code. */
enum {
    IK_EXIT_LOCK_TIMEOUT = 124,   /* gave up waiting for the lock (--timeout); CMD never ran */
    IK_EXIT_LOCK_LOST = 125,      /* the lock or leadership was lost while CMD ran; CMD was
                                     stopped */
    IK_EXIT_CMD_CANNOT_RUN = 126, /* CMD exists but could not be executed */
    IK_EXIT_CMD_NOT_FOUND = 127,  /* CMD was not found */
};

typedef struct ik_sup {
    int sfd;                /* signalfd: CHLD, TERM, INT, HUP, QUIT */
    int note_r, note_w;     /* pipe: one byte per note */
    sigset_t old_mask;      /* restored in CMD */
    ik_tree_cfg tree;       /* CMD's container and descriptors (guardian.h) */
    pid_t child;            /* the guardian's pid, 0 if none */
    int tty;                /* 1 if CMD's group was given the terminal */
    pthread_mutex_t ctl_mu; /* guards ctl_w, which the monitor's thread writes to */
    int ctl_w;              /* the guardian's lifeline (guardian.h, G1) */
    int rep_r;              /* the guardian's reports */
    int cmd_code;           /* CMD's code once it came, -1 before */
    int lapsed;             /* 1 once the guardian said the deadline passed (this CMD) */
    const char *who;        /* the command's name, for stderr ("lock", "elect") */
    const char *cmd;        /* CMD's argv[0] while it runs, for stderr */
    char grant[600];        /* "the lock at /x", for the guardian's own line */
} ik_sup;

typedef enum ik_sup_kind {
    IK_SUP_NOTE = 1,   /* a byte from ik__sup_note: ev->note */
    IK_SUP_SIGNAL = 2, /* idkeeper got a signal: ev->sig (not SIGCHLD) */
    IK_SUP_EXITED = 3, /* CMD exited and its tree is gone: ev->code (exit code, or 128 +
                          signal) */
    IK_SUP_TIMEOUT = 4,
    IK_SUP_LAPSED = 5, /* the deadline passed with no newer one: the guardian is
                          stopping CMD (it said so on stderr) */
} ik_sup_kind;

typedef struct ik_sup_event {
    ik_sup_kind kind;
    char note;
    int sig;
    int code;
} ik_sup_event;

/* The monotonic clock in ms. */
int64_t ik__sup_mono_ms(void);

/* Blocks the signals, opens the signalfd and the pipe, and records the descriptors
 * CMD inherits (ik__tree_fds_at_start). who: "lock" or "elect". 0 or -1 (errno). */
int ik__sup_init(ik_sup *s, const char *who);
void ik__sup_fini(ik_sup *s);

/* Chooses CMD's container (ik__tree_probe), saying once on stderr when CMD's tree
 * gets no PID namespace or cgroup. 0, or -1 with the reason printed when the mode
 * asked for is not available. */
int ik__sup_contain(ik_sup *s, ik_contain want);

/* From any thread: queues one byte for ik__sup_next. */
void ik__sup_note(ik_sup *s, char c);

/* From any thread: the grant's trust window now ends at until_ns (CLOCK_MONOTONIC;
 * ik_lock_trusted_until): told to the guardian, if one runs. Never blocks. */
void ik__sup_deadline(ik_sup *s, int64_t until_ns);

/* Starts argv (argv[0] looked up in PATH) under a guardian, with NAME=VALUE strings
 * env_add[] added to (or replacing in) the environment; grace_ms: how long the
 * rest of CMD's tree may run after CMD exits or after ik__sup_signal, and after the
 * deadline's SIGTERM; deadline_ns: the grant's trust window's end (INT64_MAX: none);
 * grant: "the lock at /x", for the guardian's own line. 0, or an exit code (126,
 * 127) with a reason in why if CMD could not be started (then nothing of it is
 * left). */
int ik__sup_spawn(ik_sup *s, char *const argv[], const char *const env_add[], int64_t grace_ms,
                  int64_t deadline_ns, const char *grant, char *why, size_t why_len);

/* Passes sig on to CMD's group (nothing if no CMD); the tree then has until the
 * grace to end before SIGKILL. */
void ik__sup_signal(ik_sup *s, int sig);

/* SIGTERM to CMD's group now, SIGKILL to its tree when grace_ms pass (at once if
 * grace_ms <= 0). */
void ik__sup_stop(ik_sup *s, int64_t grace_ms);

/* Blocks until the guardian is gone (after ik__sup_stop): 0 with *code (CMD's), or
 * -1 (errno). 0 at once if no CMD runs. */
int ik__sup_wait_gone(ik_sup *s, int *code);

/* Waits up to timeout_ms (-1: forever) for the next event. 0, or -1 on an error.
 * IK_SUP_EXITED comes once CMD exited and the rest of its tree is gone. */
int ik__sup_next(ik_sup *s, int64_t timeout_ms, ik_sup_event *ev);

#endif
