/* backend_local.c: the one-host backend: worker slots are files held with flock(2).
 *
 * Layout: DIR/APP/slots/NNNN.slot, one per worker number ever used. A slot is held
 * while some open file description holds LOCK_EX on its file; the kernel drops the
 * lock when the holder dies, kill -9 included, so a dead holder's slot is free at
 * once. Descriptors are O_CLOEXEC, so a program a holder execs never inherits a
 * slot; a fork()'s child closes its copies at once (held_child), so it never holds
 * one of its parent's either, and the slot frees when the parent dies.
 *
 * A file can be removed or replaced under its holder (a backup restore, an rsync, a
 * hand): the next taker then flocks another inode under the same name. Two rules
 * keep one holder per worker all the same (docs/local.md, "A slot file removed or
 * replaced"):
 *   LS1. A slot is the inode its holder flocks, not the file's name: the holder
 *        checks that the path still names its inode after its flock (try_slot) and
 *        after every renewal (local_slot_persist), and stops (IK_ELOST) once it does
 *        not; its lease then takes a slot again, on the file the path names now, so
 *        the time record lives on where the next holder reads it.
 *   LS2. A holder also binds the slot's name in the kernel's abstract socket
 *        namespace, "@idkeeper/slot/DEV/INO/W" (the slots directory's device and
 *        inode, the worker): no change to a file takes that name away, and the
 *        kernel frees it when the holder dies, as it drops a flock. A taker that
 *        finds it bound treats the slot as held, so no second process takes a
 *        worker whose holder lives while that holder has not yet seen the change.
 *        Where the holders do not share a network namespace (the name's scope) or
 *        the slots directory itself was replaced, LS1 alone stops the old holder,
 *        at its next renewal: half a persist interval at most.
 *
 * Each file holds one fixed-size (512-byte) text record, rewritten in place with a
 * single pwrite + fdatasync, so a reader never sees a mix of two versions and a
 * crash leaves the old or the new record. A file that was new (never written) has
 * its directory fsynced after its first record, so that its name survives a crash
 * as well as its contents:
 *
 *   idkeeper-slot 1
 *   record_ms=1763779548123     time record (upper bound of time issued)
 *   holder=host:8080            identity of the current or last holder
 *   pid=1234
 *   host=myhost
 *   since_ms=1763779500000      when the current holder took it (0: released)
 *   end
 *
 * A slot whose record cannot be read is never taken (its floor is unknown): it is
 * reported in the ENOSLOT message as unreadable. Delete the file by hand if the
 * record is truly lost, after making sure no clock is ahead of now.
 *
 * Tags (segment and sequence counters) live in SQLite: backend_local_tags.c.
 *
 * What this backend does not do: coordinate between hosts. Use zk:// for a fleet.
 */
#include "backend_local.h"
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RECORD_SIZE 512
#define ACQUIRE_PASSES 3 /* a `workers` listing may hold LOCK_SH for an instant */

typedef struct local_slot local_slot;
struct local_slot {
    int fd;      /* -1 in a fork's child (held_child) */
    int name_fd; /* the socket bound to the slot's name (LS2); -1: none */
    uint32_t worker;
    char identity[256];
    int64_t since_ms;
    int failing;               /* the last renewal failed (lease thread) */
    char path[PATH_MAX];       /* the file whose inode fd flocks (LS1) */
    local_slot *hnext, *hprev; /* on held_slots */
};

/* The slots this process holds, for fork(): in a fork's child, held_child closes
 * the child's copies of their descriptors before fork() returns there, so the
 * parent's descriptors alone keep the flocks (the child's lease copies refuse
 * anyway: core/lease.c). held_mu is taken across the fork (prepare, parent,
 * child), so the list is whole in the child. */
static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;
static local_slot *held_slots;

static void held_prepare(void)
{
    pthread_mutex_lock(&held_mu);
}

static void held_parent(void)
{
    pthread_mutex_unlock(&held_mu);
}

static void held_child(void)
{
    for (local_slot *s = held_slots; s; s = s->hnext) {
        close(s->fd);
        if (s->name_fd >= 0) close(s->name_fd);
        s->fd = s->name_fd = -1;
    }
    held_slots = NULL;
    pthread_mutex_unlock(&held_mu);
}

static void held_watch(void)
{
    pthread_atfork(held_prepare, held_parent, held_child);
}

