/* guardian.h: CMD's process tree, and the guardian that ends it, for `idkeeper lock`
 * and `idkeeper elect` (docs/recipes.md, "CMD's process tree").
 *
 * idkeeper's child is not CMD but the guardian, a fork of idkeeper that never execs
 * and sits in a process group of its own, outside CMD's. The guardian starts CMD in a
 * container the host allows, chosen once at start (ik__tree_probe):
 *
 *   pidns     a PID namespace (and a mount namespace with its own /proc). The
 *             guardian's child is the namespace's pid 1, a small init that forks CMD
 *             (pid 2), reaps orphans and passes signals on; when the guardian kills
 *             it, the kernel kills every process in the namespace, whatever its uid,
 *             session or group, and the guardian's wait for it returns only once
 *             they are all gone. Needs CAP_SYS_ADMIN (root).
 *   cgroup    a cgroup v2 of its own (ik-PID, below idkeeper's own cgroup, where that
 *             one is delegated to idkeeper's user), ended with cgroup.kill: the kernel
 *             kills every process in it, whatever its uid; a process with the right to
 *             write to another cgroup (root) can leave it.
 *   userns    as pidns, inside a user namespace of its own that maps only idkeeper's
 *             uid and gid (unprivileged user namespaces): CMD runs as idkeeper's user,
 *             but a set-user-ID program (sudo, su) cannot change its uid there.
 *   guardian  the guardian alone, a child subreaper that sweeps /proc for CMD's
 *             group and every descendant: a process it may not signal (another uid)
 *             outlives it. Said at start (ik__tree_probe's note).
 *
 * The guardian holds the deadline: the end of the grant's trust window, which
 * idkeeper sends with each proof (ik__sup_deadline). When it passes with no newer one
 * (idkeeper frozen, starved or swapped out), the guardian stops CMD's tree itself
 * (SIGTERM, SIGKILL after the grace), before the store can hand the grant on.
 *
 * No descriptor but CMD's own reaches CMD: 0, 1, 2 and those idkeeper was started
 * with (ik__tree_fds_at_start) stay open, every other one is closed before CMD's exec
 * (a store client's sockets, pipes and files included, close-on-exec or not).
 *
 * Everything in guardian.c that runs in the guardian, its init or CMD's child runs
 * in a fork of a process with threads: async-signal-safe calls only.
 */
#ifndef IK_CLI_GUARDIAN_H
#define IK_CLI_GUARDIAN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum ik_contain {
    IK_CONTAIN_AUTO = 0, /* the first of pidns, cgroup, userns, guardian that works */
    IK_CONTAIN_PIDNS = 1,
    IK_CONTAIN_CGROUP = 2,
    IK_CONTAIN_USERNS = 3,
    IK_CONTAIN_GUARDIAN = 4,
} ik_contain;

/* "auto", "pidns", "cgroup", "userns", "guardian": --contain's choices (options.c),
 * whose index is the enum's value. */
const char *ik__contain_name(ik_contain c);

#define IK_TREE_KEEP_MAX 64

typedef struct ik_tree_cfg {
    ik_contain mode;            /* never AUTO once probed */
    char cgroup[512];           /* cgroup: the delegated directory each CMD's ik-PID is made in */
    int keep[IK_TREE_KEEP_MAX]; /* descriptors CMD inherits, ascending: 0, 1, 2, and those */
    size_t nkeep;               /* idkeeper was started with (not close-on-exec) */
} ik_tree_cfg;

/* Records the descriptors CMD is to inherit: 0, 1, 2 and every open one that is not
 * close-on-exec (given by idkeeper's caller, `3>file`). Call it before anything of
 * idkeeper's own is open (ik__sup_init does, before the store). */
void ik__tree_fds_at_start(ik_tree_cfg *cfg);

/* Finds which container the host allows, trying each by forking a throwaway child
 * (call it before any thread exists). want: AUTO or one mode. 0 with cfg->mode set
 * and, in note, the reason when the mode is weaker than a PID namespace ("" when
 * not); -1 when want is not AUTO and that mode cannot be had here, with the reason in
 * note. */
