/* guardian.c: the guardian of CMD's process tree, its container and its deadline
 * (see guardian.h; what is promised of CMD's tree: docs/recipes.md, "CMD's process
 * tree").
 *
 * Invariants:
 *   G1. Only idkeeper holds the write end of the lifeline (ctl): close-on-exec, and
 *       the guardian closes its copy before it forks anything. So the guardian reads
 *       end of file exactly when idkeeper is gone, however it went (kill -9 too),
 *       and then kills the tree at once.
 *   G2. The guardian is never in CMD's process group (a group of its own) and
 *       blocks every signal it can: CMD's `kill -KILL 0` does not reach it. In a
 *       PID namespace CMD cannot see it at all, and the namespace's init ignores
 *       every signal sent from inside (the kernel's rule for a namespace's pid 1).
 *   G3. The tree is gone when the guardian has no child left and (cgroup) its
 *       cgroup holds no process: in pidns and userns its one child is the
 *       namespace's init, whose exit the kernel completes only once every process of
 *       the namespace is gone; otherwise it is a child subreaper, so every process
 *       of the tree stays its descendant. It exits only then, and idkeeper gives the
 *       grant back only after it exited.
 *   G4. The deadline only moves forward (the largest end heard; 0 means lost): a
 *       late or repeated message never extends a window a newer proof has not.
 *       When it passes, the guardian stops CMD's tree with the grace itself, whatever
 *       idkeeper does.
 *   G5. A kill that fails is said (IK_GUARD_NO_KILL), never counted as done, and the
 *       guardian waits for that process with a bounded backoff, not a spin.
 *
 * The guardian's states: RUNNING (CMD runs) --CMD exits, a signal passed on, STOP,
 * or the deadline--> ENDING (a SIGKILL time armed: kill_at) --kill_at, KILL, or end
 * of file--> KILLING (the tree killed: init, cgroup.kill, sweeps) --no child left
 * (G3)--> exit. ENDING --no child left--> exit.
 */
#include "guardian.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static const char *const contain_names[] = {"auto", "pidns", "cgroup", "userns", "guardian"};

const char *ik__contain_name(ik_contain c)
{
    return (unsigned)c < sizeof contain_names / sizeof contain_names[0] ? contain_names[c] : "?";
}

/* ------------------------------------------------------------------------------
 * At start, in idkeeper (one thread): the descriptors CMD inherits, the probe.
 */

void ik__tree_fds_at_start(ik_tree_cfg *cfg)
{
    cfg->nkeep = 0;
    for (int fd = 0; fd < 3; fd++)
        cfg->keep[cfg->nkeep++] = fd;
    DIR *d = opendir("/proc/self/fd");
    if (!d) return;
    int own = dirfd(d);
    int found[IK_TREE_KEEP_MAX];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < IK_TREE_KEEP_MAX - 3) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);
        if (*end || end == e->d_name || fd < 3 || fd == own || fd > INT_MAX) continue;
        int fl = fcntl((int)fd, F_GETFD);
        if (fl >= 0 && !(fl & FD_CLOEXEC)) found[n++] = (int)fd;
    }
    closedir(d);
    /* ascending, for the closing of the gaps between them */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && found[j - 1] > found[j]; j--) {
            int t = found[j];
            found[j] = found[j - 1];
            found[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++)
        cfg->keep[cfg->nkeep++] = found[i];
}

/* A child in a new PID namespace (and user namespace with userns), raw clone(2) as
 * fork(2) is: the child is the namespace's pid 1. In the parent: its pid, or -1 with
 * errno. In the child: 0. */
static pid_t clone_ns(int userns)
{
    unsigned long flags = CLONE_NEWPID | (userns ? CLONE_NEWUSER : 0) | SIGCHLD;
    return (pid_t)syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
}

/* In the parent of a new user namespace's first process: maps idkeeper's own uid and
 * gid only (what an unprivileged process may map). 0 or an errno. */
static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return errno;
    size_t len = strlen(text);
    ssize_t w = write(fd, text, len);
    int e = w == (ssize_t)len ? 0 : w < 0 ? errno : EIO;
    close(fd);
    return e;
}

/* Async-signal-safe decimal into buf (at least 24 bytes); returns buf. */
static char *fmt_i64(char *buf, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    size_t k = 0;
    if (v < 0) buf[k++] = '-';
    while (n)
        buf[k++] = tmp[--n];
    buf[k] = '\0';
    return buf;
}

