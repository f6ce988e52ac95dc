/* recipe_local.c: locks and elections between the processes of one host (local:DIR),
 * with flock(2) on files, served first come, first served.
 *
 * Files, for a recipe at PATH (SUFFIX: .lock for a mutex, .rwlock for a read-write
 * lock, .elect for an election):
 *
 *   DIR/locks/PATH.SUFFIX          the lock: a holder keeps flock LOCK_EX on it
 *                                  (LOCK_SH for a reader); never deleted
 *   DIR/locks/PATH.SUFFIX.fence    the fencing counter (fence_bump)
 *   DIR/locks/PATH.SUFFIX.q/       the queue:
 *       .seq                       the ticket counter; its flock is the queue guard
 *       NNNNNNNNNNNNNNNNNNNN.K     one ticket per contender (K: t, r or w), holding
 *                                  its data (the participant id for an election)
 *
 * The protocol. A contender takes a ticket: under the guard it bumps .seq, creates
 * its ticket file (O_EXCL) and takes LOCK_EX on it before letting the guard go, so
 * a ticket is live exactly while its owner's flock on it lasts: the kernel drops
 * it when the owner dies, kill -9 included. Then it waits for its blocker: the
 * nearest live ticket below its own (a reader: the nearest live writer's ticket
 * below), probing liveness with flock(LOCK_SH | LOCK_NB) on a descriptor it keeps
 * open, and sleeping on inotify close events of that one file (no herd: nobody else
 * watches it) or a bounded timer, whichever comes first (F4). When no ticket blocks
 * it, it takes the flock on the lock file (still waiting, the same way, for a
 * process that flocks that file without a ticket, e.g. flock(1)), bumps the fence
 * counter under that file's own flock and holds. Release: close the lock file (drops
 * the flock), then unlink and close the ticket, which wakes the successor.
 *
 * Invariants
 *   F1. Mutual exclusion rests on the lock file's flock alone; tickets only order
 *       the contenders. The lock file is never unlinked, and a holder checks after
 *       flock that the path still names the inode it locked.
 *   F2. Ticket numbers increase (bumped under the guard), so contenders are served
 *       in the order they took tickets. A ticket found unlocked while the guard is
 *       held is dead (created tickets are locked before the guard is released) and
 *       is unlinked then.
 *   F3. The fence counter only grows, machine crashes included: it is read and
 *       rewritten under its file's flock, by a holder, behind a reservation that
 *       is synced before it is used (fence_bump).
 *   F4. A wait never sleeps only on an event: the holder may drop its flock after
 *       the last event it makes, or make none (wait_flock). Every sleep is bounded.
 *
 * A semaphore (recipes/semaphore.c) is a queue, a mutex as above on PATH.semq (no
 * fence: its grants guard nothing but the order), and leases, slot files:
 *
 *   DIR/locks/PATH.sema/max        the max stored with the semaphore (sema_max)
 *   DIR/locks/PATH.sema/NNNNNNNNNN one file per slot, 0 to max - 1: a lease is the
 *                                  flock LOCK_EX on one; it holds the lease's fence
 *                                  and data, for readers (sema_holders)
 *   DIR/locks/PATH.sema.fence      the leases' fencing counter
 *
 * The queue's holder tries the slots with flock(LOCK_EX | LOCK_NB) on descriptors
 * opened read-only, and while none is free sleeps on inotify close events of the
 * slot directory or a bounded timer (F4), whichever comes first: a lease given back
 * (its descriptor closed, kill -9 included) wakes it, and only it (sema_acquire).
 *
 * What local: guarantees, and what it does not: FIFO fairness among idkeeper
 * contenders of one DIR on one host (flock(1) users of the lock file are not
 * queued, though they are excluded); a holder's grant cannot be lost while its
 * process lives, so IN_DOUBT and LOST never happen; a holder that dies frees the
 * lock at once. Nothing here works across hosts or on NFS. Do not delete files
 * under DIR/locks while anything holds or waits for them.
 */
#include "recipe.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define TICKET_DIGITS 20

