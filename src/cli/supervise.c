/* supervise.c: runs CMD for `idkeeper lock` and `idkeeper elect`: the guardian's
 * lifeline and reports, the terminal, signals, one event loop (see supervise.h; the
 * guardian itself: guardian.c; what is promised of CMD's tree: docs/recipes.md,
 * "CMD's process tree").
 *
 * Invariants:
 *   S1. The lifeline's write end (ctl_w) is idkeeper's alone (guardian.h, G1), and is
 *       written and closed under ctl_mu: the hold monitor's thread sends deadlines on
 *       it while the main thread may close it, and a write must never land on a
 *       descriptor number reused meanwhile.
 *   S2. IK_SUP_EXITED comes only once the guardian has exited, which it does only
 *       once nothing of CMD's tree is left (G3): a grant given back after it never
 *       leaves a process of CMD's running.
 *   S3. "killed them" is said only when the guardian says the kill was done; a kill
 *       it was refused is said as such, with the process (G5).
 */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
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

int ik__sup_init(ik_sup *s, const char *who)
{
    memset(s, 0, sizeof s[0]);
    s->sfd = s->note_r = s->note_w = s->ctl_w = s->rep_r = -1;
    s->who = who;
    pthread_mutex_init(&s->ctl_mu, NULL);
    ik__tree_fds_at_start(&s->tree); /* before anything of ours is open */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    s->sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    /* SIGTTOU too (not read): taking the terminal back from CMD's group; and SIGPIPE:
     * a deadline the monitor's thread sends after the guardian exited, before it is
     * reaped, must fail with EPIPE, not end idkeeper (exit 141) */
    sigaddset(&set, SIGTTOU);
    sigaddset(&set, SIGPIPE);
    if (s->sfd < 0 || pthread_sigmask(SIG_BLOCK, &set, &s->old_mask) != 0) return -1;
    int p[2];
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return -1;
    s->note_r = p[0];
    s->note_w = p[1];
    return 0;
}

int ik__sup_contain(ik_sup *s, ik_contain want)
{
    char note[600];
    if (ik__tree_probe(want, &s->tree, note, sizeof note) != 0) {
        fprintf(stderr, "idkeeper: %s: %s\n", s->who, note);
        return -1;
    }
    if (s->tree.mode == IK_CONTAIN_GUARDIAN)
        fprintf(stderr,
                "idkeeper: %s: %s: a process of CMD's tree that runs as another user, or "
                "that idkeeper may not signal, can outlive the grant (docs/recipes.md, "
                "\"CMD's process tree\")\n",
                s->who, note);
    return 0;
}

static void close_ctl(ik_sup *s)
{
    pthread_mutex_lock(&s->ctl_mu);
    if (s->ctl_w >= 0) close(s->ctl_w); /* a guardian still there kills its tree (G1) */
    s->ctl_w = -1;
    pthread_mutex_unlock(&s->ctl_mu);
}

void ik__sup_fini(ik_sup *s)
{
    close_ctl(s);
    if (s->rep_r >= 0) close(s->rep_r);
    s->rep_r = -1;
    if (s->sfd >= 0) close(s->sfd);
    if (s->note_r >= 0) close(s->note_r);
    if (s->note_w >= 0) close(s->note_w);
    s->sfd = s->note_r = s->note_w = -1;
    pthread_mutex_destroy(&s->ctl_mu);
}

void ik__sup_note(ik_sup *s, char c)
{
    while (write(s->note_w, &c, 1) < 0 && errno == EINTR) {
    }
}

/* One message to the guardian, if one runs (S1). The lifeline is non-blocking: a
 * guardian that does not read (stopped by hand) loses a deadline, not idkeeper. */