static void held_add(local_slot *s)
{
    pthread_once(&held_once, held_watch);
    pthread_mutex_lock(&held_mu);
    s->hprev = NULL;
    s->hnext = held_slots;
    if (held_slots) held_slots->hprev = s;
    held_slots = s;
    pthread_mutex_unlock(&held_mu);
}

static void held_del(local_slot *s)
{
    pthread_mutex_lock(&held_mu);
    if (s->hprev)
        s->hprev->hnext = s->hnext;
    else if (held_slots == s)
        held_slots = s->hnext;
    if (s->hnext) s->hnext->hprev = s->hprev;
    s->hnext = s->hprev = NULL;
    pthread_mutex_unlock(&held_mu);
}

typedef struct slot_record {
    int64_t record_ms;
    char holder[256];
    long pid;
    char host[128];
    int64_t since_ms;
} slot_record;

/* mkdir -p, mode 0755. */
static int mkdirs(const char *path)
{
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return IK_ESYS(ENAMETOOLONG);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) && errno != EEXIST) return IK_ESYS(errno);
        *p = '/';
    }
    if (mkdir(buf, 0755) && errno != EEXIST) return IK_ESYS(errno);
    return IK_OK;
}

/* local:DIR: a non-empty directory without control characters. */
static int local_uri_check(const char *uri, char *why, size_t why_len)
{
    if (strncmp(uri, "local:", 6) != 0)
        return ik__fail(IK_EURI, why, why_len, "a local URI begins local:");
    if (uri[6] == '\0') return ik__fail(IK_EURI, why, why_len, "local: needs a directory");
    for (const char *c = uri + 6; *c; c++)
        if ((unsigned char)*c < 0x20)
            return ik__fail(IK_EURI, why, why_len, "control character in local: directory");
    return IK_OK;
}

/* `idkeeper check` (ik_coord_check): the hazards, then whether DIR can be written
 * at all and whether idkeeper.db passes SQLite's own check: IK_ESTORE naming the
 * first that fails (a store that cannot serve is no hazard verdict, but the check
 * must not pass it). */
static int local_hazards_check(ik__backend *be, char *why, size_t why_len)
{
    local_backend *b = (local_backend *)be;
    int rc = ik__local_hazards(b, why, why_len);
    if (rc && rc != IK_EUNSAFE) return rc;
    int health = ik__local_dir_probe(b, why, why_len);
    if (!health) health = ik__local_db_check(b, 1, why, why_len);
    return health ? health : rc;
}

static int local_open(const char *uri, const ik_coord_options *o, ik__backend **out, char *why,
                      size_t why_len)
{
    const char *dir = uri + strlen("local:");
    int rc = mkdirs(dir);
    if (rc) return ik__fail(IK_ESTORE, why, why_len, "cannot create %s: %s", dir, ik_strerror(rc));
    char abs[PATH_MAX];
    if (!realpath(dir, abs))
        return ik__fail(IK_ESTORE, why, why_len, "cannot resolve %s: %s", dir, strerror(errno));
    struct stat st;
    if (stat(abs, &st) != 0 || !S_ISDIR(st.st_mode))
        return ik__fail(IK_ESTORE, why, why_len, "%s is not a directory", abs);
    local_backend *b = calloc(1, sizeof *b);
    if (!b) return IK_ENOMEM;
    b->base.ops = &ik__backend_local_ops;
    pthread_mutex_init(&b->db_mu, NULL);
    pthread_mutex_init(&b->said_mu, NULL);
    b->dir = strdup(abs);
    size_t ul = strlen(abs) + 8;
    b->uri = malloc(ul);
    if (!b->dir || !b->uri) {
        free(b->dir);
        free(b->uri);
        free(b);
        return IK_ENOMEM;
    }
    snprintf(b->uri, ul, "local:%s", abs);
    /* a slot or counter is written from a few ms after the check: the interval
     * (hazard.h) is that of a 30 s lease, 10 s */
    ik__hazards_init(&b->base.hz, o, 30000, b->uri);
    rc = ik__local_hazards(b, why, why_len);
    /* a damaged idkeeper.db is refused here, not at the first counter request, which
     * would answer 503 for ever (`idkeeper check` opens anyway, to name it) */
    if (!rc && !o->check_only) rc = ik__local_db_check(b, 0, why, why_len);
    if (rc && !(rc == IK_EUNSAFE && o->check_only)) {
        ik__hazards_free(&b->base.hz);
        pthread_mutex_destroy(&b->said_mu);
        pthread_mutex_destroy(&b->db_mu);
        free(b->dir);
        free(b->uri);
        free(b);
        return rc;
    }
    /* Slots, locks and counters are all written in DIR: a DIR this user cannot write
     * is the reason of every write's failure to come, whichever call meets it (a
     * listing still works, so nothing is refused or logged here) */
    if (faccessat(AT_FDCWD, b->dir, W_OK, AT_EACCESS) != 0) {
        char cause[600], line[700];
        ik__local_cause(b, errno, b->dir, cause, sizeof cause);
        snprintf(line, sizeof line, "cannot write in the data directory: %s", cause);
        ik__local_say(b, 0, line);
    }
    *out = &b->base;
    return IK_OK;
}