typedef struct local_lock {
    ik_lock base;
    char file[PATH_MAX];       /* DIR/locks/PATH.SUFFIX */
    char qdir[PATH_MAX];       /* file + ".q" */
    char fence_path[PATH_MAX]; /* file + ".fence" */
    char kind_char;            /* ticket kind: 't', 'r' or 'w' */
    int cancel_fd;             /* eventfd: readable while a cancel is pending */
    int ino;                   /* inotify instance for waits (-1: none, poll) */

    pthread_mutex_t mu; /* guards what info() reads */
    ik_hold_state state;
    int64_t fence;
    int64_t slot; /* SEMA: the slot held */

    /* the acquiring/holding thread's own */
    int main_fd, ticket_fd; /* SEMA: main_fd holds the flock of the slot taken */
    uint64_t ticket;
    char ticket_path[PATH_MAX];
} local_lock;

/* ------------------------------------------------------------------------------
 * Files
 */

/* mkdir -p of the directory part of path (everything before the last '/'). */
static int mkdir_parent(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return IK_ESYS(ENAMETOOLONG);
    char *last = strrchr(buf, '/');
    if (!last || last == buf) return IK_OK;
    *last = '\0';
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return IK_ESYS(errno);
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return IK_ESYS(errno);
    return IK_OK;
}

static const char *suffix_of(ik__lock_kind k)
{
    switch (k) {
    case IK__LOCK_MUTEX:
        return ".lock";
    case IK__LOCK_READ:
    case IK__LOCK_WRITE:
        return ".rwlock";
    case IK__LOCK_LATCH:
        return ".elect";
    case IK__LOCK_SEMQ:
        return ".semq";
    case IK__LOCK_SEMA:
        return ".sema";
    }
    return ".lock";
}

/* DIR of a local: backend, from its canonical URI "local:/abs/dir". */
static const char *dir_of(ik__backend *be)
{
    return be->ops->uri(be) + strlen("local:");
}

static int recipe_file(ik__backend *be, const char *path, ik__lock_kind kind, char *out, size_t len)
{
    int n = snprintf(out, len, "%s/locks%s%s", dir_of(be), path, suffix_of(kind));
    return n < 0 || (size_t)n + 8 >= len ? IK_ESYS(ENAMETOOLONG) : IK_OK;
}

/* "NNNN....N.K" -> seq, kind. 0 or -1 (not a ticket). */
static int parse_ticket(const char *name, uint64_t *seq, char *kind)
{
    uint64_t v = 0;
    for (int i = 0; i < TICKET_DIGITS; i++) {
        if (name[i] < '0' || name[i] > '9') return -1;
        if (v > (UINT64_MAX - (uint64_t)(name[i] - '0')) / 10) return -1;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    if (name[TICKET_DIGITS] != '.' || !name[TICKET_DIGITS + 1] || name[TICKET_DIGITS + 2])
        return -1;
    *seq = v;
    *kind = name[TICKET_DIGITS + 1];
    return 0;
}

/* Takes the queue guard: LOCK_EX on qdir/.seq. Returns its fd, or a negative error. */
static int guard_take(const local_lock *l)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/.seq", l->qdir);
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return IK_ESYS(errno);
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            int e = errno;
            close(fd);
            return IK_ESYS(e);
        }
    }
    return fd;
}

/* Unlinks a ticket found unlocked, if it still is under the guard (F2). */
static void reap(const local_lock *l, const char *path)
{
    int g = guard_take(l);
    if (g < 0) return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) unlink(path);
        close(fd);
    }
    close(g);
}

/* Takes a ticket (see the protocol above). 0 or an error. */
static int ticket_take(local_lock *l)
{
    int rc = mkdir_parent(l->file);
    if (rc == 0 && mkdir(l->qdir, 0755) && errno != EEXIST) rc = IK_ESYS(errno);
    if (rc) return rc;
    int g = guard_take(l);
    if (g < 0) return g;
    char buf[64];
    ssize_t n = pread(g, buf, sizeof buf - 1, 0);
    uint64_t seq = 0;
    if (n > 0) {
        buf[n] = '\0';
        seq = strtoull(buf, NULL, 10);
    }
    int fd = -1;
    for (int tries = 0; tries < 1000 && fd < 0; tries++) {
        seq++;
        snprintf(l->ticket_path, sizeof l->ticket_path, "%s/%0*" PRIu64 ".%c", l->qdir,
                 TICKET_DIGITS, seq, l->kind_char);
        fd = open(l->ticket_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0 && errno != EEXIST) break; /* EEXIST: a counter that went back */
    }
    if (fd < 0) {
        rc = IK_ESYS(errno);
        close(g);
        return rc;
    }
    int len = snprintf(buf, sizeof buf, "%0*" PRIu64 "\n", TICKET_DIGITS, seq);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 || pwrite(g, buf, (size_t)len, 0) != len) {
        rc = IK_ESYS(errno ? errno : EIO);
        unlink(l->ticket_path);
        close(fd);
        close(g);
        return rc;
    }
    size_t dl = strlen(l->base.data);
    if (pwrite(fd, l->base.data, dl, 0) != (ssize_t)dl) { /* for readers only: not fatal */
    }
    close(g);
    l->ticket_fd = fd;
    l->ticket = seq;
    return IK_OK;
}

