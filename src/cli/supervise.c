/* supervise.c: runs CMD for `idkeeper lock` and `idkeeper elect`: the guardian at
 * the head of CMD's process group, terminal, signals, SIGTERM-then-SIGKILL, one event
 * loop (see supervise.h; what is promised of CMD's tree: docs/recipes.md, "CMD's
 * process tree").
 *
 * Invariants:
 *   S1. Only idkeeper holds the write end of the guardian's lifeline (ctl): it is
 *       made close-on-exec, the guardian closes its copy before it forks CMD. So
 *       the guardian reads EOF exactly when idkeeper is gone, however it went.
 *   S2. The guardian is a child subreaper: a process of CMD's tree whose parent
 *       dies is reparented to it, never past it. While the guardian has a child,
 *       something of CMD's tree may run; when it has none, nothing does (a process
 *       started outside the tree, through a daemon, is not CMD's tree).
 *   S3. idkeeper sees the guardian exit only once its tree is gone, so a release
 *       after IK_SUP_EXITED never leaves a process of CMD's tree running.
 *   S4. The guardian never dies of a signal sent to CMD's group: it blocks every
 *       signal it can, and idkeeper never sends the group SIGKILL while it lives
 *       ('K' on the lifeline instead).
 */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int64_t ik__sup_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ik__sup_init(ik_sup *s)
{
    memset(s, 0, sizeof *s);
    s->sfd = s->note_r = s->note_w = s->ctl_w = s->rep_r = -1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    /* SIGTTOU too (not read): taking the terminal back from CMD's group */
    sigaddset(&set, SIGTTOU);
    if (s->sfd < 0 || pthread_sigmask(SIG_BLOCK, &set, &s->old_mask) != 0) return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    s->note_r = p[0];
    s->note_w = p[1];
    return 0;
}

void ik__sup_fini(ik_sup *s)
{
    if (s->ctl_w >= 0) close(s->ctl_w); /* a guardian still there kills its tree (S1) */
    if (s->rep_r >= 0) close(s->rep_r);
    s->ctl_w = s->rep_r = -1;
    if (s->sfd >= 0) close(s->sfd);
    if (s->note_r >= 0) close(s->note_r);
    if (s->note_w >= 0) close(s->note_w);
    s->sfd = s->note_r = s->note_w = -1;
}

void ik__sup_note(ik_sup *s, char c)
{
    while (write(s->note_w, &c, 1) < 0 && errno == EINTR) {
    }
}

/* environ with env_add[] replacing or added; malloc'd array of borrowed strings. */
static char **make_env(const char *const env_add[])
{
    size_t n = 0, k = 0;
    while (environ && environ[n])
        n++;
    while (env_add && env_add[k])
        k++;
    char **v = calloc(n + k + 1, sizeof *v);
    if (!v) return NULL;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < k && !replaced; j++) {
            size_t nl = strcspn(env_add[j], "=");
            replaced = strncmp(environ[i], env_add[j], nl) == 0 && environ[i][nl] == '=';
        }
        if (!replaced) v[m++] = environ[i];
    }
    for (size_t j = 0; j < k; j++)
        v[m++] = (char *)env_add[j];
    v[m] = NULL;
    return v;
}

/* Everything from here to guardian() runs in the guardian: a child forked from a
 * process with threads, which never execs, so it calls async-signal-safe functions
 * only (raw system calls; no stdio, no malloc). */

struct ik__dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* The decimal number at *p (advancing it), or -1 if there is none; past INT32_MAX
 * it stays above INT32_MAX (the digits are still consumed). */
static long parse_num(const char **p, const char *end)
{
    long v = -1;
    while (*p < end && **p >= '0' && **p <= '9') {
        if (v <= INT32_MAX) v = (v < 0 ? 0 : v * 10) + (**p - '0');
        (*p)++;
    }
    return v;
}

int ik__sup_parse_stat(const char *buf, size_t len, pid_t *ppid, pid_t *pgrp)
{
    const char *end = buf + len, *p = end;
    while (p > buf && p[-1] != ')') /* the name may hold ')': the last one ends it */
        p--;
    if (p == buf || end - p < 4 || p[0] != ' ' || p[2] != ' ' || p[1] == 'Z' || p[1] == 'X')
        return 0;
    p += 3; /* " S " */
    long pp = parse_num(&p, end);
    if (p >= end || *p != ' ') return 0;
    p++;
    long pg = parse_num(&p, end);
    if (pp < 0 || pg < 0 || pp > INT32_MAX || pg > INT32_MAX) return 0;
    *ppid = (pid_t)pp;
    *pgrp = (pid_t)pg;
    return 1;
}