/* dst = the concatenation of the NULL-terminated strings (cut to cap). */
static void cat(char *dst, size_t cap, const char *const parts[])
{
    size_t n = 0;
    for (size_t i = 0; parts[i]; i++)
        for (const char *p = parts[i]; *p && n + 1 < cap; p++)
            dst[n++] = *p;
    dst[n] = '\0';
}

static int map_ids(pid_t pid)
{
    char dir[40], path[64], line[64], num[24];
    cat(dir, sizeof dir, (const char *const[]){"/proc/", fmt_i64(num, pid), NULL});
    cat(path, sizeof path, (const char *const[]){dir, "/setgroups", NULL});
    int e = write_file(path, "deny");
    if (e && e != ENOENT) return e;
    fmt_i64(num, geteuid());
    cat(line, sizeof line, (const char *const[]){num, " ", num, " 1", NULL});
    cat(path, sizeof path, (const char *const[]){dir, "/uid_map", NULL});
    if ((e = write_file(path, line))) return e;
    fmt_i64(num, getegid());
    cat(line, sizeof line, (const char *const[]){num, " ", num, " 1", NULL});
    cat(path, sizeof path, (const char *const[]){dir, "/gid_map", NULL});
    return write_file(path, line);
}

/* In the namespace's pid 1: a mount namespace of its own, whose mounts the host's
 * reach but whose own stay in it, and a /proc of the PID namespace. 0 or an errno. */
static int ns_mounts(void)
{
    if (unshare(CLONE_NEWNS) != 0) return errno;
    if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) return errno;
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) return errno;
    return 0;
}

static void put_msg(int fd, char op, int32_t a, int64_t b)
{
    ik_guard_msg m;
    memset(&m, 0, sizeof m);
    m.op = op;
    m.a = a;
    m.b = b;
    while (write(fd, &m, sizeof m) < 0 && errno == EINTR) {
    }
}

/* Tries what the guardian will do for a PID namespace: 0, or the errno with *step. */
static int probe_ns(int userns, int *step)
{
    int rep[2], go[2];
    if (pipe2(rep, O_CLOEXEC) != 0) return errno;
    if (pipe2(go, O_CLOEXEC) != 0) {
        int e = errno;
        close(rep[0]);
        close(rep[1]);
        return e;
    }
    pid_t p = fork();
    if (p == 0) {
        close(rep[0]);
        pid_t init = clone_ns(userns);
        if (init == 0) { /* pid 1 of the new namespace */
            char c;
            close(go[1]);
            if (userns && read(go[0], &c, 1) != 1) _exit(1);
            int e = ns_mounts();
            if (e) put_msg(rep[1], IK_GUARD_SETUP, IK_GUARD_STEP_PROC, e);
            _exit(e ? 1 : 0);
        }
        if (init < 0) {
            put_msg(rep[1], IK_GUARD_SETUP, IK_GUARD_STEP_NS, errno);
            _exit(1);
        }
        close(go[0]);
        int e = userns ? map_ids(init) : 0;
        if (e)
            put_msg(rep[1], IK_GUARD_SETUP, IK_GUARD_STEP_NS, e);
        else if (userns && write(go[1], "g", 1) != 1)
            e = EPIPE;
        close(go[1]);
        int st;
        while (waitpid(init, &st, 0) < 0 && errno == EINTR) {
        }
        _exit(e || !WIFEXITED(st) || WEXITSTATUS(st) ? 1 : 0);
    }
    close(rep[1]);
    close(go[0]);
    close(go[1]);
    int e = p < 0 ? errno : 0, st = 0;
    if (p > 0) {
        while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
        }
        ik_guard_msg m;
        if (read(rep[0], &m, sizeof m) == (ssize_t)sizeof m) {
            *step = m.a;
            e = (int)m.b;
        } else if (!WIFEXITED(st) || WEXITSTATUS(st)) {
            e = EPERM;
        }
    }
    close(rep[0]);
    return e;
}

/* The directory of idkeeper's own cgroup on the cgroup v2 hierarchy, into dir. 0, or
 * -1 with the reason. */