static void ticket_drop(local_lock *l)
{
    if (l->ticket_fd < 0) return;
    unlink(l->ticket_path);
    close(l->ticket_fd);
    l->ticket_fd = -1;
    l->ticket = 0;
}

typedef struct ticket_ref {
    uint64_t seq;
    char kind;
} ticket_ref;

static int ref_desc(const void *a, const void *b)
{
    uint64_t x = ((const ticket_ref *)a)->seq, y = ((const ticket_ref *)b)->seq;
    return x < y ? 1 : x > y ? -1 : 0;
}

static int ref_asc(const void *a, const void *b)
{
    return -ref_desc(a, b);
}

/* The tickets in qdir below `below` (all if 0), of kind `only` (any if 0), sorted
 * nearest first (descending) or ascending. *out freed by the caller. */
static int list_tickets(const char *qdir, uint64_t below, char only, int ascending,
                        ticket_ref **out, size_t *n_out)
{
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(qdir);
    if (!d) return errno == ENOENT ? IK_OK : IK_ESYS(errno);
    size_t n = 0, cap = 0;
    ticket_ref *v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        ticket_ref t;
        if (parse_ticket(e->d_name, &t.seq, &t.kind)) continue;
        if ((below && t.seq >= below) || (only && t.kind != only)) continue;
        if (ik__grow((void **)&v, &cap, n, sizeof *v, 16)) {
            free(v);
            closedir(d);
            return IK_ENOMEM;
        }
        v[n++] = t;
    }
    closedir(d);
    if (n > 1) qsort(v, n, sizeof *v, ascending ? ref_asc : ref_desc);
    *out = v;
    *n_out = n;
    return IK_OK;
}

/* Opens ticket t and tells whether it is live. Returns an fd (live; the caller
 * closes it), or -1 (gone or dead; a dead one is reaped if reap_dead). */
static int open_live(const local_lock *l, const ticket_ref *t, int reap_dead)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%0*" PRIu64 ".%c", l->qdir, TICKET_DIGITS, t->seq, t->kind);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_SH | LOCK_NB) != 0) return fd; /* EWOULDBLOCK: its owner lives */
    close(fd);
    if (reap_dead) reap(l, p);
    return -1;
}

/* The live ticket our own waits for (an fd on it), -1 if none, or an error < -1. */
static int find_blocker(local_lock *l)
{
    ticket_ref *v;
    size_t n;
    int rc = list_tickets(l->qdir, l->ticket, l->kind_char == 'r' ? 'w' : 0, 0, &v, &n);
    if (rc) return rc < -1 ? rc : IK_ESTORE;
    int fd = -1;
    for (size_t i = 0; i < n && fd < 0; i++)
        fd = open_live(l, &v[i], 1);
    free(v);
    return fd;
}

static int cancel_pending(const local_lock *l)
{
    struct pollfd p = {l->cancel_fd, POLLIN, 0};
    return poll(&p, 1, 0) == 1;
}

