/* internal.h: helpers shared by the library's files; nothing here is public. */
#ifndef IK_INTERNAL_H
#define IK_INTERNAL_H

#include "idkeeper.h"
#include "rules.h" /* ISO 8601 text, app names, listen addresses */

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>

/* Writes a formatted one-line reason into why (if why_len > 0) and returns err. */
int ik__fail(int err, char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* fork.c: the process's fork generation, counted up in the child of every fork
 * (FK1). A handle keeps ik__fork_gen() from when it was made; ik__forked(gen) is 1
 * in a child of that process, where the handle is the parent's copy (IK_EFORKED). */
extern _Atomic unsigned ik__fork_generation;
static inline unsigned ik__fork_gen(void)
{
    return atomic_load_explicit(&ik__fork_generation, memory_order_relaxed);
}
static inline int ik__forked(unsigned gen)
{
    return ik__fork_gen() != gen;
}

/* Elapsed time (CLOCK_BOOTTIME: never goes back, counts a suspend; every deadline
 * of the library is on it) and wall time, bypassing any ik_clock. */
int64_t ik__mono_ns(void);
int64_t ik__mono_ms(void);
int64_t ik__wall_ms(void);

/* Tests only (docs/testing.md, "Test hooks"): holds a write between its two halves
 * (clock.c). path is a hook variable's value (NULL or "": none). Where path names an
 * empty file, writes "held" into it and waits until the file is gone (60 s at
 * most): the test changes the store meanwhile. Otherwise returns at once. */
void ik__test_hold(const char *path);

/* One log line through the sink of ik_set_log (printf format, no newline). */
void ik__logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Reports a gap of a tag (ik_set_gap_hook: first < 0 when its place is not known,
 * why one of the causes the header names): logs "tag gap tag=T first=A count=K
 * why=W (app, kind: DETAIL; ...)" with DETAIL from fmt, then calls the hook. Every
 * backend reports its gaps through this, and only through this. */
/* tag_names.c: a hash of (app, tag name), for the tables of tags above and below the
 * seam. */
uint32_t ik__tag_hash(const char *app, const char *name);

void ik__tag_gap(const char *app, const char *tag, ik_tag_kind kind, int64_t first, int64_t count,
                 const char *why, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

/* *ts = CLOCK_MONOTONIC now + ms, for pthread_cond_timedwait on a condition made
 * by ik__cond_init_mono. ms is relative (a deadline on ik__mono_ns minus now): a
 * suspend during the wait lengthens it, so callers check their deadline again. */
struct timespec;
void ik__deadline_ts(struct timespec *ts, int64_t ms);
/* A condition variable whose timed waits use CLOCK_MONOTONIC. */
#include <pthread.h>
void ik__cond_init_mono(pthread_cond_t *cv);

/* The size rule of the public options structs (options_size.c). full (full_size bytes,
 * this library's struct) holds the defaults, as its *_options_init left them;
 * given is the caller's struct, whose first member is its size. Copies the fields
 * that lie within both sizes over the defaults, so fields beyond the caller's size
 * keep them. IK_EINVAL, with a reason naming `what` ("ik_coord_options"), if the
 * size is not a struct's (0: never given to its init) or if the caller's struct is
 * larger and a byte past full_size is not zero (a newer field this library cannot
 * honour); full is then partly written. */
int ik__options_copy(void *full, size_t full_size, const void *given, const char *what, char *why,
                     size_t why_len);

/* Names of the characters [A-Za-z0-9._:-], 1 to max bytes (tags; app names have a
 * rule of their own, ik__app_name_check). */
int ik__valid_name(const char *s, size_t max);

/* Turns a callback API (IK_PENDING + ik_ids_cb) into a blocking call:
 *   ik__ids_waiter w; ik__ids_waiter_init(&w, ids);
 *   return ik__ids_waiter_finish(&w, api_call(..., ik__ids_waiter_cb, &w)); */
#include <pthread.h>
typedef struct ik__ids_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done, status;
    int64_t *ids;
} ik__ids_waiter;
void ik__ids_waiter_init(ik__ids_waiter *w, int64_t *ids);
void ik__ids_waiter_cb(void *ctx, int status, const int64_t *ids, size_t n);
int ik__ids_waiter_finish(ik__ids_waiter *w, int rc);

/* Random (version 4) UUIDs as Java's UUID.randomUUID().toString() prints them
 * ("f81d4fae-7dec-41d0-a765-00a0c91e6bf6", 36 characters and a NUL), from the
 * kernel's randomness (getrandom(2), else /dev/urandom). ik__uuid4: 0, or IK_ESTORE
 * with out "" when no randomness is to be had: never a weaker UUID.
 * ik__uuid4_format: the UUID of 16 given bytes (version and variant bits set). */
#define IK__UUID_SIZE 37
/* Fills b with n bytes of the kernel's randomness (getrandom(2), else /dev/urandom
 * where getrandom is refused). 0, or a negated errno: never weaker bytes. */
int ik__random_bytes(unsigned char *b, size_t n);
int ik__uuid4(char out[IK__UUID_SIZE]);
void ik__uuid4_format(const unsigned char r[16], char out[IK__UUID_SIZE]);

#endif