static int own_cgroup(char *dir, size_t len, const char **why)
{
    char rel[PATH_MAX] = "", mnt[PATH_MAX] = "", line[4096];
    FILE *f = fopen("/proc/self/cgroup", "re");
    if (!f) {
        *why = "no /proc/self/cgroup";
        return -1;
    }
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "0::", 3) == 0) {
            snprintf(rel, sizeof rel, "%s", line + 3);
            rel[strcspn(rel, "\n")] = '\0';
        }
    fclose(f);
    f = fopen("/proc/self/mountinfo", "re");
    if (!f || !rel[0]) {
        if (f) fclose(f);
        *why = "no cgroup v2 hierarchy";
        return -1;
    }
    while (!mnt[0] && fgets(line, sizeof line, f)) {
        /* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS... - FSTYPE SOURCE SUPER */
        char *sep = strstr(line, " - cgroup2 ");
        char root[PATH_MAX], point[PATH_MAX];
        /* NOLINTNEXTLINE(cert-err34-c): fields of the kernel's own table */
        if (sep && sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) == 2 &&
            strcmp(root, "/") == 0)
            snprintf(mnt, sizeof mnt, "%s", point);
    }
    fclose(f);
    if (!mnt[0]) {
        *why = "no cgroup v2 hierarchy mounted";
        return -1;
    }
    if ((size_t)snprintf(dir, len, "%s%s", mnt, strcmp(rel, "/") == 0 ? "" : rel) >= len) {
        *why = "cgroup path too long";
        return -1;
    }
    return 0;
}

/* Tries a cgroup of our own below dir, a child moved into it and ended by cgroup.kill:
 * 0, or -1 with the reason. */
static int probe_cgroup(const char *dir, const char **why)
{
    char sub[PATH_MAX], path[PATH_MAX + 32];
    if (access(dir, W_OK) != 0 ||
        (snprintf(path, sizeof path, "%s/cgroup.procs", dir), access(path, W_OK) != 0)) {
        *why = "idkeeper's cgroup is not delegated to its user";
        return -1;
    }
    snprintf(sub, sizeof sub, "%s/ik-probe-%ld", dir, (long)getpid());
    if (mkdir(sub, 0755) != 0) {
        *why = "cannot make a cgroup below idkeeper's";
        return -1;
    }
    int rc = -1;
    snprintf(path, sizeof path, "%s/cgroup.kill", sub);
    if (access(path, W_OK) != 0) {
        *why = "no cgroup.kill (Linux 5.14 or later)";
    } else {
        int go[2];
        if (pipe2(go, O_CLOEXEC) == 0) {
            pid_t p = fork();
            if (p == 0) {
                char c;
                close(go[1]);
                snprintf(path, sizeof path, "%s/cgroup.procs", sub);
                if (write_file(path, "0")) _exit(1);
                while (read(go[0], &c, 1) < 0 && errno == EINTR) {
                }
                _exit(2); /* not killed */
            }
            close(go[0]);
            int st = 0;
            /* once the child is in (or gone), kill the cgroup */
            for (int i = 0; p > 0 && i < 2000; i++) {
                char buf[64] = "";
                snprintf(path, sizeof path, "%s/cgroup.events", sub);
                int fd = open(path, O_RDONLY | O_CLOEXEC);
                ssize_t r = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
                if (fd >= 0) close(fd);
                if (r > 0 && strstr(buf, "populated 1")) break;
                if (waitpid(p, &st, WNOHANG) == p) {
                    p = 0;
                    break;
                }
                usleep(1000);
            }
            snprintf(path, sizeof path, "%s/cgroup.kill", sub);
            if (p > 0) {
                write_file(path, "1");
                close(go[1]);
                while (waitpid(p, &st, 0) < 0 && errno == EINTR) {
                }
                rc = WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -1;
            } else {
                close(go[1]);
            }
            if (rc) *why = "cannot move a process into a cgroup of its own";
        } else {
            *why = "no pipe";
        }
    }
    for (int i = 0; i < 1000 && rmdir(sub) != 0 && errno == EBUSY; i++)
        usleep(1000);
    return rc;
}