static void drain(int fd)
{
    char buf[4096];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

#define RETRY_FIRST_MS 2
#define RETRY_MAX_MS 128
/* One bounded sleep of a wait (F4): until deadline_ms (-1: none), a cancel, an
 * inotify event of the instance (when wd >= 0), or *step ms (10 ms without a
 * watch), whichever comes first; *step starts again at RETRY_FIRST_MS after an event
 * and doubles up to RETRY_MAX_MS while nothing happens. 0 (try again), IK_ETIMEDOUT,
 * IK_ECLOSED (cancel pending) or an error. */
static int nap(const local_lock *l, int wd, int64_t deadline_ms, int *step)
{
    int64_t left = deadline_ms < 0 ? -1 : deadline_ms - ik__mono_ms();
    if (deadline_ms >= 0 && left <= 0) return IK_ETIMEDOUT;
    int cap = wd < 0 ? 10 : *step;
    if (left < 0 || left > cap) left = cap;
    struct pollfd pf[2] = {{l->cancel_fd, POLLIN, 0}, {l->ino, POLLIN, 0}};
    int pr = poll(pf, wd >= 0 ? 2 : 1, (int)left);
    if (pr < 0 && errno != EINTR) return IK_ESYS(errno);
    if (pr > 0 && (pf[0].revents & POLLIN)) return IK_ECLOSED;
    if (pr > 0 && wd >= 0 && (pf[1].revents & POLLIN)) {
        drain(l->ino);
        *step = RETRY_FIRST_MS;
    } else if (*step < RETRY_MAX_MS) {
        *step *= 2;
    }
    return 0;
}

/* Waits until flock(fd, op | LOCK_NB) succeeds (op: LOCK_SH or LOCK_EX), sleeping on
 * inotify close events of fd's file. deadline_ms: monotonic ms, -1 for none.
 * 0 (the flock is taken), IK_ETIMEDOUT, IK_ECLOSED (cancel pending) or an error.
 * The lock's inotify instance lives as long as the lock: closing one costs the
 * kernel a grace period (tens of ms), adding and removing a watch does not.
 *
 * It never sleeps only on an event the holder may not make (F4): the kernel sends
 * the close event before it drops the flock (__fput: fsnotify_close, then
 * locks_remove_file), so a try right after the event can find the file still
 * locked with no event left to come; and flock(1)'s `flock -u` with its descriptor
 * kept open makes no event at all. So each sleep is bounded: RETRY_FIRST_MS after
 * an event, doubling up to RETRY_MAX_MS while nothing happens. */
static int wait_flock(const local_lock *l, int fd, int op, int64_t deadline_ms)
{
    if (flock(fd, op | LOCK_NB) == 0) return IK_OK;
    int wd = -1;
    if (l->ino >= 0) {
        char p[64];
        snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
        drain(l->ino);
        wd = inotify_add_watch(l->ino, p,
                               IN_CLOSE_WRITE | IN_CLOSE_NOWRITE | IN_ATTRIB | IN_DELETE_SELF);
        /* wd < 0: no /proc: poll every 10 ms instead */
    }
    int rc, step = RETRY_FIRST_MS;
    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0) {
            rc = IK_OK;
            break;
        }
        if (errno != EWOULDBLOCK && errno != EINTR) {
            rc = IK_ESYS(errno);
            break;
        }
        rc = nap(l, wd, deadline_ms, &step);
        if (rc) break;
    }
    if (wd >= 0) inotify_rm_watch(l->ino, wd);
    return rc;
}

/* The kernel's boot id: changes with every boot, so with every crash that can lose
 * the page cache. "" if unknown (then every grant syncs). */
static void boot_id(char *out, size_t len)
{
    out[0] = '\0';
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, out, len - 1);
    close(fd);
    if (n <= 0) n = 0;
    out[n] = '\0';
    out[strcspn(out, "\n")] = '\0';
}

#define FENCE_BLOCK 1024

/* Bumps the fence counter (F3), under the fence file's own flock. The file holds
 * the last fence handed out, a reservation and the boot id:
 *   next=N  reserved=R  boot=ID
 * N <= R always, and R is fdatasync'ed before any fence above the old R is handed
 * out, so R bounds every fence ever handed out even if later writes of N are lost
 * in a crash. Such a loss needs a crash of the machine, hence a new boot id: a
 * grant that finds another boot id continues from R. So one grant in FENCE_BLOCK
 * (and the first after a boot) pays for a sync, and fences still only grow.
 * 0 and *fence, or an error (a record it cannot read is never guessed). */
