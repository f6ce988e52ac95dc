/* backend_local_hazards.c: the store hazards of local: (docs/hazards.md, hazard.h):
 * DIR's filesystem must keep what is written across a reboot and honour flock(2)
 * and fsync. Below both halves of the backend (backend_local.c, the slots;
 * backend_local_tags.c, the counters), which ask ik__local_hazards_gate before each
 * write.
 *
 * Also what an operator is told when DIR itself fails (docs/local.md, "When the data
 * directory fails"): one sentence per cause, with the path, the errno and what to
 * change (ik__local_cause), and the probe that `idkeeper check` runs on DIR
 * (ik__local_dir_probe). */
#include "backend_local.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

/* Filesystems by statfs(2) f_type that cannot hold DIR (docs/hazards.md, local:):
 * memory ones lose every counter and time record at a reboot, so a sequence
 * restarts at its start; network and FUSE ones may not honour flock(2) between
 * hosts, nor fsync, and SQLite's WAL needs shared memory on one host. */
static const struct {
    long type;
    const char *name, *why;
} bad_fs[] = {
    {0x01021994, "tmpfs", "lost at a reboot: counters restart and time records vanish"},
    {0x858458f6, "ramfs", "lost at a reboot: counters restart and time records vanish"},
    {0x6969, "nfs", "flock(2), fsync and SQLite's WAL are not reliable over NFS"},
    {0xFF534D42, "cifs", "flock(2), fsync and SQLite's WAL are not reliable over SMB"},
    {0xFE534D42, "smb2", "flock(2), fsync and SQLite's WAL are not reliable over SMB"},
    {0x65735546, "fuse", "a FUSE filesystem may not honour flock(2) or fsync"},
};

int ik__local_hazards(local_backend *b, char *why, size_t why_len)
{
    struct statfs sf;
    if (statfs(b->dir, &sf) != 0)
        return ik__fail(IK_ESTORE, why, why_len, "cannot statfs %s: %s", b->dir, strerror(errno));
    ik_hazard row;
    char value[48];
    size_t i = 0;
    while (i < sizeof bad_fs / sizeof bad_fs[0] && bad_fs[i].type != (long)sf.f_type)
        i++;
    if (i < sizeof bad_fs / sizeof bad_fs[0]) {
        snprintf(value, sizeof value, "%s", bad_fs[i].name);
        ik__hazard_row(&b->base.hz, &row, "filesystem", value, 1,
                       "%s; put DIR on a local disk (ext4, xfs, btrfs)", bad_fs[i].why);
    } else {
        snprintf(value, sizeof value, "0x%lx (a local disk)", (long)sf.f_type);
        ik__hazard_row(&b->base.hz, &row, "filesystem", value, 0, NULL);
    }
    b->checked_ns = ik__mono_ns();
    return ik__hazards_update(&b->base.hz, &row, 1, why, why_len);
}

int ik__local_hazards_gate(local_backend *b)
{
    if (ik__hazards_due(&b->base.hz, b->checked_ns)) {
        int rc = ik__local_hazards(b, NULL, 0);
        if (rc) return rc == IK_EUNSAFE ? rc : IK_OK; /* a failed statfs: the write says */
    }
    return ik__hazards_refused(&b->base.hz, NULL, 0);
}

void ik__local_cause(const local_backend *b, int err, const char *path, char *buf, size_t len)
{
    if (!len) return;
    const char *name = strerrorname_np(err);
    int n = snprintf(buf, len, "%s: %s (%s)", path, strerror(err), name ? name : "?");
    if (n < 0 || (size_t)n >= len) return;
    buf += n, len -= (size_t)n;
    switch (err) {
    case EACCES:
    case EPERM:
        snprintf(buf, len,
                 ": the user this runs as (uid %u) cannot write in %s; make it the owner "
                 "(chown -R) or run as the user that owns it (docs/local.md)",
                 (unsigned)geteuid(), b->dir);
        break;
    case EROFS:
        snprintf(buf, len,
                 ": %s is on a read-only filesystem; remount it read-write, or give --coord "
                 "a writable local:DIR (docs/local.md)",
                 b->dir);
        break;
    case ENOSPC:
    case EDQUOT:
        snprintf(buf, len,
                 ": the filesystem of %s is full; free space there (df %s) (docs/local.md)", b->dir,
                 b->dir);
        break;
    default:
        break;
    }
}

int ik__local_dir_probe(const local_backend *b, char *why, size_t why_len)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.idkeeper-probe.%ld", b->dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = fd < 0 ? errno : 0;
    if (!e) {
        char block[512];
        memset(block, '\n', sizeof block);
        ssize_t w = pwrite(fd, block, sizeof block, 0);
        if (w != (ssize_t)sizeof block)
            e = w < 0 ? errno : ENOSPC;
        else if (fsync(fd) != 0)
            e = errno;
        close(fd);
        unlink(path);
    }
    if (!e) return IK_OK;
    char cause[600];
    ik__local_cause(b, e, path, cause, sizeof cause);
    return ik__fail(IK_ESTORE, why, why_len, "cannot write in %s: %s", b->dir, cause);
}

void ik__local_say(local_backend *b, int log, const char *line)
{
    pthread_mutex_lock(&b->said_mu);
    snprintf(b->said, sizeof b->said, "%s", line);
    int64_t now = ik__mono_ns();
    log = log && (strcmp(line, b->logged) != 0 || now - b->logged_ns >= INT64_C(10000000000));
    if (log) {
        snprintf(b->logged, sizeof b->logged, "%s", line);
        b->logged_ns = now;
    }
    pthread_mutex_unlock(&b->said_mu);
    if (log) ik__logf("%s: %s", b->uri, line);
}