int ik__tree_probe(ik_contain want, ik_tree_cfg *cfg, char *note, size_t note_len)
{
    note[0] = '\0';
    char pid_why[160] = "", cg_why_buf[160] = "", user_why[160] = "";
    int step = IK_GUARD_STEP_NS, e;
    if (want == IK_CONTAIN_AUTO || want == IK_CONTAIN_PIDNS) {
        if (!(e = probe_ns(0, &step))) {
            cfg->mode = IK_CONTAIN_PIDNS;
            return 0;
        }
        snprintf(pid_why, sizeof pid_why, "%s: %s",
                 step == IK_GUARD_STEP_PROC ? "its /proc" : "a PID namespace", strerror(e));
        if (want == IK_CONTAIN_PIDNS) {
            snprintf(note, note_len, "--contain pidns: %s (it needs CAP_SYS_ADMIN: root)", pid_why);
            return -1;
        }
    }
    if (want == IK_CONTAIN_AUTO || want == IK_CONTAIN_CGROUP) {
        const char *why = NULL;
        if (own_cgroup(cfg->cgroup, sizeof cfg->cgroup, &why) == 0 &&
            probe_cgroup(cfg->cgroup, &why) == 0) {
            cfg->mode = IK_CONTAIN_CGROUP;
            return 0;
        }
        snprintf(cg_why_buf, sizeof cg_why_buf, "%s", why);
        if (want == IK_CONTAIN_CGROUP) {
            snprintf(note, note_len, "--contain cgroup: %s", cg_why_buf);
            return -1;
        }
    }
    if (want == IK_CONTAIN_AUTO || want == IK_CONTAIN_USERNS) {
        step = IK_GUARD_STEP_NS;
        if (!(e = probe_ns(1, &step))) {
            cfg->mode = IK_CONTAIN_USERNS;
            return 0;
        }
        snprintf(user_why, sizeof user_why, "%s: %s",
                 step == IK_GUARD_STEP_PROC ? "its /proc" : "a user namespace", strerror(e));
        if (want == IK_CONTAIN_USERNS) {
            snprintf(note, note_len, "--contain userns: %s", user_why);
            return -1;
        }
    }
    cfg->mode = IK_CONTAIN_GUARDIAN;
    if (want == IK_CONTAIN_GUARDIAN)
        snprintf(note, note_len,
                 "--contain guardian: CMD's tree gets no PID namespace or cgroup of its own");
    else
        snprintf(note, note_len,
                 "this host gives CMD's tree no PID namespace (%s), no cgroup (%s) "
                 "and no user namespace (%s)",
                 pid_why, cg_why_buf, user_why);
    return 0;
}

/* ------------------------------------------------------------------------------
 * From here on: the guardian, its init and CMD's child. Async-signal-safe only, and
 * by system call where a sanitizer's runtime replaces the libc function with one
 * that takes a lock (sys_prctl).
 */

/* prctl(2) by its system call. A sanitizer's runtime puts its own prctl in libc's
 * place, and ASan's, for PR_SET_NAME, takes the lock of its thread registry, which
 * every thread's start and end takes too: held by one of idkeeper's threads at the
 * fork, it is held in the child for good, and the child waited for it forever (CI:
 * the guardian stuck there, CMD never started, idkeeper holding its lease; tests/unit/
 * test_cli_guardian_mt.c). The system call takes no lock of this process's. */
static void sys_prctl(int op, unsigned long arg)
{
    if (syscall(SYS_prctl, op, arg, 0UL, 0UL, 0UL) != 0) { /* a name or a flag: best effort */
    }
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Closes every descriptor but cfg->keep[] and the n in extra[] (-1: none). */
static void close_all_but(const ik_tree_cfg *cfg, const int *extra, size_t n_extra)
{
    int keep[IK_TREE_KEEP_MAX + 4];
    size_t n = 0;
    for (size_t i = 0; i < cfg->nkeep; i++)
        keep[n++] = cfg->keep[i];
    for (size_t i = 0; i < n_extra && i < 4; i++)
        if (extra[i] >= 0) keep[n++] = extra[i];
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned lo = 0;
    for (size_t i = 0; i <= n; i++) {
        unsigned hi = i < n ? (unsigned)keep[i] : ~0U;
        if (hi > lo && syscall(SYS_close_range, lo, hi - 1, 0) != 0) {
            /* no close_range (Linux before 5.9): one by one up to the limit */
            long max = sysconf(_SC_OPEN_MAX);
            for (long fd = lo; fd < (long)hi && fd < (max > 0 ? max : 65536); fd++)
                close((int)fd);
        }
        if (i < n) lo = (unsigned)keep[i] + 1;
    }
}

/* CMD's own child: CMD's group (and the terminal), the cgroup, only CMD's descriptors,
 * CMD's signal mask and dispositions, exec. On a failure, the step and errno on ep. */
static _Noreturn void exec_cmd(const ik_guard_start *g, const char *cgroup_procs)
{
    setpgid(0, 0);
    if (g->tty) tcsetpgrp(0, getpgrp()); /* SIGTTOU is blocked here */
    if (cgroup_procs) {
        int fd = open(cgroup_procs, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "0", 1) != 1) {
            put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_CGROUP, errno);
            _exit(126);
        }
        close(fd);
    }
    close_all_but(g->cfg, &g->ep_w, 1);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, NULL);
    sigprocmask(SIG_SETMASK, g->cmd_mask, NULL);
    execvpe(g->argv[0], g->argv, g->envp);
    int e = errno;
    put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_EXEC, e);
    _exit(e == ENOENT ? 127 : 126);
}