static int fence_bump(const local_lock *l, int64_t *fence)
{
    int fd = open(l->fence_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return IK_ESYS(errno);
    int rc = IK_OK;
    while (flock(fd, LOCK_EX) != 0) {
        if (errno != EINTR) {
            rc = IK_ESYS(errno);
            close(fd);
            return rc;
        }
    }
    char buf[256], boot[64], fboot[64] = "";
    boot_id(boot, sizeof boot);
    long long next = 0, reserved = 0;
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0) rc = IK_ESYS(errno);
    if (n > 0) {
        buf[n] = '\0';
        /* sscanf: the fence file this file wrote; a damaged one fails the count or the
         * range checks below */
        /* NOLINTNEXTLINE(cert-err34-c) */
        if (sscanf(buf, "idkeeper-fence 1\nnext=%lld\nreserved=%lld\nboot=%63s", &next, &reserved,
                   fboot) < 2 ||
            next < 0 || reserved < next)
            rc = IK_ESTORE;
    }
    int sync = 0;
    if (rc == 0 && (!boot[0] || strcmp(boot, fboot) != 0)) {
        next = reserved; /* a new boot: writes of next may have been lost */
        sync = 1;
    }
    if (rc == 0 && next >= INT64_MAX - FENCE_BLOCK) rc = IK_ERANGE;
    if (rc == 0) {
        next++;
        if (next > reserved) {
            reserved = next + FENCE_BLOCK - 1;
            sync = 1;
        }
        char rec[256];
        memset(rec, ' ', sizeof rec);
        int len =
            snprintf(rec, sizeof rec, "idkeeper-fence 1\nnext=%020lld\nreserved=%020lld\nboot=%s\n",
                     next, reserved, boot[0] ? boot : "-");
        if (len < 0 || len >= (int)sizeof rec)
            rc = IK_ESTORE;
        else if (pwrite(fd, rec, (size_t)len, 0) != len)
            rc = IK_ESYS(errno ? errno : EIO);
        else if (sync && fdatasync(fd) != 0)
            rc = IK_ESYS(errno);
    }
    close(fd); /* drops the flock */
    if (rc == 0) *fence = next;
    return rc;
}

/* Takes the lock file's flock (F1). 0, or an error as wait_flock's. */
static int take_main(local_lock *l, int64_t deadline_ms)
{
    int op = l->kind_char == 'r' ? LOCK_SH : LOCK_EX;
    for (;;) {
        int fd = open(l->file, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return IK_ESYS(errno);
        int rc = wait_flock(l, fd, op, deadline_ms);
        if (rc) {
            close(fd);
            return rc;
        }
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(l->file, &b) == 0 && a.st_ino == b.st_ino &&
            a.st_dev == b.st_dev) {
            l->main_fd = fd;
            return IK_OK;
        }
        close(fd); /* the file was replaced under us: lock the one the path names */
    }
}

static void set_state(local_lock *l, ik_hold_state s, int64_t fence)
{
    pthread_mutex_lock(&l->mu);
    l->state = s;
    l->fence = fence;
    pthread_mutex_unlock(&l->mu);
}

static void drop_all(local_lock *l)
{
    if (l->main_fd >= 0) close(l->main_fd); /* first: the successor then finds it free */
    l->main_fd = -1;
    ticket_drop(l);
}

/* Grant order: by fence. */
static int by_fence(const void *a, const void *b)
{
    int64_t x = ((const ik_semaphore_holder *)a)->fence,
            y = ((const ik_semaphore_holder *)b)->fence;
    return x < y ? -1 : x > y;
}

/* ------------------------------------------------------------------------------
 * Semaphores: slot files under DIR/locks/PATH.sema/ (the header)
 */
#define SLOT_DIGITS 10

static void slot_path(const local_lock *l, int64_t i, char *out, size_t len)
{
    snprintf(out, len, "%s/%0*" PRId64, l->file, SLOT_DIGITS, i);
}

/* The first free slot, taken: 1 (l->main_fd holds its flock, *slot its number), 0
 * if every one of the max is held, or an error. Read-only descriptors: their close
 * makes no IN_CLOSE_WRITE, and the waits below drain what they make. */
static int slot_take(local_lock *l, int64_t *slot)
{
    for (int64_t i = 0; i < l->base.sema_max; i++) {
        char p[PATH_MAX];
        slot_path(l, i, p, sizeof p);
        int fd = open(p, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return IK_ESYS(errno);
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
            l->main_fd = fd;
            *slot = i;
            return 1;
        }
        int e = errno;
        close(fd);
        if (e != EWOULDBLOCK && e != EINTR) return IK_ESYS(e);
    }
    return 0;
}

