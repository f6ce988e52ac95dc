/* fuzz_proc_stat.c: the /proc/PID/stat reader of the guardian of `idkeeper lock` and
 * `idkeeper elect` (ik__guard_parse_stat, src/cli/guardian.c), which finds CMD's
 * process tree by the parent and group of every process. A process names itself
 * (prctl PR_SET_NAME, its executable's name): the name may hold ')', spaces and
 * digits, and must never make it read another parent or group.
 *
 * The input, whole, is parsed for crashes. Then it is used as a process's name
 * inside a well-formed line, "4242 (NAME) S 17 23 23 0 -1 ...", which must parse to
 * parent 17 and group 23; and with state Z, which must parse as no process.
 */
/* fuzz-sources: src/cli/guardian.c */
#include "fuzz.h"
#include "guardian.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pid_t ppid = -1, pgrp = -1;
    if (ik__guard_parse_stat((const char *)data, size, &ppid, &pgrp) == 1 && (ppid < 0 || pgrp < 0))
        abort();
    if (size > 64) return 0; /* the kernel's names are 15 bytes; room for more */
    static const char head[] = "4242 (", tail_r[] = ") S 17 23 23 0 -1 4194560 1 0 0 0\n",
                      tail_z[] = ") Z 17 23 23 0 -1 4194560 1 0 0 0\n";
    char buf[sizeof head + 64 + sizeof tail_r];
    memcpy(buf, head, sizeof head - 1);
    memcpy(buf + sizeof head - 1, data, size);
    size_t n = sizeof head - 1 + size;
    memcpy(buf + n, tail_r, sizeof tail_r - 1);
    if (ik__guard_parse_stat(buf, n + sizeof tail_r - 1, &ppid, &pgrp) != 1 || ppid != 17 ||
        pgrp != 23)
        abort();
    memcpy(buf + n, tail_z, sizeof tail_z - 1);
    if (ik__guard_parse_stat(buf, n + sizeof tail_z - 1, &ppid, &pgrp) != 0) abort();
    return 0;
}