static void local_close(ik__backend *be)
{
    local_backend *b = (local_backend *)be;
    ik__local_tags_close(b);
    ik__hazards_free(&b->base.hz);
    pthread_mutex_destroy(&b->said_mu);
    pthread_mutex_destroy(&b->db_mu);
    free(b->dir);
    free(b->uri);
    free(b);
}

static void local_last_error(ik__backend *be, char *buf, size_t len)
{
    local_backend *b = (local_backend *)be;
    pthread_mutex_lock(&b->said_mu);
    snprintf(buf, len, "%s", b->said);
    pthread_mutex_unlock(&b->said_mu);
}

static const char *local_uri(const ik__backend *be)
{
    return ((const local_backend *)be)->uri;
}

static void slot_path(const local_backend *b, const char *app, uint32_t w, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s/slots/%04" PRIu32 ".slot", b->dir, app, w);
}

/* Reads and parses a slot record. 0: parsed; 1: empty file (never written);
 * -1: unreadable or malformed. */
static int read_record(int fd, slot_record *r)
{
    char buf[RECORD_SIZE + 1];
    ssize_t n = pread(fd, buf, RECORD_SIZE, 0);
    memset(r, 0, sizeof *r);
    if (n == 0) return 1;
    if (n < 0) return -1;
    buf[n] = '\0';
    if (strncmp(buf, "idkeeper-slot 1\n", 16) != 0 || !strstr(buf, "\nend\n")) return -1;
    int have_record = 0;
    for (char *line = buf + 16, *next; *line && strncmp(line, "end\n", 4); line = next) {
        next = strchr(line, '\n');
        if (!next) return -1;
        *next++ = '\0';
        char *eq = strchr(line, '=');
        if (!eq) return -1;
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(line, "record_ms")) {
            char *e;
            errno = 0;
            long long x = strtoll(v, &e, 10);
            if (errno || *e || x < 0) return -1;
            r->record_ms = x;
            have_record = 1;
        } else if (!strcmp(line, "holder")) {
            snprintf(r->holder, sizeof r->holder, "%s", v);
        } else if (!strcmp(line, "pid")) {
            r->pid = strtol(v, NULL, 10);
        } else if (!strcmp(line, "host")) {
            snprintf(r->host, sizeof r->host, "%s", v);
        } else if (!strcmp(line, "since_ms")) {
            r->since_ms = strtoll(v, NULL, 10);
        }
    }
    return have_record ? 0 : -1;
}

/* Rewrites the record in one pwrite of RECORD_SIZE bytes, then fdatasync. */
static int write_record(int fd, const slot_record *r)
{
    char buf[RECORD_SIZE];
    memset(buf, '\n', sizeof buf);
    int n = snprintf(buf, sizeof buf,
                     "idkeeper-slot 1\nrecord_ms=%" PRId64 "\nholder=%s\npid=%ld\nhost=%s\n"
                     "since_ms=%" PRId64 "\nend\n",
                     r->record_ms, r->holder, r->pid, r->host, r->since_ms);
    if (n < 0 || n >= (int)sizeof buf) return IK_EINVAL;
    ssize_t w = pwrite(fd, buf, sizeof buf, 0);
    if (w != (ssize_t)sizeof buf) return w < 0 ? IK_ESYS(errno) : IK_ESYS(EIO);
    if (fdatasync(fd)) return IK_ESYS(errno);
    return IK_OK;
}