/* The lease's fence and data in its slot file, for readers (sema_holders): through
 * a descriptor of its own, the flock staying on l->main_fd. Not fatal. */
static void slot_note(const local_lock *l, int64_t slot, int64_t fence)
{
    char p[PATH_MAX];
    slot_path(l, slot, p, sizeof p);
    int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return;
    dprintf(fd, "%" PRId64 "\n%s", fence, l->base.data);
    close(fd);
}

/* The queue's holder waits for a slot (the header): tries every slot, then sleeps
 * on a close in the slot directory, a cancel, or a bounded timer (F4: the kernel
 * sends the close event before it drops the flock, and a waiter's own tries make
 * events it drains). 0 and *fence, IK_EBUSY (timeout 0), IK_ETIMEDOUT, IK_ECLOSED,
 * or an error; the lock IDLE again unless 0. */
static int sema_acquire(local_lock *l, int64_t timeout_ms, int64_t deadline, int64_t *fence)
{
    int rc = mkdir_parent(l->file);
    if (rc == 0 && mkdir(l->file, 0755) && errno != EEXIST) rc = IK_ESYS(errno);
    int wd = -1;
    if (rc == 0 && l->ino >= 0) {
        drain(l->ino);
        wd = inotify_add_watch(l->ino, l->file, IN_CLOSE_WRITE | IN_CLOSE_NOWRITE);
    }
    int64_t slot = -1;
    int step = RETRY_FIRST_MS;
    while (rc == 0) {
        if (cancel_pending(l)) {
            rc = IK_ECLOSED;
            break;
        }
        int got = slot_take(l, &slot);
        if (got != 0) {
            rc = got < 0 ? got : 0;
            break;
        }
        if (wd >= 0) drain(l->ino); /* our own tries' closes */
        rc = timeout_ms == 0 ? IK_EBUSY : nap(l, wd, deadline, &step);
    }
    if (wd >= 0) inotify_rm_watch(l->ino, wd);
    int64_t f = 0;
    if (rc == 0) rc = fence_bump(l, &f);
    if (rc == IK_ECLOSED) {
        uint64_t x;
        if (read(l->cancel_fd, &x, sizeof x) < 0) { /* consumed; nothing else to do */
        }
    }
    if (rc) {
        drop_all(l);
        set_state(l, IK_HOLD_IDLE, 0);
        return rc == IK_ESYS(ENOMEM) ? IK_ENOMEM
               : rc == IK_EBUSY || rc == IK_ETIMEDOUT || rc == IK_ECLOSED || rc == IK_ERANGE
                   ? rc
                   : IK_ESTORE;
    }
    slot_note(l, slot, f);
    pthread_mutex_lock(&l->mu);
    l->slot = slot;
    pthread_mutex_unlock(&l->mu);
    set_state(l, IK_HOLD_HELD, f);
    *fence = f;
    return IK_OK;
}

/* The max file under the slot directory: read under its own flock, written with
 * l's max if it holds none. 0 and *stored, or an error. */
static int local_sema_max(ik_lock *lk, int64_t *stored, char *why, size_t why_len)
{
    local_lock *l = (local_lock *)lk;
    int rc = mkdir_parent(l->file);
    if (rc == 0 && mkdir(l->file, 0755) && errno != EEXIST) rc = IK_ESYS(errno);
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/max", l->file);
    int fd = rc ? -1 : open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (rc == 0 && fd < 0) rc = IK_ESYS(errno);
    while (rc == 0 && flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) rc = IK_ESYS(errno);
    char buf[32];
    ssize_t n = rc ? 0 : pread(fd, buf, sizeof buf - 1, 0);
    if (n < 0) rc = IK_ESYS(errno);
    if (rc == 0) {
        buf[n > 0 ? n : 0] = '\0';
        char *end;
        long long v = strtoll(buf, &end, 10);
        if (n > 0 && end != buf && (*end == '\n' || !*end) && v > 0) {
            *stored = v;
        } else if (n == 0) {
            int len = snprintf(buf, sizeof buf, "%" PRId64 "\n", lk->sema_max);
            if (pwrite(fd, buf, (size_t)len, 0) != len) rc = IK_ESYS(errno ? errno : EIO);
            *stored = lk->sema_max;
        } else {
            *stored = 0; /* not a max: left alone */
        }
    }
    if (fd >= 0) close(fd);
    if (rc) return ik__fail(rc, why, why_len, "%s/max: %s", l->file, ik_strerror(rc));
    return IK_OK;
}