/* The PID namespace's pid 1 (pidns, userns): mounts, forks CMD (pid 2), passes the
 * signals the guardian sends (one byte each on sig_r) on to CMD's group, reaps every
 * orphan, tells the guardian CMD's code (code_w), and exits once it has no child
 * left: then nothing else is left in the namespace. End of file on sig_r (the
 * guardian gone): it exits, and the kernel kills the namespace. Every signal is
 * blocked, and as a namespace's init it gets none sent from inside (G2). */
static _Noreturn void ns_init(const ik_guard_start *g, int sig_r, int code_w, int go_r)
{
    sys_prctl(PR_SET_PDEATHSIG, SIGKILL);
    sys_prctl(PR_SET_NAME, (unsigned long)"idkeeper-init");
    char c;
    if (go_r >= 0 && read(go_r, &c, 1) != 1) _exit(1); /* userns: once the maps are written */
    int e = ns_mounts();
    if (e) {
        put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_PROC, e);
        _exit(1);
    }
    setpgid(0, 0);
    int mine[3] = {sig_r, code_w, g->ep_w};
    close_all_but(g->cfg, mine, 3);
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int cfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t cmd = fork();
    if (cmd == 0) {
        close(sig_r);
        close(code_w);
        exec_cmd(g, NULL);
    }
    if (cmd < 0) {
        put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_FORK, errno);
        _exit(1);
    }
    setpgid(cmd, cmd);
    close(g->ep_w); /* idkeeper reads end of file once CMD's exec closed its copy */
    for (;;) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0)
            if (p == cmd)
                put_msg(code_w, IK_GUARD_CODE,
                        WIFEXITED(st)     ? WEXITSTATUS(st)
                        : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                          : 1,
                        0);
        if (p < 0 && errno == ECHILD) _exit(0);
        struct pollfd pf[2] = {{sig_r, POLLIN, 0}, {cfd, POLLIN, 0}};
        if (poll(pf, 2, cfd < 0 ? 50 : -1) <= 0) continue;
        if (pf[0].revents) {
            unsigned char s;
            ssize_t r = read(sig_r, &s, 1);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) _exit(1);
            if (r == 1) {
                kill(-cmd, s);
                if (s == SIGTERM) kill(-cmd, SIGCONT); /* a stopped CMD must see it */
            }
        }
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(cfd, &si, sizeof si) > 0) {
            }
        }
    }
}

/* The guardian's own state. */
typedef struct guard {
    const ik_guard_start *g;
    pid_t self;
    int ns;            /* pidns, userns */
    pid_t child;       /* pidns, userns: the namespace's init; else CMD */
    int sig_w;         /* pidns, userns: signals for the init to pass on */
    int code_r;        /* pidns, userns: CMD's code from the init (-1 once read to end) */
    char cg[PATH_MAX]; /* cgroup: its directory, "" if none */
    int code;          /* CMD's code, -1 before it came */
    int64_t deadline;  /* G4 */
    int64_t kill_at;   /* ns: SIGKILL to the tree then; 0: not armed */
    int killing;       /* the tree was killed; sweeps go on (guardian, cgroup) */
    int lapsed;        /* the deadline's stop was done */
    int orphan;        /* idkeeper is gone */
    int64_t sweep_at, sweep_step_ms; /* the next sweep; its backoff (G5) */
    pid_t told[64];                  /* the processes said unkillable */
    size_t ntold;
} guard;

/* sig to CMD's group (SIGCONT after a SIGTERM, which a stopped CMD must see). */
static void to_group(guard *gd, int sig)
{
    if (gd->ns) {
        unsigned char s = (unsigned char)sig;
        if (gd->sig_w >= 0 && write(gd->sig_w, &s, 1) < 0) { /* the init is gone */
        }
        return;
    }
    kill(-gd->child, sig);
    if (sig == SIGTERM) kill(-gd->child, SIGCONT);
}

/* SIGKILL to the tree at at_ns, unless it is armed sooner. */
static void arm_at(guard *gd, int64_t at_ns)
{
    if (gd->kill_at == 0 || at_ns < gd->kill_at) gd->kill_at = at_ns;
}