/* fsync(2) of the directory at path. 0 or a negated errno. */
static int fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return IK_ESYS(errno);
    int rc = fsync(fd) ? IK_ESYS(errno) : IK_OK;
    close(fd);
    return rc;
}

/* Makes a new slot file's name durable: fsyncs DIR/APP/slots, then DIR/APP and DIR
 * (which mkdirs may have just created). 0 or a negated errno. */
static int sync_slot_dirs(const local_backend *b, const char *app)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s/slots", b->dir, app);
    int rc = fsync_dir(path);
    if (!rc) {
        snprintf(path, sizeof path, "%s/%s", b->dir, app);
        rc = fsync_dir(path);
    }
    return rc ? rc : fsync_dir(b->dir);
}

/* 1 if path names the inode fd is open on (LS1); 0 if it names another file or
 * none; a negated errno if that cannot be told. */
static int names_inode(const char *path, int fd)
{
    struct stat a, b;
    if (fstat(fd, &a) != 0) return IK_ESYS(errno);
    if (stat(path, &b) != 0) return errno == ENOENT || errno == ENOTDIR ? 0 : IK_ESYS(errno);
    return a.st_ino == b.st_ino && a.st_dev == b.st_dev;
}

/* LS2: binds slot w's name (its slots directory, by device and inode, and w) to a
 * socket of its own. 0 with *fd_out the socket, or -1 where this process can make
 * no such socket (a sandbox without AF_UNIX: LS1 alone); IK_EBUSY: the name is
 * bound, by a live holder. */
static int bind_name(const char *slots_dir, uint32_t w, int *fd_out)
{
    *fd_out = -1;
    struct stat st;
    if (stat(slots_dir, &st) != 0) return IK_ESYS(errno);
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return IK_OK;
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "idkeeper/slot/%llx/%llx/%" PRIu32,
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino, w);
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
    if (bind(fd, (struct sockaddr *)&a, len) != 0) {
        int e = errno;
        close(fd);
        return e == EADDRINUSE ? IK_EBUSY : IK_OK;
    }
    *fd_out = fd;
    return IK_OK;
}

/* Tries to take slot w. 0: taken (*fd_out holds the lock on the file the path
 * names, LS1, and *name_fd its name, LS2; *rec its record, or all zero for a file
 * never written: new, whose name is not durable yet); IK_EBUSY: held by a live
 * holder; IK_ESTORE: its record cannot be read (its floor is unknown); a negated
 * errno: the file cannot be made, opened or locked (path names it). */
static int try_slot(const local_backend *b, const char *app, uint32_t w, int *fd_out, int *name_fd,
                    slot_record *rec, char *path, size_t path_len)
{
    slot_path(b, app, w, path, path_len);
    for (;;) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return IK_ESYS(errno);
        if (flock(fd, LOCK_EX | LOCK_NB)) {
            int e = errno;
            close(fd);
            return e == EWOULDBLOCK ? IK_EBUSY : IK_ESYS(e);
        }
        int same = names_inode(path, fd);
        if (same != 1) {
            close(fd);
            if (same < 0) return same;
            continue; /* removed or replaced since our open: take the file it names now */
        }
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s/slots", b->dir, app);
        int r = bind_name(dir, w, name_fd);
        if (r == 0 && read_record(fd, rec) < 0) r = IK_ESTORE; /* unknown floor: never */
        if (r) {
            if (*name_fd >= 0) close(*name_fd);
            close(fd);
            return r;
        }
        *fd_out = fd;
        return IK_OK;
    }
}

/* Appends "W by HOLDER" for each slot in range that is held, to buf. */
static void describe_holders(const local_backend *b, const ik__slot_request *req, char *buf,
                             size_t len)
{
    size_t used = strlen(buf);
    int shown = 0;
    for (uint32_t w = req->worker_min; w <= req->worker_max && used + 1 < len; w++) {
        char path[PATH_MAX];
        slot_path(b, req->app, w, path, sizeof path);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        slot_record r;
        int rr = read_record(fd, &r);
        close(fd);
        if (shown == 8) {
            snprintf(buf + used, len - used, ", ...");
            break;
        }
        /* a record never written: taken this instant, or its file replaced under a
         * holder that still has the slot's name (LS2) */
        const char *who = rr < 0 ? "record" : rr > 0 ? "a holder whose file is new" : r.holder;
        int n = snprintf(buf + used, len - used, "%s%" PRIu32 " %s %s", shown ? ", " : "", w,
                         rr < 0 ? "unreadable" : "by", who);
        if (n > 0) used += (size_t)n < len - used ? (size_t)n : len - used - 1;
        shown++;
        if (w == UINT32_MAX) break;
    }
}