/* Every slot file of the semaphore at path whose flock is held, with what its
 * holder wrote in it. */
static int local_sema_holders(ik__backend *be, const char *path, ik_semaphore_layout layout,
                              int64_t *max, ik_semaphore_holder **out, size_t *n)
{
    if (layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    char dir[PATH_MAX], p[PATH_MAX];
    if (recipe_file(be, path, IK__LOCK_SEMA, dir, sizeof dir)) return IK_EINVAL;
    snprintf(p, sizeof p, "%s/max", dir);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[32];
        ssize_t r = read(fd, buf, sizeof buf - 1);
        buf[r > 0 ? r : 0] = '\0';
        *max = strtoll(buf, NULL, 10);
        if (*max < 0) *max = 0;
        close(fd);
    }
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? IK_OK : IK_ESTORE;
    ik_semaphore_holder *v = NULL;
    size_t cnt = 0, cap = 0;
    int rc = IK_OK;
    struct dirent *e;
    while ((e = readdir(d)) && rc == 0) {
        if (strlen(e->d_name) != SLOT_DIGITS || strspn(e->d_name, "0123456789") != SLOT_DIGITS)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK) { /* free */
            close(fd);
            continue;
        }
        char buf[sizeof v->data + 32];
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        close(fd);
        buf[r > 0 ? r : 0] = '\0';
        if (ik__grow((void **)&v, &cap, cnt, sizeof *v, 8)) {
            rc = IK_ENOMEM;
            break;
        }
        ik_semaphore_holder *h = &v[cnt++];
        memset(h, 0, sizeof *h);
        snprintf(h->node, sizeof h->node, "%s", p);
        char *nl = strchr(buf, '\n');
        h->fence = nl ? strtoll(buf, NULL, 10) : 0;
        snprintf(h->data, sizeof h->data, "%s", nl ? nl + 1 : "");
    }
    closedir(d);
    if (rc) {
        free(v);
        return rc;
    }
    if (cnt > 1) qsort(v, cnt, sizeof *v, by_fence);
    *out = v;
    *n = cnt;
    return IK_OK;
}

/* ------------------------------------------------------------------------------
 * The ops
 */
static int local_lock_init(ik_lock *lk)
{
    local_lock *l = (local_lock *)lk;
    if (lk->sema_layout != IK_SEMAPHORE_CURATOR) return IK_EURI; /* a zk:// layout */
    int rc = recipe_file(lk->be, lk->path, lk->kind, l->file, sizeof l->file);
    if (rc) return IK_EINVAL;
    snprintf(l->qdir, sizeof l->qdir, "%s.q", l->file);
    snprintf(l->fence_path, sizeof l->fence_path, "%s.fence", l->file);
    l->kind_char = lk->kind == IK__LOCK_READ ? 'r' : lk->kind == IK__LOCK_WRITE ? 'w' : 't';
    l->main_fd = l->ticket_fd = -1;
    l->cancel_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (l->cancel_fd < 0) return IK_ESYS(errno);
    l->ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK); /* -1: waits poll instead */
    pthread_mutex_init(&l->mu, NULL);
    return IK_OK;
}