/* SIGKILL to the tree ms from now, unless it is armed sooner. */
static void arm(guard *gd, int64_t ms)
{
    arm_at(gd, now_ns() + (ms > 0 ? ms : 0) * 1000000);
}

/* 1 if pid was said unkillable already; else remembers it (0). */
static int told(guard *gd, pid_t pid)
{
    for (size_t i = 0; i < gd->ntold; i++)
        if (gd->told[i] == pid) return 1;
    if (gd->ntold < sizeof gd->told / sizeof gd->told[0]) gd->told[gd->ntold++] = pid;
    return 0;
}

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

int ik__guard_parse_stat(const char *buf, size_t len, pid_t *ppid, pid_t *pgrp)
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
    char path[64];
    cat(path, sizeof path, (const char *const[]){"/proc/", name, "/stat", NULL});
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char buf[512];
    ssize_t r = read(fd, buf, sizeof buf);
    close(fd);
    return r > 0 && ik__guard_parse_stat(buf, (size_t)r, ppid, pgrp);
}

/* One reading of /proc: SIGKILL to every live process of CMD's group and every
 * descendant of the guardian found. A descendant listed before its parent (pids
 * wrapped) is found on a later sweep, once reparented to the guardian (a
 * subreaper). A kill refused is said once (G5). 1 if a kill was refused. */
static int sweep(guard *gd)
{
    pid_t ours[1024];
    size_t n = 0;
    int refused = 0;
    int dfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        kill(-gd->child, SIGCONT); /* cannot list: at least the group never stays stopped */
        kill(-gd->child, SIGKILL);
        return 0;
    }
    char buf[4096];
    long r;
    while ((r = syscall(SYS_getdents64, dfd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < r;) {
            const struct ik__dirent64 *d = (const void *)(buf + off);
            off += d->d_reclen;
            const char *q = d->d_name;
            long pid = parse_num(&q, q + 16);
            pid_t ppid, pgrp;
            if (pid <= 0 || *q || pid == gd->self || !proc_stat(d->d_name, &ppid, &pgrp)) continue;
            int mine = pgrp == gd->child || ppid == gd->self;
            for (size_t i = 0; i < n && !mine; i++)
                mine = ppid == ours[i];
            if (!mine) continue;
            if (kill((pid_t)pid, SIGKILL) != 0 && errno != ESRCH) {
                refused = 1;
                if (!told(gd, (pid_t)pid))
                    put_msg(gd->g->rep_w, IK_GUARD_NO_KILL, (int32_t)pid, errno);
            }
            if (n < sizeof ours / sizeof ours[0]) ours[n++] = (pid_t)pid;
        }
    }
    close(dfd);
    return refused;
}

/* Kills the tree: the namespace's init (the kernel does the rest), the cgroup, or
 * the group and every descendant. 1 if a kill was refused. */
static int kill_tree(guard *gd)
{
    gd->killing = 1;
    if (gd->ns) {
        kill(gd->child, SIGKILL);
        return 0;
    }
    if (gd->cg[0]) {
        char path[PATH_MAX + 16];
        cat(path, sizeof path, (const char *const[]){gd->cg, "/cgroup.kill", NULL});
        write_file(path, "1");
    }
    return sweep(gd);
}

/* The deadline passed: said on stderr by the guardian itself (idkeeper may be the one
 * frozen), told to idkeeper, and CMD's tree stopped with the grace. */
static void lapse(guard *gd)
{
    const ik_guard_start *g = gd->g;
    gd->lapsed = 1;
    static const char why[] = " still stands came within its safe window (the store cut "
                              "off, or idkeeper frozen or starved): the guardian stops ";
    char line[700];
    cat(line, sizeof line,
        (const char *const[]){"idkeeper: ", g->who, ": no proof that ", g->grant, why, g->argv[0],
                              "\n", NULL});
    if (write(2, line, strlen(line)) < 0) { /* nowhere to say it */
    }
    put_msg(g->rep_w, IK_GUARD_LAPSED, 0, 0);
    to_group(gd, SIGTERM);
    /* counted from the deadline, not from this late wake-up: SIGKILL by the deadline
     * plus the grace, which the store's term leaves room for (hold_run.h) */
    arm_at(gd, gd->deadline + (g->grace_ms > 0 ? g->grace_ms : 0) * 1000000);
}

