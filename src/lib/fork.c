/* fork.c: what the library knows of fork(2).
 *
 * A child made by fork() without exec holds a copy of every handle of its parent:
 * the same generator state, the same grant, the same segment blocks, the same slot
 * file descriptors; but none of the parent's threads (the lease's, the loader's, the
 * committer's, a store client's), and whatever mutex one of them held at the fork
 * stays locked forever. Issuing from such a copy hands out the parent's IDs a second
 * time (docs/local.md, "fork()").
 *
 * So the library counts forks: the child of every fork() made through libc (fork,
 * daemon(3), system(3) before its exec; not a raw clone(2), nor vfork, whose child
 * may only exec) counts ik__fork_generation up, in an atfork handler registered
 * when the library is loaded. A handle records the generation it was made in; one
 * whose generation is not the process's now is the parent's copy (ik__forked), and
 * every call on it refuses with IK_EFORKED before it touches a lock, a thread or
 * the store. The check is one relaxed load of a word that only a fork writes, next
 * to the handle's own fields: nothing a hot path notices (docs/BENCHMARKS.md).
 *
 * Invariant FK1: in a process, a handle's calls succeed only in the generation the
 * handle was made in; the generation of a process never changes but in a fork's
 * child, before fork() returns there.
 */
#include "internal.h"

#include <pthread.h>

_Atomic unsigned ik__fork_generation;

static void on_fork_child(void)
{
    atomic_fetch_add_explicit(&ik__fork_generation, 1, memory_order_relaxed);
}

/* At load (a shared library's, or the program's that links the static one): from
 * then on, every fork through libc runs on_fork_child in the child. */
__attribute__((constructor)) static void fork_watch(void)
{
    pthread_atfork(NULL, NULL, on_fork_child);
}
