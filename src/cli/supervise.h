/* supervise.h: runs the CMD of `idkeeper lock` and `idkeeper elect` under a grant.
 *
 * CMD runs in its own process group (like timeout(1)), so that stopping it stops
 * a whole pipeline; if fd 0 is the controlling terminal and idkeeper runs in the
 * foreground, CMD's group gets the terminal while it runs. Signals that idkeeper
 * receives (TERM, INT, HUP, QUIT) are handed to the caller, who forwards them to
 * CMD's group; SIGCHLD too. Library threads tell the caller of state changes with
 * ik__sup_note() (one byte through a pipe). Everything arrives through one call,
 * ik__sup_next(), so a command is one event loop.
 *
 * CMD's tree (docs/recipes.md, "CMD's process tree"): idkeeper's child is not CMD
 * but a small guardian, the head of CMD's process group and a child subreaper, so
 * every process CMD starts stays below it even after leaving the group (setsid)
 * or losing its parent. CMD is the guardian's child. The guardian exits only when
 * nothing of the tree is left, and idkeeper reports CMD's exit (IK_SUP_EXITED)
 * only then: a release after it never leaves a process of CMD's behind. It kills
 * the whole tree (the group and every descendant, SIGKILL) when idkeeper asks or
 * when idkeeper is gone: it watches a pipe whose write end only idkeeper holds, so
 * a kill -9 of idkeeper takes the tree with it.
 *
 * Stopping CMD: SIGTERM to its group, SIGKILL to the tree after the grace period
 * if it has not ended. After CMD itself exits, or a signal is passed on to it, the
 * rest of the tree has until the grace to end, then gets SIGKILL.
 *
 * Not done here: a process started outside the tree on CMD's behalf (systemd-run,
 * at, a daemon asked over a socket) is not CMD's tree and is not stopped; no
 * cgroup or systemd scope is used. A SIGSTOP to CMD's group stops the guardian too:
 * it acts on idkeeper's death only after a SIGCONT. A guardian killed by hand takes
 * CMD (PR_SET_PDEATHSIG) and idkeeper kills the group, but a descendant that left
 * the group is reparented past it.
 *
 * Threads: ik__sup_init must run before any other thread exists (it blocks the
 * signals for every thread created afterwards); ik__sup_note is safe from any
 * thread; everything else belongs to the thread that called ik__sup_init.
 */
#ifndef IK_CLI_SUPERVISE_H
#define IK_CLI_SUPERVISE_H

#include "cli.h"
#include "idkeeper.h"

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
    int sfd;            /* signalfd: CHLD, TERM, INT, HUP, QUIT */
    int note_r, note_w; /* pipe: one byte per note */
    sigset_t old_mask;  /* restored in CMD */
    pid_t child;        /* the guardian's pid (CMD's process group), 0 if none */
    int tty;            /* 1 if CMD's group was given the terminal */
    int ctl_w;          /* the guardian's lifeline: 'K' kills the tree, EOF too */
    int rep_r;          /* CMD's exit code (an int) from the guardian */
    int cmd_code;       /* CMD's code once it came, -1 before */
    int64_t grace_ms;   /* the rest of the tree's time after CMD exits or a signal */
    int64_t kill_at_ms; /* monotonic ms at which the tree gets SIGKILL, 0: none */
    const char *who;    /* the command's name, for stderr ("lock", "elect") */
    const char *cmd;    /* CMD's argv[0] while it runs, for stderr */
    int told_kill;      /* 1 once the SIGKILL of this CMD's tree was told */
} ik_sup;

typedef enum ik_sup_kind {
    IK_SUP_NOTE = 1,   /* a byte from ik__sup_note: ev->note */
    IK_SUP_SIGNAL = 2, /* idkeeper got a signal: ev->sig (not SIGCHLD) */
    IK_SUP_EXITED = 3, /* CMD exited: ev->code (exit code, or 128 + signal) */
    IK_SUP_TIMEOUT = 4,
} ik_sup_kind;

typedef struct ik_sup_event {
    ik_sup_kind kind;
    char note;
    int sig;
    int code;
} ik_sup_event;