/* The slots to try, in order (n of them, written to *n): the slot this identity held
 * last, if any (rule 3), then every slot in range from *rest on, lowest first or
 * shuffled. The caller frees it; NULL: out of memory. Reads the records, takes
 * nothing. */
static uint32_t *try_order(local_backend *b, const ik__slot_request *req, size_t *n, size_t *rest)
{
    uint32_t count = req->worker_max - req->worker_min + 1;
    uint32_t *order = malloc(sizeof *order * (count + 1));
    if (!order) return NULL;
    size_t k = 0;
    for (uint32_t w = req->worker_min; w <= req->worker_max; w++) {
        char path[PATH_MAX];
        slot_path(b, req->app, w, path, sizeof path);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            slot_record r;
            if (read_record(fd, &r) == 0 && !strcmp(r.holder, req->identity)) order[k++] = w;
            close(fd);
        }
        if (k || w == UINT32_MAX) break;
    }
    *rest = k;
    for (uint32_t i = 0; i < count; i++)
        order[k++] = req->worker_min + i;
    if (req->choice == IK_SLOT_RANDOM) {
        unsigned seed = (unsigned)(ik__mono_ns() ^ (getpid() * 2654435761u));
        for (size_t i = k; i-- > *rest + 1;) {
            size_t j = *rest + (size_t)rand_r(&seed) % (i - *rest + 1);
            uint32_t t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }
    *n = k;
    return order;
}

static int local_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                              char *why, size_t why_len)
{
    local_backend *b = (local_backend *)be;
    char dir[PATH_MAX];
    int rc = ik__local_hazards_gate(b);
    if (rc) return ik__hazards_refused(&b->base.hz, why, why_len);
    snprintf(dir, sizeof dir, "%s/%s/slots", b->dir, req->app);
    rc = mkdirs(dir);
    if (rc) {
        char cause[600];
        ik__local_cause(b, -rc, dir, cause, sizeof cause);
        return ik__fail(IK_ESTORE, why, why_len, "cannot create the slots directory: %s", cause);
    }

    uint32_t count = req->worker_max - req->worker_min + 1;
    size_t n, rest;
    uint32_t *order = try_order(b, req, &n, &rest);
    if (!order) return IK_ENOMEM;

    int fd = -1, name_fd = -1;
    uint32_t got = 0, failed = 0; /* slots of the last pass that could not be tried */
    slot_record rec;
    char path[PATH_MAX], failed_path[PATH_MAX] = "";
    int failed_errno = 0;
    for (int pass = 0; pass < ACQUIRE_PASSES && fd < 0; pass++) {
        if (pass) usleep(20000);
        failed = 0;
        for (size_t i = 0; i < n && fd < 0; i++) {
            int r = try_slot(b, req->app, order[i], &fd, &name_fd, &rec, path, sizeof path);
            if (r == 0) got = order[i];
            if (i >= rest && r != 0 && r != IK_EBUSY && r != IK_ESTORE) { /* once a slot */
                failed++;
                failed_errno = -r;
                snprintf(failed_path, sizeof failed_path, "%s", path);
            }
        }
    }
    free(order);
    if (fd < 0 && failed == count) { /* nothing is held: the directory fails us */
        char cause[600];
        ik__local_cause(b, failed_errno, failed_path, cause, sizeof cause);
        return ik__fail(IK_ESTORE, why, why_len, "cannot take a worker slot of app %s in %s: %s",
                        req->app, b->uri, cause);
    }
    if (fd < 0) {
        int k = snprintf(why, why_len,
                         "no free worker slot: all %" PRIu32 " slots %" PRIu32 "-%" PRIu32
                         " of app %s in %s are held",
                         count, req->worker_min, req->worker_max, req->app, b->uri);
        if (failed && why_len && k > 0 && (size_t)k < why_len) {
            char cause[600];
            ik__local_cause(b, failed_errno, failed_path, cause, sizeof cause);
            k += snprintf(why + k, why_len - (size_t)k, " or cannot be taken (%" PRIu32 ": %s)",
                          failed, cause);
        }
        if (why_len && k > 0 && (size_t)k < why_len)
            k += snprintf(why + k, why_len - (size_t)k, ": ");
        if (why_len && k > 0 && (size_t)k < why_len) describe_holders(b, req, why, why_len);
        return IK_ENOSLOT;
    }

    int64_t found = rec.record_ms;
    int fresh = rec.holder[0] == '\0' && rec.since_ms == 0 && found == 0; /* never written */
    slot_record nr;
    memset(&nr, 0, sizeof nr);
    nr.record_ms = req->new_record_ms > found ? req->new_record_ms : found;
    snprintf(nr.holder, sizeof nr.holder, "%s", req->identity);
    nr.pid = (long)getpid();
    gethostname(nr.host, sizeof nr.host - 1);
    nr.since_ms = ik__wall_ms();
    rc = write_record(fd, &nr);
    /* a new file's record is on disk; its name must be too, or a power cut could
     * take the time record away (docs/guarantees.md promise 11) */
    if (!rc && fresh) rc = sync_slot_dirs(b, req->app);
    if (rc) {
        close(fd);
        if (name_fd >= 0) close(name_fd);
        char cause[600];
        if (rc < 0 && rc > -4096)
            ik__local_cause(b, -rc, path, cause, sizeof cause);
        else
            snprintf(cause, sizeof cause, "%s", ik_strerror(rc));
        return ik__fail(IK_ESTORE, why, why_len, "cannot write slot %" PRIu32 ": %s", got, cause);
    }
    local_slot *s = calloc(1, sizeof *s);
    if (!s) {
        close(fd);
        if (name_fd >= 0) close(name_fd);
        return IK_ENOMEM;
    }
    s->fd = fd;
    s->name_fd = name_fd;
    s->worker = got;
    s->since_ms = nr.since_ms;
    snprintf(s->identity, sizeof s->identity, "%s", req->identity);
    snprintf(s->path, sizeof s->path, "%s", path);
    held_add(s);
    out->worker = got;
    out->old_record_ms = found;
    out->record_ms = nr.record_ms;
    out->since_ms = nr.since_ms;
    out->proof = (ik__lease_proof){ik__mono_ns(), IK_FOREVER};
    out->handle = s;
    return IK_OK;
}