/* Reads /proc/NAME/stat: 1 with *ppid and *pgrp for a live process, 0 for a zombie
 * or a process gone meanwhile. */
static int proc_stat(const char *name, pid_t *ppid, pid_t *pgrp)
{
    char path[64] = "/proc/";
    size_t n = 6;
    for (const char *q = name; *q && n < sizeof path - 6; q++)
        path[n++] = *q;
    memcpy(path + n, "/stat", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf);
    close(fd);
    return r > 0 && ik__sup_parse_stat(buf, (size_t)r, ppid, pgrp);
}

/* One reading of /proc: SIGKILL to every live process of the guardian's process
 * group and every descendant of the guardian found, but the guardian itself. A
 * descendant listed before its parent (pids wrapped) is found on a later sweep,
 * once reparented to the guardian (S2). */
static void sweep(pid_t self)
{
    pid_t killed[1024];
    size_t nk = 0;
    int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        kill(-self, SIGCONT); /* cannot list: at least the group never stays stopped */
        return;
    }
    char buf[4096];
    long n;
    while ((n = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            const struct ik__dirent64 *d = (const void *)(buf + off);
            off += d->d_reclen;
            const char *q = d->d_name;
            long pid = parse_num(&q, q + 16);
            pid_t ppid, pgrp;
            if (pid <= 0 || *q || pid == self || !proc_stat(d->d_name, &ppid, &pgrp)) continue;
            int ours = pgrp == self || ppid == self;
            for (size_t i = 0; i < nk && !ours; i++)
                ours = ppid == killed[i];
            if (!ours) continue;
            kill((pid_t)pid, SIGKILL);
            if (nk < sizeof killed / sizeof killed[0]) killed[nk++] = (pid_t)pid;
        }
    }
    close(dfd);
}

static void put_int(int fd, int v)
{
    while (write(fd, &v, sizeof v) < 0 && errno == EINTR) {
    }
}

/* The guardian: head of CMD's process group, child subreaper (S2). Forks CMD,
 * tells idkeeper CMD's code on rep (an int) when CMD exits, and exits once it has
 * no child left (S3), with CMD's code. On 'K' from ctl, or EOF (idkeeper gone: S1),
 * it kills the group and every descendant, sweeping again every 10 ms until none
 * is left. */
static _Noreturn void guardian(const ik_sup *s, int ctl_r, int rep_w, int ep_w, char *const argv[],
                               char **envp, int tty)
{
    pid_t self = getpid();
    setpgid(0, 0);
    if (tty) tcsetpgrp(0, self);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    prctl(PR_SET_NAME, "idkeeper-guard"); /* in ps: not taken for idkeeper */
    sigset_t all, chld;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL); /* S4 */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int cfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t cmd = fork();
    if (cmd == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* the guardian killed -9 by hand */
        if (getppid() != self) _exit(IK_EXIT_LOCK_LOST);
        sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
        execvpe(argv[0], argv, envp);
        int e = errno;
        put_int(ep_w, e);
        _exit(e == ENOENT ? IK_EXIT_CMD_NOT_FOUND : IK_EXIT_CMD_CANNOT_RUN);
    }
    if (cmd < 0) {
        put_int(ep_w, errno);
        _exit(IK_EXIT_CMD_CANNOT_RUN);
    }
    close(ep_w); /* idkeeper reads EOF once CMD's exec closed its copy */
    int code = -1, killing = 0, orphan = 0;
    for (;;) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p != cmd) continue;
            code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
            if (!orphan) put_int(rep_w, code);
        }
        if (p < 0 && errno == ECHILD) _exit(code < 0 ? 1 : code);
        if (killing) sweep(self);
        struct pollfd pf[2] = {{orphan ? -1 : ctl_r, POLLIN, 0}, {cfd, POLLIN, 0}};
        if (poll(pf, 2, killing ? 10 : cfd < 0 ? 50 : -1) <= 0) continue;
        if (pf[0].revents) {
            char c;
            ssize_t r = read(ctl_r, &c, 1);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) orphan = killing = 1;
            if (r == 1 && c == 'K') killing = 1;
        }
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(cfd, &si, sizeof si) > 0) {
            }
        }
    }
}

