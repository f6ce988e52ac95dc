/* uuid.c: random (version 4) UUIDs from the kernel's randomness, for the names of
 * lock and election nodes (_c_<uuid>-lock-<seq>, recipe_zk.c).
 *
 * Two contenders with one UUID would each take the other's node for its own after a
 * lost answer, so a UUID is never made from a weaker source: no clock-seeded
 * generator, no fallback. getrandom(2) first; where a seccomp filter or an old
 * kernel refuses it (ENOSYS, EPERM), /dev/urandom; else an error.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

int ik__random_bytes(unsigned char *b, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(b + got, n - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == ENOSYS || errno == EPERM)) break;
        return r < 0 ? -errno : -EIO;
    }
    if (got == n) return 0;
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            int e = r < 0 ? errno : EIO;
            close(fd);
            return -e;
        }
        got += (size_t)r;
    }
    close(fd);
    return 0;
}

void ik__uuid4_format(const unsigned char r[16], char out[IK__UUID_SIZE])
{
    unsigned char b[16];
    for (int i = 0; i < 16; i++)
        b[i] = r[i];
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* variant 10 (RFC 4122) */
    snprintf(out, IK__UUID_SIZE,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
             b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
             b[15]);
}

int ik__uuid4(char out[IK__UUID_SIZE])
{
    unsigned char b[16];
    int rc = ik__random_bytes(b, sizeof b);
    if (rc != 0) {
        out[0] = '\0';
        return IK_ESTORE; /* an ik_error: lock calls hand it to their callers */
    }
    ik__uuid4_format(b, out);
    return IK_OK;
}