static int local_acquire(ik_lock *lk, int64_t timeout_ms, int64_t *fence)
{
    local_lock *l = (local_lock *)lk;
    pthread_mutex_lock(&l->mu);
    int busy = l->state != IK_HOLD_IDLE;
    if (!busy) l->state = IK_HOLD_WAITING;
    pthread_mutex_unlock(&l->mu);
    if (busy) return IK_EINVAL;
    int64_t deadline = timeout_ms < 0 ? -1 : ik__mono_ms() + timeout_ms;
    if (lk->kind == IK__LOCK_SEMA) return sema_acquire(l, timeout_ms, deadline, fence);

    int rc = cancel_pending(l) ? IK_ECLOSED : ticket_take(l);
    while (rc == 0) {
        int fd = find_blocker(l);
        if (fd < -1) rc = fd;
        if (fd < 0) break;
        rc = timeout_ms == 0 ? IK_ETIMEDOUT : wait_flock(l, fd, LOCK_SH, deadline);
        close(fd); /* also drops the LOCK_SH a successful wait took */
    }
    if (rc == 0) rc = take_main(l, timeout_ms == 0 ? 0 : deadline);
    int64_t f = 0;
    if (rc == 0 && lk->kind != IK__LOCK_SEMQ) rc = fence_bump(l, &f);
    if (rc) {
        drop_all(l);
        if (rc == IK_ECLOSED) {
            uint64_t x;
            if (read(l->cancel_fd, &x, sizeof x) < 0) { /* consumed; nothing else to do */
            }
        }
        set_state(l, IK_HOLD_IDLE, 0);
        if (rc == IK_ETIMEDOUT && timeout_ms == 0) return IK_EBUSY;
        if (rc != IK_ETIMEDOUT && rc != IK_ECLOSED && rc != IK_ENOMEM && rc != IK_ERANGE)
            rc = IK_ESTORE;
        return rc;
    }
    set_state(l, IK_HOLD_HELD, f);
    *fence = f;
    return IK_OK;
}

static int local_release(ik_lock *lk)
{
    local_lock *l = (local_lock *)lk;
    pthread_mutex_lock(&l->mu);
    int held = l->state == IK_HOLD_HELD;
    pthread_mutex_unlock(&l->mu);
    if (!held) return IK_EINVAL;
    drop_all(l);
    set_state(l, IK_HOLD_IDLE, 0);
    return IK_OK;
}

static void local_cancel(ik_lock *lk, int on)
{
    local_lock *l = (local_lock *)lk;
    uint64_t x = 1;
    if (on) {
        if (write(l->cancel_fd, &x, sizeof x) < 0) { /* EAGAIN: one is pending already */
        }
    } else if (read(l->cancel_fd, &x, sizeof x) < 0) { /* EAGAIN: none was pending */
    }
}

static void local_info(ik_lock *lk, ik_hold_info *out)
{
    local_lock *l = (local_lock *)lk;
    pthread_mutex_lock(&l->mu);
    out->state = l->state;
    out->fence = l->fence;
    if (l->state == IK_HOLD_HELD && lk->kind == IK__LOCK_SEMA)
        slot_path(l, l->slot, out->node, sizeof out->node);
    else if (l->state == IK_HOLD_HELD)
        snprintf(out->node, sizeof out->node, "%s", l->file);
    snprintf(out->why, sizeof out->why, "%s", l->state == IK_HOLD_HELD ? "held" : "");
    pthread_mutex_unlock(&l->mu);
}

static void local_lock_fini(ik_lock *lk)
{
    local_lock *l = (local_lock *)lk;
    drop_all(l);
    close(l->cancel_fd);
    if (l->ino >= 0) close(l->ino);
    pthread_mutex_destroy(&l->mu);
}

static int local_leader(ik__backend *be, const char *path, char **id)
{
    local_lock l;
    memset(&l, 0, sizeof l);
    if (recipe_file(be, path, IK__LOCK_LATCH, l.file, sizeof l.file)) return IK_EINVAL;
    snprintf(l.qdir, sizeof l.qdir, "%s.q", l.file);
    ticket_ref *v;
    size_t n;
    int rc = list_tickets(l.qdir, 0, 0, 1, &v, &n);
    if (rc) return rc;
    rc = IK_ENOTFOUND;
    for (size_t i = 0; i < n && rc == IK_ENOTFOUND; i++) {
        int fd = open_live(&l, &v[i], 0);
        if (fd < 0) continue;
        char buf[1025];
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        close(fd);
        if (r < 0) continue;
        buf[r] = '\0';
        *id = strdup(buf);
        rc = *id ? IK_OK : IK_ENOMEM;
    }
    free(v);
    return rc;
}

const ik__recipe_ops ik__recipe_local_ops = {
    .scheme = "local",
    .lock_size = sizeof(local_lock),
    .lock_init = local_lock_init,
    .lock_fini = local_lock_fini,
    .acquire = local_acquire,
    .release = local_release,
    .cancel = local_cancel,
    .info = local_info,
    .leader = local_leader,
    .sema_max = local_sema_max,
    .sema_holders = local_sema_holders,
};