static int store_record(local_slot *s, int64_t record_ms, int64_t since_ms)
{
    slot_record r;
    memset(&r, 0, sizeof r);
    r.record_ms = record_ms;
    snprintf(r.holder, sizeof r.holder, "%s", s->identity);
    r.pid = (long)getpid();
    gethostname(r.host, sizeof r.host - 1);
    r.since_ms = since_ms;
    return write_record(s->fd, &r);
}

/* The record written, and then the file checked (LS1): IK_ELOST once the path no
 * longer names the inode this holder flocks, logged once with the path. A write
 * that fails is IK_EINDOUBT (the flock is still ours): its cause is logged when the
 * failures begin, and again when the writes succeed. */
static int local_slot_persist(ik__backend *be, void *handle, int64_t record_ms,
                              ik__lease_proof *proof, int64_t *written_ms)
{
    local_backend *b = (local_backend *)be;
    local_slot *s = handle;
    int rc = ik__local_hazards_gate(b);
    if (rc) return rc;
    rc = store_record(s, record_ms, s->since_ms);
    int same = rc ? 1 : names_inode(s->path, s->fd);
    if (same == 0) {
        ik__logf("%s: the file of worker slot %" PRIu32 ", %s, was removed or replaced under "
                 "its holder: this lease stops issuing under it and takes a slot again "
                 "(docs/local.md)",
                 b->uri, s->worker, s->path);
        /* a path that names another file may be another filesystem mounted over DIR:
         * judged now, before the lease takes a slot on it, not at the next interval */
        ik__local_hazards(b, NULL, 0);
        return IK_ELOST;
    }
    if (!rc && same < 0) rc = same;
    if (rc && !s->failing) {
        char cause[600];
        if (rc < 0 && rc > -4096)
            ik__local_cause(b, -rc, s->path, cause, sizeof cause);
        else
            snprintf(cause, sizeof cause, "%s: %s", s->path, ik_strerror(rc));
        ik__logf("%s: cannot renew worker slot %" PRIu32 " (its time record): %s; IDs stop once "
                 "the clock passes the last record written",
                 b->uri, s->worker, cause);
    } else if (!rc && s->failing) {
        ik__logf("%s: worker slot %" PRIu32 " renewed again", b->uri, s->worker);
    }
    s->failing = rc != 0;
    if (rc) return IK_EINDOUBT; /* the flock is still ours; only the write failed */
    *proof = (ik__lease_proof){ik__mono_ns(), IK_FOREVER};
    *written_ms = record_ms;
    return IK_OK;
}