int ik__sup_spawn(ik_sup *s, char *const argv[], const char *const env_add[], int64_t grace_ms,
                  char *why, size_t why_len)
{
    char **envp = make_env(env_add);
    int ep[2] = {-1, -1}, ctl[2] = {-1, -1}, rep[2] = {-1, -1};
    if (!envp || pipe2(ep, O_CLOEXEC) != 0 || pipe2(ctl, O_CLOEXEC) != 0 ||
        pipe2(rep, O_CLOEXEC | O_NONBLOCK) != 0) {
        int e = errno;
        free(envp);
        for (int i = 0; i < 2; i++) {
            if (ep[i] >= 0) close(ep[i]);
            if (ctl[i] >= 0) close(ctl[i]);
        }
        snprintf(why, why_len, "cannot start %s: %s", argv[0], strerror(e));
        return IK_EXIT_CMD_CANNOT_RUN;
    }
    int tty = isatty(0) && tcgetpgrp(0) == getpgrp();
    pid_t pid = fork();
    if (pid == 0) {
        close(ctl[1]); /* S1 */
        close(rep[0]);
        close(ep[0]);
        guardian(s, ctl[0], rep[1], ep[1], argv, envp, tty);
    }
    int fe = errno;
    free(envp);
    close(ep[1]);
    close(ctl[0]);
    close(rep[1]);
    if (pid < 0) {
        close(ep[0]);
        close(ctl[1]);
        close(rep[0]);
        snprintf(why, why_len, "cannot start %s: %s", argv[0], strerror(fe));
        return IK_EXIT_CMD_CANNOT_RUN;
    }
    setpgid(pid, pid); /* also here: no race with a signal sent before the child ran */
    if (tty) tcsetpgrp(0, pid);
    s->child = pid;
    s->tty = tty;
    s->ctl_w = ctl[1];
    s->rep_r = rep[0];
    s->cmd_code = -1;
    s->grace_ms = grace_ms > 0 ? grace_ms : 0;
    s->kill_at_ms = 0;
    s->cmd = argv[0];
    s->told_kill = 0;
    int e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    if (r == (ssize_t)sizeof e) {
        /* exec failed: the guardian exits with nothing left */
        int code;
        while (ik__sup_wait_gone(s, &code) < 0 && errno == EINTR) {
        }
        snprintf(why, why_len, "cannot run %s: %s", argv[0], strerror(e));
        return e == ENOENT ? IK_EXIT_CMD_NOT_FOUND : IK_EXIT_CMD_CANNOT_RUN;
    }
    return 0;
}

/* Arms SIGKILL of CMD's whole tree at now + ms, unless it is armed sooner. */
static void arm_kill(ik_sup *s, int64_t ms)
{
    int64_t at = ik__sup_mono_ms() + (ms > 0 ? ms : 0);
    if (s->kill_at_ms == 0 || at < s->kill_at_ms) s->kill_at_ms = at;
}

/* 'K' to the guardian: SIGKILL to CMD's group and every descendant (S4). */
static void kill_tree(ik_sup *s)
{
    char k = 'K';
    if (s->ctl_w >= 0) {
        while (write(s->ctl_w, &k, 1) < 0 && errno == EINTR) {
        }
    }
}

/* One line on stderr the first time the grace of a CMD's tree runs out. */
static void tell_kill(ik_sup *s)
{
    if (s->told_kill) return;
    s->told_kill = 1;
    if (s->cmd_code >= 0)
        fprintf(stderr,
                "idkeeper: %s: %s exited, but processes it started still ran when the grace "
                "ended: killed them\n",
                s->who ? s->who : "lock", s->cmd);
    else
        fprintf(stderr, "idkeeper: %s: %s did not end within the grace: killed its process tree\n",
                s->who ? s->who : "lock", s->cmd);
}

void ik__sup_signal(ik_sup *s, int sig)
{
    if (s->child <= 0) return;
    kill(-s->child, sig);
    arm_kill(s, s->grace_ms);
}

