/* supervise.c: runs CMD for `idkeeper lock` and `idkeeper elect`: process group,
 * terminal, signals, SIGTERM-then-SIGKILL, one event loop (see supervise.h). */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ik__sup_init(ik_sup *s)
{
    memset(s, 0, sizeof *s);
    s->sfd = s->note_r = s->note_w = -1;
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

int ik__sup_spawn(ik_sup *s, char *const argv[], const char *const env_add[], char *why,
                  size_t why_len)
{
    char **envp = make_env(env_add);
    int ep[2];
    if (!envp || pipe2(ep, O_CLOEXEC) != 0) {
        free(envp);
        snprintf(why, why_len, "cannot start %s: %s", argv[0], strerror(errno));
        return IK_EXIT_CMD_CANNOT_RUN;
    }
    int tty = isatty(0) && tcgetpgrp(0) == getpgrp();
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        free(envp);
        close(ep[0]);
        close(ep[1]);
        snprintf(why, why_len, "cannot start %s: %s", argv[0], strerror(e));
        return IK_EXIT_CMD_CANNOT_RUN;
    }
    if (pid == 0) {
        /* async-signal-safe calls only from here on */
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) _exit(IK_EXIT_LOCK_LOST); /* idkeeper died already */
        if (tty) tcsetpgrp(0, getpid());
        sigprocmask(SIG_SETMASK, &s->old_mask, NULL);
        execvpe(argv[0], argv, envp);
        int e = errno;
        while (write(ep[1], &e, sizeof e) < 0 && errno == EINTR) {
        }
        _exit(e == ENOENT ? IK_EXIT_CMD_NOT_FOUND : IK_EXIT_CMD_CANNOT_RUN);
    }
    setpgid(pid, pid); /* also here: no race with a signal sent before the child ran */
    if (tty) tcsetpgrp(0, pid);
    free(envp);
    close(ep[1]);
    int e = 0;
    ssize_t r;
    while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    s->child = pid;
    s->tty = tty;
    s->kill_at_ms = 0;
    if (r == (ssize_t)sizeof e) {
        /* exec failed: reap the child now */
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        if (tty) tcsetpgrp(0, getpgrp());
        s->child = 0;
        snprintf(why, why_len, "cannot run %s: %s", argv[0], strerror(e));
        return e == ENOENT ? IK_EXIT_CMD_NOT_FOUND : IK_EXIT_CMD_CANNOT_RUN;
    }
    return 0;
}

void ik__sup_signal(ik_sup *s, int sig)
{
    if (s->child > 0) kill(-s->child, sig);
}

void ik__sup_stop(ik_sup *s, int64_t grace_ms)
{
    if (s->child <= 0) return;
    kill(-s->child, SIGTERM);
    kill(-s->child, SIGCONT); /* a stopped CMD must see it */
    int64_t at = mono_ms() + (grace_ms > 0 ? grace_ms : 0);
    if (s->kill_at_ms == 0 || at < s->kill_at_ms) s->kill_at_ms = at;
    if (grace_ms <= 0) kill(-s->child, SIGKILL);
}

/* Reaps CMD if it exited: 1 and *code, else 0. */
static int reap(ik_sup *s, int *code)
{
    if (s->child <= 0) return 0;
    int st;
    pid_t r = waitpid(s->child, &st, WNOHANG);
    if (r != s->child) return 0;
    /* the rest of its group, if a grandchild lingers while we stop it */
    if (s->kill_at_ms) kill(-s->child, SIGKILL);
    if (s->tty) tcsetpgrp(0, getpgrp());
    s->child = 0;
    s->tty = 0;
    s->kill_at_ms = 0;
    *code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
    return 1;
}

int ik__sup_next(ik_sup *s, int64_t timeout_ms, ik_sup_event *ev)
{
    int64_t until = timeout_ms < 0 ? -1 : mono_ms() + timeout_ms;
    memset(ev, 0, sizeof *ev);
    for (;;) {
        if (reap(s, &ev->code)) {
            ev->kind = IK_SUP_EXITED;
            return 0;
        }
        int64_t now = mono_ms();
        if (s->child > 0 && s->kill_at_ms && now >= s->kill_at_ms) {
            kill(-s->child, SIGKILL);
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
        struct pollfd pf[2] = {{s->sfd, POLLIN, 0}, {s->note_r, POLLIN, 0}};
        int pr = poll(pf, 2, wait > 1000000 ? 1000000 : (int)wait);
        if (pr < 0) {
            if (errno == EINTR) continue;
            return -1;
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