static int local_slot_release(ik__backend *be, void *handle, int64_t record_ms)
{
    (void)be;
    local_slot *s = handle;
    if (!s) return IK_OK;
    held_del(s);
    int rc = store_record(s, record_ms, 0);
    close(s->fd); /* drops the flock */
    if (s->name_fd >= 0) close(s->name_fd);
    free(s);
    return rc;
}

/* After IK_ELOST: the file is no longer the slot (LS1); nothing is written to it. */
static void local_slot_forget(ik__backend *be, void *handle)
{
    (void)be;
    local_slot *s = handle;
    if (!s) return;
    held_del(s);
    close(s->fd);
    if (s->name_fd >= 0) close(s->name_fd); /* the generator was revoked first */
    free(s);
}

static int local_slots_list(ik__backend *be, const char *app, ik_slot_info **out, size_t *n_out)
{
    local_backend *b = (local_backend *)be;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/%s/slots", b->dir, app);
    *out = NULL;
    *n_out = 0;
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? IK_OK : IK_ESYS(errno);
    size_t cap = 0, n = 0;
    ik_slot_info *v = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        unsigned w;
        char tail[8];
        /* sscanf: names this file wrote (%04u.slot); another fails here or names a
         * worker no range holds */
        /* NOLINTNEXTLINE(cert-err34-c) */
        if (sscanf(e->d_name, "%u.%7s", &w, tail) != 2 || strcmp(tail, "slot")) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        slot_record r;
        int rr = read_record(fd, &r);
        /* held if a holder has LOCK_EX; LOCK_SH|LOCK_NB tests that for an instant */
        int held = 0;
        if (flock(fd, LOCK_SH | LOCK_NB)) held = errno == EWOULDBLOCK;
        close(fd);
        if (ik__grow((void **)&v, &cap, n, sizeof *v, 64)) {
            free(v);
            closedir(d);
            return IK_ENOMEM;
        }
        ik_slot_info *si = &v[n++];
        memset(si, 0, sizeof *si);
        si->worker = w;
        si->held = held;
        if (rr == 0) {
            snprintf(si->holder, sizeof si->holder, "%s", r.holder);
            snprintf(si->detail, sizeof si->detail, "pid=%ld host=%s", r.pid, r.host);
            si->since_ms = held ? r.since_ms : 0;
            si->record_ms = r.record_ms;
        } else if (rr < 0) {
            snprintf(si->detail, sizeof si->detail, "unreadable record");
        }
    }
    closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort by worker; lists are small */
        for (size_t j = i; j > 0 && v[j - 1].worker > v[j].worker; j--) {
            ik_slot_info t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    *out = v;
    *n_out = n;
    return IK_OK;
}

static void local_client_version(char *buf, size_t len)
{
    snprintf(buf, len, "sqlite %s", sqlite3_libversion());
}

const ik__backend_ops ik__backend_local_ops = {
    .scheme = "local",
    .uri_form = "local:DIR",
    .uri_examples = (const char *const[]){"local:./idkeeper-data", "local:/var/lib/idkeeper", NULL},
    .uri_check = local_uri_check,
    .recipe = &ik__recipe_local_ops,
    .open = local_open,
    .close = local_close,
    .uri = local_uri,
    .slot_acquire = local_slot_acquire,
    .slot_persist = local_slot_persist,
    .slot_release = local_slot_release,
    .slot_forget = local_slot_forget,
    .recover = NULL,
    .slots_list = local_slots_list,
    .session = NULL,
    .hazards_check = local_hazards_check,
    .client_version = local_client_version,
    .last_error = local_last_error,
    .tag_create = ik__local_tag_create,
    .tag_get = ik__local_tag_get,
    .tag_list = ik__local_tag_list,
    .tag_advance = ik__local_tag_advance,
};