void ik__sup_stop(ik_sup *s, int64_t grace_ms)
{
    if (s->child <= 0) return;
    kill(-s->child, SIGTERM);
    kill(-s->child, SIGCONT); /* a stopped CMD must see it */
    arm_kill(s, grace_ms);
    if (grace_ms <= 0) kill_tree(s);
}

/* Reads CMD's code from the guardian if it came: then the rest of the tree has
 * until the grace to end (S3). */
static void read_code(ik_sup *s)
{
    int code;
    if (s->rep_r < 0 || read(s->rep_r, &code, sizeof code) != (ssize_t)sizeof code) return;
    s->cmd_code = code;
    arm_kill(s, s->grace_ms);
}

/* The guardian has exited (status st): the tree is gone (S3), the terminal ours. */
static int gone(ik_sup *s, int st)
{
    read_code(s);
    /* killed by hand (SIGKILL, S4): the group is all we can still reach */
    if (WIFSIGNALED(st)) kill(-s->child, SIGKILL);
    if (s->tty) tcsetpgrp(0, getpgrp());
    int code = s->cmd_code >= 0  ? s->cmd_code
               : WIFEXITED(st)   ? WEXITSTATUS(st)
               : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                 : 1;
    if (s->ctl_w >= 0) close(s->ctl_w);
    if (s->rep_r >= 0) close(s->rep_r);
    s->ctl_w = s->rep_r = -1;
    s->child = 0;
    s->tty = 0;
    s->kill_at_ms = 0;
    s->cmd_code = -1;
    return code;
}

int ik__sup_wait_gone(ik_sup *s, int *code)
{
    if (s->child <= 0) return 0;
    int st;
    if (waitpid(s->child, &st, 0) != s->child) return -1;
    *code = gone(s, st);
    return 0;
}

/* Reaps the guardian if it exited: 1 and *code (CMD's), else 0. */
static int reap(ik_sup *s, int *code)
{
    if (s->child <= 0) return 0;
    int st;
    if (waitpid(s->child, &st, WNOHANG) != s->child) return 0;
    *code = gone(s, st);
    return 1;
}

int ik__sup_next(ik_sup *s, int64_t timeout_ms, ik_sup_event *ev)
{
    int64_t until = timeout_ms < 0 ? -1 : ik__sup_mono_ms() + timeout_ms;
    memset(ev, 0, sizeof *ev);
    for (;;) {
        if (reap(s, &ev->code)) {
            ev->kind = IK_SUP_EXITED;
            return 0;
        }
        int64_t now = ik__sup_mono_ms();
        if (s->child > 0 && s->kill_at_ms && now >= s->kill_at_ms) {
            tell_kill(s);
            kill_tree(s);
            s->kill_at_ms = now + 1000; /* again later if it somehow survives */
        }
        int64_t wait = until < 0 ? -1 : until - now;
        if (until >= 0 && wait <= 0) {
            ev->kind = IK_SUP_TIMEOUT;
            return 0;
        }
        if (s->child > 0 && s->kill_at_ms) {
            int64_t k = s->kill_at_ms - now;
            if (k < 0) k = 0;
            if (wait < 0 || k < wait) wait = k;
        }
        struct pollfd pf[3] = {{s->sfd, POLLIN, 0}, {s->note_r, POLLIN, 0}, {s->rep_r, POLLIN, 0}};
        int pr = poll(pf, 3, wait > 1000000 ? 1000000 : (int)wait);
        if (pr < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (pf[2].revents & POLLIN) read_code(s);
        if (pf[2].revents & POLLHUP) { /* the guardian exited: SIGCHLD reaps it */
            close(s->rep_r);
            s->rep_r = -1;
        }
        if (pf[1].revents & POLLIN) {
            char c;
            if (read(s->note_r, &c, 1) == 1) {
                ev->kind = IK_SUP_NOTE;
                ev->note = c;
                return 0;
            }
        }
        if (pf[0].revents & POLLIN) {
            struct signalfd_siginfo si;
            if (read(s->sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGCHLD) {
                ev->kind = IK_SUP_SIGNAL;
                ev->sig = (int)si.ssi_signo;
                return 0;
            }
        }
    }
}