/* One message from idkeeper. */
static void on_msg(guard *gd, const ik_guard_msg *m)
{
    switch (m->op) {
    case IK_GUARD_DEADLINE:
        if (m->b > gd->deadline) gd->deadline = m->b; /* G4 */
        break;
    case IK_GUARD_SIGNAL:
        to_group(gd, m->a);
        arm(gd, gd->g->grace_ms);
        break;
    case IK_GUARD_STOP:
        to_group(gd, SIGTERM);
        arm(gd, m->b);
        break;
    case IK_GUARD_KILL:
        if (!gd->killing) kill_tree(gd);
        break;
    default:
        break;
    }
}

/* CMD's code came (from its wait, or the init): told, and the rest of the tree has
 * until the grace. */
static void cmd_ended(guard *gd, int code)
{
    if (gd->code >= 0) return;
    gd->code = code;
    put_msg(gd->g->rep_w, IK_GUARD_CODE, code, 0);
    arm(gd, gd->g->grace_ms);
}

/* Starts CMD in its container. 0, or exits (the step and errno told on ep). */
static void start(guard *gd)
{
    const ik_guard_start *g = gd->g;
    ik_contain m = g->cfg->mode;
    if (m == IK_CONTAIN_PIDNS || m == IK_CONTAIN_USERNS) {
        int sp[2], cp[2], go[2] = {-1, -1};
        if (pipe2(sp, O_CLOEXEC) != 0 || pipe2(cp, O_CLOEXEC | O_NONBLOCK) != 0 ||
            (m == IK_CONTAIN_USERNS && pipe2(go, O_CLOEXEC) != 0)) {
            put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_NS, errno);
            _exit(126);
        }
        pid_t p = clone_ns(m == IK_CONTAIN_USERNS);
        if (p == 0) {
            close(sp[1]);
            close(cp[0]);
            if (go[1] >= 0) close(go[1]);
            ns_init(g, sp[0], cp[1], go[0]);
        }
        if (p < 0) {
            put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_NS, errno);
            _exit(126);
        }
        close(sp[0]);
        close(cp[1]);
        gd->child = p;
        gd->sig_w = sp[1];
        gd->code_r = cp[0];
        if (m == IK_CONTAIN_USERNS) {
            close(go[0]);
            int e = map_ids(p);
            if (e) {
                put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_NS, e);
                kill(p, SIGKILL);
                _exit(126);
            }
            if (write(go[1], "g", 1) != 1) { /* the init is gone: its wait says so */
            }
            close(go[1]);
        }
        return;
    }
    char procs[PATH_MAX + 16];
    const char *cg_procs = NULL;
    if (m == IK_CONTAIN_CGROUP) {
        char num[24];
        cat(gd->cg, sizeof gd->cg,
            (const char *const[]){g->cfg->cgroup, "/ik-", fmt_i64(num, gd->self), NULL});
        if (mkdir(gd->cg, 0755) != 0 && errno != EEXIST) {
            put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_CGROUP, errno);
            gd->cg[0] = '\0';
            _exit(126);
        }
        cat(procs, sizeof procs, (const char *const[]){gd->cg, "/cgroup.procs", NULL});
        cg_procs = procs;
    }
    pid_t p = fork();
    if (p == 0) exec_cmd(g, cg_procs);
    if (p < 0) {
        put_msg(g->ep_w, IK_GUARD_SETUP, IK_GUARD_STEP_FORK, errno);
        if (gd->cg[0]) rmdir(gd->cg);
        _exit(126);
    }
    setpgid(p, p); /* also here: no race with a signal passed on before CMD's child ran */
    gd->child = p;
}

/* cgroup: 1 while a process is in it. */
static int cg_populated(const guard *gd)
{
    char path[PATH_MAX + 16], buf[256];
    cat(path, sizeof path, (const char *const[]){gd->cg, "/cgroup.events", NULL});
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (r <= 0) return 0;
    buf[r] = '\0';
    for (const char *p = buf; (p = strstr(p, "populated ")); p++)
        if (p == buf || p[-1] == '\n') return p[10] == '1';
    return 0;
}

/* No child left (G3): the cgroup emptied (what is still in it is killed and waited
 * for: a process moved in from outside) and removed; exit with CMD's code. */
static _Noreturn void finish(guard *gd)
{
    if (gd->cg[0]) {
        char path[PATH_MAX + 16];
        cat(path, sizeof path, (const char *const[]){gd->cg, "/cgroup.kill", NULL});
        for (int i = 0; cg_populated(gd) && i < 5000; i++) {
            if (i == 0) write_file(path, "1");
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, NULL);
        }
        rmdir(gd->cg);
    }
    _exit(gd->code >= 0 ? gd->code : 128 + SIGKILL);
}