static void to_guardian(ik_sup *s, char op, int32_t a, int64_t b)
{
    ik_guard_msg m;
    memset(&m, 0, sizeof m);
    m.op = op;
    m.a = a;
    m.b = b;
    pthread_mutex_lock(&s->ctl_mu);
    if (s->ctl_w >= 0) {
        while (write(s->ctl_w, &m, sizeof m) < 0 && errno == EINTR) {
        }
    }
    pthread_mutex_unlock(&s->ctl_mu);
}

void ik__sup_deadline(ik_sup *s, int64_t until_ns)
{
    if (until_ns > 0) to_guardian(s, IK_GUARD_DEADLINE, 0, until_ns);
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

/* Why CMD could not start, from the guardian's IK_GUARD_SETUP. */
static int setup_why(const ik_guard_msg *m, const char *cmd, char *why, size_t len)
{
    const char *e = strerror((int)m->b);
    switch (m->a) {
    case IK_GUARD_STEP_EXEC:
        snprintf(why, len, "cannot run %s: %s", cmd, e);
        return m->b == ENOENT ? IK_EXIT_CMD_NOT_FOUND : IK_EXIT_CMD_CANNOT_RUN;
    case IK_GUARD_STEP_NS:
        snprintf(why, len, "cannot start %s in a PID namespace of its own: %s", cmd, e);
        break;
    case IK_GUARD_STEP_PROC:
        snprintf(why, len, "cannot mount the /proc of %s's PID namespace: %s", cmd, e);
        break;
    case IK_GUARD_STEP_CGROUP:
        snprintf(why, len, "cannot start %s in a cgroup of its own: %s", cmd, e);
        break;
    default:
        snprintf(why, len, "cannot start %s: %s", cmd, e);
        break;
    }
    return IK_EXIT_CMD_CANNOT_RUN;
}

int ik__sup_spawn(ik_sup *s, char *const argv[], const char *const env_add[], int64_t grace_ms,
                  int64_t deadline_ns, const char *grant, char *why, size_t why_len)
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
    snprintf(s->grant, sizeof s->grant, "%s", grant);
    int tty = isatty(0) && tcgetpgrp(0) == getpgrp();
    ik_guard_start g = {
        .cfg = &s->tree,
        .argv = argv,
        .envp = envp,
        .cmd_mask = &s->old_mask,
        .tty = tty,
        .ctl_r = ctl[0],
        .rep_w = rep[1],
        .ep_w = ep[1],
        .deadline_ns = deadline_ns,
        .grace_ms = grace_ms > 0 ? grace_ms : 0,
        .who = s->who ? s->who : "lock",
        .grant = s->grant,
    };
    pid_t pid = fork();
    if (pid == 0) {
        close(ctl[1]); /* G1 */
        close(rep[0]);
        close(ep[0]);
        ik__guardian(&g);
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
    fcntl(ctl[1], F_SETFL, O_NONBLOCK); /* S1: a stopped guardian never blocks us */
    s->child = pid;
    s->tty = tty;
    pthread_mutex_lock(&s->ctl_mu);
    s->ctl_w = ctl[1];
    pthread_mutex_unlock(&s->ctl_mu);
    s->rep_r = rep[0];
    s->cmd_code = -1;
    s->lapsed = 0;
    s->cmd = argv[0];
    ik_guard_msg m;
    ssize_t r;
    while ((r = read(ep[0], &m, sizeof m)) < 0 && errno == EINTR) {
    }
    close(ep[0]);
    if (r == (ssize_t)sizeof m) {
        /* CMD did not start: the guardian exits with nothing left */
        int code;
        while (ik__sup_wait_gone(s, &code) < 0 && errno == EINTR) {
        }
        return setup_why(&m, argv[0], why, why_len);
    }
    return 0;
}

void ik__sup_signal(ik_sup *s, int sig)
{
    if (s->child > 0) to_guardian(s, IK_GUARD_SIGNAL, sig, 0);
}

void ik__sup_stop(ik_sup *s, int64_t grace_ms)
{
    if (s->child <= 0) return;
    to_guardian(s, IK_GUARD_STOP, 0, grace_ms > 0 ? grace_ms : 0);
}

/* The uid of process pid, -1 if it cannot be read. */
static long uid_of(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    FILE *f = fopen(path, "re");
    long uid = -1;
    if (!f) return -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Uid:", 4) == 0) uid = strtol(line + 4, NULL, 10);
    fclose(f);
    return uid;
}

/* Reads the guardian's reports: CMD's code, kills done or refused, the lapse.
 * 1 if the deadline lapsed (IK_GUARD_LAPSED), else 0. */
static int read_reports(ik_sup *s)
{
    int lapsed = 0;
    ik_guard_msg m;
    const char *who = s->who ? s->who : "lock";
    while (s->rep_r >= 0 && read(s->rep_r, &m, sizeof m) == (ssize_t)sizeof m) {
        switch (m.op) {
        case IK_GUARD_CODE:
            s->cmd_code = m.a;
            break;
        case IK_GUARD_KILLED: /* S3 */
            if (m.a & 1)
                fprintf(stderr, "idkeeper: %s: %s did not end within the grace: %s\n", who, s->cmd,
                        m.a & 2 ? "killing its process tree (not every process could be killed: "
                                  "below)"
                                : "killed its process tree");
            else
                fprintf(stderr,
                        "idkeeper: %s: %s exited, but processes it started still ran when the "
                        "grace ended: %s\n",
                        who, s->cmd,
                        m.a & 2 ? "not every one could be killed (below)" : "killed them");
            break;
        case IK_GUARD_NO_KILL: {
            long uid = uid_of((pid_t)m.a);
            fprintf(stderr,
                    "idkeeper: %s: cannot kill process %ld of %s's tree (uid %ld): %s; waiting "
                    "for it to end (docs/recipes.md, \"CMD's process tree\")\n",
                    who, (long)m.a, s->cmd, uid, strerror((int)m.b));
            break;
        }
        case IK_GUARD_LAPSED:
            lapsed = s->lapsed = 1;
            break;
        default:
            break;
        }
    }
    return lapsed;
}

/* The guardian has exited (status st): the tree is gone (S2), the terminal ours. */
static int gone(ik_sup *s, int st)
{
    read_reports(s);
    if (WIFSIGNALED(st) && s->tree.mode == IK_CONTAIN_CGROUP) {
        /* the guardian killed by hand (SIGKILL): its cgroup is ours to end */
        char path[sizeof s->tree.cgroup + 64];
        snprintf(path, sizeof path, "%s/ik-%ld/cgroup.kill", s->tree.cgroup, (long)s->child);
        FILE *f = fopen(path, "we");
        if (f) {
            fputs("1", f);
            fclose(f);
        }
    }
    if (s->tty) tcsetpgrp(0, getpgrp());
    int code = s->cmd_code >= 0  ? s->cmd_code
               : WIFEXITED(st)   ? WEXITSTATUS(st)
               : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                 : 1;
    close_ctl(s);
    if (s->rep_r >= 0) close(s->rep_r);
    s->rep_r = -1;
    s->child = 0;
    s->tty = 0;
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
        int64_t wait = until < 0 ? -1 : until - now;
        if (until >= 0 && wait <= 0) {
            ev->kind = IK_SUP_TIMEOUT;
            return 0;
        }
        struct pollfd pf[3] = {{s->sfd, POLLIN, 0}, {s->note_r, POLLIN, 0}, {s->rep_r, POLLIN, 0}};
        int pr = poll(pf, 3, wait > 1000000 ? 1000000 : (int)wait);
        if (pr < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if ((pf[2].revents & POLLIN) && read_reports(s)) {
            ev->kind = IK_SUP_LAPSED;
            return 0;
        }
        if (pf[2].revents & POLLHUP && !(pf[2].revents & POLLIN)) {
            close(s->rep_r); /* the guardian exited: SIGCHLD reaps it */
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