int ik__tree_probe(ik_contain want, ik_tree_cfg *cfg, char *note, size_t note_len);

/* Messages between idkeeper and the guardian: fixed size (atomic in a pipe). */
typedef struct ik_guard_msg {
    char op;
    char pad[3];
    int32_t a;
    int64_t b;
} ik_guard_msg;

/* idkeeper -> guardian, on the lifeline (ctl). End of file: idkeeper is gone. */
#define IK_GUARD_DEADLINE                                                                          \
    'D' /* b: the trust window's new end, CLOCK_MONOTONIC ns;                                      \
           0: the grant is lost (stop now) */
#define IK_GUARD_SIGNAL                                                                            \
    'S'                   /* a: a signal for CMD's group; the rest of the tree                     \
                             then has until the grace to end */
#define IK_GUARD_STOP 'T' /* SIGTERM to CMD's group, SIGKILL to the tree b ms later */
#define IK_GUARD_KILL 'K' /* SIGKILL to the tree now */

/* guardian -> idkeeper (rep) */
#define IK_GUARD_CODE 'C' /* a: CMD's exit code (128 + N if signal N ended it) */
#define IK_GUARD_KILLED                                                                            \
    'G' /* the grace ended with processes of the tree left: a:                                     \
           1 if CMD itself was still there; they were killed */
#define IK_GUARD_NO_KILL                                                                           \
    'F'                     /* a: a process of the tree the guardian may not kill, b:              \
                               the errno (guardian mode only); it waits for it */
#define IK_GUARD_LAPSED 'X' /* the deadline passed: the guardian is stopping CMD */
#define IK_GUARD_SETUP                                                                             \
    'E' /* CMD could not be started: a: the step (IK_GUARD_STEP_*),                                \
           b: the errno */

enum {
    IK_GUARD_STEP_EXEC = 0,   /* execvp of CMD */
    IK_GUARD_STEP_NS = 1,     /* the PID (and user) namespace */
    IK_GUARD_STEP_PROC = 2,   /* the mount namespace and its /proc */
    IK_GUARD_STEP_CGROUP = 3, /* the cgroup */
    IK_GUARD_STEP_FORK = 4,
};

/* What the guardian is started with (memory of the fork: idkeeper's, as it was). */
typedef struct ik_guard_start {
    const ik_tree_cfg *cfg;
    char *const *argv;
    char **envp;
    const sigset_t *cmd_mask; /* CMD's signal mask (idkeeper's before it blocked) */
    int tty;                  /* 1: CMD's group takes the terminal on fd 0 */
    int ctl_r;                /* the lifeline, from idkeeper */
    int rep_w;                /* reports to idkeeper (non-blocking) */
    int ep_w;                 /* IK_GUARD_SETUP if CMD cannot start; close-on-exec, so
                                 idkeeper reads end of file once CMD's exec succeeded */
    int64_t deadline_ns;      /* INT64_MAX: a grant that cannot lapse (local:) */
    int64_t grace_ms;         /* the rest of the tree's time after CMD exits or a
                                 signal, and after the deadline's SIGTERM */
    const char *who;          /* "lock", "elect": for its own line on stderr */
    const char *grant;        /* "the lock at /jobs/x", "leadership at /svc" */
} ik_guard_start;

/* Parses the text of /proc/PID/stat (len bytes, not NUL-terminated): 1 with the
 * parent's pid and the process group for a live process; 0 for a zombie, a dead
 * process or a text it cannot read (the name, in parentheses, may hold any byte;
 * the last ')' ends it). Async-signal-safe. */
int ik__guard_parse_stat(const char *buf, size_t len, pid_t *ppid, pid_t *pgrp);

/* The guardian: starts CMD, reports, ends the tree; exits once nothing of it is
 * left. Never returns. */
_Noreturn void ik__guardian(const ik_guard_start *g);

#endif