_Noreturn void ik__guardian(const ik_guard_start *g)
{
    guard gd;
    memset(&gd, 0, sizeof gd);
    gd.g = g;
    gd.self = getpid();
    gd.sig_w = gd.code_r = -1;
    gd.code = -1;
    gd.deadline = g->deadline_ns;
    gd.sweep_step_ms = 10;
    gd.ns = g->cfg->mode == IK_CONTAIN_PIDNS || g->cfg->mode == IK_CONTAIN_USERNS;
    setpgid(0, 0); /* G2 */
    sys_prctl(PR_SET_CHILD_SUBREAPER, 1);
    sys_prctl(PR_SET_NAME, (unsigned long)"idkeeper-guard"); /* in ps: not taken for idkeeper */
    sigset_t all, chld;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL); /* G2 */
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    int cfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    fcntl(g->ctl_r, F_SETFL, O_NONBLOCK);
    start(&gd);
    close(g->ep_w); /* idkeeper reads end of file once CMD's exec closed the last copy */
    for (;;) {
        int st;
        pid_t p;
        while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
            if (p != gd.child) continue;
            if (!gd.ns) /* CMD itself (guardian, cgroup) */
                cmd_ended(&gd, WIFEXITED(st)     ? WEXITSTATUS(st)
                               : WIFSIGNALED(st) ? 128 + WTERMSIG(st)
                                                 : 1);
        }
        if (p < 0 && errno == ECHILD) {
            ik_guard_msg m; /* the init's last word, if it came with its exit */
            while (gd.code_r >= 0 && read(gd.code_r, &m, sizeof m) == (ssize_t)sizeof m)
                if (m.op == IK_GUARD_CODE) cmd_ended(&gd, m.a);
            finish(&gd);
        }
        int64_t now = now_ns();
        if (!gd.lapsed && now >= gd.deadline) lapse(&gd);
        if (gd.kill_at && now >= gd.kill_at && !gd.killing) {
            int refused = kill_tree(&gd);
            put_msg(g->rep_w, IK_GUARD_KILLED, (gd.code < 0 ? 1 : 0) | (refused ? 2 : 0), 0);
            gd.sweep_at = now + gd.sweep_step_ms * 1000000;
        } else if (gd.killing && !gd.ns && gd.sweep_at && now >= gd.sweep_at) {
            /* guardian, cgroup: sweep again, less often while a kill is refused (G5) */
            if (sweep(&gd) && gd.sweep_step_ms < 1000) gd.sweep_step_ms *= 2;
            gd.sweep_at = now + gd.sweep_step_ms * 1000000;
        }
        int64_t wake = INT64_MAX;
        if (!gd.lapsed && gd.deadline < wake) wake = gd.deadline;
        if (gd.kill_at && !gd.killing && gd.kill_at < wake) wake = gd.kill_at;
        if (gd.killing && !gd.ns && gd.sweep_at < wake) wake = gd.sweep_at;
        int ms = -1;
        if (wake != INT64_MAX) {
            int64_t left = (wake - now + 999999) / 1000000;
            ms = left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
        }
        if (cfd < 0 && (ms < 0 || ms > 50)) ms = 50;
        struct pollfd pf[3] = {
            {gd.orphan ? -1 : g->ctl_r, POLLIN, 0}, {cfd, POLLIN, 0}, {gd.code_r, POLLIN, 0}};
        if (poll(pf, 3, ms) <= 0) continue;
        if (pf[0].revents) {
            ik_guard_msg m;
            ssize_t r;
            while ((r = read(g->ctl_r, &m, sizeof m)) == (ssize_t)sizeof m)
                on_msg(&gd, &m);
            if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) { /* G1 */
                gd.orphan = 1;
                if (!gd.killing) kill_tree(&gd);
                gd.sweep_at = now_ns() + gd.sweep_step_ms * 1000000;
            }
        }
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(cfd, &si, sizeof si) > 0) {
            }
        }
        if (pf[2].revents) {
            ik_guard_msg m;
            ssize_t r;
            while ((r = read(gd.code_r, &m, sizeof m)) == (ssize_t)sizeof m)
                if (m.op == IK_GUARD_CODE) cmd_ended(&gd, m.a);
            if (r == 0) { /* the init exited: its wait comes */
                close(gd.code_r);
                gd.code_r = -1;
            }
        }
    }
}