/* Parses the text of /proc/PID/stat (len bytes, not NUL-terminated): 1 with the
 * parent's pid and the process group for a live process; 0 for a zombie, a dead
 * process or a text it cannot read (the name, in parentheses, may hold any byte;
 * the last ')' ends it). Async-signal-safe. */
int ik__sup_parse_stat(const char *buf, size_t len, pid_t *ppid, pid_t *pgrp);

/* The monotonic clock in ms. */
int64_t ik__sup_mono_ms(void);

/* Blocks the signals and opens the signalfd and the pipe. 0 or -1 (errno). */
int ik__sup_init(ik_sup *s);
void ik__sup_fini(ik_sup *s);

/* From any thread: queues one byte for ik__sup_next. */
void ik__sup_note(ik_sup *s, char c);

/* Starts argv (argv[0] looked up in PATH) under a guardian, with NAME=VALUE strings
 * env_add[] added to (or replacing in) the environment; grace_ms: how long the
 * rest of CMD's tree may run after CMD exits or after ik__sup_signal. 0, or an exit
 * code (126, 127) with a reason in why if CMD could not be started (then nothing
 * of it is left). */
int ik__sup_spawn(ik_sup *s, char *const argv[], const char *const env_add[], int64_t grace_ms,
                  char *why, size_t why_len);

/* Sends sig to CMD's process group (nothing if no CMD), and gives the tree until
 * the grace to end before SIGKILL. */
void ik__sup_signal(ik_sup *s, int sig);

/* Blocks until the guardian is gone (after ik__sup_stop): 0 with *code (CMD's), or
 * -1 (errno). 0 at once if no CMD runs. */
int ik__sup_wait_gone(ik_sup *s, int *code);

/* SIGTERM to CMD's group now, SIGKILL to its tree when grace_ms pass (ik__sup_next
 * sends it; at once if grace_ms <= 0). */
void ik__sup_stop(ik_sup *s, int64_t grace_ms);

/* Waits up to timeout_ms (-1: forever) for the next event. 0, or -1 on an error.
 * IK_SUP_EXITED comes once CMD exited and the rest of its tree is gone. */
int ik__sup_next(ik_sup *s, int64_t timeout_ms, ik_sup_event *ev);

/* Shared by lock and elect (cmd_lock.c): checks "PATH -- CMD [ARG...]" (0 or
 * IK_EXIT_USAGE, with the reason printed). */
int ik__cli_path_and_cmd(const ik_cli_command *cmd, const ik_cli_opts *o);

/* The start both share: "PATH -- CMD" checked, the signals taken (ik__sup_init, so
 * before any thread), the coord opened and its locks offered. 0 with *c open and
 * sup set up, or the exit code with the reason printed and nothing left to undo. */
int ik__cli_hold_begin(const ik_cli_command *cmd, const ik_cli_opts *o, ik_sup *sup, ik_coord **c);

/* The default grace on local:, where a grant is never lost: the time CMD's tree has
 * to end after a signal passed on, or after CMD itself exited. */
#define IK_CLI_LOCAL_GRACE_MS 2000

/* The grace between SIGTERM and SIGKILL when a grant on a session of session_ms
 * (ik_hold_info.session_timeout_ms; 0 on local:, where a grant is never lost) is
 * lost, and the time CMD's tree has to end after a signal passed on or after CMD
 * exited: --grace if given, else a sixth of the session timeout
 * (IK_CLI_LOCAL_GRACE_MS on local:). *max: the longest
 * grace that still kills CMD before anyone else can hold the grant (a quarter of
 * the session timeout), -1 on local:. */
int64_t ik__cli_grace(const ik_cli_opts *o, int64_t session_ms, int64_t *max);
/* 0, or IK_EXIT_USAGE with the reason printed if --grace is above that longest. */
int ik__cli_grace_check(const ik_cli_command *cmd, const ik_cli_opts *o, int64_t session_ms);
/* The grace to use for a grant on a session of session_ms: ik__cli_grace, cut to
 * the longest if a new session's timeout is shorter than the one checked at start. */
int64_t ik__cli_grace_now(const ik_cli_opts *o, int64_t session_ms);

#endif
